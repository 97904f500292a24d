"""check-litmus: the memory-ordering pairs M1-M7 and the head swap as
litmus tests (tests/litmus), each with its mutants, under herd7 and the
kernel's memory model; herd7 itself is fetched from a newer Debian suite
into the cache."""

import fcntl
import glob
import os
import re
import shutil
import subprocess
import tempfile

from .common import CACHE, REPO, log, read
from .setup import ensure_pristine
from .suites import Suite, deb_version


# One litmus test per pair of ring_buffer_internal.h's M1-M7 and the head
# swap, each run by herd7 with the base tree's tools/memory-model (the LKMM).
# Each test's "exists" is the outcome its pair forbids: herd7 must say Never.
# A line of it that carries "// mutant NAME" is weakened by the first rule of
# LITMUS_WEAKEN that matches it; every line of one NAME together makes one
# mutant, which must say Sometimes (the barrier is what forbids the outcome).
LITMUS_DIR = os.path.join(REPO, 'tests', 'litmus')
LITMUS_MARK = re.compile(r'//\s*mutant\s+([\w-]+)')
LITMUS_WEAKEN = (
    (r'\bsmp_store_release\((\w+),', r'WRITE_ONCE(*\1,'),
    (r'\bsmp_load_acquire\((\w+)\)', r'READ_ONCE(*\1)'),
    (r'\batomic_set_release\(', 'atomic_set('),
    (r'\batomic_read_acquire\(', 'atomic_read('),
    (r'\b((?:atomic_)?(?:cmpxchg|xchg)|atomic_(?:add|sub|inc|dec)_return)\(', r'\1_relaxed('),
    (r'\b(?:smp_mb|smp_wmb|smp_rmb|smp_mb__before_atomic|smp_mb__after_atomic|'
     r'synchronize_rcu|rcu_read_lock|rcu_read_unlock)\(\);', ''),
)
# herd7 and the libc it needs are not in the base suite: they come from
# HERD_SUITE, through the mirror this machine's apt already uses, into the
# cache only (the system's apt lists and packages are left alone).
HERD_DIR = os.path.join(CACHE, 'herd7')
HERD_SUITE = 'forky'
HERD_PACKAGES = ('herdtools7', 'libc6', 'libgmp10')
HERD_LIB = os.path.join('usr', 'lib', 'x86_64-linux-gnu')


def herd7_argv(root):
    """herd7 under its own dynamic loader and libc (newer than the system's)."""
    lib = os.path.join(root, HERD_LIB)
    return [os.path.join(lib, 'ld-linux-x86-64.so.2'), '--library-path', lib,
            os.path.join(root, 'usr', 'bin', 'herd7'),
            '-set-libdir', os.path.join(root, 'usr', 'share', 'herdtools7', 'herd')]


def unpack_herd7(root):
    """Fetch HERD_PACKAGES from HERD_SUITE and unpack them into @root.
    Returns None, or why it failed."""
    if os.uname().machine != 'x86_64':
        return f'herd7 is fetched for x86_64 only (this machine: {os.uname().machine})'
    suite = Suite(HERD_DIR, HERD_SUITE)
    why = suite.update()
    debs, why = (None, why) if why else suite.download(HERD_PACKAGES)
    if why:
        return f'herd7: {why}'
    tmp = root + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    versions = []
    for deb in debs:
        versions.append(deb_version(deb))
        r = subprocess.run(['dpkg', '-x', deb, tmp], capture_output=True, text=True)
        if r.returncode:
            return f'dpkg -x {os.path.basename(deb)} failed: {r.stderr.strip()[-200:]}'
    # herdtools7 ships forty tools and their documentation: keep herd7.
    bindir = os.path.join(tmp, 'usr', 'bin')
    for f in os.listdir(bindir) if os.path.isdir(bindir) else ():
        if f != 'herd7':
            os.unlink(os.path.join(bindir, f))
    shutil.rmtree(os.path.join(tmp, 'usr', 'share', 'doc'), ignore_errors=True)
    r = subprocess.run(herd7_argv(tmp) + ['-version'], capture_output=True, text=True)
    if r.returncode:
        return f'the unpacked herd7 does not run: {(r.stderr or r.stdout).strip()[-200:]}'
    shutil.rmtree(root, ignore_errors=True)
    os.rename(tmp, root)
    for deb in debs:
        os.unlink(deb)
    with open(root + '.version', 'w') as f:
        f.write('\n'.join(versions) + '\n')
    log(f'herd7: {r.stdout.strip()} in {root} ({", ".join(versions)})')
    return None


def ensure_herd7():
    """(argv prefix for herd7, None), or (None, why it cannot be had).
    Unpacks it into the cache once; afterwards this only looks at a stamp."""
    root = os.path.join(HERD_DIR, 'root')
    stamp = root + '.version'

    def ready():
        return os.path.exists(stamp) and os.path.exists(os.path.join(root, 'usr', 'bin', 'herd7'))
    if ready():
        return herd7_argv(root), None
    os.makedirs(HERD_DIR, exist_ok=True)
    with open(os.path.join(HERD_DIR, 'lock'), 'w') as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)   # a second rbdev waits, then finds it ready
        if not ready():
            why = unpack_herd7(root)
            if why:
                return None, why
    return herd7_argv(root), None


def litmus_mutants(text):
    """{NAME: @text with every line marked "// mutant NAME" weakened}.
    Raises ValueError for a marked line that no rule weakens."""
    marked = {}
    lines = text.split('\n')
    for i, ln in enumerate(lines):
        m = LITMUS_MARK.search(ln)
        if m:
            marked.setdefault(m.group(1), []).append(i)
    out = {}
    for name, idx in marked.items():
        new = list(lines)
        for i in idx:
            code, sep, comment = new[i].partition('//')
            for pat, rep in LITMUS_WEAKEN:
                weak = re.sub(pat, rep, code, count=1)
                if weak != code:
                    new[i] = weak + sep + comment
                    break
            else:
                raise ValueError(f'line {i + 1}: "mutant {name}" but nothing to weaken: '
                                 f'{code.strip()}')
        new[0] = re.sub(r'^C\s+(\S+)', lambda m: f'C {m.group(1)}~{name}', new[0])
        out[name] = '\n'.join(new)
    return out


def herd7_verdict(argv, path, mm):
    """(Always/Sometimes/Never, detail) from herd7 on @path, or ('ERROR', why)."""
    try:
        r = subprocess.run(argv + ['-conf', 'linux-kernel.cfg', path], cwd=mm,
                           capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return 'ERROR', 'herd7 ran over 300 s'
    m = re.search(r'^Observation \S+ (Always|Sometimes|Never) (\d+) (\d+)', r.stdout, re.M)
    if not m:
        last = (r.stderr.strip() or r.stdout.strip() or f'exit {r.returncode}').splitlines()[-1]
        return 'ERROR', f'herd7: {last[:300]}'
    flags = re.findall(r'^Flag (\S+)', r.stdout, re.M)
    return m.group(1), (f'{m.group(2)} of {int(m.group(2)) + int(m.group(3))} states' +
                        (f'; flags: {" ".join(flags)}' if flags else ''))


def check_litmus():
    """Every test of LITMUS_DIR and each of its mutants under herd7: a list
    of (name, expected, got, detail); got is herd7's verdict, or ERROR or
    UNAVAILABLE with why in detail."""
    tests = sorted(glob.glob(os.path.join(LITMUS_DIR, '*.litmus')),
                   key=lambda p: os.path.basename(p)[:-len('.litmus')])
    if not tests:
        return [('tests', 'Never', 'ERROR', f'no *.litmus in {os.path.relpath(LITMUS_DIR, REPO)}')]
    argv, why = ensure_herd7()
    mm = os.path.join(ensure_pristine(), 'tools', 'memory-model')
    rows = []
    os.makedirs(HERD_DIR, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix='mutants-', dir=HERD_DIR) as tmp:
        for path in tests:
            name = os.path.basename(path)[:-len('.litmus')]
            runs = [(name, 'Never', path)]
            try:
                mutants = litmus_mutants(read(path, 'r'))
            except ValueError as e:
                rows.append((f'{name}~', 'Sometimes', 'ERROR', str(e)))
                mutants = None
            if mutants == {}:
                rows.append((f'{name}~', 'Sometimes', 'ERROR', 'no line marked "// mutant NAME"'))
            for mname, text in sorted((mutants or {}).items()):
                mpath = os.path.join(tmp, f'{name}~{mname}.litmus')
                with open(mpath, 'w') as f:
                    f.write(text)
                runs.append((f'{name}~{mname}', 'Sometimes', mpath))
            for rname, want, p in runs:
                if not argv:
                    rows.append((rname, want, 'UNAVAILABLE', why))
                    continue
                got, detail = herd7_verdict(argv, p, mm)
                rows.append((rname, want, got, detail))
    return rows
