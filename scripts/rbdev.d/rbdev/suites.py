"""Packages from Debian suites newer than this machine's (herd7 from forky,
the mainline kernel source from trixie-backports): apt pointed at one suite
through a sources file and lists of its own in the cache, the mirror taken
from this machine's apt configuration, the packages downloaded and never
installed. Nothing outside the cache changes."""

import glob
import os
import re
import subprocess

from .common import log, read


def apt_mirror():
    """(URI, keyring or None) of the first Debian main-suite source in this
    machine's apt configuration, one-line or deb822, or None."""
    found = []
    for path in ['/etc/apt/sources.list'] + sorted(glob.glob('/etc/apt/sources.list.d/*.list')):
        try:
            text = read(path, 'r')
        except OSError:
            continue
        for ln in text.splitlines():
            m = re.match(r'\s*deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)\s+(.*)', ln)
            if m:
                opts = dict(o.split('=', 1) for o in (m.group(1) or '').split() if '=' in o)
                found.append((m.group(2), [m.group(3)], m.group(4).split(), opts.get('signed-by')))
    for path in sorted(glob.glob('/etc/apt/sources.list.d/*.sources')):
        try:
            text = read(path, 'r')
        except OSError:
            continue
        for stanza in re.split(r'\n\s*\n', text):
            f = dict((k.strip().lower(), v.strip()) for k, v in
                     re.findall(r'^([\w-]+):[ \t]*(.*)$', stanza, re.M))
            if 'deb' not in f.get('types', '').split() or f.get('enabled', 'yes') == 'no':
                continue
            for uri in f.get('uris', '').split():
                found.append((uri, f.get('suites', '').split(), f.get('components', '').split(),
                              f.get('signed-by')))
    # The release itself, not its -security, -updates or -backports, and
    # first the one this machine runs: a third party's "main" comes after.
    codename = re.search(r'^VERSION_CODENAME=(\S+)', release_text(), re.M)
    for mine in (True, False):
        for uri, suites, comps, key in found:
            if 'main' in comps and any('-' not in s and '/' not in s and
                                       (not mine or codename and s == codename.group(1))
                                       for s in suites):
                return uri, (key if key and os.path.exists(key) else None)
    return None


def release_text():
    """/etc/os-release, or nothing."""
    try:
        return read('/etc/os-release', 'r')
    except OSError:
        return ''


class Suite:
    """apt for one suite, with its sources file, lists and downloads under
    @top (a directory of the cache). Each step returns why it failed (or
    None) beside its result, so that a caller without network can say so
    in its row or message."""

    def __init__(self, top, suite):
        self.top, self.suite = top, suite
        self.apt = os.path.join(top, 'apt')
        self.archives = os.path.join(self.apt, 'archives')

    def options(self):
        lists = os.path.join(self.apt, 'lists')
        opts = ['-q', '-o', f'Dir::Etc::sourcelist={os.path.join(self.apt, "sources.list")}',
                '-o', 'Dir::Etc::sourceparts=/dev/null', '-o', f'Dir::State::Lists={lists}',
                '-o', f'Dir::Cache::archives={self.archives}',
                '-o', 'Dir::Cache::pkgcache=', '-o', 'Dir::Cache::srcpkgcache=']
        if os.geteuid() == 0:
            opts += ['-o', 'APT::Sandbox::User=root']   # our lists are root's, not _apt's
        return opts

    def run_apt(self, step, cmd, cwd=None):
        """Run apt-get/apt-cache @cmd; (output, None) or (None, why)."""
        logfile = os.path.join(self.top, f'apt-{step}.log')
        with open(logfile, 'w') as f:
            r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
        lines = read(logfile, 'r').splitlines()
        # apt-get update exits 0 when a source cannot be reached: it only warns.
        errs = [ln.strip() for ln in lines if ln.startswith(('E:', 'W: Failed'))]
        if r.returncode or errs or any(ln.startswith('Err') for ln in lines):
            return None, (f'apt {step} from {self.suite} failed (exit {r.returncode}; no '
                          f'network?): {(errs or lines or ["no output"])[0][:300]} '
                          f'(log: {logfile})')
        return '\n'.join(lines), None

    def update(self):
        """Point the sources file at the suite and fetch its package lists."""
        mirror = apt_mirror()
        if not mirror:
            return 'no Debian source with a main suite in /etc/apt/sources.list{,.d}'
        uri, key = mirror
        for d in ('lists', 'archives'):
            os.makedirs(os.path.join(self.apt, d, 'partial'), exist_ok=True)
        with open(os.path.join(self.apt, 'sources.list'), 'w') as f:
            f.write(f'deb {f"[signed-by={key}] " if key else ""}{uri} {self.suite} main\n')
        log(f'apt-get update ({self.suite}, into {self.apt}) ...')
        return self.run_apt('update', ['apt-get', *self.options(), 'update'])[1]

    def versions(self, pkg):
        """([versions of @pkg the suite has, newest first], None) or (None, why)."""
        out, why = self.run_apt('madison', ['apt-cache', *self.options(), 'madison', pkg])
        if why:
            return None, why
        return [f[1].strip() for f in (ln.split('|') for ln in out.splitlines())
                if len(f) > 2 and f[0].strip() == pkg], None

    def download(self, pkgs):
        """Download @pkgs ("name" or "name=version") into the archives
        directory, emptied first; ([.deb paths], None) or (None, why)."""
        for deb in glob.glob(os.path.join(self.archives, '*.deb')):
            os.unlink(deb)
        log(f'apt-get download {" ".join(pkgs)} ({self.suite}) ...')
        _, why = self.run_apt('download', ['apt-get', *self.options(), 'download', *pkgs],
                              cwd=self.archives)
        if why:
            return None, why
        return sorted(glob.glob(os.path.join(self.archives, '*.deb'))), None


def deb_version(deb):
    """"<package> <version>" of a .deb file."""
    r = subprocess.run(['dpkg-deb', '-f', deb, 'Package', 'Version'], capture_output=True,
                       text=True)
    return ' '.join(r.stdout.split()[1::2])
