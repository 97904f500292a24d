# Run inside gdb (rbdev cost): single-steps the ring buffer's paths in an
# x86_64 guest stopped under QEMU's gdbstub and counts, per call, what the
# compiled code executes. QEMU's gdbstub steps with interrupts and timers
# masked, so nothing but the path itself is counted.
#
# Environment: RBDEV_PORT (gdbstub port), RBDEV_NM (the guest vmlinux's
# "nm -n" output), RBDEV_OUT (JSON written at the end), RBDEV_CALLS (calls
# counted per path) and RBDEV_SKIP (calls left alone first, so that the
# counted ones are the loop's steady state).
#
# Per path: instructions executed inside its functions and everything they
# call (not the caller's loop, counted apart as "loop"), read-modify-write
# instructions on memory that the atomics compile to (cmpxchg, xadd, xchg,
# and on x86 local_t's inc/dec/add/sub to memory), the locked ones among
# them (lock prefix, or xchg with memory), full barriers (mfence, or a
# locked op on the stack, as x86's smp_mb() is), clock reads (rdtsc,
# rdtscp), per-CPU read-modify-writes through %gs (the preempt count,
# apart from the others) and the distinct 64-byte cache lines stored to
# (the stack apart), and the nops executed (a static key that is off, once
# CONFIG_JUMP_LABEL patches it, is one). And the memory accesses, loads and
# stores apart (the stack's included: push, pop, call, ret), which TCG
# charges a software-TLB lookup each; a read-modify-write is one of each,
# a string instruction (rep movs) one of each whatever it copies.
import bisect
import json
import os
import re
import time

import gdb

PATHS = [
    # name, the KUnit function whose loop makes the calls, the functions
    # counted (entered from that loop)
    ('write.consumer.8B', 'rbt_bench_write',
     ('ring_buffer_lock_reserve', 'ring_buffer_event_data', 'ring_buffer_unlock_commit')),
    ('write.ring_buffer_write.64B', 'rbt_bench_write_api', ('ring_buffer_write',)),
    ('read.consume', 'rbt_bench_read', ('ring_buffer_consume',)),
    ('read.iterator', 'rbt_bench_read', ('ring_buffer_iter_peek', 'ring_buffer_iter_advance')),
]

RMW = re.compile(r'^(cmpxchg\w*|xadd\w*|xchg\w*|inc[bwlq]?|dec[bwlq]?|add[bwlq]?|'
                 r'sub[bwlq]?|or[bwlq]?|and[bwlq]?|xor[bwlq]?|bts\w*|btr\w*|btc\w*|neg\w*|'
                 r'not\w*)\s')
READ_ONLY = re.compile(r'(cmp[bwlq]?|test[bwlq]?|bt[wlq]?|v?u?comis[sd]|prefetch\w*|nop\w*|j\w+|'
                       r'call\w*|push\w*|lea[wlq]?|clflush\w*|ud\d?)$')


class Symbols:
    def __init__(self, path):
        self.addr, self.name = [], []
        for ln in open(path):
            f = ln.split()
            if len(f) == 3 and f[1] in 'tTwW':
                self.addr.append(int(f[0], 16))
                self.name.append(f[2])
        self.by_name = dict(zip(self.name, self.addr))

    def at(self, pc):
        i = bisect.bisect_right(self.addr, pc) - 1
        return self.name[i] if i >= 0 else '?'

    def range(self, name):
        a = self.by_name[name]
        i = bisect.bisect_right(self.addr, a)
        while i < len(self.addr) and self.addr[i] == a:
            i += 1
        return a, self.addr[i]


def reg(name):
    return int(gdb.parse_and_eval(f'(unsigned long)${name}')) & (2 ** 64 - 1)


def u64(addr):
    return int.from_bytes(bytes(gdb.selected_inferior().read_memory(addr, 8)), 'little')


def regval(r):
    r = r.lstrip('%')
    m = {'eax': 'rax', 'ebx': 'rbx', 'ecx': 'rcx', 'edx': 'rdx', 'esi': 'rsi', 'edi': 'rdi',
         'ebp': 'rbp', 'esp': 'rsp'}
    if re.fullmatch(r'r\d+d', r):
        return reg(r[:-1]) & 0xffffffff
    if r in m:
        return reg(m[r]) & 0xffffffff
    return reg(r)


def split_insn(asm):
    """(lock prefix?, mnemonic, last operand) of an AT&T instruction."""
    ops = asm.split('#')[0].strip()
    locked = ops.startswith('lock ')
    if locked:
        ops = ops[5:].lstrip()
    parts = ops.split(None, 1)
    operands = parts[1] if len(parts) > 1 else ''
    depth, last = 0, 0
    for i, c in enumerate(operands):
        if c == '(':
            depth += 1
        elif c == ')':
            depth -= 1
        elif c == ',' and depth == 0:
            last = i + 1
    return locked, parts[0] if parts else '', operands[last:].strip()


def is_memory(op):
    return bool(op) and not op.startswith(('%', '$')) or op.startswith(('%gs:', '%fs:'))


def store_address(asm, pc, length):
    """The address @asm (AT&T) stores to, or None if it stores nothing."""
    _, mnem, dst = split_insn(asm)
    if READ_ONLY.match(mnem) or not is_memory(dst):
        return None
    m = re.fullmatch(r'(%[gf]s:)?(-?0x[0-9a-f]+|-?\d+)?(?:\((%\w+)?(?:,(%\w+)(?:,(\d))?)?\))?',
                     dst)
    if not m:
        return None
    seg, disp, base, index, scale = m.groups()
    addr = int(disp, 16) if disp and 'x' in disp else int(disp or 0)
    if base == '%rip':
        addr += pc + length
    elif base:
        addr += regval(base)
    if index:
        addr += regval(index) * int(scale or 1)
    if seg == '%gs:':
        addr += reg('gs_base')
    return addr & (2 ** 64 - 1)


def memory_accesses(asm):
    """(loads, stores) of @asm (AT&T), one each per memory operand."""
    _, mnem, dst = split_insn(asm)
    if mnem.startswith(('lea', 'nop', 'prefetch')) or asm.startswith('xchg %ax,%ax'):
        return 0, 0
    if mnem.startswith(('push', 'call')):
        return 0, 1
    if mnem.startswith(('pop', 'ret')):
        return 1, 0
    if mnem.startswith(('movs', 'rep', 'stos', 'lods', 'cmps', 'scas')):
        return (int(not mnem.startswith(('stos', 'rep stos'))),
                int(not mnem.startswith(('lods', 'cmps', 'scas'))))
    ops = asm.split('#')[0].strip()
    operands = ops.split(None, 1)[1] if len(ops.split(None, 1)) > 1 else ''
    src_mem = '(' in operands.replace(dst, '', 1) or re.search(r'%[gf]s:', operands.replace(dst, '', 1))
    dst_mem = is_memory(dst)
    if not dst_mem:
        return int(bool(src_mem)), 0
    if READ_ONLY.match(mnem):
        return 1, 0
    if RMW.match(mnem + ' '):
        return 1, 1
    return int(bool(src_mem)), 1


def classify(asm):
    """(read-modify-write on memory other than per-CPU data through %gs,
    locked, full barrier, clock read, per-CPU read-modify-write)."""
    locked, mnem, dst = split_insn(asm)
    rmw = bool(RMW.match(mnem + ' ')) and is_memory(dst)
    percpu = rmw and dst.startswith('%gs:')
    rmw = rmw and not percpu
    locked = locked or (mnem.startswith('xchg') and is_memory(dst))
    fence = mnem == 'mfence' or (locked and dst.endswith('(%rsp)') and
                                 not re.match(r'cmpxchg|xadd|xchg', mnem))
    return rmw, locked, fence, mnem.startswith('rdtsc'), percpu


def hbreak(addr, ignore=0):
    bp = gdb.Breakpoint(f'*{addr:#x}', type=gdb.BP_HARDWARE_BREAKPOINT)
    bp.ignore_count = ignore
    gdb.execute('continue')
    bp.delete()


def step_path(syms, name, trigger, funcs, calls, skip, in_trigger):
    lo, hi = syms.range(trigger)
    entries = {syms.by_name[f]: f for f in funcs}
    if not in_trigger:
        hbreak(lo)
    first = syms.by_name[funcs[0]]
    hbreak(first, skip)
    arch = gdb.selected_frame().architecture()
    per_call = []
    by_func = {}
    loop = 0
    cur = None
    started = 0
    while True:
        pc = reg('pc')
        if cur is None:
            if pc in entries:
                if pc == first:
                    if started == calls:
                        break
                    started += 1
                    per_call.append({'instr': 0, 'rmw': 0, 'locked': 0, 'fence': 0, 'clock': 0,
                                     'percpu_rmw': 0, 'nops': 0, 'lines': set(),
                                     'stack_stores': 0, 'loads': 0, 'stores': 0})
                cur = (u64(reg('rsp')), reg('rsp'))
            elif lo <= pc < hi:
                loop += 1
            else:
                # A call from the loop to something else (ktime, reset):
                # run it at full speed up to its return.
                hbreak(u64(reg('rsp')))
                continue
        if cur is not None:
            insn = arch.disassemble(pc)[0]
            asm = ' '.join(insn['asm'].split())
            c = per_call[-1]
            c['instr'] += 1
            fn = syms.at(pc)
            by_func[fn] = by_func.get(fn, 0) + 1
            rmw, locked, fence, clock, percpu = classify(asm)
            c['percpu_rmw'] += percpu
            c['nops'] += asm.startswith(('nop', 'xchg %ax,%ax'))
            c['rmw'] += rmw and not fence
            c['locked'] += locked and not fence
            c['fence'] += fence
            c['clock'] += clock
            loads, stores = memory_accesses(asm)
            c['loads'] += loads
            c['stores'] += stores
            a = store_address(asm, pc, insn['length'])
            sp = reg('rsp')
            if asm.startswith(('push', 'call')) or (a is not None and abs(a - sp) < 16384):
                c['stack_stores'] += 1
            elif a is not None:
                c['lines'].add(a >> 6)
            if asm.startswith('ret') and reg('rsp') == cur[1]:
                cur = None
        gdb.execute('stepi', to_string=True)
    rows = [dict(c, lines=len(c['lines'])) for c in per_call]
    return {'path': name, 'calls': len(rows), 'loop_instr': loop,
            'per_call': rows, 'by_func': by_func}


def main():
    syms = Symbols(os.environ['RBDEV_NM'])
    gdb.execute('set pagination off')
    gdb.execute('set confirm off')
    for _ in range(30):
        try:
            gdb.execute(f'target remote :{os.environ["RBDEV_PORT"]}')
            break
        except gdb.error:
            time.sleep(1)
    out = []
    prev = None
    for name, trigger, funcs in PATHS:
        try:
            out.append(step_path(syms, name, trigger, funcs, int(os.environ['RBDEV_CALLS']),
                                 int(os.environ['RBDEV_SKIP']), trigger == prev))
        except (gdb.error, KeyError) as e:
            out.append({'path': name, 'error': str(e)})
        prev = trigger
    with open(os.environ['RBDEV_OUT'], 'w') as f:
        json.dump(out, f, indent=1)
    gdb.execute('delete')
    gdb.execute('detach')


main()
