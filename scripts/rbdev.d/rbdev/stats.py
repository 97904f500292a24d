"""The benchmark's arithmetic and table: spreads, the number format, the
rows' order and which way each figure is better, the figures left out of
the table, the rank-sum and boot-permutation tests and a least-squares
line."""

import itertools
import math
import random
import re
import statistics


# Figures kept in bench.json but left out of the table.
GUEST_UNTABLED = re.compile(r'\.time_us$')


def spread_pct(vals, med):
    return (max(vals) - min(vals)) / med * 100 if med else (0.0 if max(vals) == min(vals) else None)


def fmt(v):
    if v == int(v):
        return f'{v:.0f}'
    return f'{v:.1f}' if abs(v) >= 10 else f'{v:.2f}'


# Table order of the guest figures (anything else follows by name).
GUEST_ORDER = ['rbm.events.ns_per_entry', 'rbm.events.hit', 'rbm.events.missed',
               'rbm.events.read', 'rbm.events.overruns', 'rbm.events.entries',
               'rbm.events.unaccounted', 'rbm.pages.ns_per_entry', 'rbm.pages.hit',
               'rbm.pages.missed', 'rbm.pages.read', 'rbm.pages.overruns',
               'rbm.pages.entries', 'rbm.pages.unaccounted', 'rbm.noreader.ns_per_entry',
               'rbm.noreader.hit', 'rbm.noreader.overruns', 'rbm.noreader.entries',
               'rbm.noreader.unaccounted', 'fn.captured_per_s',
               'fn.events_captured', 'fn.events_lost', 'fn.lost_pct', 'fn.workload_s',
               'fn.load_cpu_pct', 'fn.other_cpu_pct', 'fn.idle_cpu_pct']


def metric_key(name):
    """UML rows first, then the guest's instruction counts, then the guest's
    wall-clock rows and the instruction-counted guest benchmark."""
    for rank, prefix in ((1, 'icount.write.'), (1, 'icount.read.'), (2, 'guest.'),
                         (3, 'icount.')):
        if name.startswith(prefix):
            g = name[len(prefix):] if rank > 1 else name
            return (rank, GUEST_ORDER.index(g) if g in GUEST_ORDER else len(GUEST_ORDER), name)
    return (0, 0, name)


def better(name):
    """Which way is better for a figure: 'low', 'high', '0' (must be zero) or ''."""
    if name.endswith('.unaccounted'):
        return '0'
    if re.search(r'(ns_per_\w+|instr_per_\w+|\.missed|events_lost|lost_pct|workload_s)$', name):
        return 'low'
    if re.search(r'(per_sec|per_s|\.hit|\.read|events_captured)$', name):
        return 'high'
    return ''


def rank_sum_p(a, b):
    """Two-sided p of the Mann-Whitney U test of samples @a and @b (normal
    approximation with the tie correction; fair from about 8 values each)."""
    pooled = sorted((v, i) for i, v in enumerate(a + b))
    ranks = [0.0] * len(pooled)
    j = 0
    while j < len(pooled):
        k = j
        while k + 1 < len(pooled) and pooled[k + 1][0] == pooled[j][0]:
            k += 1
        for m in range(j, k + 1):
            ranks[pooled[m][1]] = (j + k) / 2 + 1
        j = k + 1
    n1, n2 = len(a), len(b)
    u = sum(ranks[:n1]) - n1 * (n1 + 1) / 2
    ties = sum(c ** 3 - c for c in
               (sum(1 for v, _ in pooled if v == x) for x in set(a + b)))
    n = n1 + n2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:
        return 1.0
    z = (abs(u - n1 * n2 / 2) - 0.5) / var ** 0.5
    return min(1.0, math.erfc(max(z, 0) / 2 ** 0.5))


def boot_permutation_p(got, f):
    """Two-sided p of the difference between the kernels' medians of
    figure @f in @got ({kind: [record]}, each record with its 'boot'),
    by permutation of whole boots between the kernels: records of one boot
    share its state and are not independent. Exact up to 20,000 splits."""
    boots = [[r[f] for r in got[k] if r['boot'] == n]
             for k in ('base', 'series') for n in sorted({r['boot'] for r in got[k]})]
    nb = len({r['boot'] for r in got['base']})
    observed = abs(statistics.median([v for b in boots[nb:] for v in b]) -
                   statistics.median([v for b in boots[:nb] for v in b]))
    idx = range(len(boots))
    if math.comb(len(boots), nb) <= 20000:
        splits = itertools.combinations(idx, nb)
    else:
        rnd = random.Random(1)
        splits = (rnd.sample(idx, nb) for _ in range(20000))
    hits = total = 0
    for pick in splits:
        one = set(pick)
        a = [v for i in idx if i in one for v in boots[i]]
        b = [v for i in idx if i not in one for v in boots[i]]
        total += 1
        hits += abs(statistics.median(b) - statistics.median(a)) >= observed - 1e-12
    return hits / total


def line_fit(xs, ys):
    """Least squares y = a + b x: (a, b)."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b
