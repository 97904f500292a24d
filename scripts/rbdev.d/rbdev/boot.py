"""Booting: the guest image of a kernel and variant, made once per
process; a boot under QEMU with its console and results port watched
(timeouts, stalls); the kernel reports found on a console."""

import os
import re
import select
import subprocess
import time

from . import common
from .build import build_x86
from .common import log, read
from .config import QEMU_BASE
from .image import make_initramfs, run_initramfs


# Kernel reports that fail a run wherever they appear on the console.
REPORT_RE = re.compile(
    r'(Oops|BUG:|kernel BUG at|WARNING:|general protection fault|Kernel panic|'
    r'UBSAN:|possible circular locking|possible recursive locking|'
    r'inconsistent lock state|DEBUG_LOCKS_WARN_ON|INFO: lockdep|'
    r'INFO: task .* blocked|rcu: INFO: .*stall|detected stalls|soft lockup|'
    r'Ring buffer FAILED|Ring buffer self test FAILED)')
KCSAN_END_RE = re.compile(r'^={20,}')
REPORT_END_RE = re.compile(r'---\[ end (trace|Kernel panic)|^\s*$')


def find_reports(console):
    lines = console.splitlines()
    reports = []
    i = 0
    while i < len(lines):
        if REPORT_RE.search(lines[i]) and 'RBDEV-' not in lines[i]:
            # A KCSAN report has blank lines inside; it ends with a line of '='.
            kcsan = 'BUG: KCSAN' in lines[i]
            end, most = (KCSAN_END_RE, 200) if kcsan else (REPORT_END_RE, 60)
            j = i + 1
            while j < len(lines) and j < i + most and not end.search(lines[j]):
                j += 1
            reports.append('\n'.join(lines[i:j + 1]))
            i = j + 1
        else:
            i += 1
    return reports


def print_reports(reports):
    for r in reports:
        print('---- kernel report ----\n' + r + '\n-----------------------')


def guest_done(lines):
    """Did the guest init get to the end of its job?"""
    return any('RBDEV-DONE' in ln for ln in lines)


# Guest images made in this process: the sources do not change during one
# command, and a second make, even one with nothing to do, would wait for the
# build lock behind a build of another kernel (rbdev test boots guests beside
# its builds).
GUEST_IMAGES = {}


def guest_image(kind, variant='x86'):
    """Build the guest kernel and its initramfs; returns the build dir."""
    if (kind, variant) not in GUEST_IMAGES:
        bdir = build_x86(kind, variant)
        make_initramfs(kind, bdir)
        GUEST_IMAGES[kind, variant] = bdir
    return GUEST_IMAGES[kind, variant]


def guest_boot(bdir, job, mode, timeout, files=None, **kw):
    """Boot the guest of @bdir with @files as its job (guest/init reads them
    from /rbdev); the console and results go to <bdir>/<job>.*. Returns what
    boot() does."""
    initrd = run_initramfs(bdir, job, files or {})
    return boot(bdir, initrd, mode, timeout, logname=job, **kw)


def boot(bdir, initrd, mode, timeout, interactive=False, extra_append='', logname=None,
         stall=None, reboot=False, qemu_extra=()):
    """Boot the guest; returns (console text, result lines, timed out). With
    @stall, a guest whose init has started and then prints nothing, on the
    console or the results port, for @stall seconds counts as timed out too.
    With @reboot, a reboot in the guest resets the machine (RAM kept) instead
    of ending QEMU."""
    kernel = os.path.join(bdir, 'arch/x86/boot/bzImage')
    append = f'console=ttyS0 panic=-1 rbdev.mode={mode} {extra_append}'.strip()
    qemu = [a for a in QEMU_BASE if not (reboot and a == '-no-reboot')]
    for opt in ('-smp', '-accel'):
        if opt in qemu_extra:
            i = qemu.index(opt)
            del qemu[i:i + 2]
    cmd = qemu + list(qemu_extra) + ['-kernel', kernel, '-initrd', initrd, '-append', append]
    if interactive:
        cmd += ['-serial', 'mon:stdio']
        subprocess.run(cmd)
        return '', [], False
    results = os.path.join(bdir, f'{logname or mode}.results')
    conlog = os.path.join(bdir, f'{logname or mode}.console')
    open(results, 'w').close()
    cmd += ['-monitor', 'none', '-serial', 'stdio', '-serial', f'file:{results}']
    t0 = last = time.time()
    timed_out = False
    init_up = False
    res_size = 0
    with open(conlog, 'w') as con:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT)
        buf = ''
        while True:
            ready, _, _ = select.select([p.stdout], [], [], 0.5)
            chunk = os.read(p.stdout.fileno(), 65536).decode(errors='replace') if ready else ''
            if chunk:
                con.write(chunk)
                buf += chunk
                last = time.time()
                init_up = init_up or 'rbdev: ' in chunk
                *done, buf = buf.split('\n')
                for ln in done:
                    if 'rbdev: ' in ln and 'RBDEV-' not in ln:
                        print('  [%s %4.0fs] %s' % (logname or mode, time.time() - t0,
                              ln[ln.index('rbdev: ') + 7:].rstrip()), flush=True)
                    elif common.verbose:
                        print('  | ' + ln.rstrip(), flush=True)
            elif ready or p.poll() is not None:
                p.wait()
                break
            size = os.path.getsize(results)
            if size != res_size:
                res_size, last = size, time.time()
            if time.time() - t0 > timeout or (stall and init_up and time.time() - last > stall):
                timed_out = True
                why = ('silent for %d s' % stall if time.time() - t0 <= timeout
                       else 'over its %d s' % timeout)
                log(f'guest {logname or mode} {why}: stopping it')
                p.kill()
                p.wait()
                break
    lines = read(results, 'r').splitlines()
    return read(conlog, 'r'), lines, timed_out
