"""The guest image: the initramfs (busybox, dash, trace-cmd, ftracetest,
the ring-buffer selftests and the modules) and the small cpio of each
boot's job appended to it."""

import gzip
import os
import re
import shutil
import subprocess

from .common import CACHE, DATA, die, read, run


def ldd_libs(binary):
    out = subprocess.run(['ldd', binary], capture_output=True, text=True).stdout
    libs = []
    for ln in out.splitlines():
        m = re.search(r'(/\S+)\s+\(0x', ln)
        if m:
            libs.append(m.group(1))
    return libs


def copy_with_libs(root, binary, dsts):
    """Copy a host binary to each of @dsts under @root, and the libraries ldd lists."""
    for dst in dsts:
        dst = os.path.join(root, dst)
        if os.path.lexists(dst):
            os.unlink(dst)
        shutil.copy2(binary, dst)
    for lib in ldd_libs(binary):
        dst = os.path.join(root, lib.lstrip('/'))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(lib, dst)


def build_map_test(kind, bdir):
    """Build the ring-buffer selftests the guest runs from the synced tree:
    upstream's map_test and the repo's rb_mmap_test and rb_poll_test (which
    the base tree gets too, through BASE_GLOBS). Returns {name: binary}, each
    for /opt/<name>."""
    src = os.path.join(CACHE, kind, 'src')
    sdir = os.path.join(src, 'tools/testing/selftests')
    out = {}
    for name, libs in (('map_test', []), ('rb_mmap_test', ['-lpthread']),
                       ('rb_poll_test', ['-lpthread'])):
        binary = os.path.join(bdir, name)
        c = os.path.join(sdir, 'ring-buffer', name + '.c')
        if not os.path.exists(c):
            die(f'{c} is missing: the {kind} tree is not synced from the repo')
        if not os.path.exists(binary) or os.path.getmtime(binary) < os.path.getmtime(c):
            run(['gcc', '-static', '-D_GNU_SOURCE', '-Wall',
                 '-I' + os.path.join(bdir, 'usr/include'), '-I' + sdir, c, '-o', binary] + libs,
                logfile=os.path.join(bdir, name + '.log'))
        out[name] = binary
    return out


def make_initramfs(kind, bdir):
    """The guest's root: busybox, ftracetest, map_test, rb_mmap_test,
    rb_poll_test, trace-cmd and the modules."""
    root = os.path.join(bdir, 'initramfs')
    shutil.rmtree(root, ignore_errors=True)
    for d in ('bin', 'sbin', 'usr/bin', 'usr/sbin', 'etc', 'proc', 'sys', 'dev', 'tmp',
              'root', 'opt', 'lib', 'lib64', 'run', 'var/tmp'):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    shutil.copy2('/bin/busybox', os.path.join(root, 'bin/busybox'))
    applets = subprocess.run(['/bin/busybox', '--list-full'], capture_output=True,
                             text=True).stdout.split()
    for a in applets:
        if os.path.basename(a) == 'busybox':
            continue   # a link named busybox would replace the binary itself
        dst = os.path.join(root, a)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if not os.path.lexists(dst):
            os.symlink('/bin/busybox', dst)
    # busybox ash runs applets by re-executing /proc/self/exe, so a "ping" it
    # starts is named "exe" and execs "/proc/self/exe": ftracetest's
    # inter-event tests, which key on comm == "ping" and the exec'd filename,
    # then fail on any kernel. dash execs /bin/ping like any shell; coreutils'
    # nice execs its command the same way.
    # util-linux's chrt, which busybox lacks, for the wakeup tracer tests.
    for tool, dsts in (('/bin/dash', ('bin/sh',)), ('/usr/bin/nice', ('bin/nice', 'usr/bin/nice')),
                       ('/usr/bin/chrt', ('usr/bin/chrt',))):
        copy_with_libs(root, tool, dsts)
    guest = os.path.join(DATA, 'guest')
    shutil.copy2(os.path.join(guest, 'init'), os.path.join(root, 'init'))
    for f in ('passwd', 'group', 'hosts'):
        shutil.copy2(os.path.join(guest, f), os.path.join(root, 'etc', f))
    copy_with_libs(root, shutil.which('trace-cmd') or '/usr/bin/trace-cmd', ('usr/bin/trace-cmd',))
    # selftests
    src = os.path.join(CACHE, kind, 'src')
    shutil.copytree(os.path.join(src, 'tools/testing/selftests/ftrace'),
                    os.path.join(root, 'opt/ftrace'))
    for name, binary in build_map_test(kind, bdir).items():
        shutil.copy2(binary, os.path.join(root, 'opt', name))
    shutil.copytree(os.path.join(bdir, 'modroot/lib/modules'), os.path.join(root, 'lib/modules'),
                    symlinks=True, ignore=shutil.ignore_patterns('build', 'source'))
    out = os.path.join(bdir, 'initramfs.cpio.gz')
    cpio(root, out)
    return out


def cpio(root, out):
    names = subprocess.run('find . -mindepth 1 | LC_ALL=C sort', shell=True, cwd=root,
                           capture_output=True, text=True, check=True).stdout
    data = subprocess.run(['cpio', '-o', '-H', 'newc', '--quiet', '-R', '0:0'], cwd=root,
                          input=names.encode(), capture_output=True, check=True).stdout
    # Written aside and renamed: another rbdev process may be reading @out
    # for a boot at this moment.
    with gzip.open(out + '.new', 'wb', compresslevel=1) as f:
        f.write(data)
    os.replace(out + '.new', out)


def run_initramfs(bdir, name, files):
    """A small cpio appended to the main one: the job for this boot."""
    root = os.path.join(bdir, f'job-{name}')
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, 'rbdev'))
    for fname, text in files.items():
        with open(os.path.join(root, 'rbdev', fname), 'w') as f:
            f.write(text)
    out = os.path.join(bdir, f'job-{name}.cpio.gz')
    cpio(root, out)
    combined = os.path.join(bdir, f'initrd-{name}.gz')
    with open(combined, 'wb') as f:
        f.write(read(os.path.join(bdir, 'initramfs.cpio.gz')))
        f.write(read(out))
    return combined
