"""Builds: ccache's environment, the build dirs inside each tree, the
machine's build lock (@build_lock: one kernel build at a time) and the
x86_64 guest kernels (x86, x86-debug, x86-kcsan, x86-nopoints), their
config checked against the fragments."""

import fcntl
import functools
import hashlib
import os
import re
import shutil
import time

from .common import BUILD_LOCK, CACHE, DATA, die, log, read, run
from .config import KCSAN_RING_BUFFER
from .setup import setup


def ccache_env(alone=False):
    """The environment of a build through ccache. @alone: a build that shares
    no object with another configuration (debug, KCSAN, i386, arm64, ARMv5):
    ccache then runs in depend mode, which takes the dependencies from the
    compiler's -MMD file instead of running the preprocessor first, so a miss
    costs one compile, not a compile and a preprocessing (about a fifth more,
    measured on kernel/sched/core.c); a hit needs the same headers, which is
    all such a build can hit anyway. The others keep the preprocessed mode,
    through which the base's x86 build hits the series' objects although the
    two .configs differ in CONFIG_RING_BUFFER_TEST_POINTS."""
    env = dict(os.environ)
    env.setdefault('CCACHE_DIR', os.path.join(CACHE, 'ccache'))
    # Relative paths below the cache let base and series share objects.
    env.setdefault('CCACHE_BASEDIR', CACHE)
    env.setdefault('CCACHE_MAXSIZE', '20G')
    env.setdefault('CCACHE_SLOPPINESS', 'time_macros')
    if alone:
        env.setdefault('CCACHE_DEPEND', '1')
    return env


def jobs():
    return str(os.cpu_count() or 2)


def build_dir(kind, variant):
    """Build dirs sit directly inside the source tree, so kbuild uses the
    relative srctree '..' and base and series compile with identical paths:
    ccache then serves the series every object the overlay does not change."""
    return os.path.join(CACHE, kind, 'src', f'build-{variant}')


def build_lock(fn):
    """Run @fn holding the machine's build lock: the machine has two cores, so
    two kernel builds (say, a helper's base build and a series build) must
    not run at once. A second caller waits and says so."""
    @functools.wraps(fn)
    def locked(*a, **kw):
        os.makedirs(os.path.dirname(BUILD_LOCK), exist_ok=True)
        with open(BUILD_LOCK, 'a') as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                log(f'{fn.__name__}: waiting for another rbdev build to finish ...')
                fcntl.flock(f, fcntl.LOCK_EX)
            return fn(*a, **kw)
    return locked


@build_lock
def build_x86(kind, variant='x86'):
    """Build bzImage, modules and uapi headers; returns the build dir."""
    src = setup(kind)
    bdir = build_dir(kind, variant)
    os.makedirs(bdir, exist_ok=True)
    env = ccache_env(alone=variant in ('x86-debug', 'x86-kcsan'))
    frags = [os.path.join(DATA, 'configs', 'x86_64-qemu.config')]
    if variant in ('x86-debug', 'x86-kcsan', 'x86-nopoints'):
        frags.append(os.path.join(DATA, 'configs', f'x86_64-{variant[4:]}.config'))
    # Regenerate the config only when a fragment changed: keeps make incremental.
    fhash = hashlib.sha256(b''.join(read(f) for f in frags)).hexdigest()
    stamp = os.path.join(bdir, '.rbdev-config')
    if not os.path.exists(stamp) or read(stamp, 'r') != fhash:
        log(f'configuring {kind}/{variant} (tinyconfig + {", ".join(os.path.basename(f) for f in frags)})')
        make = ['make', '-C', src, f'O={bdir}', 'ARCH=x86_64']
        run(make + ['tinyconfig'], env=env, logfile=os.path.join(bdir, 'config.log'))
        run([os.path.join(src, 'scripts/kconfig/merge_config.sh'), '-m', '-O', bdir,
             os.path.join(bdir, '.config')] + frags, cwd=src, env=env,
            logfile=os.path.join(bdir, 'merge.log'))
        run(make + ['olddefconfig'], env=env, logfile=os.path.join(bdir, 'olddefconfig.log'))
        check_config(bdir, frags, kind)
        with open(stamp, 'w') as f:
            f.write(fhash)
    t0 = time.time()
    log(f'building {kind}/{variant} (cold about 6 min, warm seconds; log: {bdir}/build.log) ...')
    run(['make', '-C', src, f'O={bdir}', 'ARCH=x86_64', 'CC=ccache gcc', f'-j{jobs()}',
         *(KCSAN_RING_BUFFER if variant == 'x86-kcsan' else ()),
         'bzImage', 'modules', 'headers_install'], env=env,
        logfile=os.path.join(bdir, 'build.log'))
    mods = os.path.join(bdir, 'modroot')
    shutil.rmtree(mods, ignore_errors=True)
    run(['make', '-C', src, f'O={bdir}', 'ARCH=x86_64', f'INSTALL_MOD_PATH={mods}',
         'INSTALL_MOD_STRIP=1', 'modules_install'], env=env,
        logfile=os.path.join(bdir, 'modules_install.log'))
    log(f'built {kind}/{variant} in {time.time() - t0:.0f} s')
    return bdir


def check_config(bdir, frags, kind):
    """Every option a fragment asks for must be in the final config."""
    have = read(os.path.join(bdir, '.config'), 'r')
    lost = []
    for frag in frags:
        for ln in read(frag, 'r').splitlines():
            m = re.match(r'^(CONFIG_\w+)=(.*)$', ln)
            if m and f'{m.group(1)}={m.group(2)}' not in have:
                lost.append(ln)
            m = re.match(r'^# (CONFIG_\w+) is not set$', ln)
            if m and re.search(r'^' + m.group(1) + r'=', have, re.M):
                lost.append(ln)
    if lost:
        die(f'config options dropped by Kconfig in {bdir}: {" ".join(lost)}')
