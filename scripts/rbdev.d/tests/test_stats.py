# SPDX-License-Identifier: GPL-2.0
"""The benchmark's statistics: spreads, the rank-sum test, the permutation
of whole boots, the line fit, number formats and which way is better."""

import itertools
import math
import statistics
import unittest

from rbdev import stats


class RankSum(unittest.TestCase):
    def test_separated_samples(self):
        # U = 0 for n1 = n2 = 10: z = (50 - 0.5) / sqrt(100 / 12 * 21).
        z = 49.5 / math.sqrt(100 / 12 * 21)
        p = stats.rank_sum_p(list(range(1, 11)), list(range(11, 21)))
        self.assertAlmostEqual(p, math.erfc(z / math.sqrt(2)), places=9)
        self.assertLess(p, 0.001)

    def test_symmetric_and_equal(self):
        a, b = [3, 1, 4, 1, 5, 9, 2, 6], [5, 3, 5, 8, 9, 7, 9, 3]
        self.assertAlmostEqual(stats.rank_sum_p(a, b), stats.rank_sum_p(b, a))
        self.assertEqual(stats.rank_sum_p([2, 2, 2], [2, 2, 2]), 1.0)
        self.assertGreater(stats.rank_sum_p(a, a), 0.9)


class BootPermutation(unittest.TestCase):
    def got(self, base, series):
        return {k: [{'boot': n, 'f': v} for n, boot in enumerate(boots) for v in boot]
                for k, boots in (('base', base), ('series', series))}

    def test_exact_split(self):
        # One record a boot, 3 boots a kernel: 20 splits. The observed
        # difference of the medians is 5 - 2 = 3; only {1,2,3} | {4,5,6},
        # {1,2,4} | {3,5,6} and their mirrors reach it (counted below by
        # the definition, as a check of this comment).
        base, series = [1, 2, 3], [4, 5, 6]
        got = self.got([[v] for v in base], [[v] for v in series])
        vals = base + series
        hits = 0
        for pick in itertools.combinations(range(6), 3):
            a = [vals[i] for i in pick]
            b = [vals[i] for i in range(6) if i not in pick]
            hits += abs(statistics.median(b) - statistics.median(a)) >= 3
        self.assertEqual(hits, 4)
        self.assertAlmostEqual(stats.boot_permutation_p(got, 'f'), hits / 20)

    def test_records_of_a_boot_move_together(self):
        # Two records a boot: as separate records these would be 4 of 12.
        got = self.got([[1, 1], [2, 2], [3, 3]], [[4, 4], [5, 5], [6, 6]])
        self.assertAlmostEqual(stats.boot_permutation_p(got, 'f'), 4 / 20)

    def test_no_difference(self):
        got = self.got([[1, 2], [3, 4]], [[1, 2], [3, 4]])
        self.assertEqual(stats.boot_permutation_p(got, 'f'), 1.0)


class Small(unittest.TestCase):
    def test_line_fit(self):
        a, b = stats.line_fit([0, 1, 2, 3], [1, 3, 5, 7])
        self.assertAlmostEqual(a, 1)
        self.assertAlmostEqual(b, 2)
        self.assertEqual(stats.line_fit([2, 2], [1, 3]), (2.0, 0.0))

    def test_spread(self):
        self.assertAlmostEqual(stats.spread_pct([9, 10, 11], 10), 20.0)
        self.assertEqual(stats.spread_pct([0, 0], 0), 0.0)
        self.assertIsNone(stats.spread_pct([0, 1], 0))

    def test_fmt(self):
        self.assertEqual([stats.fmt(v) for v in (3.0, 12.34, 1.234)], ['3', '12.3', '1.23'])

    def test_better(self):
        self.assertEqual([stats.better(n) for n in ('guest.rbm.events.unaccounted',
                                                    'uml.write.ns_per_event', 'fn.lost_pct',
                                                    'guest.rbm.events.hit', 'fn.workload')],
                         ['0', 'low', 'low', 'high', ''])


if __name__ == '__main__':
    unittest.main()
