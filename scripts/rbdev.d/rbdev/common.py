"""Paths and helpers that every module uses: where the repo, its data
(scripts/rbdev.d) and the cache are, the machine's build lock, the
--verbose flag (common.verbose, which cli.main() sets: read it as
common.verbose, never import the name), and log(), die(), run(), read(),
write_if_changed(), and the repo's kernel files: overlay_files() and
patched_paths()."""

import fnmatch
import os
import re
import subprocess
import sys

from .config import BASE_GLOBS, KERNEL_DIRS


# This file is scripts/rbdev.d/rbdev/common.py.
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
DATA = os.path.join(REPO, 'scripts', 'rbdev.d')
CACHE = os.environ.get('RBDEV_CACHE') or os.path.join(
    os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'rbdev')
# The build lock is per machine, not per cache: a second cache (RBDEV_CACHE, say
# for a second worktree) must still not build at the same time as the first.
BUILD_LOCK = os.environ.get('RBDEV_LOCK') or os.path.join(
    os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'), 'rbdev', 'build.lock')

# rbdev -v: set by cli.main(); every module reads it as common.verbose.
verbose = False


def log(msg):
    print(f'rbdev: {msg}', flush=True)


def die(msg):
    print(f'rbdev: error: {msg}', file=sys.stderr, flush=True)
    sys.exit(2)


def run(cmd, cwd=None, env=None, quiet=False, check=True, logfile=None):
    """Run a command; with logfile, send its output there and show its tail on failure."""
    if verbose:
        log('$ ' + ' '.join(cmd))
    if logfile:
        with open(logfile, 'w') as f:
            r = subprocess.run(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
        if r.returncode and check:
            with open(logfile) as f:
                tail = f.readlines()[-40:]
            sys.stderr.write(''.join(tail))
            die(f'{cmd[0]} failed (exit {r.returncode}); full log: {logfile}')
        return r
    r = subprocess.run(cmd, cwd=cwd, env=env,
                       stdout=subprocess.DEVNULL if quiet else None)
    if r.returncode and check:
        die(f'command failed (exit {r.returncode}): {" ".join(cmd)}')
    return r


def write_if_changed(path, data):
    """Write bytes only when they differ, so make sees no new timestamp."""
    try:
        with open(path, 'rb') as f:
            if f.read() == data:
                return False
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + '.rbdev-tmp'
    with open(tmp, 'wb') as f:
        f.write(data)
    os.replace(tmp, path)
    return True


def read(path, mode='rb'):
    with open(path, mode) as f:
        return f.read()


def overlay_files(base):
    """Repo files to copy into a tree, as {kernel path: repo path}: with
    @base only the tests the base gets too (BASE_GLOBS)."""
    out = {}
    for top in KERNEL_DIRS:
        root = os.path.join(REPO, top)
        for dirpath, _, files in os.walk(root):
            for name in files:
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, REPO)
                if base and not any(fnmatch.fnmatch(rel, g) for g in BASE_GLOBS):
                    continue
                out[rel] = full
    return out


def patched_paths(patch):
    """The paths a patch file changes (its "+++ b/" lines)."""
    return set(re.findall(r'^\+\+\+ b/(\S+)', read(patch, 'r'), re.M))
