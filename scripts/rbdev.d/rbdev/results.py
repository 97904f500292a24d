"""Results: the rows of a run judged against tests/expected-results.txt
(a column per kernel; a kernel with fixes, from their Tests:), the
summary and JSON file a command ends with, and the cases of a kunit.py
JSON file."""

import json
import os

from .common import REPO, log, read
from .config import FIXES_OF, MAINLINE_FIXES_TREE, MAINLINE_SERIES_TREE, MAINLINE_TREE
from .setup import series_steps


# How a row of another kernel than the run's is named: its kind and this.
# 7.3's rows have kinds of their own (kunit-uml-7.3, ...), and the rewrite's
# are the plain ones of them.
ROW_SUFFIX = {MAINLINE_TREE: '-base', MAINLINE_FIXES_TREE: '-fixes', MAINLINE_SERIES_TREE: ''}

RANK = {'PASS': 5, 'ALLOWED': 5, 'ISOLATED': 1, 'XFAIL': 4, 'UNSUPPORTED': 4, 'UNTESTED': 4, 'SKIP': 4,
        'UNRESOLVED': 2, 'FAIL': 1, 'ERROR': 1, 'TIMEOUT': 0, 'MISSING': 0}


def load_expected():
    """tests/expected-results.txt: kind name base-result series-result # reason."""
    exp = {}
    path = os.path.join(REPO, 'tests', 'expected-results.txt')
    for ln in read(path, 'r').splitlines():
        body, _, reason = ln.partition('#')
        f = body.split()
        if len(f) < 4:
            continue
        kind, name, base, series = f[:4]
        exp[(kind, name)] = {'base': base, 'series': base if series == '=' else series,
                             'reason': reason.strip()}
    return exp


class Results:
    def __init__(self, kernel):
        self.kernel = kernel
        self.rows = []   # (kind, name, got, expected, ok, reason)
        self.expected = load_expected()
        self.fixed = {}   # series of fixes: the tests its steps name

    def kernel_column(self, kind, name, kernel):
        """The column of @kernel. A base with a series of fixes (FIXES_OF:
        6.12's stable fixes, 7.3's fixes for mainline) is expected what the
        base is, except in the tests a fix names (its step's Tests:), where
        it is expected what the series is."""
        if kernel in (MAINLINE_TREE, MAINLINE_SERIES_TREE):
            # 7.3's rows have kinds of their own
            return 'base' if kernel == MAINLINE_TREE else 'series'
        fixes = FIXES_OF.get(kernel)
        if not fixes:
            return kernel
        if fixes not in self.fixed:
            self.fixed[fixes] = {t for s in series_steps(fixes) for t in s['tests']}
        return 'series' if f'{kind}:{name}' in self.fixed[fixes] else 'base'

    def add(self, kind, name, got, detail='', kernel=None):
        """One result. @kernel: judge it as that kernel's (a stable row in
        the series' run); its row is then "<kind>-<kernel>"."""
        e = self.expected.get((kind, name))
        want = 'PASS' if not e else e[self.kernel_column(kind, name, kernel or self.kernel)]
        if kernel and kernel != self.kernel:
            kind += ROW_SUFFIX.get(kernel, f'-{kernel}')
        ok = RANK.get(got, 0) >= RANK.get(want, 5)
        reason = e['reason'] if e else ''
        self.rows.append((kind, name, got, want, ok, reason or detail))
        if not ok:
            log(f'FAIL {kind} {name}: got {got}, expected {want} {detail}')

    def report(self, json_path):
        passed = sum(1 for r in self.rows if r[4])
        failed = len(self.rows) - passed
        by_kind = {}
        for r in self.rows:
            k = by_kind.setdefault(r[0], [0, 0])
            k[0 if r[4] else 1] += 1
        print()
        print(f'Results on the {self.kernel} kernel:')
        for k, (p, f) in by_kind.items():
            print(f'  {k:18} {p:4} passed {f:4} failed')
        notable = [r for r in self.rows if r[2] != 'PASS' or not r[4]]
        if notable:
            print('  not PASS (expected ones carry their reason):')
            for r in notable:
                tag = 'ok  ' if r[4] else 'FAIL'
                print(f'    {tag} {r[0]} {r[1]}: {r[2]} (expected {r[3]}) {r[5]}')
        with open(json_path, 'w') as f:
            json.dump([dict(zip(('kind', 'name', 'result', 'expected', 'ok', 'reason'), r))
                       for r in self.rows], f, indent=1)
        print(f'  structured results: {json_path}')
        print(f'{passed} passed, {failed} failed')
        return failed == 0


def kunit_json_cases(path):
    data = json.loads(read(path, 'r'))
    out = []

    def walk(g, prefix):
        name = g['name'] if g['name'] != 'KUnit Test Group' else ''
        p = f'{prefix}.{name}' if prefix and name else (name or prefix)
        for c in g.get('test_cases', []):
            out.append((f'{p}.{c["name"]}' if p else c['name'], c['status']))
        for s in g.get('sub_groups', []):
            walk(s, p)
    walk(data, '')
    return out
