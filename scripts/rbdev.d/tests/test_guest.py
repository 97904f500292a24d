# SPDX-License-Identifier: GPL-2.0
"""Reading a guest: kernel reports on a console (and which ones
tests/expected-results.txt allows), the RBDEV-RESULT lines, the guest's
own speed, a guest that stopped answering in an ftracetest, and the rows
judge_guest() makes of it all."""

import io
import unittest
from contextlib import redirect_stdout
from unittest import mock

from rbdev import boot, guest, results, torture
from tests.helpers import expected_repo, fixture

# The base under UML, 2026-12-07: rbt_persistent_continue's WARN_ONCE in
# rb_get_reader_page, twice.
WARNING_LOG = 'base-uml-warning.log'


class Reports(unittest.TestCase):
    def test_a_real_warning(self):
        reps = boot.find_reports(fixture(WARNING_LOG))
        self.assertEqual(len(reps), 2)
        self.assertIn('WARNING: CPU: 0 PID: 122 at kernel/trace/ring_buffer.c:5384', reps[0])
        self.assertIn('rbt_persistent_continue+0x25b', reps[0])
        self.assertTrue(reps[0].rstrip().endswith('---[ end trace 0000000000000000 ]---'))

    def test_result_lines_are_not_reports(self):
        self.assertEqual(boot.find_reports('RBDEV-RESULT kunit x WARNING: no\nplain\n'), [])

    def test_allowed_by_expected_results(self):
        exp = 'report  rbt_persistent_continue  ALLOWED FAIL # the base warns\n'
        for kernel, left in (('base', 0), ('series', 2)):
            with expected_repo(exp), redirect_stdout(io.StringIO()):
                res = results.Results(kernel)
                reps = guest.unexpected_reports(res, kernel, fixture(WARNING_LOG))
            self.assertEqual(len(reps), left, kernel)
            rows = [r for r in res.rows if r[0] == 'report']
            self.assertEqual(len(rows), 1 if kernel == 'base' else 0, kernel)

    def test_kcsan_report_is_ours(self):
        ours = 'BUG: KCSAN: data-race in rb_reserve+0x1c/0x200 / rb_commit_set+0x5/0x40'
        theirs = 'BUG: KCSAN: data-race in tick_sched_do_timer+0x1/0x2 / ktime_get+0x3/0x4'
        canary = ours + '\n rbx_canary_writer+0x10/0x20'
        self.assertEqual([torture.kcsan_report_is_ours(r) for r in (ours, theirs, canary)],
                         [True, False, False])


LINES = ['junk RBDEV-RESULT mmap_test rb.fork PASS',
         'RBDEV-SPEED 90',
         'RBDEV-START ftrace 00basic/a.tc',
         'RBDEV-RESULT ftrace 00basic/a.tc PASS',
         'RBDEV-START ftrace 00basic/b.tc']


class ResultLines(unittest.TestCase):
    def test_parse(self):
        got = guest.parse_result_lines(LINES + ['RBDEV-RESULT poll_test rbp.x FAIL'])
        self.assertEqual(got, {('mmap_test', 'rb.fork'): 'PASS',
                               ('ftrace', '00basic/a.tc'): 'PASS',
                               ('poll_test', 'rbp.x'): 'FAIL'})

    def test_slowness(self):
        self.assertEqual(guest.guest_slowness(LINES), 90 / guest.GUEST_SPEED_QUIET)
        self.assertEqual(guest.guest_slowness(['RBDEV-SPEED 3']), 1.0)
        self.assertEqual(guest.guest_slowness([]), 1.0)


class Resume(unittest.TestCase):
    def test_a_stalled_ftracetest_costs_only_itself(self):
        tests = ['00basic/a.tc', '00basic/b.tc', '00basic/c.tc']
        boots = []

        def fake_boot(bdir, tag, mode, timeout, files, stall, extra_append):
            boots.append(extra_append)
            return 'second console', ['RBDEV-RESULT ftrace 00basic/c.tc PASS', 'RBDEV-DONE'], False
        why = {}
        with mock.patch.object(guest, 'guest_boot', fake_boot), redirect_stdout(io.StringIO()):
            console, lines, timed_out = guest.resume_ftrace(
                '/tmp', 'guest', tests, 60, lambda lines: 1, 'first console', LINES, True, why)
        got = guest.parse_result_lines(lines)
        self.assertEqual(got[('ftrace', '00basic/b.tc')], 'TIMEOUT')
        self.assertEqual(got[('ftrace', '00basic/c.tc')], 'PASS')
        self.assertEqual(len(boots), 1)
        self.assertIn('rbdev.ftskip=2', boots[0])
        self.assertIn('00basic/b.tc', why)
        self.assertFalse(timed_out)
        self.assertEqual(console, 'first console\nsecond console')

    def test_done_guest_is_not_resumed(self):
        with mock.patch.object(guest, 'guest_boot', None):
            _, lines, timed_out = guest.resume_ftrace('/tmp', 'g', ['00basic/b.tc'], 60, None, '',
                                                      LINES + ['RBDEV-DONE'], False, {})
        self.assertFalse(timed_out)
        self.assertNotIn('TIMEOUT', ' '.join(lines))


class Judge(unittest.TestCase):
    def test_rows_of_a_guest(self):
        lines = LINES[:4] + ['RBDEV-RESULT poll_test rbp.snapshot_swap_keeps_poller PASS',
                             'RBDEV-DONE']
        with expected_repo(''), redirect_stdout(io.StringIO()), \
                mock.patch.object(guest, 'kunit_from_console', lambda *a: None):
            res = results.Results('series')
            guest.judge_guest('series', '/tmp', 'Ring buffer PASSED!\n', lines, False, res,
                              'debug', ['00basic/a.tc', '00basic/b.tc'])
        rows = {(r[0], r[1]): (r[2], r[4]) for r in res.rows}
        self.assertEqual(rows[('debug', 'RING_BUFFER_STARTUP_TEST')], ('PASS', True))
        self.assertEqual(rows[('mmap_test-debug', 'rb.fork')], ('PASS', True))
        self.assertEqual(rows[('poll_test-debug', 'rbp.snapshot_swap_keeps_poller')],
                         ('PASS', True))
        self.assertEqual(rows[('ftrace-debug', '00basic/b.tc')], ('MISSING', False))
        self.assertEqual(rows[('debug', 'console-clean')], ('PASS', True))
        self.assertEqual(rows[('debug', 'completed')], ('PASS', True))


if __name__ == '__main__':
    unittest.main()
