"""KUnit: the suites under UML through kunit.py, on i386 and arm64 under
QEMU (kunit.py --arch) and from a guest's console; the W=1 builds of the
ring buffer for an untested architecture (rbdev cross); sparse and
single objects in the UML KUnit build dir (check-sparse, obj)."""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

from .build import build_dir, build_lock, ccache_env, jobs
from .common import CACHE, die, log, read, run
from .config import (
    CROSS, CROSS_BUILDS, CROSS_FRAGMENT, CROSS_KCONFIG_OFF, CROSS_KERNEL_ARGS,
    UML_KCONFIG_OFF_ARGS)
from .results import kunit_json_cases
from .setup import apt_install, installed, setup


def kunit_tool(action, *args):
    """The kernel's kunit.py, run from the top of a tree."""
    return [sys.executable, 'tools/testing/kunit/kunit.py', action, *args]


def kunit_py(action, bdir, *extra):
    """kunit.py with our .kunitconfig, for UML, through ccache."""
    return kunit_tool(action, f'--build_dir={bdir}', '--kunitconfig=kernel/trace/.kunitconfig',
                      f'--jobs={jobs()}', '--make_options', 'CC=ccache gcc',
                      *UML_KCONFIG_OFF_ARGS, *extra)


@build_lock
def kunit_uml(kind, res, filt=None, kernel_args=(), tag='kunit-uml'):
    src = setup(kind)
    bdir = build_dir(kind, 'uml')
    out = os.path.join(bdir, 'kunit.json')
    os.makedirs(bdir, exist_ok=True)
    if os.path.exists(out):
        os.unlink(out)
    log(f'KUnit under UML on {kind} (cold build about 4 min; log: {bdir}/kunit.log) ...')
    t0 = time.time()
    # The depth-3 enumeration (a long mode, see README) takes far longer.
    limit = 3600 if any('depth=3' in a or 'iters=' in a for a in kernel_args) else 600
    r = run(kunit_py('run', bdir, f'--timeout={limit}', f'--json={out}',
                     *[f'--kernel_args={a}' for a in kernel_args]) + ([filt] if filt else []),
            cwd=src, env=ccache_env(), check=False, logfile=os.path.join(bdir, 'kunit.log'))
    log(f'KUnit under UML finished in {time.time() - t0:.0f} s')
    kunit_results(res, tag, out, r.returncode, bdir,
                  kernel=kind if kind != res.kernel else None)


def kunit_results(res, tag, out, returncode, bdir, kernel=None):
    """Rows for a kunit.py run: one per case from its JSON @out, or why
    there are none, and kunit.py's own failure if no case shows it.
    @kernel: the kernel they ran on, if not the one of @res."""
    if not os.path.exists(out):
        res.add(tag, 'build-and-boot', 'ERROR', f'see {bdir}/kunit.log', kernel=kernel)
        return
    cases = kunit_json_cases(out)
    if not cases:
        res.add(tag, 'any-test-ran', 'FAIL', f'see {bdir}/kunit.log', kernel=kernel)
    for name, status in cases:
        res.add(tag, name, status, kernel=kernel)
    if returncode and all(s != 'FAIL' and s != 'ERROR' for _, s in cases):
        res.add(tag, 'kunit.py', 'FAIL', f'exit {returncode}; see {bdir}/kunit.log', kernel=kernel)


def tcg_only(cmd):
    """@cmd with its QEMU kept off KVM. kunit.py's QEMU tries KVM first, and
    this machine's /dev/kvm stops the 7.3 i386 kernel in its decompressor
    ("KVM internal error", an emulation failure on RDRAND, then QEMU waits
    with no output; seen 2026-12-07); the QEMU runs here are TCG anyway. A
    mount namespace of its own gives kunit.py a /dev/kvm that is /dev/null,
    so QEMU falls back to TCG."""
    if not os.path.exists('/dev/kvm') or os.geteuid() != 0 or not shutil.which('unshare'):
        return cmd
    return ['unshare', '--mount', '--', 'sh', '-c',
            'mount --bind /dev/null /dev/kvm && exec "$@"', 'sh', *cmd]


def ensure_cross(*pkgs):
    """apt-get install whichever of @pkgs (None: nothing) is missing."""
    need = [p for p in pkgs if p and not installed(p)]
    if not need:
        return
    if os.geteuid() != 0:
        die(f'packages missing ({" ".join(need)}); install them with apt-get')
    log(f'installing {" ".join(need)} with apt ...')
    apt_install(need, 'apt-install-cross.log')


@build_lock
def kunit_cross(kind, res, arch, filt=None, kernel_args=(), tag=None):
    """The KUnit suites on another architecture: kunit.py --arch under QEMU
    (rows kunit-<arch>, or @tag)."""
    src = setup(kind)
    prefix = CROSS[arch][0]
    ensure_cross(*CROSS[arch][1:])
    bdir = build_dir(kind, f'kunit-{arch}')
    out = os.path.join(bdir, 'kunit.json')
    os.makedirs(bdir, exist_ok=True)
    if os.path.exists(out):
        os.unlink(out)
    tag = tag or f'kunit-{arch}'
    log(f'KUnit on {arch} under QEMU on {kind} (cold build about 10 min; '
        f'log: {bdir}/kunit.log) ...')
    t0 = time.time()
    cc = f'ccache {prefix or ""}gcc'
    args = [f'--build_dir={bdir}', '--kunitconfig=kernel/trace/.kunitconfig',
            f'--arch={arch}', f'--jobs={jobs()}', '--make_options', f'CC={cc}',
            '--qemu_args=-smp 2', '--timeout=3600', f'--json={out}']
    if arch in CROSS_KCONFIG_OFF:
        # Most of them can be turned off only with EXPERT, which changes no default.
        args += ['--kconfig_add=CONFIG_EXPERT=y'] + [f'--kconfig_add=CONFIG_{o}=n'
                                                     for o in CROSS_KCONFIG_OFF[arch]]
    if prefix:
        args.append(f'--cross_compile={prefix}')
    args += [f'--kernel_args={a}' for a in (*CROSS_KERNEL_ARGS, *kernel_args)]
    r = run(tcg_only(kunit_tool('run', *args) + ([filt] if filt else [])), cwd=src,
            env=ccache_env(alone=True),
            check=False, logfile=os.path.join(bdir, 'kunit.log'))
    log(f'KUnit on {arch} finished in {time.time() - t0:.0f} s')
    kunit_results(res, tag, out, r.returncode, bdir,
                  kernel=kind if kind != res.kernel else None)


@build_lock
def cross_build(kind, res, target):
    src = setup(kind)
    arch, prefix, pkg, defconfig, must = CROSS_BUILDS[target]
    ensure_cross(pkg)
    bdir = build_dir(kind, f'cross-{target}')
    os.makedirs(bdir, exist_ok=True)
    env = ccache_env(alone=True)
    make = ['make', '-C', src, f'O={bdir}', f'ARCH={arch}', f'CROSS_COMPILE={prefix}',
            f'CC=ccache {prefix}gcc']
    frag = os.path.join(bdir, 'rbdev.config')
    stamp = os.path.join(bdir, '.rbdev-config')
    fhash = hashlib.sha256((defconfig + CROSS_FRAGMENT).encode()).hexdigest()
    tag = f'cross-{target}'
    t0 = time.time()
    log(f'building the ring buffer for {target} ({defconfig}, W=1; cold about 3 min) ...')
    if not os.path.exists(stamp) or read(stamp, 'r') != fhash:
        with open(frag, 'w') as f:
            f.write(CROSS_FRAGMENT)
        run(make + [defconfig], env=env, logfile=os.path.join(bdir, 'config.log'))
        run([os.path.join(src, 'scripts/kconfig/merge_config.sh'), '-m', '-O', bdir,
             os.path.join(bdir, '.config'), frag], cwd=src, env=env,
            logfile=os.path.join(bdir, 'merge.log'))
        run(make + ['olddefconfig'], env=env, logfile=os.path.join(bdir, 'olddefconfig.log'))
        with open(stamp, 'w') as f:
            f.write(fhash)
    have = read(os.path.join(bdir, '.config'), 'r').splitlines()
    missing = [o for o in [must] + CROSS_FRAGMENT.split() if o not in have]
    res.add(tag, 'config', 'FAIL' if missing else 'PASS',
            f'missing: {" ".join(missing)}' if missing else must)
    objs = sorted('kernel/trace/' + os.path.basename(f)[:-2] + '.o'
                  for f in glob_overlay_c(src))
    logfile = os.path.join(bdir, 'build.log')
    # Rebuild them every time, so that their warnings are in this log.
    for o in objs:
        p = os.path.join(bdir, o)
        if os.path.exists(p):
            os.unlink(p)
    r = run(make + ['W=1', f'-j{jobs()}'] + objs, env=env, check=False, logfile=logfile)
    text = read(logfile, 'r')
    warns = [ln for ln in text.splitlines()
             if re.search(r'kernel/trace/ring_buffer\w*\.[ch]:\d+:\d+: (warning|error)', ln)]
    for w in warns[:10]:
        print('    ' + w)
    res.add(tag, 'build-W=1', 'PASS' if r.returncode == 0 and not warns else 'FAIL',
            f'{len(objs)} objects in {time.time() - t0:.0f} s; {len(warns)} warning(s); {logfile}')


def glob_overlay_c(src):
    """The ring buffer's .c files in the tree (the rewrite's, the tests')."""
    d = os.path.join(src, 'kernel/trace')
    return [f for f in os.listdir(d) if re.match(r'ring_buffer\w*\.c$', f)
            and f != 'ring_buffer_benchmark.c']


def kunit_from_console(kind, console, bdir, res, tag):
    path = os.path.join(bdir, f'{tag}.kunit.log')
    with open(path, 'w') as f:
        f.write(console)
    out = os.path.join(bdir, f'{tag}.kunit.json')
    if os.path.exists(out):
        os.unlink(out)
    src = os.path.join(CACHE, kind, 'src')
    subprocess.run(kunit_tool('parse', path, f'--json={out}'), cwd=src,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cases = kunit_json_cases(out) if os.path.exists(out) else []
    if not cases:
        res.add(tag, 'ktap-found', 'MISSING', f'no KTAP on the console: {path}')
    for name, status in cases:
        res.add(tag, name, status)


@build_lock
def check_sparse(kind):
    """sparse (Debian's, make C=2) on every ring buffer object in the UML
    KUnit build dir, W=1 too. Returns (objects, [complaints in our files])."""
    src = setup(kind)
    bdir = build_dir(kind, 'uml')
    if not os.path.exists(os.path.join(bdir, '.config')):
        die(f'{bdir} has no .config yet: run "rbdev kunit" once first')
    objs = [f'kernel/trace/{f[:-2]}.o' for f in sorted(glob_overlay_c(src))
            if not f.startswith('ring_buffer_torture')]
    logf = os.path.join(bdir, 'sparse.log')
    r = run(['make', '-C', src, f'O={bdir}', 'ARCH=um', 'CC=ccache gcc', 'C=2', 'W=1',
             f'-j{jobs()}'] + objs, env=ccache_env(), check=False, logfile=logf)
    # UML is UP: its _raw_spin_trylock() already __acquire()s and
    # raw_spin_trylock() wraps it in __cond_lock() once more, so sparse
    # counts two contexts on one path of a trylock: an artifact of the
    # config, not of rb_read_lock().
    bad = [ln for ln in read(logf, 'r').splitlines()
           if re.search(r'kernel/trace/ring_buffer\w*\.[ch]:\d+:\d+: (warning|error)', ln)
           and "context imbalance in 'rb_read_lock' - different lock contexts" not in ln]
    if r.returncode:
        bad.append(f'make C=2 exited {r.returncode}; see {logf}')
    return objs, bad


@build_lock
def compile_objects(kind, objs):
    """Compile single objects with W=1 in the UML KUnit build dir: a check
    that takes seconds, for code that is not yet linked into a kernel."""
    src = setup(kind)
    bdir = build_dir(kind, 'uml')
    if not os.path.exists(os.path.join(bdir, '.config')):
        die(f'{bdir} has no .config yet: run "rbdev kunit" once first')
    r = run(['make', '-C', src, f'O={bdir}', 'ARCH=um', 'CC=ccache gcc', 'W=1',
             f'-j{jobs()}'] + objs, env=ccache_env(), check=False)
    sys.exit(r.returncode)
