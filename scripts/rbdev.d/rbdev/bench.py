"""rbdev bench: base and series in alternating runs (UML, the guest, the
instruction counter), the table of medians, spreads and ratios,
bench.json and the plot; and its --fn-hist and --fn-loss modes."""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

from .boot import guest_image
from .common import CACHE, die, log
from .config import PERF_VARIANT
from .measure import (
    FN_LOSS_CONF, GUEST_BENCH, bench_build, bench_once, fn_hist_once, fn_loss_once,
    guest_bench_once, icount_bench_once)
from .stats import (
    GUEST_UNTABLED, better, boot_permutation_p, fmt, line_fit, metric_key, rank_sum_p,
    spread_pct)


def cmd_fn_loss(boots, repeat, icount):
    """bench --fn-loss: the function trace's loss share, many records per
    kernel, alternating boots; prints each kernel's records, the medians,
    the rank-sum test over records and the permutation test over boots,
    and the loss of each kernel at one production rate (a line fitted to
    its records, read at the pooled median rate)."""
    kinds = ('base', 'series')
    bdirs = {k: guest_image(k, PERF_VARIANT[k]) for k in kinds}
    got = {k: [] for k in kinds}
    failed = []
    for i in range(boots):
        for k in kinds if i % 2 == 0 else kinds[::-1]:
            log(f'boot {i + 1}/{boots}: {k}, {repeat} function trace records'
                f'{" under the instruction counter" if icount else ""}')
            t1 = time.time()
            recs, problems = fn_loss_once(k, bdirs[k], icount, repeat)
            log(f'  {len(recs)} records, took {time.time() - t1:.0f} s')
            failed += [f'boot {i + 1} {k}: {p}' for p in problems]
            for r in recs:
                r['boot'] = i + 1
            got[k] += recs
    path = os.path.join(CACHE, 'bench', 'fn-loss.json')
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as fh:
        json.dump({'records': got, 'icount': icount, 'repeat': repeat, 'failed': failed},
                  fh, indent=1)
    print(f'records: {path}')
    if not all(len(got[k]) >= 2 for k in kinds):
        die('fewer than two records from a kernel: ' + '; '.join(failed))
    clock = 'instructions (-icount shift=0)' if icount else 'the wall clock'
    print(f'\nthe function trace of the bench (2 x {FN_LOSS_CONF["FN_LOOPS"]} loops, '
          f'{FN_LOSS_CONF["FN_BUFFER_KB"]} KB a CPU), {repeat} records a boot, '
          f'time by {clock}:')
    for k in kinds:
        print(f'  {k} lost %: ' + ' '.join(f'{r["lost_pct"]:.1f}' for r in got[k]))
    print(f'\n{"figure":34} {"base median":>12} {"series median":>14} {"ser/base":>9} '
          f'{"rank-sum p":>11} {"by boot p":>10}')
    table = {}
    for f in ('lost_pct', 'workload_s', 'produced_per_s', 'captured_per_s'):
        b, s_ = ([r[f] for r in got[k]] for k in kinds)
        bm, sm = statistics.median(b), statistics.median(s_)
        p, pb = rank_sum_p(b, s_), boot_permutation_p(got, f)
        table[f] = {'base': bm, 'series': sm, 'p_records': p, 'p_boots': pb}
        rat = f'{sm / bm:9.3f}' if bm else f'{"-":>9}'
        print(f'{f:34} {fmt(bm):>12} {fmt(sm):>14} {rat} {p:11.3f} {pb:10.3f}')
    # At equal production: the loss share of each kernel read off a line
    # fitted to its own records at one rate, the pooled median.
    rate = statistics.median(r['produced_per_s'] for k in kinds for r in got[k])
    at = {}
    for k in kinds:
        a, b = line_fit([r['produced_per_s'] for r in got[k]], [r['lost_pct'] for r in got[k]])
        at[k] = a + b * rate
        lo, hi = (f([r['produced_per_s'] for r in got[k]]) for f in (min, max))
        print(f'{k}: lost % = {a:.1f} {b * 1e6:+.2f} per million events/s produced '
              f'({lo / 1e6:.2f}..{hi / 1e6:.2f} M/s); at {rate / 1e6:.2f} M/s: {at[k]:.1f}%'
              f'{"" if lo <= rate <= hi else " (outside its records: an extrapolation)"}')
    print('\nrank-sum p: the Mann-Whitney test of all records, as if each were independent; '
          'by boot p: the share of the\nways to split the boots into two kernels whose '
          'medians differ at least as much (records of one boot stay together).\n'
          'The line: produced counts the lost events, so loss and rate are tied by '
          'construction; a reading, not a test.')
    for f in failed:
        print(f'FAILED {f}')
    with open(path, 'w') as fh:
        json.dump({'records': got, 'table': table, 'at_rate': {'rate': rate, **at},
                   'icount': icount, 'repeat': repeat, 'failed': failed}, fh, indent=1)
    if failed:
        sys.exit(1)


def cmd_fn_hist(runs, icount, lossy):
    """bench --fn-hist: which traced functions and tasks make the function
    trace of the same workload longer on one kernel than on the other.
    Prints the totals and the rows whose difference is largest. With
    @lossy, the bench's own buffer size: the counted events are the ones
    captured, and each row is scaled by produced/captured (captured plus
    lost over captured) to estimate what the kernel produced."""
    kinds = ('base', 'series')
    size = 'fnlossy' if lossy else 'fnhist'
    bdirs = {k: guest_image(k, PERF_VARIANT[k]) for k in kinds}
    got = {k: [] for k in kinds}
    for i in range(runs):
        for k in kinds if i % 2 == 0 else kinds[::-1]:
            log(f'run {i + 1}/{runs}: {k}, function trace of the workload, every event counted')
            h = fn_hist_once(k, bdirs[k], icount, size)
            if h:
                got[k].append(h)
    if not all(got.values()):
        die('no histogram from one of the kernels')
    if lossy:
        for k in kinds:
            for h in got[k]:
                produced = h['captured'] + h['lost']
                scale = produced / max(1, h['total'])
                print(f'{k}: produced {produced}, captured {h["captured"]} (counted '
                      f'{h["total"]}), lost {h["lost"]} ({100 * h["lost"] / max(1, produced):.1f}%)')
                for n in list(h):
                    if n[:2] in ('f:', 'c:', 'p:') or n == 'total':
                        h[n] = round(h[n] * scale)
    med = {k: {n: statistics.median(h.get(n, 0) for h in got[k])
               for n in set().union(*got[k])} for k in kinds}
    names = set(med['base']) | set(med['series'])
    tb, ts = med['base']['total'], med['series']['total']
    what = 'estimated produced' if lossy else 'traced workload'
    print(f'\nevents of the {what} (median of {runs} run(s)): base {tb:.0f}, '
          f'series {ts:.0f}, {ts - tb:+.0f} ({(ts / tb - 1) * 100:+.1f}%)')
    for k in kinds:
        print(f'  {k} runs: {", ".join(str(h["total"]) for h in got[k])}')

    def diff_table(title, prefix, limit):
        """The @limit names under @prefix whose count moved most."""
        rows = sorted((n for n in names if n.startswith(prefix)),
                      key=lambda n: -abs(med['series'].get(n, 0) - med['base'].get(n, 0)))
        print(f'\n{title:40} {"base":>9} {"series":>9} {"diff":>9}')
        for n in rows[:limit]:
            b, s_ = med['base'].get(n, 0), med['series'].get(n, 0)
            print(f'{n[len(prefix):]:40} {b:9.0f} {s_:9.0f} {s_ - b:+9.0f}')

    def ratio(n):
        b, s_ = med['base'].get(n, 0), med['series'].get(n, 0)
        return max(b, s_) / max(1, min(b, s_))

    diff_table('task', 'c:', 10)
    diff_table('function', 'f:', 25)
    # The tasks whose events changed most for their size: what they call.
    tasks = sorted((n[2:] for n in names if n.startswith('c:') and
                    max(med['base'].get(n, 0), med['series'].get(n, 0)) >= 200),
                   key=lambda t: -ratio('c:' + t))[:3]
    for t in tasks:
        diff_table(f'in {t} ({ratio("c:" + t):.1f}x), function', f'p:{t}/', 15)


def cmd_bench(args):
    t0 = time.time()
    if args.fn_hist:
        if (args.quick or args.uml_only or args.guest_only or args.runs < 1 or
                args.fn_loss is not None or args.icount_runs is not None):
            die('--fn-hist takes only --runs (1 or more), --lossy and --no-icount')
        cmd_fn_hist(args.runs, args.icount, args.lossy)
        return
    if args.fn_loss is not None:
        if (args.quick or args.uml_only or args.guest_only or args.runs < 1 or args.lossy or
                args.fn_loss < 1 or args.icount_runs is not None):
            die('--fn-loss R (1 or more) takes only --runs (boots per kernel, 1 or more) '
                'and --no-icount')
        cmd_fn_loss(args.runs, args.fn_loss, args.icount)
        return
    if args.lossy:
        die('--lossy goes with --fn-hist')
    if args.icount_runs is not None and (args.icount_runs < 1 or not args.icount or
                                         args.uml_only):
        die('--icount-runs N takes 1 or more, and the counted guest boots')
    icount_runs = 2 if args.icount_runs is None else args.icount_runs
    if args.uml_only and args.guest_only:
        die('--uml-only and --guest-only exclude each other')
    kinds = ('base', 'series')
    parts = [p for p, off in (('uml', args.guest_only), ('guest', args.uml_only)) if not off]
    bdirs = {}
    if 'uml' in parts:
        bdirs['uml'] = {k: bench_build(k, points=False) for k in kinds}
    if 'guest' in parts:
        bdirs['guest'] = {k: guest_image(k, PERF_VARIANT[k]) for k in kinds}
    size = 'quick' if args.quick else 'full'
    runs = {'base': [], 'series': []}
    failed = []
    loads = []
    # A UML run takes about a second and its figures spread widely with the
    # machine's load: it gets more runs than the guest, whose boots are slow.
    uml_runs = max(args.runs, args.uml_runs) if 'uml' in parts and not args.quick else args.runs
    for i in range(uml_runs):
        for k in kinds if i % 2 == 0 else kinds[::-1]:
            m = {}
            loads.append(os.getloadavg()[0])
            if 'uml' in parts:
                log(f'run {i + 1}/{args.runs}: {k}, UML micro-benchmark')
                t1 = time.time()
                u = bench_once(k, bdirs['uml'][k], args.quick)
                log(f'  UML run took {time.time() - t1:.0f} s')
                if not u:
                    failed.append(f'run {i + 1} {k}: the UML benchmark printed no figure')
                m.update(u)
            if 'guest' in parts and i < args.runs:
                log(f'run {i + 1}/{args.runs}: {k}, x86_64 guest boot '
                    f'(ring_buffer_benchmark, trace-cmd; about {90 if size == "full" else 60} s)')
                t1 = time.time()
                g, problems = guest_bench_once(k, bdirs['guest'][k], size)
                log(f'  guest run took {time.time() - t1:.0f} s')
                if problems:
                    failed.append(f'run {i + 1} {k}: {"; ".join(problems)}')
                m.update(g)
            # The KUnit suite's instruction counts (one vCPU) do not move
            # between runs: two runs show that they do not. The counted
            # two-vCPU boot (ring_buffer_benchmark, trace-cmd) repeats less
            # well (README, "Reading the benchmark"): --icount-runs of it.
            if 'guest' in parts and args.icount and i < args.runs:
                counted = [c for c in (('the KUnit suite', icount_bench_once, size, 2),
                                       ('ring_buffer_benchmark, trace-cmd',
                                        guest_bench_once, 'icount', icount_runs))
                           if i < c[3]]
                for what, once, osize, _ in counted:
                    log(f'run {i + 1}/{args.runs}: {k}, x86_64 guest under the instruction '
                        f'counter ({what})')
                    t1 = time.time()
                    g, problems = once(k, bdirs['guest'][k], osize)
                    log(f'  took {time.time() - t1:.0f} s')
                    if problems:
                        failed.append(f'run {i + 1} {k} icount: {"; ".join(problems)}')
                    m.update(g)
            runs[k].append(m)
    metrics = sorted(set().union(*[set(r) for r in runs['base'] + runs['series']]),
                     key=metric_key)
    rows = []
    w = max([40] + [len(n) for n in metrics])
    head = (f'{"metric":{w}} {"want":>4} {"base median":>12} {"base min..max":>23} {"spr%":>5}  '
            f'{"series median":>13} {"series min..max":>23} {"spr%":>5} {"ser/base":>8} '
            f'{"paired":>7}')
    print('\n' + head + '\n' + '-' * len(head))
    for name in metrics:
        b = [r[name] for r in runs['base'] if name in r]
        s = [r[name] for r in runs['series'] if name in r]
        if not b or not s:
            continue
        bm, sm = statistics.median(b), statistics.median(s)
        bsp, ssp = spread_pct(b, bm), spread_pct(s, sm)
        ratio = sm / bm if bm else None
        # Runs i of the two kernels ran next to each other (alternating):
        # the median of their ratios cancels the machine's drift over the run.
        pairs = [r['series'][name] / r['base'][name] for r in
                 ({'base': x, 'series': y} for x, y in zip(runs['base'], runs['series']))
                 if name in r['base'] and name in r['series'] and r['base'][name]]
        paired = statistics.median(pairs) if pairs else None
        rows.append({'metric': name, 'base': {'median': bm, 'min': min(b), 'max': max(b),
                                              'spread_pct': bsp, 'n': len(b)},
                     'series': {'median': sm, 'min': min(s), 'max': max(s),
                                'spread_pct': ssp, 'n': len(s)},
                     'ratio': ratio, 'paired_ratio': paired})
        if GUEST_UNTABLED.search(name):
            continue
        flags = []
        if any(x is None or x > 10 for x in (bsp, ssp)):
            flags.append('noisy')
        if better(name) == '0' and any(b + s):
            flags.append('NOT ZERO')

        def pct(x):
            return '  inf' if x is None else f'{x:5.1f}'

        def rng(v):
            return f'{fmt(min(v))}..{fmt(max(v))}'
        rat = f'{ratio:.3f}' if ratio is not None else ('=' if sm == bm else '-')
        prat = f'{paired:.3f}' if paired is not None else '-'
        print(f'{name:{w}} {better(name):>4} {fmt(bm):>12} {rng(b):>23} {pct(bsp)}  {fmt(sm):>13} '
              f'{rng(s):>23} {pct(ssp)} {rat:>8} {prat:>7} {" ".join(flags)}'.rstrip())
    n = {k: sum(1 for r in runs[k] if r) for k in kinds}
    print(f'\n{uml_runs} alternating runs per kernel (base, series, series, base, ...)'
          f'{f", the guest in the first {args.runs}" if uml_runs > args.runs and "guest" in parts else ""}; '
          f'median, min..max and spread% = (max-min)/median per kernel; "noisy" marks a '
          f'spread over 10%;\nser/base: the ratio of the medians (the targets\' measure); '
          f'paired: the median of the ratios of run i of each kernel, which ran side by side;\n'
          f'want: which way is better (low/high; 0: must be zero, a consistency check).')
    if 'guest' in parts:
        print('guest.* rows: x86_64 guest, QEMU TCG, 2 vCPUs, one boot per kernel per run; '
              'see README "Reading the benchmark".')
    if 'guest' in parts and args.icount:
        last = min(icount_runs, args.runs)
        print('icount.* rows: the x86_64 guest under -icount shift=0,sleep=off, runs 1 and 2 '
              f'(icount.rbm.*, icount.fn.*: runs 1 to {last}): instructions '
              '(icount.write.*, icount.read.*: one vCPU; icount.rbm.* and '
              'icount.fn.*: both vCPUs\' instructions counted as time).')
    print(f'1-min load average before the runs: {min(loads):.1f}..{max(loads):.1f} '
          f'(one of ours is about 1 while a run is on). Took {time.time() - t0:.0f} s.')
    for f in failed:
        print(f'FAILED {f}')
    out = os.path.join(CACHE, 'bench')
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'bench.json'), 'w') as f:
        json.dump({'runs': runs, 'table': rows, 'failed': failed, 'loadavg': loads,
                   'guest': GUEST_BENCH[size] if 'guest' in parts else None}, f, indent=1)
    log(f'figures of every run: {os.path.join(out, "bench.json")}')
    plot(rows, out)
    if failed or any(v == 0 for v in n.values()):
        sys.exit(1)


def plot(rows, out):
    pts = []
    for r in rows:
        m = re.match(r'write\.(\w+)\.(\d+)B\.ns_per_event$', r['metric'])
        if m:
            pts.append((m.group(1), int(m.group(2)), r['base']['median'], r['series']['median']))
    if not pts or not shutil.which('gnuplot'):
        return
    dat = os.path.join(out, 'write.dat')
    with open(dat, 'w') as f:
        for mode in sorted({p[0] for p in pts}):
            f.write(f'# {mode}\n')
            for p in sorted(x for x in pts if x[0] == mode):
                f.write(f'{p[1]} {p[2]} {p[3]}\n')
            f.write('\n\n')
    png = os.path.join(out, 'write-ns-per-event.png')
    modes = sorted({p[0] for p in pts})
    series = ', '.join(
        f'"{dat}" index {i} using 1:2 with linespoints title "base {m}", '
        f'"{dat}" index {i} using 1:3 with linespoints title "series {m}"'
        for i, m in enumerate(modes))
    subprocess.run(['gnuplot', '-e', f'set terminal png size 800,500; set output "{png}"; '
                    'set termoption noenhanced; set logscale x 2; set xlabel "payload bytes"; '
                    'set ylabel "ns per reserve+commit (UML)"; set key top left; '
                    f'plot {series}'], check=False)
    log(f'plot: {png}')
