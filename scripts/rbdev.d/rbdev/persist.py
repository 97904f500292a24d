"""The persistent buffer: three boots of one QEMU with warm reboots in
between (rbdev persist, the test command's persist stage), and base and
series taking turns on one RAM file (rbdev persist --alternate)."""

import os
import re

from .boot import find_reports, guest_boot, guest_done, guest_image, print_reports
from .common import log
from .guest import parse_result_lines


# The boot instance of the persistent-buffer stage: 12 MiB that the next
# boot finds again (reserve_mem picks the same place for the same kernel,
# initrd and memory size), holding boot_map's buffer.
PERSIST_APPEND = 'kunit.enable=0 reserve_mem=12M:4096:trace trace_instance=boot_map@trace'


def persist_stage(kind, res):
    """Three boots of one QEMU, warm reboots in between (guest/init's
    "persist" mode): what boot 1 recorded is read back in boot 2, part of it
    is consumed, and boot 3 finds the rest and boot 2's."""
    bdir = guest_image(kind)
    log(f'booting {kind}/x86 three times, rebooting warm: the persistent buffer (about 90 s) ...')
    console, lines, timed_out = guest_boot(bdir, 'persist', 'persist', 900,
                                           extra_append=PERSIST_APPEND, reboot=True, stall=300)
    for (k, n), v in sorted(parse_result_lines(lines).items()):
        res.add(k, n, v)
    boots = console.count('rbdev: persistent buffer: boot ')
    res.add('persist', 'three-boots', 'PASS' if boots == 3 and guest_done(lines) else
            ('TIMEOUT' if timed_out else 'FAIL'), f'{boots} boots; console: {bdir}/persist.console')
    reports = find_reports(console)
    print_reports(reports)
    res.add('persist', 'console-clean', 'FAIL' if reports else 'PASS',
            f'{len(reports)} report(s) in {bdir}/persist.console' if reports else '')


# Base and series in turn on one range: guest RAM lives in this file, so
# what one QEMU's guest left there the next QEMU's guest finds.
PERSIST_RAM = '/dev/shm/rbdev-persist-ram'
# (kernel, markers of the base and the series the step must find): each
# kernel starts afresh on the other's range, by design (different formats;
# see "Persistence" in the design document), and keeps its own.
PERSIST_ALT_STEPS = [('base', 0, 0), ('series', 0, 0), ('series', 0, 100),
                     ('base', 0, 0), ('base', 100, 0), ('series', 0, 0)]


def persist_alternate(res):
    """rbdev persist --alternate: six boots, each its own QEMU on one RAM
    file, base and series taking turns on the persistent range."""
    bdirs = {k: guest_image(k) for k in ('base', 'series')}
    if os.path.exists(PERSIST_RAM):
        os.unlink(PERSIST_RAM)
    backend = ['-object', f'memory-backend-file,id=ram0,size=2G,mem-path={PERSIST_RAM},share=on',
               '-machine', 'memory-backend=ram0']
    where = set()
    try:
        for i, (k, base_n, series_n) in enumerate(PERSIST_ALT_STEPS, 1):
            log(f'persist --alternate: step {i}, {k}')
            job = {'kernel': k + '\n', 'step': f'step{i}\n',
                   'expect': f'base={base_n} series={series_n}\n'}
            console, lines, timed_out = guest_boot(bdirs[k], 'persist-alt', 'persist-alt', 600,
                                                   job, extra_append=PERSIST_APPEND,
                                                   qemu_extra=backend)
            for (kk, n), v in sorted(parse_result_lines(lines).items()):
                res.add(kk, n, v)
            where |= set(re.findall(r'boot instance boot_map at physical memory (\S+)', console))
            reports = find_reports(console)
            print_reports(reports)
            res.add('persist-alt', f'step{i}.{k}-console-clean', 'FAIL' if reports or timed_out
                    else 'PASS', f'console: {bdirs[k]}/persist-alt.console')
    finally:
        if os.path.exists(PERSIST_RAM):
            os.unlink(PERSIST_RAM)
    res.add('persist-alt', 'same-range', 'PASS' if len(where) == 1 else 'FAIL',
            f'reserve_mem placed the range at {", ".join(sorted(where)) or "no address"}')
