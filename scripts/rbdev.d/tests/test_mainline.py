# SPDX-License-Identifier: GPL-2.0
"""The mainline base: which version is fetched, and that a version other
than the pinned one is used only when every file the series replaces or
patches is byte-identical to the pinned version's; the mirror a suite is
fetched from."""

import hashlib
import os
import shutil
import tempfile
import unittest
from unittest import mock

from rbdev import common, mainline, suites
from rbdev.config import MAINLINE_BASE_FILES, MAINLINE_SUMS, MAINLINE_VERSION


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


class Versions(unittest.TestCase):
    def test_the_pinned_version_when_the_suite_has_it(self):
        self.assertEqual(mainline.pick_version('7.3.4-1', ['7.3.5-1', '7.3.4-1']), '7.3.4-1')

    def test_else_the_newest(self):
        self.assertEqual(mainline.pick_version('7.3.4-1', ['7.3.6-1', '7.3.5-1']), '7.3.6-1')

    def test_none_at_all(self):
        self.assertIsNone(mainline.pick_version('7.3.4-1', []))


class Sums(unittest.TestCase):
    def test_the_repo_file_names_the_pinned_version(self):
        with open(os.path.join(common.REPO, MAINLINE_SUMS)) as f:
            version, sums = mainline.parse_sums(f.read())
        self.assertEqual(version, MAINLINE_VERSION)
        self.assertIn('kernel/trace/ring_buffer.c', sums)
        self.assertIn('include/linux/ring_buffer.h', sums)

    def test_every_watched_file_is_listed(self):
        # What the base patches change, the API files and the suite's own,
        # which the base lacks, as the pin writes them.
        with open(os.path.join(common.REPO, MAINLINE_SUMS)) as f:
            _, sums = mainline.parse_sums(f.read())
        self.assertEqual(sorted(sums), mainline.watched_paths())
        self.assertEqual([p for p in MAINLINE_BASE_FILES if sums[p] is not None], [])

    def test_differences(self):
        a = {'x': '1', 'y': '2'}
        self.assertEqual(mainline.sums_differ(a, dict(a)), [])
        self.assertEqual(mainline.sums_differ(a, {'x': '1', 'y': '3'}), ['y'])
        self.assertEqual(mainline.sums_differ(a, {'x': '1', 'y': None}), ['y'])


class Fetch(unittest.TestCase):
    """fetch() with the archive and the unpacking faked: the tree the
    fake .deb unpacks to has ring_buffer.c as @text."""

    def run_fetch(self, text, available, kernel=None, watched=('kernel/trace/ring_buffer.c',)):
        d = tempfile.mkdtemp(prefix='rbdev-test-')
        self.addCleanup(shutil.rmtree, d)
        repo, pristine = os.path.join(d, 'repo'), os.path.join(d, 'pristine')
        os.makedirs(os.path.dirname(os.path.join(repo, MAINLINE_SUMS)))
        with open(os.path.join(repo, MAINLINE_SUMS), 'w') as f:
            f.write(f'# linux-source-7.3 {MAINLINE_VERSION}\n'
                    f'{sha("tested")}  kernel/trace/ring_buffer.c\n')

        def unpack(deb, dst):
            os.makedirs(os.path.join(dst, 'kernel', 'trace'))
            with open(os.path.join(dst, 'kernel', 'trace', 'ring_buffer.c'), 'w') as f:
                f.write(text)
            return kernel or version_fetched[0].split('=')[1].split('-')[0]
        version_fetched = []
        suite = mock.Mock()
        suite.update.return_value = None
        suite.versions.return_value = (available, None)
        suite.download.side_effect = lambda pkgs: (version_fetched.extend(pkgs) or
                                                   ([os.path.join(d, 'x.deb')], None))
        open(os.path.join(d, 'x.deb'), 'w').close()
        with mock.patch.object(mainline, 'REPO', repo), \
                mock.patch.object(mainline, 'PRISTINE', pristine), \
                mock.patch.object(mainline, 'Suite', return_value=suite), \
                mock.patch.object(mainline, 'unpack', unpack), \
                mock.patch.object(mainline, 'watched_paths', return_value=list(watched)), \
                mock.patch.object(mainline, 'log') as log:
            got = mainline.fetch()
        return got, suite, log

    def test_pinned(self):
        got, suite, log = self.run_fetch('tested', ['7.3.9-1', MAINLINE_VERSION])
        self.assertEqual(got, (MAINLINE_VERSION, MAINLINE_VERSION.split('-')[0]))
        suite.download.assert_called_with([f'linux-source-7.3={MAINLINE_VERSION}'])
        log.assert_not_called()

    def test_newer_and_identical_says_so(self):
        got, _, log = self.run_fetch('tested', ['7.3.9-1'])
        self.assertEqual(got, ('7.3.9-1', '7.3.9'))
        self.assertIn('no longer has', log.call_args[0][0])

    def test_newer_and_changed_stops_naming_the_file(self):
        with mock.patch.object(mainline, 'die', side_effect=SystemExit) as die:
            with self.assertRaises(SystemExit):
                self.run_fetch('changed', ['7.3.9-1'])
        self.assertIn('kernel/trace/ring_buffer.c', die.call_args[0][0])

    def test_a_path_the_sums_lack_stops(self):
        with mock.patch.object(mainline, 'die', side_effect=SystemExit) as die:
            with self.assertRaises(SystemExit):
                self.run_fetch('tested', [MAINLINE_VERSION],
                               watched=['kernel/trace/ring_buffer.c', 'kernel/trace/trace.c'])
        self.assertIn('lacks kernel/trace/trace.c', die.call_args[0][0])

    def test_the_tarball_must_hold_the_version_it_says(self):
        with mock.patch.object(mainline, 'die', side_effect=SystemExit) as die:
            with self.assertRaises(SystemExit):
                self.run_fetch('tested', ['7.3.9-1'], kernel='7.3.8')
        self.assertIn('7.3.8', die.call_args[0][0])


class Stamp(unittest.TestCase):
    """ensure_mainline() on a tree already unpacked: the stamp is held to
    the pin and the checksum file as they are now, not as they were."""

    def ensure(self, stamp, text, pin=MAINLINE_VERSION):
        d = tempfile.mkdtemp(prefix='rbdev-test-')
        self.addCleanup(shutil.rmtree, d)
        repo, pristine = os.path.join(d, 'repo'), os.path.join(d, 'pristine')
        os.makedirs(os.path.dirname(os.path.join(repo, MAINLINE_SUMS)))
        with open(os.path.join(repo, MAINLINE_SUMS), 'w') as f:
            f.write(f'# linux-source-7.3 {pin}\n{sha("tested")}  kernel/trace/ring_buffer.c\n')
        os.makedirs(os.path.join(pristine, 'kernel', 'trace'))
        for name, body in (('Makefile', ''), ('kernel/trace/ring_buffer.c', text)):
            with open(os.path.join(pristine, name), 'w') as f:
                f.write(body)
        with open(pristine + '.version', 'w') as f:
            f.write(stamp + '\n')
        with mock.patch.object(mainline, 'REPO', repo), \
                mock.patch.object(mainline, 'PRISTINE', pristine), \
                mock.patch.object(mainline, 'MAINLINE_DIR', d), \
                mock.patch.object(mainline, 'MAINLINE_VERSION', pin), \
                mock.patch.object(mainline, 'watched_paths',
                                  return_value=['kernel/trace/ring_buffer.c']), \
                mock.patch.object(mainline, 'fetch', return_value=(pin, '7.3.9')) as fetch, \
                mock.patch.object(mainline, 'die', side_effect=SystemExit) as die, \
                mock.patch.object(mainline, 'log'):
            try:
                mainline.ensure_mainline()
            except SystemExit:
                pass
        return fetch, die

    def test_the_pinned_tree_is_used_offline(self):
        fetch, die = self.ensure(f'{MAINLINE_VERSION} 7.3.4', 'anything')
        fetch.assert_not_called()
        die.assert_not_called()

    def test_a_tree_of_another_pin_is_fetched_again(self):
        fetch, _ = self.ensure('7.3.2-1 7.3.2', 'tested')
        fetch.assert_called_once()

    def test_another_version_is_checked_against_the_sums_of_now(self):
        fetch, die = self.ensure(f'7.3.6-1 7.3.6 {MAINLINE_VERSION}', 'changed since')
        fetch.assert_not_called()
        self.assertIn('kernel/trace/ring_buffer.c', die.call_args[0][0])

    def test_another_version_still_identical_is_used(self):
        fetch, die = self.ensure(f'7.3.6-1 7.3.6 {MAINLINE_VERSION}', 'tested')
        fetch.assert_not_called()
        die.assert_not_called()


class Mirror(unittest.TestCase):
    def mirror(self, files, release=''):
        def fake_glob(pattern):
            return sorted(p for p in files if p.endswith(pattern.rsplit('*', 1)[-1])
                          and p.startswith(pattern.split('*')[0]))

        def fake_read(path, mode='rb'):
            if path not in files:
                raise OSError(path)
            return files[path]
        with mock.patch.object(suites.glob, 'glob', fake_glob), \
                mock.patch.object(suites, 'read', fake_read), \
                mock.patch.object(suites.os.path, 'exists', return_value=True), \
                mock.patch.object(suites, 'release_text', return_value=release):
            return suites.apt_mirror()

    def test_one_line_skips_security_and_backports(self):
        got = self.mirror({'/etc/apt/sources.list':
                           'deb http://sec.example/debian-security bookworm-security main\n'
                           'deb [signed-by=/k.gpg] http://m.example/debian bookworm main\n'})
        self.assertEqual(got, ('http://m.example/debian', '/k.gpg'))

    def test_this_machines_release_before_a_third_party(self):
        got = self.mirror({'/etc/apt/sources.list':
                           'deb http://other.example/repo nodistro main\n'
                           'deb http://m.example/debian bookworm main\n'},
                          release='ID=debian\nVERSION_CODENAME=bookworm\n')
        self.assertEqual(got, ('http://m.example/debian', None))

    def test_deb822(self):
        got = self.mirror({'/etc/apt/sources.list.d/debian.sources':
                           'Types: deb\nURIs: http://m.example/debian\n'
                           'Suites: trixie trixie-updates\nComponents: main\n'
                           'Signed-By: /k.gpg\n'})
        self.assertEqual(got, ('http://m.example/debian', '/k.gpg'))


if __name__ == '__main__':
    unittest.main()
