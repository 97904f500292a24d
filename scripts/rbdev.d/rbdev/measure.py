"""One run of each benchmark and its figures: the UML suite, the suite
under the instruction counter, the guest's ring_buffer_benchmark and
function-trace boot, the function trace's histogram and loss boots
(bench --fn-hist, --fn-loss), and the test command's smoke run."""

import os
import re
import subprocess
import time

from .boot import find_reports, guest_boot, guest_done, guest_image, print_reports
from .build import build_dir, build_lock, ccache_env
from .common import die, log, run
from .config import ICOUNT
from .guest import parse_result_lines
from .kunit import kunit_py
from .setup import setup


@build_lock
def bench_build(kind, points=True):
    """The UML KUnit kernel, brought up to date: its ring_buffer_bench suite
    is the benchmark. Without @points, the series' own build without test
    points (UML has no jump labels: each point is a load, a test and a
    branch there); the base has none to leave out."""
    src = setup(kind)
    nopoints = not points and kind == 'series'
    bdir = build_dir(kind, 'uml-nopoints' if nopoints else 'uml')
    os.makedirs(bdir, exist_ok=True)
    extra = ['--kconfig_add', 'CONFIG_RING_BUFFER_TEST_POINTS=n'] if nopoints else []
    r = run(kunit_py('build', bdir, *extra), cwd=src, env=ccache_env(), check=False,
            logfile=os.path.join(bdir, 'build.log'))
    if r.returncode:
        die(f'the UML KUnit kernel for {kind} did not build: {bdir}/build.log')
    return bdir


# Events per figure of the ring_buffer_bench suite (its bench_events).
BENCH_EVENTS = {'full': 2000000, 'smoke': 20000}


def bench_once(kind, bdir, quick):
    """One UML run of the benchmark suite; returns {metric: value}."""
    args = [os.path.join(bdir, 'linux'), 'mem=256M', 'kunit.enable=1',
            'kunit.filter_glob=ring_buffer_bench*', 'kunit_shutdown=halt',
            'console=tty0',
            f'ring_buffer_kunit.bench_events={BENCH_EVENTS["smoke" if quick else "full"]}']
    r = subprocess.run(args, capture_output=True, text=True, errors='replace', timeout=600)
    out = {}
    for m in re.finditer(r'rb-bench: (\S+) = ([\d.]+)', r.stdout):
        out[m.group(1)] = float(m.group(2))
    return out


# The instruction counter: the same suite in the x86_64 guest under QEMU's
# -icount shift=0,sleep=off (TCG, one thread), where the guest clock moves one
# nanosecond per instruction, so the suite's timings are instruction counts.
# One vCPU and no KASLR, so that nothing but the kernel under test moves
# them. A figure includes everything the guest executed meanwhile: the
# benchmark's loop, the clock read and static-key tests on the way in, and
# the timer interrupts that fell inside (about one per 4M instructions).
# Reads become instructions per event (per byte for read_page).
ICOUNT_EVENTS = {'full': 200000, 'quick': 50000, 'smoke': 20000}
ICOUNT_FIGURES = 12     # what the suite prints: 8 write, 1 write API, 3 read


def icount_metrics(console):
    out = {}
    for m in re.finditer(r'rb-bench: (\S+) = ([\d.]+)', console):
        name, v = m.group(1), float(m.group(2))
        if name.endswith('.ns_per_event'):
            out['icount.' + name[:-len('ns_per_event')] + 'instr_per_event'] = v
        elif name.endswith('.kevents_per_sec') and v:
            out['icount.' + name[:-len('kevents_per_sec')] + 'instr_per_event'] = 1e6 / v
        elif name.endswith('.MB_per_sec') and v:
            out['icount.' + name[:-len('MB_per_sec')] + 'instr_per_byte'] = 1e3 / v
    return out


def bench_suite_append(events):
    """The kernel line of a guest boot that runs the ring_buffer_bench suite
    alone, @events per figure, at addresses the symbol table gives."""
    return ('nokaslr kunit.filter_glob=ring_buffer_bench '
            f'ring_buffer_kunit.bench_events={events}')


def icount_bench_once(kind, bdir, size):
    """One guest boot of the suite under the instruction counter. Returns
    ({metric: value}, [problems]); a boot with a problem gives no figures."""
    console, lines, timed_out = guest_boot(bdir, 'icount', 'kunit', 900,
                                           extra_append=bench_suite_append(ICOUNT_EVENTS[size]),
                                           qemu_extra=ICOUNT + ['-smp', '1'])
    out = icount_metrics(console)
    reports = find_reports(console)
    problems = [f'{len(reports)} kernel report(s)'] if reports else []
    if timed_out:
        problems.append('the guest timed out')
    if len(out) != ICOUNT_FIGURES:
        problems.append(f'{len(out)} of {ICOUNT_FIGURES} figures')
    if problems:
        log(f'{kind} icount bench: {"; ".join(problems)} (console: {bdir}/icount.console)')
        return {}, problems
    return out, []


# The x86_64 guest part: upstream's ring_buffer_benchmark module and trace-cmd
# recording the function tracer (guest init, mode "bench"). RBM_HAMMERS: the
# module hammers for a fixed 10 s, reading by events; a second hammer, 10 s
# later, reads by pages. FN_LOOPS: iterations of the traced workload per CPU
# (80 take about 10 s under TCG). FN_BUFFER_KB: buffer_size_kb per CPU for
# trace-cmd record (the kernel's default, stated so it cannot drift).
# RBM_NOREADER: one more hammer with the module's disable_reader=1, the
# producer alone (rows rbm.noreader.*). The "icount" size runs under the
# instruction counter (rows icount.rbm.*, icount.fn.*): 10 s of guest time
# there are 10,000M instructions of both vCPUs together.
GUEST_BENCH = {
    'full': {'RBM_HAMMERS': 2, 'RBM_PARAMS': '', 'RBM_NOREADER': 1, 'FN_LOOPS': 80,
             'FN_BUFFER_KB': 1408},
    'quick': {'RBM_HAMMERS': 1, 'RBM_PARAMS': '', 'RBM_NOREADER': 1, 'FN_LOOPS': 20,
              'FN_BUFFER_KB': 1408},
    'smoke': {'RBM_HAMMERS': 1, 'RBM_PARAMS': '', 'RBM_NOREADER': 0, 'FN_LOOPS': 4,
              'FN_BUFFER_KB': 1408},
    'icount': {'RBM_HAMMERS': 1, 'RBM_PARAMS': '', 'RBM_NOREADER': 1, 'FN_LOOPS': 20,
               'FN_BUFFER_KB': 1408},
    # bench --fn-hist: the function trace alone, into buffers that hold all
    # of it (about 0.2M events a CPU), then every event counted by function
    # and by task in the guest.
    'fnhist': {'RBM_HAMMERS': 0, 'RBM_PARAMS': '', 'RBM_NOREADER': 0, 'FN_LOOPS': 4,
               'FN_BUFFER_KB': 32768, 'FN_HIST': 1},
    # bench --fn-hist --lossy: the trace of the "icount" size as the bench
    # records it (1408 KB a CPU, events lost), its captured events counted:
    # a sample of what the kernel produced.
    'fnlossy': {'RBM_HAMMERS': 0, 'RBM_PARAMS': '', 'RBM_NOREADER': 0, 'FN_LOOPS': 20,
                'FN_BUFFER_KB': 1408, 'FN_HIST': 1},
}
GUEST_BENCH_STALL = 300


def guest_bench_once(kind, bdir, size):
    """One guest boot of the multi-CPU benchmark. Returns ({metric: value},
    [problems]); a boot with a problem gives no figures."""
    conf = ''.join(f'{k}="{v}"\n' for k, v in GUEST_BENCH[size].items())
    icount = size == 'icount'
    prefix = 'icount.' if icount else 'guest.'
    job = 'bench-icount' if icount else 'bench'
    # A boot that prints nothing for GUEST_BENCH_STALL s has hung (a
    # hammer is silent for 10 s of guest time, under a minute of the host's).
    console, lines, timed_out = guest_boot(bdir, job, 'bench', 1500 if icount else 600,
                                           {'bench.conf': conf}, extra_append='kunit.enable=0',
                                           stall=GUEST_BENCH_STALL,
                                           qemu_extra=ICOUNT if icount else ())
    conlog = os.path.join(bdir, f'{job}.console')
    problems = []
    out = {}
    for (k, n), v in parse_result_lines(lines).items():
        if k != 'bench':
            continue
        try:
            out[prefix + n] = float(v)
        except ValueError:
            problems.append(f'{n}: {v}')
    reports = find_reports(console)
    print_reports(reports)
    if reports:
        problems.append(f'{len(reports)} kernel report(s)')
    if timed_out:
        problems.append('the guest timed out')
    elif not guest_done(lines):
        problems.append('the guest did not finish')
    needed = ['rbm.events.ns_per_entry', 'fn.events_captured', 'fn.load_cpu_pct']
    if GUEST_BENCH[size]['RBM_HAMMERS'] > 1:
        needed.append('rbm.pages.ns_per_entry')
    if GUEST_BENCH[size]['RBM_NOREADER']:
        needed.append('rbm.noreader.ns_per_entry')
    for need in needed:
        if prefix + need not in out:
            problems.append(f'no {need}')
    if problems:
        log(f'{kind} guest bench: {"; ".join(problems)} (console: {conlog})')
        return {}, problems
    if any(out[m] for m in out if m.endswith('.unaccounted')):
        log(f'{kind}: ring_buffer_benchmark hit != entries + overruns + read '
            f'(console: {conlog})')
    return out, []


def bench_smoke(kind, res):
    """One short iteration of both benchmarks: passes when they print figures,
    whatever the figures are."""
    bdir = bench_build(kind)
    m = bench_once(kind, bdir, True)
    res.add('bench', 'smoke-run', 'PASS' if m else 'FAIL',
            '' if m else 'the benchmark printed no figure')
    bdir = guest_image(kind)
    log(f'booting {kind}/x86 for one short guest benchmark (about 40 s) ...')
    t0 = time.time()
    m, problems = guest_bench_once(kind, bdir, 'smoke')
    log(f'guest benchmark boot took {time.time() - t0:.0f} s')
    res.add('bench', 'guest-smoke-run', 'PASS' if m else 'FAIL', '; '.join(problems))
    for k in ('base', 'series') if kind == 'series' else (kind,):
        icount_smoke(k, res)


# The instruction count the test command checks: a figure that may not move.
ICOUNT_SMOKE_FIGURE = 'icount.write.overwrite.64B.instr_per_event'


def icount_smoke(kind, res):
    """Two boots of the suite under the instruction counter: passes when
    the reserve+commit figure is there, non-zero, and within 1% from one boot
    to the next. The figures themselves are no test; they go in the log."""
    bdir = guest_image(kind)
    vals = []
    for i in range(2):
        log(f'booting {kind}/x86 under the instruction counter ({i + 1} of 2) ...')
        t0 = time.time()
        m, problems = icount_bench_once(kind, bdir, 'smoke')
        log(f'  {"; ".join(problems) or ICOUNT_SMOKE_FIGURE + " = " + str(m.get(ICOUNT_SMOKE_FIGURE))}'
            f' ({time.time() - t0:.0f} s)')
        vals.append(m.get(ICOUNT_SMOKE_FIGURE, 0))
    ok = min(vals) > 0 and (max(vals) - min(vals)) <= 0.01 * min(vals)
    res.add('bench', f'icount-repeatable.{kind}', 'PASS' if ok else 'FAIL',
            f'{ICOUNT_SMOKE_FIGURE}: {vals[0]:g} then {vals[1]:g}')


def fn_hist_once(kind, bdir, icount, size='fnhist'):
    """One guest boot of the @size ('fnhist' or 'fnlossy') bench: {name:
    events} with names 'f:<function>', 'c:<task>', 'p:<task>/<function>',
    'total' (events counted), 'captured' and 'lost' (trace-cmd's buffer
    statistics), or {} on a problem. With @icount, under the instruction
    counter: guest time then follows the instructions executed, not the
    host's load."""
    conf = ''.join(f'{k}="{v}"\n' for k, v in GUEST_BENCH[size].items())
    console, lines, timed_out = guest_boot(bdir, size, 'bench', 1800 if icount else 900,
                                           {'bench.conf': conf}, extra_append='kunit.enable=0',
                                           qemu_extra=ICOUNT if icount else ())
    reports = find_reports(console)
    print_reports(reports)
    res = parse_result_lines(lines)
    out = {n: int(v) for (k, n), v in res.items() if k == 'fnhist'}
    if (timed_out or reports or not guest_done(lines) or not out.get('total') or
            res.get(('bench', 'fn.run')) == 'FAIL'):
        log(f'{kind}: the function histogram boot failed (console: {bdir}/{size}.console)')
        return {}
    for n in ('captured', 'lost'):
        out[n] = int(res.get(('bench', f'fn.events_{n}'), 0))
    if out['lost'] and size == 'fnhist':
        log(f'{kind}: {out["lost"]} events lost: the histogram is a sample')
    return out


# bench --fn-loss: the "icount" size's function trace alone, FN_REPEAT
# records of it in each boot (the selftest's 10 s of guest time is paid once).
FN_LOSS_CONF = {'RBM_HAMMERS': 0, 'RBM_PARAMS': '', 'RBM_NOREADER': 0,
                'FN_LOOPS': GUEST_BENCH['icount']['FN_LOOPS'],
                'FN_BUFFER_KB': GUEST_BENCH['icount']['FN_BUFFER_KB']}
FN_LOSS_FIGURES = ('lost_pct', 'workload_s', 'events_captured', 'events_lost')


def fn_loss_once(kind, bdir, icount, repeat):
    """One boot, @repeat function trace records: a list of {figure: value}
    (FN_LOSS_FIGURES, and 'produced_per_s', 'captured_per_s'), one per
    record that gave all its figures, and a list of problems."""
    conf = ''.join(f'{k}="{v}"\n' for k, v in dict(FN_LOSS_CONF, FN_REPEAT=repeat).items())
    console, lines, timed_out = guest_boot(bdir, 'fnloss', 'bench', 600 + 300 * repeat,
                                           {'bench.conf': conf}, extra_append='kunit.enable=0',
                                           stall=GUEST_BENCH_STALL,
                                           qemu_extra=ICOUNT if icount else ())
    reports = find_reports(console)
    print_reports(reports)
    res = parse_result_lines(lines)
    problems = [f'{len(reports)} kernel report(s)'] if reports else []
    if timed_out or not guest_done(lines):
        problems.append('the guest did not finish')
    if problems:
        # As in guest_bench_once(): a boot with a problem gives no figures.
        log(f'{kind}: {"; ".join(problems)} (console: {bdir}/fnloss.console)')
        return [], problems
    got = []
    for i in range(1, repeat + 1):
        fig = {f: res.get(('bench', f'fn.r{i}.{f}')) for f in FN_LOSS_FIGURES}
        try:
            fig = {f: float(v) for f, v in fig.items()}
        except (TypeError, ValueError):
            fig = None
        if not fig or fig['workload_s'] <= 0 or res.get(('bench', f'fn.r{i}.run')) == 'FAIL':
            problems.append(f'record {i} gave no figures')
            continue
        fig['record'] = i
        fig['captured_per_s'] = fig['events_captured'] / fig['workload_s']
        fig['produced_per_s'] = (fig['events_captured'] + fig['events_lost']) / fig['workload_s']
        got.append(fig)
    return got, problems
