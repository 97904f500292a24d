"""Guest tests: the x86_64 guest's boot of KUnit, the startup test, the
selftests, trace-cmd and ftracetest (resumed after a test that hangs the
guest; isolated tests in boots of their own), its result lines, and the
judging of a guest's console against the reports it may have."""

import os
import re
import threading

from .boot import find_reports, guest_boot, guest_done, guest_image, print_reports
from .common import CACHE, REPO, log, read
from .config import DEBUG_FTRACE
from .kunit import kunit_from_console
from .results import load_expected


def ftrace_list(kind, full):
    src = os.path.join(CACHE, kind, 'src', 'tools/testing/selftests/ftrace/test.d')
    subset = [ln.split('#')[0].strip() for ln in
              read(os.path.join(REPO, 'tests', 'ftrace-subset.txt'), 'r').splitlines()]
    subset = [s for s in subset if s]
    exp = load_expected()
    isolated = {n for (k, n), e in exp.items() if k == 'ftrace' and e['base'] == 'ISOLATED'}
    tests = []
    for dirpath, _, files in os.walk(src):
        for f in files:
            if f.endswith('.tc'):
                tests.append(os.path.relpath(os.path.join(dirpath, f), src))
    tests.sort()
    if not full:
        tests = [t for t in tests
                 if any(t == s or t.startswith(s.rstrip('/') + '/') for s in subset)]
    return [t for t in tests if t not in isolated], sorted(isolated)


def guest_tests(kind, res, full, variant='x86', only_tests=None):
    bdir = guest_image(kind, variant)
    tag = 'debug' if variant == 'x86-debug' else 'guest'
    tests, isolated = ftrace_list(kind, full or bool(only_tests))
    if only_tests:
        tests, isolated = [t for t in tests + isolated if t in only_tests], []
    if variant == 'x86-debug':
        # KASAN under TCG is slow: the debug boot runs the tests that write
        # and read through the buffer's own paths (sizes, sub-buffer orders,
        # snapshots, markers, trace_pipe, instances). The rest of 00basic
        # took 660 s of the test command's 70-minute cold run on 9f94a94
        # (basic2.tc, every tracer in turn, 514 s of it) and tests tracefs
        # more than the ring buffer; the normal guest runs them all, and
        # `rbdev torture --debug` writes from every context under lockdep
        # and KASAN.
        tests = [t for t in tests if t.startswith('instances/') or t in DEBUG_FTRACE]
    job = {'ftrace-tests': '\n'.join(tests) + '\n'}
    timeout = 600 + 15 * len(tests) * (3 if variant == 'x86-debug' else 1)
    log(f'booting {kind}/{variant}: KUnit, startup test, map_test, trace-cmd, '
        f'{len(tests)} ftracetest tests (about {len(tests) * 2 + 60} s) ...')
    # KASAN makes the function tracers several times slower: a test that
    # runs one may take far more than the default 240 s in the debug guest.
    per_test = 600 if variant == 'x86-debug' else 240

    # The host gives up on a guest that says nothing for longer than any one
    # test may take at the speed the guest measured (RBDEV-SPEED, see guest/init).
    def stall(lines):
        return per_test * guest_slowness(lines) + 120
    # The interleaving suite enumerates depth 2 under UML (about 80 s), the
    # same schedules on any architecture. In a TCG guest depth 2 takes 7 to
    # 23 minutes (a third of the test command's time), so the guests
    # enumerate depth 1: every point once with x86's own local_t and
    # atomic64_t. `rbdev kunit --arch x86_64` runs depth 2 in the guest.
    depth = 'ring_buffer_interleave_kunit.depth=1'
    # The persistent-buffer fuzzer (2000 rounds) and the crashes at every
    # test point (about 280,000) take about 30 s under UML; under TCG (and
    # KASAN) fewer rounds and every 4th (16th) point keep each KUnit case
    # well inside its 300 s.
    depth += (' ring_buffer_persist_kunit.iters=100 ring_buffer_persist_kunit.crash_every=16'
              if variant == 'x86-debug' else
              ' ring_buffer_persist_kunit.iters=300 ring_buffer_persist_kunit.crash_every=4')
    console, lines, timed_out = guest_boot(bdir, tag, 'test', timeout * 3 + 900, job,
                                           extra_append=f'rbdev.fttimeout={per_test} {depth}',
                                           stall=stall([]) * 2)
    why = {}
    console, lines, timed_out = resume_ftrace(bdir, tag, tests, per_test, stall,
                                              console, lines, timed_out, why)
    judge_guest(kind, bdir, console, lines, timed_out, res, tag, tests, why)
    for t in isolated if full else []:
        # One boot per isolated test: a kernel bug it hits cannot hide others.
        log(f'isolated boot for ftrace {t}')
        console, lines, timed_out = guest_boot(bdir, 'isolated', 'ftrace-only', 300,
                                               {'ftrace-tests': t + '\n'})
        got = parse_result_lines(lines).get(('ftrace', t), 'MISSING')
        if find_reports(console) or timed_out:
            got = 'FAIL'
        res.add('ftrace', t, got, 'isolated boot')


# RBDEV-SPEED on a quiet machine (centiseconds for guest/init's calibration loop).
GUEST_SPEED_QUIET = 30


def guest_slowness(lines):
    """How many times slower than on a quiet machine the guest reported itself."""
    for ln in lines:
        m = re.search(r'RBDEV-SPEED (\d+)', ln)
        if m:
            return max(1.0, int(m.group(1)) / GUEST_SPEED_QUIET)
    return 1.0


def resume_ftrace(bdir, tag, tests, per_test, stall, console, lines, timed_out, why):
    """A guest that stopped answering costs only the test it was in: record that
    test as TIMEOUT (its reason in @why), boot again and go on with the next
    one. Returns the consoles and result lines of all boots joined, and
    whether the last boot timed out too."""
    for _ in range(len(tests)):
        if guest_done(lines):
            break
        got = parse_result_lines(lines)
        started = [m.group(1) for m in (re.search(r'RBDEV-START ftrace (\S+)', ln)
                                        for ln in lines) if m]
        if not started or ('ftrace', started[-1]) in got:
            break       # it died outside ftracetest: judge_guest reports it
        lost = started[-1]
        idx = tests.index(lost) + 1
        log(f'{tag}: the guest stopped answering in ftrace {lost}; '
            f'restarting it for the {len(tests) - idx} test(s) after it')
        lines = lines + [f'RBDEV-RESULT ftrace {lost} TIMEOUT']
        why[lost] = ('lost: the guest stopped answering during this test and was '
                     f'restarted for the rest (console: {bdir}/{tag}.console)')
        if idx >= len(tests):
            lines.append('RBDEV-DONE')
            break
        c2, l2, timed_out = guest_boot(bdir, f'{tag}-resume', 'ftrace-only',
                                       600 + 60 * (len(tests) - idx) * 3,
                                       {'ftrace-tests': '\n'.join(tests) + '\n'},
                                       stall=stall(lines),
                                       extra_append=f'kunit.enable=0 rbdev.fttimeout={per_test} '
                                                    f'rbdev.ftskip={idx}')
        console += '\n' + c2
        lines = lines + l2
    return console, lines, timed_out and not guest_done(lines)


def parse_result_lines(lines):
    out = {}
    for ln in lines:
        m = re.search(r'RBDEV-RESULT (\S+) (\S+) (\S+)', ln)
        if m:
            out[(m.group(1), m.group(2))] = m.group(3)
    return out


# Judging a guest's console: here the guest tests, the torture and
# `rbdev kunit --arch x86_64` share it.
REPORT_ROWS = threading.Lock()


def unexpected_reports(res, kind, console):
    """The console's reports, less those tests/expected-results.txt allows on
    @kind ("report NAME ALLOWED", NAME a regular expression searched in the
    report); each allowed one found is a result row."""
    reports = []
    for r in find_reports(console):
        known = [n for (k, n), e in res.expected.items()
                 if k == 'report' and e[res.kernel_column(k, n, kind)] == 'ALLOWED'
                 and re.search(n, r)]
        if known:
            with REPORT_ROWS:   # two guests may find the same report at once
                if not any(row[0] == 'report' and row[1] == known[0] for row in res.rows):
                    res.add('report', known[0], 'ALLOWED')
            continue
        reports.append(r)
    return reports


def judge_guest(kind, bdir, console, lines, timed_out, res, tag, tests, why=None):
    got = parse_result_lines(lines)
    kunit_from_console(kind, console, bdir, res, f'kunit-{tag}')
    st = 'PASS' if 'Ring buffer PASSED!' in console else 'FAIL'
    res.add(tag, 'RING_BUFFER_STARTUP_TEST', st)
    for (k, n), v in sorted(got.items()):
        if k == 'ftrace':
            continue
        res.add(k if tag == 'guest' else f'{k}-{tag}', n, v)
    for t in tests:
        res.add('ftrace' if tag == 'guest' else f'ftrace-{tag}', t,
                got.get(('ftrace', t), 'MISSING'), (why or {}).get(t, ''))
    reports = unexpected_reports(res, kind, console)
    print_reports(reports)
    res.add(tag, 'console-clean', 'FAIL' if reports else 'PASS',
            f'{len(reports)} report(s) in {bdir}/{tag}.console' if reports else '')
    res.add(tag, 'completed', 'TIMEOUT' if timed_out else ('PASS' if guest_done(lines) else 'FAIL'),
            f'console: {bdir}/{tag}.console')
