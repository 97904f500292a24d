"""Set-up: the packages (apt), the pristine base unpacked once into the
cache, the base, series and stable trees (and 7.3's base, whose pristine
tree mainline.py fetches) kept in step with the repo's overlay and
patches, and the steps of the series and of the stable fixes
(scripts/rbdev.d/series and stable), from which the stable tree and the
stable kernel's expectations are made."""

import os
import re
import shutil
import subprocess
import tempfile

from .common import CACHE, DATA, REPO, die, log, overlay_files, patched_paths, read, run, write_if_changed
from .config import (
    KERNEL_VERSION, MAINLINE_BASE_FILES, MAINLINE_BASE_PATCHES,
    MAINLINE_FIXES_TREE, MAINLINE_SERIES_DIR, MAINLINE_SERIES_TREE, MAINLINE_TREE, PACKAGES,
    PATCH_DIRS, SRC_PKG, SRC_TARBALL, SRC_VERSION)
from .mainline import ensure_mainline


def installed(pkg):
    """dpkg's "<status> <version>" for @pkg if it is installed, else None."""
    r = subprocess.run(['dpkg-query', '-W', '-f=${Status} ${Version}', pkg],
                       capture_output=True, text=True)
    return r.stdout if r.returncode == 0 and 'install ok installed' in r.stdout else None


def ensure_packages():
    """Install what the harness needs with apt; pin the kernel source."""
    os.makedirs(CACHE, exist_ok=True)
    missing = [p for p in PACKAGES if not installed(p)]
    src = installed(SRC_PKG)
    need_src = not src or not src.endswith(' ' + SRC_VERSION)
    if not missing and not need_src and os.path.exists(SRC_TARBALL):
        return
    if os.geteuid() != 0:
        die('packages missing (%s); run as root or install them with apt-get'
            % ' '.join(missing + ([SRC_PKG] if need_src else [])))
    log('installing packages with apt (about 30 s) ...')
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    run(['apt-get', 'update', '-q'], env=env, logfile=os.path.join(CACHE, 'apt-update.log'))
    if need_src or not os.path.exists(SRC_TARBALL):
        r = subprocess.run(['apt-cache', 'madison', SRC_PKG], capture_output=True, text=True)
        versions = [ln.split('|')[1].strip() for ln in r.stdout.splitlines() if '|' in ln]
        if SRC_VERSION not in versions:
            die(f'the archive does not have {SRC_PKG} {SRC_VERSION}, the pinned base; '
                f'it has: {", ".join(versions) or "no version at all"}')
    apt_install(missing + [f'{SRC_PKG}={SRC_VERSION}'], 'apt-install.log')


def apt_install(pkgs, logname):
    """apt-get install @pkgs (the pinned source may be a downgrade)."""
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    run(['apt-get', 'install', '-y', '-q', '--allow-downgrades', '--no-install-recommends'] + pkgs,
        env=env, logfile=os.path.join(CACHE, logname))


def ensure_pristine():
    """Unpack the pinned tarball once; it is never modified afterwards."""
    dst = os.path.join(CACHE, 'pristine')
    stamp = os.path.join(CACHE, 'pristine.version')
    if os.path.exists(stamp) and read(stamp, 'r').strip() == SRC_VERSION:
        return dst
    # The first stage of "rbdev test" (check-style) gets here before any
    # setup() on a fresh machine: the tarball comes with the packages.
    ensure_packages()
    log(f'unpacking {SRC_TARBALL} (about 15 s) ...')
    shutil.rmtree(dst, ignore_errors=True)
    tmp = dst + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    run(['tar', '-xJf', SRC_TARBALL, '-C', tmp])
    os.rename(os.path.join(tmp, 'linux-source-6.12'), dst)
    os.rmdir(tmp)
    mk = read(os.path.join(dst, 'Makefile'), 'r')
    sub = re.search(r'^SUBLEVEL = (\d+)', mk, re.M).group(1)
    if f'6.12.{sub}' != KERNEL_VERSION:
        die(f'{SRC_TARBALL} holds 6.12.{sub}, expected {KERNEL_VERSION}')
    with open(stamp, 'w') as f:
        f.write(SRC_VERSION + '\n')
    return dst


def patch_list(kind):
    """The patches of a tree, in order: base gets the tests' patches,
    series those and patches/series, stable those and the patches of the
    stable series' steps (scripts/rbdev.d/stable)."""
    out = []
    for d, for_base in PATCH_DIRS:
        if kind != 'series' and not for_base:
            continue
        pd = os.path.join(REPO, d)
        if os.path.isdir(pd):
            out += [os.path.join(pd, p) for p in sorted(os.listdir(pd)) if p.endswith('.patch')]
    if kind == 'stable':
        out += [os.path.join(REPO, p) for s in series_steps('stable') for p in s['patches']]
    return out


def tree_sources(kind):
    """(pristine tree, {kernel path: repo path}, [patch paths]) of a tree:
    6.12.117's base, series or stable, or 7.3's base (mainline-base) and
    the base with the fixes for mainline (mainline-fixes)."""
    if kind in (MAINLINE_TREE, MAINLINE_FIXES_TREE):
        fixes = [p for s in series_steps('fixes') for p in s['patches']] \
            if kind == MAINLINE_FIXES_TREE else []
        return (ensure_mainline(), {p: os.path.join(REPO, p) for p in MAINLINE_BASE_FILES},
                [os.path.join(REPO, p) for p in MAINLINE_BASE_PATCHES + tuple(fixes)])
    if kind == MAINLINE_SERIES_TREE:
        d = os.path.join(REPO, MAINLINE_SERIES_DIR)
        port = sorted(os.path.join(d, p) for p in os.listdir(d) if p.endswith('.patch')) \
            if os.path.isdir(d) else []
        return (ensure_mainline(), overlay_files(False),
                [os.path.join(REPO, p) for p in MAINLINE_BASE_PATCHES] + port)
    return ensure_pristine(), overlay_files(kind != 'series'), patch_list(kind)


def tree_content(kind, tmp, extra=()):
    """Fill @tmp with the files of the tree @kind that differ from its
    pristine base (the overlay and what the patches change) and the
    pristine copies of @extra paths, all as the tree has them: the
    overlay, then every patch applied. Returns (the paths the tree
    changes, [a message for each patch that does not apply])."""
    pristine, files, patches = tree_sources(kind)
    touched = set(files)
    for p in patches:
        touched |= patched_paths(p)
    for rel in touched | set(extra):
        origin = files.get(rel) or os.path.join(pristine, rel)
        if os.path.exists(origin):
            os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
            shutil.copy(origin, os.path.join(tmp, rel))
    problems = []
    for p in patches:
        r = subprocess.run(['patch', '-p1', '-s', '--no-backup-if-mismatch', '-i', p],
                           cwd=tmp, capture_output=True, text=True)
        if r.returncode:
            problems.append(f'patch {os.path.relpath(p, REPO)} does not apply:\n{r.stdout}{r.stderr}')
    return touched, problems


def sync_tree(kind):
    """Bring cache/<kind>/src to pristine + overlay + patches, touching only changed files."""
    pristine = tree_sources(kind)[0]
    top = os.path.join(CACHE, kind)
    src = os.path.join(top, 'src')
    # src.ready holds the pristine tree's stamp: a base unpacked again (7.3's
    # when the archive moved on) makes the tree again. An empty one is a
    # tree made before the stamp was kept there.
    ready = os.path.join(top, 'src.ready')
    want = read(pristine + '.version', 'r')
    if not os.path.exists(ready) or read(ready, 'r') not in ('', want):
        log(f'creating the {kind} tree (about 20 s) ...')
        shutil.rmtree(src, ignore_errors=True)
        os.makedirs(top, exist_ok=True)
        run(['cp', '-a', os.path.realpath(pristine), src])
        with open(ready, 'w') as f:
            f.write(want)

    manifest_path = os.path.join(top, 'overlay.manifest')
    try:
        previous = set(read(manifest_path, 'r').split())
    except FileNotFoundError:
        previous = set()

    # Build the wanted content of every touched path in a scratch dir;
    # a path touched before and no longer gets its pristine bytes back.
    with tempfile.TemporaryDirectory() as tmp:
        touched, problems = tree_content(kind, tmp, previous)
        if problems:
            die(problems[0])
        changed = 0
        for rel in sorted(touched | previous):
            want = os.path.join(tmp, rel)
            dst = os.path.join(src, rel)
            if os.path.exists(want):
                changed += write_if_changed(dst, read(want))
                shutil.copymode(want, dst)
            elif os.path.exists(dst):
                os.unlink(dst)
                changed += 1
    with open(manifest_path, 'w') as f:
        f.write('\n'.join(sorted(touched)) + '\n')
    if changed:
        log(f'{kind} tree: {changed} file(s) updated from the repo')
    return src


def setup(kind):
    os.makedirs(CACHE, exist_ok=True)
    ensure_packages()
    return sync_tree(kind)


# The steps of the series and of the stable fixes: patch_list() takes the
# stable tree's patches from them, and Results the stable kernel's
# expectations, so they sit here, under both, and not with the series.
def patch_message(path):
    """(subject, body) from a patch file's own mail header, or None."""
    text = read(path, 'r')
    m = re.match(r'From: [^\n]*\nSubject: (?:\[PATCH\] )?([^\n]*)\n\n(.*?)\n---\n', text, re.S)
    return (m.group(1), m.group(2).strip() + '\n') if m else None


def series_steps(kind):
    """The steps of the series (kind "series"), of the stable fixes
    ("stable") or of the fixes for mainline ("fixes") from
    scripts/rbdev.d/<kind>/NN-*.msg, in order: each with
    its subject, changelog, repo files, patches, the upstream files it
    renames ("Renames: old new") or removes ("Removes: path"), and, for a
    fix, the tests it makes pass ("kind:name" as in
    tests/expected-results.txt). Renames and removals exist only between
    steps: the tree after the last step is pristine plus overlay plus
    patches, as sync_tree() makes it. A step that only names one patch
    takes that patch's own subject and changelog."""
    steps = []
    data = os.path.join(DATA, kind)
    for name in sorted(os.listdir(data)):
        if not name.endswith('.msg'):
            continue
        text = read(os.path.join(data, name), 'r')
        head, _, body = text.partition('\n\n')
        st = {'name': name, 'subject': None, 'files': [], 'patches': [], 'tests': [],
              'renames': [], 'removes': [], 'body': body.strip() + '\n'}
        for ln in head.splitlines():
            key, _, val = ln.partition(': ')
            if key == 'Subject':
                st['subject'] = val.strip()
            elif key in ('Files', 'Patches', 'Tests', 'Removes'):
                st[key.lower()] += val.split()
            elif key == 'Renames' and len(val.split()) == 2:
                st['renames'].append(tuple(val.split()))
            else:
                die(f'{name}: unknown header line {ln!r}')
        if st['subject'] is None:
            if len(st['patches']) != 1 or st['files'] or body.strip():
                die(f'{name}: no Subject, and not a step of one patch that has its own')
            msg = patch_message(os.path.join(REPO, st['patches'][0]))
            if not msg:
                die(f'{name}: {st["patches"][0]} has no mail header to take the changelog from')
            st['subject'], st['body'] = msg
        steps.append(st)
    return steps
