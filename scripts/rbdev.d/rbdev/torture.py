"""The torture: ring_buffer_torture.c in the guest with four vCPUs (plain,
debug, KCSAN with its canary), and --irqsoff, the longest interrupts-off
sections of base and series under the instruction counter."""

import glob
import os
import re
import subprocess

from .boot import guest_boot, guest_image, print_reports
from .common import log
from .config import ICOUNT
from .guest import parse_result_lines, unexpected_reports
from .results import Results


TORTURE_CPUS = 4


def kcsan_report_is_ours(report):
    """A KCSAN report counts against the ring buffer when one of its two
    accesses is in the ring buffer's own files (rb_*, ring_buffer_*), unless
    it is the torture's canary (its threads are rbx_canary_*)."""
    if 'rbx_canary' in report:
        return False
    return bool(re.search(r'\b(rb_\w+|ring_buffer_\w+|__rb_\w+)\+0x', report))


def torture_stage(kind, res, seconds, variant='x86', tag='torture', append='', qemu_extra=()):
    """Boot the guest with four vCPUs and run ring_buffer_torture.c for
    @seconds while guest/init loads tracefs (see "torture" in guest/init).
    Returns the guest's result lines."""
    bdir = guest_image(kind, variant)
    if variant == 'x86-kcsan':
        # KCSAN sees a race only if the other CPU runs while a watchpoint
        # waits (80 us); single-threaded TCG switches vCPUs far less often,
        # so the KCSAN guest runs multi-threaded TCG, one host thread per vCPU.
        qemu_extra = ['-accel', 'tcg,thread=multi', *qemu_extra]
        append = f'ring_buffer_torture.kcsan_canary=1 {append}'.strip()
    log(f'booting {kind}/{variant} with {TORTURE_CPUS} CPUs: torture for {seconds} s '
        f'(about {seconds + 60} s) ...')
    console, lines, timed_out = guest_boot(
        bdir, tag, 'torture', seconds * 10 + 900,
        extra_append=f'kunit.enable=0 rbdev.torture={seconds} {append}'.strip(),
        qemu_extra=['-smp', str(TORTURE_CPUS), *qemu_extra], stall=300)
    got = parse_result_lines(lines)
    end = [ln for ln in console.splitlines() if 'rb-torture: end' in ln]
    summary = (end[-1].split('rb-torture: ')[-1][:300] if end else
               f'no verdict; console: {bdir}/{tag}.console')
    for check in ('accounting', 'time-order', 'coverage'):
        res.add(tag, check, got.get(('torture', check), 'TIMEOUT' if timed_out else 'MISSING'),
                summary if check == 'accounting' else '')
    errors = [ln.split('rb-torture: ')[-1] for ln in console.splitlines()
              if re.search(r'rb-torture: (time error|error|coverage)', ln)]
    for e in errors[:12]:
        print('    ' + e)
    reports = unexpected_reports(res, kind, console)
    ours = [r for r in reports if variant != 'x86-kcsan' or 'KCSAN' not in r
            or kcsan_report_is_ours(r)]
    elsewhere = [r for r in reports if r not in ours]
    print_reports(ours)
    res.add(tag, 'console-clean', 'FAIL' if ours else 'PASS',
            f'{len(ours)} report(s) in {bdir}/{tag}.console' if ours else '')
    if variant == 'x86-kcsan':
        # The torture's deliberate race first: without its report, no report means nothing.
        canary = [r for r in elsewhere if 'rbx_canary' in r]
        res.add(tag, 'kcsan-canary', 'PASS' if canary else 'FAIL',
                '' if canary else 'KCSAN reported not even the deliberate race')
        elsewhere = [r for r in elsewhere if 'rbx_canary' not in r]
        # Races KCSAN finds in the rest of the kernel are listed, not ours to judge.
        funcs = sorted({m for r in elsewhere for m in
                        re.findall(r'BUG: KCSAN: data-race in (\S+ / \S+)', r)})
        res.add(tag, 'kcsan-outside-ring-buffer', 'PASS',
                f'{len(elsewhere)} report(s) elsewhere: {"; ".join(funcs)[:300]}' if elsewhere
                else 'none')
    return got


# rbdev torture --irqsoff: the torture with 8 MiB per CPU to resize, no
# hotplug during the run (stop_machine() is an interrupts-off section of its
# own), no absolute mode (the base's bug there is not what this measures) and
# no console output, under the instruction counter. Under TCG the vCPUs share
# one host thread and one instruction clock, so a section on one vCPU would
# also count the others' instructions (the first runs found 76 ms "sections"
# in the timer interrupt that way). So the torture parks all CPUs but CPU 0
# once its rings exist on all four (park_cpus): resizes and order changes
# still rebuild four rings, and a section's length is CPU 0's instructions.
# The irqsoff tracer keeps only the longest section, which is the timer
# interrupt's (about 16 ms of instructions under this load); guest/init
# keeps every section of 10,000 instructions or more with its owner, the
# function that turned interrupts back on (see irqsoff_start there).
IRQSOFF_APPEND = ('quiet rbdev.irqsoff=1 ring_buffer_torture.hotplug=0 ring_buffer_torture.abs_ts=0 '
                  f'ring_buffer_torture.size_kb=8192 ring_buffer_torture.park_cpus={TORTURE_CPUS - 1}')


def ring_buffer_functions(bdir):
    """The functions the ring buffer's own objects in @bdir define (not its
    tests): what an interrupts-off section's owner must be to count."""
    names = set()
    for o in glob.glob(os.path.join(bdir, 'kernel/trace/ring_buffer*.o')):
        if re.search(r'_(kunit|torture|benchmark)\.o$', o):
            continue
        out = subprocess.run(['nm', '--defined-only', o], capture_output=True, text=True).stdout
        names |= {ln.split()[2] for ln in out.splitlines()
                  if len(ln.split()) == 3 and ln.split()[1] in 'tT'}
    return names


def torture_irqsoff(res, seconds):
    """Both kernels in turn; prints the longest interrupts-off section whose
    owner is the ring buffer, the longest elsewhere, and the ratio. A
    measurement, not a test: only the torture's verdicts and a clean
    console count as results."""
    rows = {}
    for kind in ('base', 'series'):
        r = Results(kind)
        got = torture_stage(kind, r, seconds, tag='torture-irqsoff', append=IRQSOFF_APPEND,
                            qemu_extra=ICOUNT)
        for row in r.rows:
            res.rows.append((row[0], f'{kind}.{row[1]}', *row[2:]))
        ours = ring_buffer_functions(guest_image(kind))
        sections = sorted(((int(v), n) for (k, n), v in got.items()
                           if k == 'irqsoff' and v.isdigit()), reverse=True)
        # The torture never turns interrupts off itself: a section it seems
        # to own is a ring buffer call that ended in a tail call to the
        # unlock (ring_buffer_iter_advance(), for one), so it counts too.
        rb = [(v, n if n in ours else f'{n}:tail') for v, n in sections
              if n in ours or n.startswith('rbx_')]
        other = [(v, n) for v, n in sections if n not in ours and not n.startswith('rbx_')]
        overrun = got.get(('bench', 'irqsoff.overrun'))
        if overrun != '0':
            res.add('torture-irqsoff', f'{kind}.trace-complete', 'FAIL',
                    f'the trace buffer lost {overrun} events: the sections are incomplete')
        rows[kind] = (rb, other, got.get(('bench', 'irqsoff.sections'), '?'))
        if not sections:
            res.add('torture-irqsoff', f'{kind}.sections', 'FAIL',
                    'the guest reported no interrupts-off section at all')
    print()
    print('Longest interrupts-off sections during the torture (instructions: -icount shift=0, '
          f'CPU 0 running, rings on {TORTURE_CPUS} CPUs, {IRQSOFF_APPEND.split("size_kb=")[1].split()[0]} '
          'KiB per CPU at most):')
    print(f'  {"":7} {"ring buffer":>12}  {"owner":28} {"elsewhere":>12}  owner')
    for kind, (rb, other, n) in rows.items():
        a = rb[0] if rb else (0, '-')
        b = other[0] if other else (0, '-')
        print(f'  {kind:7} {a[0]:12}  {a[1]:28} {b[0]:12}  {b[1]}   ({n} sections)')
        for v, name in rb[1:6]:
            print(f'  {"":7} {v:12}  {name}')
    try:
        print(f'  series/base, ring buffer: {rows["series"][0][0][0] / rows["base"][0][0][0]:.2f}x')
    except (IndexError, ZeroDivisionError):
        print('  series/base, ring buffer: n/a')
