# SPDX-License-Identifier: GPL-2.0
"""The verdicts: tests/expected-results.txt read into columns, each result
judged by rank against its kernel's column, the columns of the kernels
with fixes (6.12's stable, 7.3's fixes for mainline), the summary, and
kunit.py's JSON walked into suite.case rows."""

import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stdout
from unittest import mock

from rbdev import results
from tests.helpers import FIXTURES, expected_repo

EXPECTED = """# a comment line
kunit-uml   s.a_base_bug   FAIL PASS # fixed by the series
kunit-uml   s.same         SKIP = # one CPU
ftrace      t/own.tc       ISOLATED = # boots alone
report      some_warn      ALLOWED FAIL # the base warns
too short line
"""


class ExpectedResults(unittest.TestCase):
    def test_columns(self):
        with expected_repo(EXPECTED):
            exp = results.load_expected()
        self.assertEqual(exp[('kunit-uml', 's.a_base_bug')],
                         {'base': 'FAIL', 'series': 'PASS', 'reason': 'fixed by the series'})
        self.assertEqual(exp[('kunit-uml', 's.same')]['series'], 'SKIP')
        self.assertEqual(exp[('report', 'some_warn')]['series'], 'FAIL')
        self.assertEqual(len(exp), 4)


class Judging(unittest.TestCase):
    def judge(self, kernel, rows, stable_tests=(), fixes_tests=()):
        tests = {'stable': stable_tests, 'fixes': fixes_tests}
        with expected_repo(EXPECTED), \
                mock.patch.object(results, 'series_steps',
                                  lambda kind: [{'tests': list(tests[kind])}]), \
                redirect_stdout(io.StringIO()):
            res = results.Results(kernel)
            for r in rows:
                res.add(*r)
        return [(r[0], r[1], r[4]) for r in res.rows]

    def test_by_rank(self):
        got = self.judge('series', [('kunit-uml', 's.a_base_bug', 'FAIL'),
                                    ('kunit-uml', 's.same', 'PASS'),
                                    ('kunit-uml', 's.same', 'FAIL'),
                                    ('kunit-uml', 'unlisted', 'SKIP'),
                                    ('kunit-uml', 'unlisted', 'TIMEOUT'),
                                    ('kunit-uml', 'unlisted', 'PASS')])
        self.assertEqual([ok for _, _, ok in got], [False, True, False, False, False, True])

    def test_base_column(self):
        got = self.judge('base', [('kunit-uml', 's.a_base_bug', 'FAIL'),
                                  ('report', 'some_warn', 'ALLOWED')])
        self.assertEqual([ok for _, _, ok in got], [True, True])

    def test_the_mainline_base_takes_the_base_column(self):
        got = self.judge('mainline-base', [('kunit-uml', 's.a_base_bug', 'FAIL'),
                                           ('report', 'some_warn', 'ALLOWED')])
        self.assertEqual(got, [('kunit-uml', 's.a_base_bug', True), ('report', 'some_warn', True)])

    def test_the_rewrite_on_mainline_takes_the_series_column(self):
        # The base column would take the FAIL.
        got = self.judge('mainline-series', [('kunit-uml', 's.a_base_bug', 'FAIL'),
                                             ('kunit-uml', 's.same', 'SKIP')])
        self.assertEqual(got, [('kunit-uml', 's.a_base_bug', False), ('kunit-uml', 's.same', True)])

    def test_stable_takes_the_series_column_only_for_its_fixes(self):
        got = self.judge('series', [('kunit-uml', 's.a_base_bug', 'FAIL', '', 'stable'),
                                    ('report', 'some_warn', 'ALLOWED', '', 'stable')],
                         stable_tests=['kunit-uml:s.a_base_bug'])
        self.assertEqual(got, [('kunit-uml-stable', 's.a_base_bug', False),
                               ('report-stable', 'some_warn', True)])

    def test_mainline_fixes_take_the_series_column_only_for_theirs(self):
        # A stable fix of the same test does not count on 7.3, nor 7.3's on 6.12.
        rows = [('kunit-uml', 's.a_base_bug', 'PASS'), ('kunit-uml', 's.same', 'FAIL')]
        got = self.judge('mainline-fixes', rows, stable_tests=['kunit-uml:s.same'],
                         fixes_tests=['kunit-uml:s.a_base_bug'])
        self.assertEqual(got, [('kunit-uml', 's.a_base_bug', True), ('kunit-uml', 's.same', False)])
        got = self.judge('mainline-fixes', [('kunit-uml', 's.a_base_bug', 'FAIL')],
                         fixes_tests=['kunit-uml:s.a_base_bug'])
        self.assertEqual(got, [('kunit-uml', 's.a_base_bug', False)])
        got = self.judge('stable', [('kunit-uml', 's.a_base_bug', 'FAIL')],
                         fixes_tests=['kunit-uml:s.a_base_bug'])
        self.assertEqual(got, [('kunit-uml', 's.a_base_bug', True)])

    def test_7_3_rows_in_the_test_command(self):
        # The test command runs 7.3's pair beside 6.12's stable kernel: the
        # rewrite's rows keep their kind, the base's say so.
        got = self.judge('series', [('kunit-uml', 's.a_base_bug', 'FAIL', '', 'mainline-base'),
                                    ('kunit-uml', 's.a_base_bug', 'FAIL', '', 'mainline-series'),
                                    ('kunit-uml', 's.a_base_bug', 'PASS', '', 'mainline-fixes')],
                         fixes_tests=['kunit-uml:s.a_base_bug'])
        self.assertEqual(got, [('kunit-uml-base', 's.a_base_bug', True),
                               ('kunit-uml', 's.a_base_bug', False),
                               ('kunit-uml-fixes', 's.a_base_bug', True)])

    def test_report_counts_and_json(self):
        with expected_repo(EXPECTED), redirect_stdout(io.StringIO()) as out:
            res = results.Results('series')
            res.add('kunit-uml', 's.a_base_bug', 'PASS')
            res.add('kunit-uml', 'x', 'FAIL')
            path = os.path.join(tempfile.mkdtemp(), 'r.json')
            ok = res.report(path)
        self.assertFalse(ok)
        self.assertTrue(out.getvalue().rstrip().endswith('1 passed, 1 failed'))
        with open(path) as f:
            rows = json.load(f)
        self.assertEqual([(r['name'], r['ok']) for r in rows],
                         [('s.a_base_bug', True), ('x', False)])


class KunitJson(unittest.TestCase):
    def test_cases_of_a_real_run(self):
        # kunit.py's JSON of the base under UML, 2026-12-07.
        cases = dict(results.kunit_json_cases(os.path.join(FIXTURES, 'base-uml-kunit.json')))
        self.assertEqual(cases['ring_buffer_wait.rbt_poll_after_swap'], 'FAIL')
        self.assertEqual(cases['ring_buffer_map.rbm_client_reads_at_once'], 'PASS')
        self.assertEqual(cases['ring_buffer_control.rbt_cpu_hotplug'], 'SKIP')
        self.assertEqual(len(cases), 91)   # "90 passed, 1 failed" that day
        self.assertTrue(all('.' in n for n in cases))


if __name__ == '__main__':
    unittest.main()
