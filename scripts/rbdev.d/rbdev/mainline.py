"""The mainline base: Debian's linux-source-7.3 fetched from its suite into
the cache, the pinned version or, when the archive has moved on, the newest
7.3.y whose files that the series replaces or patches are byte-identical
to the pinned version's (MAINLINE_SUMS); unpacked once into
cache/pristine-7.3, never modified afterwards. Never a silent other base."""

import fcntl
import glob
import hashlib
import os
import re
import shutil
import subprocess

from .common import CACHE, REPO, die, log, overlay_files, patched_paths, read
from .config import (
    MAINLINE_BASE_FILES, MAINLINE_BASE_PATCHES, MAINLINE_FIXES_DIR, MAINLINE_PKG, MAINLINE_SERIES_DIR,
    MAINLINE_SUITE, MAINLINE_SUMS, MAINLINE_VERSION, MAINLINE_WATCHED)
from .suites import Suite

MAINLINE_DIR = os.path.join(CACHE, 'mainline')
PRISTINE = os.path.join(CACHE, 'pristine-7.3')


def watched_paths():
    """The paths of the base the series replaces, patches or adds:
    MAINLINE_WATCHED, every file of the repo's overlay (the rewrite on 7.3
    has them all) and what MAINLINE_BASE_PATCHES, the fixes for mainline
    and the rewrite's patches for 7.3 change. A path the base lacks is
    recorded as absent: a 7.3.y that adds it would have it overwritten."""
    paths = set(MAINLINE_WATCHED) | set(MAINLINE_BASE_FILES) | set(overlay_files(False))
    for p in [os.path.join(REPO, p) for p in MAINLINE_BASE_PATCHES] + \
            glob.glob(os.path.join(REPO, MAINLINE_FIXES_DIR, '*.patch')) + \
            glob.glob(os.path.join(REPO, MAINLINE_SERIES_DIR, '*.patch')):
        paths |= patched_paths(p)
    return sorted(paths)


def parse_sums(text):
    """(version, {path: sha256, or None for a path the base lacks}) of a
    checksum file: a "# <package> <version>" line, then sha256sum(1)
    lines, with "absent" for the checksum of a path the base lacks."""
    version, sums = None, {}
    for ln in text.splitlines():
        m = re.match(r'#\s*\S+\s+(\S+)\s*$', ln)
        if m and version is None:
            version = m.group(1)
        m = re.match(r'([0-9a-f]{64}|absent)\s+\*?(\S+)$', ln)
        if m:
            sums[m.group(2)] = None if m.group(1) == 'absent' else m.group(1)
    return version, sums


def file_sums(root, paths):
    """{path: sha256 of root/path, or None if it is missing}."""
    out = {}
    for p in paths:
        try:
            out[p] = hashlib.sha256(read(os.path.join(root, p))).hexdigest()
        except FileNotFoundError:
            out[p] = None
    return out


def sums_differ(recorded, actual):
    """The paths whose checksum in @actual is not the one @recorded has
    (missing on either side counts as different)."""
    return sorted(p for p in set(recorded) | set(actual) if recorded.get(p) != actual.get(p))


def pick_version(pinned, available):
    """The version to fetch from the suite's @available versions
    (apt-cache madison: newest first): @pinned, else the newest, else None."""
    if pinned in available:
        return pinned
    return available[0] if available else None


def unpack(deb, dst):
    """The kernel tree of a linux-source .deb into @dst; its Makefile's
    version ("7.3.4")."""
    tmp = dst + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    log(f'unpacking {os.path.basename(deb)} into {dst} (about 40 s) ...')
    tarball = f'./usr/src/{MAINLINE_PKG}.tar.xz'
    sh = (f'dpkg-deb --fsys-tarfile "$1" | tar -xO {tarball} | tar -xJ -C "$2"')
    r = subprocess.run(['sh', '-c', sh, 'sh', deb, tmp], capture_output=True, text=True)
    if r.returncode:
        die(f'unpacking {deb} failed: {r.stderr.strip()[-300:]}')
    top = os.path.join(tmp, MAINLINE_PKG)
    mk = read(os.path.join(top, 'Makefile'), 'r')
    v = '.'.join(re.search(rf'^{k} = (\d+)', mk, re.M).group(1)
                 for k in ('VERSION', 'PATCHLEVEL', 'SUBLEVEL'))
    shutil.rmtree(dst, ignore_errors=True)
    os.rename(top, dst)
    shutil.rmtree(tmp)
    return v


def hold_to_sums(version, remove=False):
    """Stop unless PRISTINE (Debian @version) is the tested base as
    MAINLINE_SUMS has it now: every file the series replaces or patches
    listed, each byte-identical. @remove: delete a tree that differs
    before stopping (a fresh download; a tree in use stays, for the
    message to be acted on). Returns how many paths it compared."""
    recorded_version, recorded = parse_sums(read(os.path.join(REPO, MAINLINE_SUMS), 'r'))
    unlisted = sorted(set(watched_paths()) - set(recorded))
    if unlisted:
        die(f'{MAINLINE_SUMS} lacks {", ".join(unlisted)}, which the series replaces or '
            f'patches: on the pinned {MAINLINE_VERSION}, "rbdev mainline --pin" writes it')
    changed = sums_differ(recorded, file_sums(PRISTINE, recorded))
    if changed:
        if remove:
            shutil.rmtree(PRISTINE)
        die(f'{MAINLINE_PKG} {version}: files the series replaces or patches differ from '
            f'the tested {recorded_version}\'s ({MAINLINE_SUMS}): {", ".join(changed)}. Port '
            f'the series to it, then "rbdev mainline --pin"')
    return len(recorded)


def fetch(check=True):
    """Fetch and unpack the base; returns (Debian version, Linux version).
    @check: hold it against MAINLINE_SUMS (rbdev mainline --pin, which
    writes the file, fetches the pinned version without)."""
    suite = Suite(MAINLINE_DIR, MAINLINE_SUITE)
    why = suite.update()
    available, why = (None, why) if why else suite.versions(MAINLINE_PKG)
    if why:
        die(f'the mainline base cannot be fetched: {why}')
    version = pick_version(MAINLINE_VERSION, available if check else
                           [v for v in available if v == MAINLINE_VERSION])
    if not version:
        die(f'the mainline base cannot be fetched: {MAINLINE_SUITE} has '
            f'{MAINLINE_PKG} {", ".join(available) or "in no version"}'
            + ('' if check else f', not the pinned {MAINLINE_VERSION}'))
    debs, why = suite.download([f'{MAINLINE_PKG}={version}'])
    if why or len(debs) != 1:
        die(f'the mainline base cannot be fetched: {why or f"apt downloaded {len(debs)} files"}')
    kernel = unpack(debs[0], PRISTINE)
    if kernel != version.split('-')[0]:
        die(f'{os.path.basename(debs[0])} holds Linux {kernel}, not {version.split("-")[0]}')
    os.unlink(debs[0])
    if not check:
        return version, kernel
    n = hold_to_sums(version, remove=True)
    if version != MAINLINE_VERSION:
        log(f'the archive no longer has {MAINLINE_PKG} {MAINLINE_VERSION}: using {version} '
            f'(Linux {kernel}), whose {n} files the series replaces or patches '
            f'are byte-identical to the tested version\'s')
    return version, kernel


def ensure_mainline(check=True):
    """The unpacked mainline base (cache/pristine-7.3), fetched once; says
    which version it is whenever that is not the pinned one. Its stamp
    says the version and the pin it was fetched for: a tree fetched for
    another pin is fetched again (the archive may have the new one), and
    a tree of another version than the pinned one is held to the
    checksum file on every call, since the file may have changed since."""
    stamp = PRISTINE + '.version'
    os.makedirs(MAINLINE_DIR, exist_ok=True)
    with open(os.path.join(MAINLINE_DIR, 'lock'), 'w') as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)   # a second rbdev waits, then finds it ready
        fields = read(stamp, 'r').split() if os.path.exists(stamp) else []
        whole = os.path.isfile(os.path.join(PRISTINE, 'Makefile'))
        if fields and fields[0] != MAINLINE_VERSION and fields[2:] != [MAINLINE_VERSION]:
            log(f'the unpacked base is {MAINLINE_PKG} {fields[0]}, fetched for another pin '
                f'than {MAINLINE_VERSION}: fetching again')
            fields = []
        if not fields or not whole:
            fields = [*fetch(check), MAINLINE_VERSION]
            with open(stamp, 'w') as f:
                f.write(' '.join(fields) + '\n')
        elif fields[0] != MAINLINE_VERSION and check:
            hold_to_sums(fields[0])
    version, kernel = fields[:2]
    if version != MAINLINE_VERSION:
        log(f'mainline base: {MAINLINE_PKG} {version} (Linux {kernel}), not the pinned '
            f'{MAINLINE_VERSION}; checked identical in every file the series replaces or patches')
    return PRISTINE


def pin():
    """Write MAINLINE_SUMS from the unpacked base, which must be the pinned
    version: the checksums of every file the series replaces or patches."""
    ensure_mainline(check=False)
    version, kernel = read(PRISTINE + '.version', 'r').split()[:2]
    if version != MAINLINE_VERSION:
        die(f'the unpacked base is {version}, not the pinned {MAINLINE_VERSION}: set '
            f'MAINLINE_VERSION in config.py to the version the series was tested on first')
    watched = watched_paths()
    sums = file_sums(PRISTINE, watched)
    with open(os.path.join(REPO, MAINLINE_SUMS), 'w') as f:
        f.write(f'# {MAINLINE_PKG} {version}\n')
        f.write(f'# Linux {kernel}: the paths of the base the series replaces, patches or adds '
                f'("absent": the base lacks it; rbdev mainline --pin)\n')
        for p in watched:
            f.write(f'{sums[p] or "absent"}  {p}\n')
    log(f'{MAINLINE_SUMS}: {len(watched)} files of {MAINLINE_PKG} {version}')
