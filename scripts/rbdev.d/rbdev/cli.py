"""The command line: argparse, main() and the command functions. Most of
them only pick the kernel and call the modules below; cmd_test runs the
stages of `rbdev test` in order, guest boots beside the builds."""

import argparse
import contextlib
import os
import sys
import threading
import time
import traceback

from . import common
from .bench import cmd_bench
from .boot import find_reports, guest_boot, guest_done, guest_image, print_reports
from .build import build_x86
from .checks import (
    LAYERS, RAW_OK, check_doc, check_imports, check_layers, check_points, check_style,
    static_stage)
from .harness import check_harness
from .common import CACHE, die, log
from .config import (
    CROSS, CROSS_BUILDS, MAINLINE_FIXES_TREE, MAINLINE_KUNIT, MAINLINE_SERIES_TREE, MAINLINE_TREE, STAGES)
from .cost import cmd_cost
from .guest import guest_tests, unexpected_reports
from .kunit import (
    check_sparse, compile_objects, cross_build, kunit_cross, kunit_from_console, kunit_uml)
from .litmus import check_litmus
from .mainline import ensure_mainline, pin as mainline_pin
from .measure import bench_smoke
from .persist import persist_alternate, persist_stage
from .results import Results
from .series import series_bisect, series_check, series_emit, series_stage
from .setup import setup
from .torture import torture_irqsoff, torture_stage


def kernel_of(args):
    if args.base and args.stable:
        die('--base and --stable exclude each other')
    return 'base' if args.base else 'stable' if args.stable else 'series'


def cmd_setup(args):
    for k in ('base', 'series'):
        setup(k)
    log(f'trees ready under {CACHE}')


def cmd_build(args):
    kind = kernel_of(args)
    if args.config == 'uml':
        die('the UML kernel is built by kunit.py: use "rbdev kunit"')
    build_x86(kind, args.config)


def cmd_cross(args):
    kind = kernel_of(args)
    res = Results(kind)
    for t in (args.target or sorted(CROSS_BUILDS)):
        cross_build(kind, res, t)
    sys.exit(0 if res.report(os.path.join(CACHE, kind, 'cross-results.json')) else 1)


def cmd_persist(args):
    res = Results('series')
    if args.alternate:
        persist_alternate(res)
    else:
        persist_stage(kernel_of(args), res)
    sys.exit(0 if res.report(os.path.join(CACHE, 'series', 'persist-results.json')) else 1)


def cmd_torture(args):
    kind = kernel_of(args)
    res = Results(kind)
    if args.irqsoff:
        res = Results('series')
        torture_irqsoff(res, int(args.minutes * 60))
        sys.exit(0 if res.report(os.path.join(CACHE, 'series', 'irqsoff-results.json')) else 1)
    variant = 'x86-kcsan' if args.kcsan else ('x86-debug' if args.debug else 'x86')
    tag = {'x86': 'torture', 'x86-debug': 'torture-debug', 'x86-kcsan': 'torture-kcsan'}[variant]
    if args.minutes > 5:
        # Its own console and job files: a test command may boot "torture" meanwhile.
        tag += '-long'
    torture_stage(kind, res, int(args.minutes * 60), variant, tag, ' '.join(args.kernel_args))
    sys.exit(0 if res.report(os.path.join(CACHE, kind, 'torture-results.json')) else 1)


def cmd_check_points(args):
    names, points, bad = check_points()
    print(f'{len(names)} accessors, each a test point: {" ".join(names)}')
    for k, v in points.items():
        print(f'  {k}: {v} call sites')
    for b in bad:
        print(b)
    print(f'{len(bad)} raw shared accesses in ring_buffer.c '
          f'(allowed in: {", ".join(sorted(RAW_OK))})')
    sys.exit(1 if bad else 0)


def cmd_check_layers(args):
    edges, problems = check_layers()
    print('ring_buffer_internal.h: included by all; static inlines and declarations only')
    for (f, g), names in sorted(edges.items()):
        print(f'{f} -> {g}: {", ".join(n + "()" for n in names)}')
    for p in problems:
        print(p)
    print(f'{len(problems)} problems (layers, bottom to top: {", ".join(LAYERS)})')
    sys.exit(1 if problems else 0)


def cmd_check_imports(args):
    graph, circles, layers = check_imports()
    for m, deps in graph.items():
        print(f'{m} -> {", ".join(deps)}' if deps else f'{m}: imports no module of the package')
    for c in circles:
        print(f'circle: {c}')
    print(f'{len(circles)} circles among {len(graph)} modules of scripts/rbdev.d/rbdev' +
          (f' (layers, bottom to top: {" | ".join(", ".join(ly) for ly in layers)})'
           if layers else ''))
    sys.exit(1 if circles else 0)


def cmd_check_doc(args):
    checked, problems = check_doc()
    for p in problems:
        print(p)
    print(f'{len(checked)} names in code font checked; {len(problems)} not found')
    sys.exit(1 if problems else 0)


def cmd_check_litmus(args):
    t = time.time()
    rows = check_litmus()
    bad = [r for r in rows if r[1] != r[2]]
    for name, want, got, detail in rows:
        print(f'{"ok  " if want == got else "FAIL"} {name:18} expected {want:9} got {got:11} {detail}')
    print(f'{len(rows)} runs of herd7 ({len({r[0].split("~")[0] for r in rows})} tests and their '
          f'mutants) in {time.time() - t:.1f} s: {len(rows) - len(bad)} as expected, '
          f'{len(bad)} not')
    sys.exit(1 if bad else 0)


def cmd_check_style(args):
    files, bad = check_style()
    for b in bad:
        print(b)
    print(f'{len(files)} files: {len(bad)} complaints from checkpatch --strict and kernel-doc -Wall')
    sys.exit(1 if bad else 0)


def cmd_test(args):
    """The stages in order, except that guest boots, which keep one core
    busy, run beside the builds and boots that follow them (a kernel build
    keeps the two cores only mostly busy): the series' guest and persist
    stages beside the UML, i386, base and debug builds; the torture runs and
    the benchmark beside the debug guest. The torture is not run beside a
    build: its verdict wants every operation done within a minute of guest
    time. Builds never overlap; each guest image is built once."""
    kind = kernel_of(args)
    t0 = time.time()
    res = Results(kind)
    stages = (args.only.split(',') if args.only else list(STAGES))
    took = []   # (stage, seconds): where a run's time went, printed at the end
    stop = threading.Event()    # the main thread failed: lanes start nothing new
    lanes = []

    @contextlib.contextmanager
    def stage(name):
        t = time.time()
        yield
        took.append((name, time.time() - t))

    def beside(name, *steps):
        """Run @steps, (stage, function) pairs, in order in a thread."""
        def lane():
            for sname, fn in steps:
                if stop.is_set():
                    return
                try:
                    with stage(f'{sname} (beside)'):
                        fn()
                except SystemExit:
                    # die() has said why; the rest of the test still runs.
                    res.add('harness', sname, 'FAIL', 'stopped: see the message above')
                except Exception:   # a harness bug: a failure, not a silent lane
                    traceback.print_exc()
                    res.add('harness', sname, 'FAIL', 'Python exception: see above')
        th = threading.Thread(target=lane, name=name)
        th.start()
        lanes.append(th)

    try:
        if 'static' in stages and kind == 'series':
            with stage('static'):
                static_stage(res, PARSER)
        if 'series' in stages and kind == 'series':
            # Building every commit is a long run of its own (rbdev series --bisect).
            with stage('series'):
                series_stage(res, bisect=False)
        if 'cross' in stages:
            with stage('cross'):
                for t in sorted(CROSS_BUILDS):
                    cross_build(kind, res, t)

        first = [(n, f) for n, f in (
            ('guest', lambda: guest_tests(kind, res, args.full,
                                          only_tests=args.ftrace.split(',') if args.ftrace
                                          else None)),
            ('persist', lambda: persist_stage(kind, res))) if n in stages]
        if first:
            with stage(f'build {kind}/x86'):
                guest_image(kind)
            beside('guest-lane', *first)

        if 'uml' in stages and kind != 'series':
            with stage('uml'):
                kunit_uml(kind, res)
        elif 'uml' in stages:
            # The rewrite on mainline and mainline itself, side by side (rows
            # kunit-uml-7.3 and kunit-uml-7.3-base); the 6.12 rewrite's own
            # UML run left the test command with issue 42 (its guests still
            # run its suites until they move to 7.3 too).
            for tree in (MAINLINE_SERIES_TREE, MAINLINE_TREE):
                with stage(f'uml {tree}'):
                    kunit_uml(tree, res, tag=MAINLINE_KUNIT)
            # 6.12's stable line: the base with the stable fixes, judged as
            # the stable kernel: each fix's tests pass there (rbdev series
            # --stable).
            with stage('uml-stable'):
                kunit_uml('stable', res)
            with stage('sparse'):
                objs, bad = check_sparse(MAINLINE_SERIES_TREE)
            for b in bad:
                log('  ' + b)
            res.add('static', 'sparse', 'FAIL' if bad else 'PASS',
                    f'{len(bad)} complaints in {len(objs)} objects' if bad
                    else f'{len(objs)} objects')
        if 'i386' in stages:
            # 32-bit (local_t of 32 bits, local64_t an atomic64_t), the
            # rewrite on 7.3 (rows kunit-i386-7.3); arm64 is `rbdev kunit
            # --arch arm64`, too slow under TCG for this command.
            with stage('i386'):
                if kind == 'series':
                    kunit_cross(MAINLINE_SERIES_TREE, res, 'i386', tag='kunit-i386-7.3')
                else:
                    kunit_cross(kind, res, 'i386')

        tail = []
        if 'torture' in stages:
            # A short run; `rbdev torture --minutes 30` is the long one (README).
            tail.append(('torture', lambda: torture_stage(kind, res, 60)))
            if kind == 'series':
                # And the base beside the series, as issue 13 asks. Its rows
                # are "torture-base" (tests/expected-results.txt).
                tail.append(('torture-base',
                             lambda: torture_stage('base', res, 60, tag='torture-base')))
        if 'bench' in stages:
            tail.append(('bench', lambda: bench_smoke(kind, res)))
        # The images the tail boots: this kernel's, and the base's for its
        # torture and the benchmark's base rows.
        need = ({kind, 'base'} if kind == 'series' else {kind}) if tail else set()
        for k in sorted(need):
            with stage(f'build {k}/x86'):
                guest_image(k)
        if 'debug' in stages:
            with stage(f'build {kind}/x86-debug'):
                guest_image(kind, 'x86-debug')
        for th in lanes:
            th.join()
        if tail:
            beside('tail-lane', *tail)
        if 'debug' in stages:
            with stage('debug'):
                guest_tests(kind, res, False, 'x86-debug')
    except BaseException:
        # The lanes finish the stage they are in and start no other.
        stop.set()
        raise
    finally:
        for th in lanes:
            th.join()
    log(f'test run took {time.time() - t0:.0f} s: ' +
        ', '.join(f'{name} {sec:.0f}' for name, sec in took))
    ok = res.report(os.path.join(CACHE, kind, 'test-results.json'))
    sys.exit(0 if ok else 1)


def cmd_kunit(args):
    kind = kernel_of(args)
    res = Results(kind)
    if args.arch == 'um':
        kunit_uml(kind, res, args.filter, args.kernel_args)
    elif args.arch in CROSS:
        kunit_cross(kind, res, args.arch, args.filter, args.kernel_args)
    else:
        tag = 'kunit-debug' if args.debug else 'kunit-guest'
        bdir = guest_image(kind, 'x86-debug' if args.debug else 'x86')
        filt = f'kunit.filter_glob={args.filter}' if args.filter else ''
        console, lines, timed_out = guest_boot(bdir, 'kunit', 'kunit', 900,
                                               extra_append=' '.join([filt] + args.kernel_args))
        kunit_from_console(kind, console, bdir, res, tag)
        # A lockdep, KASAN or WARN report fails the run as in the test command.
        reports = unexpected_reports(res, kind, console)
        print_reports(reports)
        res.add(tag, 'console-clean', 'FAIL' if reports else 'PASS',
                f'{len(reports)} report(s) in {bdir}/kunit.console' if reports else '')
    sys.exit(0 if res.report(os.path.join(CACHE, kind, 'kunit-results.json')) else 1)


def cmd_mainline(args):
    """The contract suite on the unmodified mainline (7.3) base under UML,
    with --fixes on the base with the fixes for mainline (rbdev series
    --fixes), with --series on the rewrite ported to 7.3; --pin writes the
    checksums of the files the series replaces or patches."""
    if args.base:
        die('rbdev mainline runs on the 7.3 base only; --base is for the 6.12.117 commands')
    if args.pin:
        mainline_pin()
        return
    ensure_mainline()   # a first download outside the build lock kunit_uml() takes
    if args.fixes and args.series:
        die('--fixes and --series exclude each other')
    tree = MAINLINE_FIXES_TREE if args.fixes else MAINLINE_SERIES_TREE if args.series else MAINLINE_TREE
    res = Results(tree)
    kunit_uml(tree, res, args.filter, args.kernel_args, tag=MAINLINE_KUNIT)
    sys.exit(0 if res.report(os.path.join(CACHE, tree, 'kunit-results.json')) else 1)


def cmd_fuzz(args):
    """The persistent-buffer fuzzer alone, for longer than the test command runs it."""
    kind = kernel_of(args)
    res = Results(kind)
    kunit_uml(kind, res, 'ring_buffer_persist.rbp_fuzz',
              [f'ring_buffer_persist_kunit.iters={args.iters}',
               f'ring_buffer_persist_kunit.seed={args.seed}'])
    sys.exit(0 if res.report(os.path.join(CACHE, kind, 'fuzz-results.json')) else 1)


def cmd_obj(args):
    compile_objects(kernel_of(args), args.objects)


def cmd_check_sparse(args):
    objs, bad = check_sparse(kernel_of(args))
    for b in bad:
        print(b)
    print(f'{len(objs)} objects: {len(bad)} complaints from sparse (C=2, W=1)')
    sys.exit(1 if bad else 0)


def cmd_demo(args):
    kind = kernel_of(args)
    bdir = guest_image(kind)
    log(f'booting the {kind} kernel under QEMU (TCG) to record a trace with trace-cmd ...')
    # The built-in KUnit suites (the interleavings take minutes under TCG)
    # are the test command's business, not the demo's.
    console, lines, timed_out = guest_boot(bdir, 'demo', 'demo', 600,
                                           extra_append='quiet kunit.enable=0')
    print('\n'.join(ln for ln in lines if not ln.startswith('RBDEV-')))
    reports = find_reports(console)
    print_reports(reports)
    if timed_out or reports or not guest_done(lines):
        die(f'the demo did not complete cleanly; console: {bdir}/demo.console')


def cmd_shell(args):
    kind = kernel_of(args)
    bdir = guest_image(kind)
    log('booting to a shell: tracefs at /sys/kernel/tracing, trace-cmd on PATH; '
        'exit the shell (or Ctrl-A x) to power off')
    guest_boot(bdir, 'shell', 'shell', 0, interactive=True, extra_append='kunit.enable=0')


def cmd_series(args):
    if args.stable and args.fixes:
        die('--stable and --fixes exclude each other')
    kind = 'stable' if args.stable else 'fixes' if args.fixes else 'series'
    if args.base:
        die('rbdev series has no --base: the series is the base plus patches')
    if args.bisect and kind != 'series':
        die('--bisect builds the commits of the series, not of the fixes')
    out = os.path.abspath(args.out) if args.out else os.path.join(CACHE, f'{kind}-out')
    if os.path.isdir(out) and any(not f.endswith('.patch') for f in os.listdir(out)):
        die(f'{out} holds files other than patches; give an empty or new directory')
    repo, patches = series_emit(kind, out)
    if args.no_check:
        return
    rows = series_check(kind, repo, patches)
    if args.bisect:
        rows += series_bisect()
    for name, ok, detail in rows:
        print(f'{"PASS" if ok else "FAIL"} {name} {detail}'.rstrip())
    bad = sum(1 for r in rows if not r[1])
    print(f'{len(rows) - bad} passed, {bad} failed')
    sys.exit(1 if bad else 0)


def cmd_check_harness(args):
    sys.exit(0 if check_harness(parser=PARSER) else 1)


# The parser main() made: the READMEs' commands are checked against it.
PARSER = None


def make_parser(doc):
    """rbdev's command line; @doc: scripts/rbdev's docstring, the description."""
    p = argparse.ArgumentParser(prog='rbdev', description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('-v', '--verbose', action='store_true', help='echo commands and the console')
    sub = p.add_subparsers(dest='cmd', required=True)

    def add(name, fn, help_):
        sp = sub.add_parser(name, help=help_)
        sp.add_argument('--base', action='store_true', help='run on the pristine 6.12.117 base')
        # --stable: the base with the fixes of `rbdev series --stable`;
        # only the commands that run tests on one kernel take it.
        if name in ('test', 'kunit', 'torture', 'build', 'obj', 'series', 'shell'):
            sp.add_argument('--stable', action='store_true',
                            help='the base with the fixes of "rbdev series --stable"')
        else:
            sp.set_defaults(stable=False)
        sp.set_defaults(fn=fn)
        return sp
    add('setup', cmd_setup, 'install packages, unpack the base, sync both trees')
    sp = add('build', cmd_build, 'build the x86_64 guest kernel')
    sp.add_argument('--config', default='x86',
                    choices=['x86', 'x86-debug', 'x86-kcsan', 'x86-nopoints', 'uml'])
    sp = add('test', cmd_test, 'run every test; ends with "N passed, N failed"')
    sp.add_argument('--full', action='store_true', help='the whole ftracetest suite')
    sp.add_argument('--only',
                    help='comma list of stages: ' + ','.join(STAGES))
    sp.add_argument('--ftrace', help='comma list of ftracetest tests (test.d paths) to run')
    sp = add('kunit', cmd_kunit, 'run the KUnit suite only')
    sp.add_argument('--arch', default='um', choices=['um', 'x86_64', *CROSS])
    sp.add_argument('--debug', action='store_true',
                    help='with --arch x86_64: in the debug guest (lockdep, KASAN)')
    sp.add_argument('--filter', help='KUnit filter_glob, e.g. "ring_buffer_control.*"')
    sp.add_argument('--kernel-args', action='append', default=[],
                    help='kernel argument, e.g. ring_buffer_interleave_kunit.depth=1')
    sp = add('persist', cmd_persist, 'the persistent buffer across three warm reboots')
    sp.add_argument('--alternate', action='store_true',
                    help='base and series in turn on one range, six boots (both kernels)')
    sp = add('cross', cmd_cross, 'build the ring buffer with W=1 for an untested architecture')
    sp.add_argument('--target', action='append', choices=sorted(CROSS_BUILDS),
                    help='armv5 (GENERIC_ATOMIC64); default: all')
    sp = add('torture', cmd_torture, 'the torture test in the x86_64 guest, four CPUs')
    sp.add_argument('--minutes', type=float, default=5, help='how long (default 5)')
    sp.add_argument('--debug', action='store_true', help='in the debug guest (lockdep, KASAN)')
    sp.add_argument('--kcsan', action='store_true', help='in a KCSAN guest')
    sp.add_argument('--kernel-args', action='append', default=[],
                    help='kernel argument, e.g. ring_buffer_torture.abs_ts=0')
    sp.add_argument('--irqsoff', action='store_true',
                    help='measure the longest irqs-off section, base and series (a benchmark)')
    sp = add('fuzz', cmd_fuzz, 'the persistent-buffer fuzzer under UML, as long as asked')
    sp.add_argument('--iters', type=int, default=200000, help='rounds (default 200000)')
    sp.add_argument('--seed', type=int, default=1, help='seed (default 1)')
    add('check-points', cmd_check_points,
        'list the test points; fail on a raw shared access in ring_buffer.c')
    add('check-layers', cmd_check_layers,
        "show which ring buffer file calls which; fail on a call up the layers")
    add('check-imports', cmd_check_imports,
        "show which module of the harness imports which; fail on a circle")
    add('check-harness', cmd_check_harness,
        "the harness's unit tests, each planted fault caught by them, pyflakes, "
        "pycodestyle, and every rbdev command the READMEs name")
    add('check-style', cmd_check_style,
        'checkpatch --strict and kernel-doc -Wall (the base\'s scripts) on every C file of the overlay')
    add('check-doc', cmd_check_doc,
        'fail on a name in code font in the design document that the code does not have')
    add('check-litmus', cmd_check_litmus,
        'the memory-ordering pairs M1-M7 as litmus tests under herd7 (tests/litmus): each '
        'must be Never, each mutant Sometimes')
    sp = add('mainline', cmd_mainline,
             'the contract suite under UML on the unmodified mainline base, Linux 7.3')
    sp.add_argument('--pin', action='store_true',
                    help='write the checksums of the files the series replaces or patches '
                         '(scripts/rbdev.d/mainline-7.3.sha256) from the pinned version')
    sp.add_argument('--fixes', action='store_true',
                    help='on the base with the fixes for mainline ("rbdev series --fixes")')
    sp.add_argument('--series', action='store_true',
                    help='on the rewrite ported to 7.3 (kernel mainline-series; in progress)')
    sp.add_argument('--filter', help='KUnit filter_glob, e.g. "ring_buffer_modes.*"')
    sp.add_argument('--kernel-args', action='append', default=[], help='kernel argument')
    add('check-sparse', cmd_check_sparse,
        'sparse (C=2) and W=1 on the ring buffer objects in the UML KUnit build dir')
    sp = add('obj', cmd_obj, 'compile single objects (W=1) in the UML build dir')
    sp.add_argument('objects', nargs='+', help='e.g. kernel/trace/ring_buffer_read.o')
    add('demo', cmd_demo, 'boot the kernel, record a trace with trace-cmd, show it')
    add('shell', cmd_shell, 'boot the kernel to an interactive shell')
    sp = add('cost', cmd_cost, 'count what each path executes per call, base and series (gdb)')
    sp.add_argument('--no-icount', dest='icount', action='store_false',
                    help='without the instruction-counter runs to compare with')
    sp.add_argument('--icount-only', action='store_true',
                    help='only the instruction-counter runs, three kernels side by side (minutes)')
    sp = add('series', cmd_series, 'write the patch series (git format-patch) and check it')
    sp.add_argument('--out', help='directory for the patches (default: cache/series-out)')
    sp.add_argument('--no-check', action='store_true',
                    help='only write it: no git am, byte comparison or checkpatch')
    sp.add_argument('--bisect', action='store_true',
                    help='and build every commit (UML KUnit config with the suites run, '
                         'x86_64 guest config, W=1 on what it writes; about 40 min)')
    sp.add_argument('--fixes', action='store_true',
                    help='the fixes for mainline, on the 7.3 base (scripts/rbdev.d/fixes; '
                         'their KUnit: "rbdev mainline --fixes")')
    sp = add('bench', cmd_bench, 'benchmark the series against the base (always both)')
    sp.add_argument('--runs', type=int, default=5, help='runs per kernel (default 5)')
    sp.add_argument('--uml-runs', type=int, default=21,
                    help='runs per kernel of the UML micro-benchmark, about a second each '
                         '(default 21; at least --runs; --quick: --runs)')
    sp.add_argument('--quick', action='store_true',
                    help='short runs: UML with few events, one 10 s hammer and a short trace in the guest')
    sp.add_argument('--uml-only', action='store_true', help='only the UML micro-benchmark')
    sp.add_argument('--guest-only', action='store_true', help='only the x86_64 guest benchmark')
    sp.add_argument('--no-icount', dest='icount', action='store_false',
                    help='without the instruction-counted guest runs (runs 1 and 2, or '
                         'to --icount-runs)')
    sp.add_argument('--icount-runs', type=int, metavar='N',
                    help='the counted ring_buffer_benchmark and trace-cmd boot in runs 1 to N '
                         '(default 2, at most --runs; the counted KUnit suite in runs 1 and 2)')
    sp.add_argument('--fn-hist', action='store_true',
                    help='instead: count every event of the function trace by function and '
                         'task, base against series (--runs boots each; under the instruction '
                         'counter unless --no-icount)')
    sp.add_argument('--fn-loss', type=int, metavar='R',
                    help='instead: the function trace\'s loss share alone, R records a boot, '
                         '--runs boots per kernel (under the instruction counter unless '
                         '--no-icount); medians, rank-sum test, loss at one production rate')
    sp.add_argument('--lossy', action='store_true',
                    help='with --fn-hist: the bench\'s buffer size (events lost); the counts '
                         'of the captured events scaled to what was produced')
    return p


def main(doc):
    """Parse the command line and run the command."""
    global PARSER
    PARSER = p = make_parser(doc)
    args = p.parse_args()
    common.verbose = args.verbose
    os.makedirs(CACHE, exist_ok=True)
    args.fn(args)
