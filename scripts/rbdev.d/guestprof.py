#!/usr/bin/env python3
# What a guest benchmark boot does besides the ring buffer's own paths:
# boots the x86_64 bench guest of one kernel once, runs the producer alone
# (ring_buffer_benchmark disable_reader=1) and then the function trace
# (trace-cmd record, FN_LOOPS=20), and prints per phase its wall time and the
# guest's interrupt, softirq and context-switch counts (/proc/interrupts,
# /proc/softirqs, /proc/stat before and after). With --perf it also samples
# the QEMU process on the host per phase (perf record -e cpu-clock), to
# <out>/<tag>-<phase>.data for `perf report --sort dso,sym`.
#
#   scripts/rbdev.d/guestprof.py base                # the base's x86 image
#   scripts/rbdev.d/guestprof.py series --perf       # the series' x86-nopoints image
#
# The images must be built (rbdev bench builds both). Found with it
# (2026-12-04): the series raised ~370 irq_work interrupts a CPU in the
# function trace against the base's ~10 (README, "Performance").
import argparse
import os
import select
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from rbdev import build, common, config, image  # noqa: E402  (rbdev's package, beside this file)

CONF = r'''
RBM_HAMMERS=0; RBM_NOREADER=0; FN_LOOPS=20; FN_BUFFER_KB=1408; RBM_PARAMS=""
snap() {
	say "SNAP $1 $(grep -E '^ctxt' /proc/stat)"
	# user nice system idle iowait irq softirq, in USER_HZ ticks, per CPU
	grep -E '^cpu[0-9]' /proc/stat | while read c u n s i w q sq rest; do
		say "SNAP $1 $c: user $u system $s idle $i irq $q softirq $sq"
	done
	grep -E 'IWI|RES|CAL|LOC|TLB' /proc/interrupts | while read l; do say "SNAP $1 $l"; done
	grep -E 'RCU|TIMER|SCHED' /proc/softirqs | while read l; do say "SNAP $1 $l"; done
}
snap s0
say PROF-START-noreader
RBM_HAMMERS=1; RBM_PARAMS="disable_reader=1"; run_rb_benchmark
say PROF-END-noreader
snap s1
say PROF-START-fn
run_fn_trace
say PROF-END-fn
snap s2
finish
'''


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('kind', choices=('base', 'series'))
    ap.add_argument('--variant', help='guest image (default: x86 for the base, '
                    'x86-nopoints for the series, as rbdev bench)')
    ap.add_argument('--perf', action='store_true', help='sample QEMU per phase')
    ap.add_argument('--icount', action='store_true', help='under -icount shift=0')
    ap.add_argument('--out', default='/tmp/guestprof')
    a = ap.parse_args()
    variant = a.variant or config.PERF_VARIANT[a.kind]
    bdir = build.build_dir(a.kind, variant)
    if not os.path.exists(os.path.join(bdir, 'arch/x86/boot/bzImage')):
        common.die(f'no {a.kind}/{variant} image: rbdev build --config {variant} first')
    os.makedirs(a.out, exist_ok=True)
    tag = f'{a.kind}-{variant}' + ('-icount' if a.icount else '')
    image.make_initramfs(a.kind, bdir)
    initrd = image.run_initramfs(bdir, 'prof', {'bench.conf': CONF})
    results = os.path.join(a.out, f'{tag}.results')
    open(results, 'w').close()
    cmd = config.QEMU_BASE + (config.ICOUNT if a.icount else []) + [
        '-kernel', os.path.join(bdir, 'arch/x86/boot/bzImage'), '-initrd', initrd,
        '-append', 'console=ttyS0 panic=-1 rbdev.mode=bench kunit.enable=0',
        '-monitor', 'none', '-serial', 'stdio', '-serial', f'file:{results}']
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    snaps, marks, prof, buf = {}, {}, None, ''
    with open(os.path.join(a.out, f'{tag}.console'), 'w') as con:
        while True:
            r, _, _ = select.select([p.stdout], [], [], 0.5)
            chunk = os.read(p.stdout.fileno(), 65536).decode(errors='replace') if r else ''
            if not chunk:
                if r or p.poll() is not None:
                    break
                continue
            con.write(chunk)
            buf += chunk
            *done, buf = buf.split('\n')
            for ln in done:
                if 'rbdev: ' not in ln:
                    continue
                msg = ln[ln.index('rbdev: ') + 7:].strip()
                f = msg.split()
                if f[0] == 'SNAP' and len(f) > 3:
                    # "SNAP s1 IWI: 3 3 IRQ work interrupts": the per-CPU counts
                    nums = [int(x) for x in f[3:] if x.isdigit()]
                    snaps.setdefault(f[1], {})[f[2].rstrip(':')] = nums
                elif msg.startswith('PROF-START-'):
                    ph = msg[11:]
                    marks[ph] = time.time()
                    if a.perf:
                        prof = subprocess.Popen(
                            ['perf', 'record', '-q', '-e', 'cpu-clock', '-F', '1999', '-g',
                             '-p', str(p.pid), '-o', os.path.join(a.out, f'{tag}-{ph}.data')],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                elif msg.startswith('PROF-END-'):
                    ph = msg[9:]
                    marks[ph] = time.time() - marks[ph]
                    if prof:
                        prof.send_signal(signal.SIGINT)
                        prof.wait()
                        prof = None
    p.wait()
    for ph, (s0, s1) in (('noreader', ('s0', 's1')), ('fn', ('s1', 's2'))):
        if s0 not in snaps or s1 not in snaps:
            common.die(f'the guest did not finish phase {ph}: see {a.out}/{tag}.console')
        print(f'{tag} {ph}: {marks[ph]:.1f} s wall;', ', '.join(
            f'{k} +' + '/'.join(str(y - x) for x, y in zip(snaps[s0][k], snaps[s1][k]))
            for k in snaps[s0] if k in snaps[s1]))
    print(open(results).read().strip())


if __name__ == '__main__':
    sys.exit(main())
