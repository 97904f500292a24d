"""rbdev cost: what each path executes per call, single-stepped under gdb
(scripts/rbdev.d/pathcount.py) in guests of the base, the series and the
series with its test points, beside the suite's instruction counts."""

import json
import os
import subprocess

from .boot import guest_boot, guest_image
from .common import CACHE, REPO, die, log
from .config import PERF_VARIANT
from .measure import BENCH_EVENTS, bench_suite_append, icount_bench_once
from .stats import metric_key


COST_CALLS, COST_SKIP = 100, 40
COST_FIELDS = (('instr', 'instructions'), ('rmw', 'RMW on memory'),
               ('locked', 'locked RMW'), ('fence', 'full barriers'),
               ('percpu_rmw', 'per-CPU RMW (%gs)'), ('clock', 'clock reads'),
               ('lines', 'cache lines stored'), ('stack_stores', 'stack stores'),
               ('loads', 'loads (stack too)'), ('stores', 'stores (stack too)'),
               ('nops', 'nops (static keys off)'))

# The columns of `rbdev cost`: the kernels of PERF_VARIANT, and the series
# with its test points (see PERF_VARIANT).
COST_KINDS = tuple((k, k, v) for k, v in PERF_VARIANT.items()) + (('points', 'series', 'x86'),)


def cost_once(kind, port, variant='x86'):
    """Single-step the paths of scripts/rbdev.d/pathcount.py in a guest of
    @kind; returns its JSON."""
    bdir = guest_image(kind, variant)
    nm = os.path.join(bdir, 'vmlinux.nm')
    with open(nm, 'w') as f:
        subprocess.run(['nm', '-n', os.path.join(bdir, 'vmlinux')], stdout=f, check=True)
    out = os.path.join(bdir, 'cost.json')
    if os.path.exists(out):
        os.unlink(out)
    env = dict(os.environ, RBDEV_PORT=str(port), RBDEV_NM=nm, RBDEV_OUT=out,
               RBDEV_CALLS=str(COST_CALLS), RBDEV_SKIP=str(COST_SKIP))
    log(f'{kind}: stepping the paths under gdb ({COST_CALLS} calls each; '
        f'log: {bdir}/cost.gdb.log) ...')
    with open(os.path.join(bdir, 'cost.gdb.log'), 'w') as gdblog:
        g = subprocess.Popen(['gdb', '-nx', '--batch', '-x',
                              os.path.join(REPO, 'scripts/rbdev.d/pathcount.py'),
                              os.path.join(bdir, 'vmlinux')],
                             env=env, stdin=subprocess.DEVNULL, stdout=gdblog,
                             stderr=subprocess.STDOUT)
        # Two vCPUs: with one, x86 patches every lock prefix away (SMP
        # alternatives), and the locked operations would not show.
        guest_boot(bdir, 'cost', 'kunit', 3600,
                   extra_append=bench_suite_append(BENCH_EVENTS['smoke']),
                   qemu_extra=['-gdb', f'tcp::{port}', '-S'])
        g.wait(timeout=60)
    if not os.path.exists(out):
        die(f'gdb wrote no counts: {bdir}/cost.gdb.log')
    return json.load(open(out))


def cost_summary(path):
    rows = path['per_call']
    n = len(rows)
    mean = {f: sum(r[f] for r in rows) / n for f, _ in COST_FIELDS}
    mean['instr_max'] = max(r['instr'] for r in rows)
    mean['instr_min'] = min(r['instr'] for r in rows)
    mean['loop'] = path['loop_instr'] / n
    return mean


def icount_of_kinds():
    """The suite under the instruction counter, one boot in each kernel of
    COST_KINDS: {column: {figure: value}} (a boot with a problem: {})."""
    return {col: icount_bench_once(kind, guest_image(kind, variant), 'smoke')[0]
            for col, kind, variant in COST_KINDS}


def icount_columns():
    """icount_of_kinds() side by side (a few minutes warm)."""
    figs = icount_of_kinds()
    cols = [c for c, _, _ in COST_KINDS]
    if not all(figs.values()):
        die('a boot gave no figures: ' + ', '.join(c for c in cols if not figs[c]))
    print(f'\n  {"figure (icount, per event; read_page per byte)":52} {"base":>9} {"series":>9} '
          f'{"ser/base":>8} {"points":>9}')
    for key in sorted(figs['base'], key=metric_key):
        b, s, p = (figs[c].get(key) for c in cols)
        if b and s and p:
            print(f'  {key:52} {b:9.2f} {s:9.2f} {s / b:8.3f} {p:9.2f}')


def cmd_cost(args):
    """What each path executes per call, base against series, from the
    compiled code as it runs (README "What a path costs")."""
    if args.icount_only:
        icount_columns()
        return
    got = {}
    for i, (col, kind, variant) in enumerate(COST_KINDS):
        got[col] = {p['path']: p for p in cost_once(kind, 12340 + i, variant)}
    icount = icount_of_kinds() if args.icount else {}
    cols = [c for c, _, _ in COST_KINDS]
    table = {}
    for name in got['series']:
        have = [got[c].get(name, {}) for c in cols]
        bad = [h.get('error') or 'no figure' for h in have if not h or 'error' in h]
        if bad:
            print(f'{name}: {bad[0]}')
            continue
        table[name] = {c: cost_summary(h) for c, h in zip(cols, have)}
    print(f'\nPer call, mean over {COST_CALLS} calls after {COST_SKIP} (x86_64 guest, '
          'single-stepped; the caller\'s loop apart; "points": the series with '
          'CONFIG_RING_BUFFER_TEST_POINTS):')
    print(f'  {"path":30} {"figure":22} {"base":>9} {"series":>9} {"ser/base":>8} {"points":>9}')
    for name, t in table.items():
        for f, label in COST_FIELDS + (('instr_min', 'instructions, min'),
                                       ('instr_max', 'instructions, max'),
                                       ('loop', 'caller\'s loop')):
            b, s, p = t['base'][f], t['series'][f], t['points'][f]
            rat = f'{s / b:.3f}' if b else ('=' if s == b else '-')
            print(f'  {name:30} {label:22} {b:9.2f} {s:9.2f} {rat:>8} {p:9.2f}')
        key = f'icount.{name}.instr_per_event'
        if all(key in icount.get(c, {}) for c in cols):
            for c in cols:
                t[c]['icount'] = icount[c][key]
            b, s, p = (icount[c][key] for c in cols)
            print(f'  {name:30} {"icount, per event":22} {b:9.2f} {s:9.2f} {s / b:8.3f} {p:9.2f}')
    out = os.path.join(CACHE, 'bench')
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'cost.json'), 'w') as f:
        json.dump({'raw': got, 'table': table}, f, indent=1)
    log(f'every call\'s counts: {os.path.join(out, "cost.json")}')
