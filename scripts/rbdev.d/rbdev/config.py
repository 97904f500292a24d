"""What the harness is configured with, each datum in one place: the
pinned base (Debian's linux-source-6.12) and the packages, the repo paths
that form the overlay and its patches, QEMU's command line and its
instruction counter, the kernel configurations of the variants and
architectures (KCSAN, UML KUnit, i386, arm64, ARMv5), the stages of
`rbdev test`, the ftracetest subset of the debug guest and the kernels
the benchmarks measure."""


SRC_PKG = 'linux-source-6.12'
SRC_VERSION = '6.12.117-1~deb12u1'
SRC_TARBALL = '/usr/src/linux-source-6.12.tar.xz'
KERNEL_VERSION = '6.12.117'
PACKAGES = ['qemu-system-x86', 'busybox-static', 'trace-cmd', 'bc', 'flex',
            'bison', 'libelf-dev', 'libssl-dev', 'cpio', 'rsync', 'ccache',
            'dwarves', 'kmod', 'gcc', 'make', 'python3', 'gnuplot-nox',
            'xz-utils', 'patch', 'python3-ply', 'python3-git',
            'sparse', 'pyflakes3', 'pycodestyle']

# The mainline base (issue 42): Debian's linux-source-7.3 from the suite
# trixie-backports, downloaded into the cache and never installed.
# MAINLINE_SUMS holds the checksums, as the pinned version has them, of
# every path of it the series replaces, patches or adds: MAINLINE_WATCHED,
# MAINLINE_BASE_FILES and what MAINLINE_BASE_PATCHES patch (mainline.py
# checks it lists them all). The 7.3 base's tree and its rows' kind:
MAINLINE_TREE = 'mainline-base'
MAINLINE_KUNIT = 'kunit-uml-7.3'
MAINLINE_SUITE = 'trixie-backports'
MAINLINE_PKG = 'linux-source-7.3'
MAINLINE_VERSION = '7.3.4-1~bpo13+1'
MAINLINE_SUMS = 'scripts/rbdev.d/mainline-7.3.sha256'
MAINLINE_WATCHED = ('kernel/trace/ring_buffer.c', 'include/linux/ring_buffer.h',
                    'include/linux/ring_buffer_types.h', 'include/uapi/linux/trace_mmap.h',
                    'kernel/trace/trace.c', 'MAINTAINERS',
                    'Documentation/trace/ring-buffer-design.rst',
                    'tools/testing/selftests/ring-buffer/Makefile')
# The 7.3 base tree: the contract suite (ring_buffer_kunit.c, its NMI and
# map suites) with its Kconfig and its adaptation to 7.3's API, each a
# patch made on 7.3 (patches/7.3/tests; the 6.12 ones need fuzz there),
# and the torture test and the guest's mmap and poll selftests (built by
# image.py with gcc).
MAINLINE_BASE_FILES = ('kernel/trace/ring_buffer_kunit.c', 'kernel/trace/ring_buffer_nmi_kunit.c',
                       'kernel/trace/ring_buffer_map_kunit.c', 'kernel/trace/.kunitconfig',
                       'kernel/trace/ring_buffer_torture.c',
                       'tools/testing/selftests/ring-buffer/rb_mmap_test.c',
                       'tools/testing/selftests/ring-buffer/rb_poll_test.c')
MAINLINE_BASE_PATCHES = ('patches/7.3/tests/0001-ring-buffer-kunit-kconfig.patch',
                         'patches/7.3/tests/0002-ring-buffer-kunit-mainline-api.patch',
                         'patches/7.3/tests/0003-ring-buffer-torture-on-7.3.patch',
                         'patches/7.3/tests/0004-ring-buffer-kunit-map-persistent.patch')
# The fixes for mainline (rbdev series --fixes, onto the 7.3 release the
# base is): their patches, and the tree of the 7.3 base with them, whose
# rows are judged as the base's except in the tests a fix names.
MAINLINE_FIXES_DIR = 'patches/7.3/fixes'
MAINLINE_FIXES_TREE = 'mainline-fixes'
# The rewrite on the 7.3 base: every repo file, the suite's patches for
# 7.3, and patches/7.3/series (the build on 7.3, the port to its API).
MAINLINE_SERIES_TREE = 'mainline-series'
MAINLINE_SERIES_DIR = 'patches/7.3/series'
# The kernels whose expectations come from a series of fixes (the Tests:
# of its steps, scripts/rbdev.d/<series>), and that series.
FIXES_OF = {'stable': 'stable', MAINLINE_FIXES_TREE: 'fixes'}

# Repo paths that mirror the kernel tree; everything under them is overlay.
KERNEL_DIRS = ('kernel', 'include', 'Documentation', 'tools', 'arch', 'lib',
               'samples', 'mm')
# Overlay files that the base gets too: the tests, never the rewrite.
BASE_GLOBS = ('kernel/trace/*kunit*', 'kernel/trace/ring_buffer_torture.c',
              'kernel/trace/.kunitconfig', 'tools/testing/*')
PATCH_DIRS = (('patches/tests', True), ('patches/series', False))

# The x86 guests are built without ACPI (a sixth of their objects). Without
# it the kernel finds the second CPU in the firmware's MP table, which
# SeaBIOS writes with the boot CPU alone under TCG and qboot (QEMU's minimal
# firmware, which loads -kernel directly) writes with every CPU; and the
# guest's init ends QEMU through the isa-debug-exit port (power_off() in
# scripts/rbdev.d/guest/init), so QEMU's status is 1 whatever the guest did.
QEMU_BASE = ['qemu-system-x86_64', '-accel', 'tcg,thread=single', '-cpu', 'max',
             '-smp', '2', '-m', '2G', '-no-reboot', '-display', 'none',
             '-bios', 'qboot.rom', '-device', 'isa-debug-exit,iobase=0xf4,iosize=0x04']

# kernel/trace/Makefile builds the whole directory without KCSAN
# (KCSAN_SANITIZE := n, against recursion through the tracers); a per-object
# setting wins over it (scripts/Makefile.lib), so the KCSAN guest
# instruments the ring buffer's files, and the torture's for its canary.
KCSAN_RING_BUFFER = tuple(f'KCSAN_SANITIZE_{o}.o=y' for o in (
    'ring_buffer', 'ring_buffer_read', 'ring_buffer_persist', 'ring_buffer_control',
    'ring_buffer_map', 'ring_buffer_torture'))

# Subsystems of the UML KUnit kernel that no suite of ours uses: about a
# fifth of its objects (io_uring, the block layer, input and HID, and the
# virtio and PCI emulation kunit.py's arch_uml.config asks for), and a UML
# build runs beside a guest in the test command. The .kunitconfig's
# settings win over arch_uml.config's. Three of them need EXPERT, which
# also changes defaults: DEBUG_KERNEL and DEBUG_MISC on, NAMESPACES and
# DEBUG_MEMORY_INIT off (SWAP goes with BLOCK); no suite uses any of them.
# kunit.py accepts "=n" for a name its .config lacks, so a renamed option
# would come back on unnoticed. "rbdev series --bisect" builds each commit
# with its own kunitconfig and these too.
UML_KCONFIG_OFF = ('IO_URING', 'BLOCK', 'INPUT', 'VIRTIO_UML', 'UML_PCI_OVER_VIRTIO',
                   'VIRTIO_MENU')
UML_KCONFIG_OFF_ARGS = ['--kconfig_add=CONFIG_EXPERT=y'] + [f'--kconfig_add=CONFIG_{o}=n'
                                                            for o in UML_KCONFIG_OFF]

# kunit.py --arch: the architecture, QEMU's name for it, the cross compiler's
# prefix (None: the host gcc, which builds i386 with -m32) and the package
# that has it. QEMU emulates both under TCG, two vCPUs.
CROSS = {
    'arm64': ('aarch64-linux-gnu-', 'gcc-aarch64-linux-gnu', 'qemu-system-arm'),
    'i386': (None, None, 'qemu-system-x86'),
}

# TCG emulating arm64 is slower than x86_64: the interleavings at depth 2
# took over 16 minutes, and rbp_all_whole alone 7.5 minutes with the x86_64
# guest's crash density, so these runs use the debug guest's limits: depth 1,
# 100 fuzz rounds, a crash at every 16th point.
# Default-y subsystems kunit.py would build into the i386 KUnit kernel (it
# starts from the .kunitconfig with every other option at its default) that
# the suites never use: the ACPI interpreter alone is a fifth of its objects.
# The kernel boots on QEMU's PC without them and ends by rebooting into
# -no-reboot.
CROSS_KCONFIG_OFF = {
    'i386': ('ACPI', 'INPUT', 'VT', 'USB_SUPPORT', 'BLOCK', 'IO_URING',
             'SUSPEND', 'X86_MCE', 'HWMON', 'THERMAL',
             'POWER_SUPPLY'),
}
CROSS_KERNEL_ARGS = ('ring_buffer_interleave_kunit.depth=1',
                     'ring_buffer_persist_kunit.iters=100',
                     'ring_buffer_persist_kunit.crash_every=16')

# rbdev cross: the ring buffer's objects built for architectures no test here
# boots: ARMv5, where atomic64_t is lib/atomic64.c's hashed spinlocks
# (GENERIC_ATOMIC64), with W=1. (arch, cross prefix, package, defconfig,
# an option the target must end up with.)
CROSS_BUILDS = {
    'armv5': ('arm', 'arm-linux-gnueabi-', 'gcc-arm-linux-gnueabi', 'versatile_defconfig',
              'CONFIG_GENERIC_ATOMIC64=y'),
}
CROSS_FRAGMENT = """CONFIG_FTRACE=y
CONFIG_FUNCTION_TRACER=y
CONFIG_TRACER_SNAPSHOT=y
CONFIG_TRACER_SNAPSHOT_PER_CPU_SWAP=y
CONFIG_RING_BUFFER_STARTUP_TEST=y
CONFIG_KUNIT=y
CONFIG_RING_BUFFER_KUNIT_TEST=y
CONFIG_RING_BUFFER_TORTURE_TEST=y
"""

# The stages of `rbdev test`, in order (its --only takes a comma list of them).
STAGES = ('static', 'series', 'cross', 'uml', 'i386', 'guest', 'persist', 'torture', 'debug',
          'bench')

# The ftracetest tests of the debug guest besides instances/ (see guest_tests()).
DEBUG_FTRACE = ('00basic/ringbuffer_size.tc', '00basic/ringbuffer_subbuf_size.tc',
                '00basic/snapshot.tc', '00basic/snapshot1.tc', '00basic/trace_marker.tc',
                '00basic/trace_pipe.tc')

# QEMU's instruction counter: under TCG the guest clock moves one
# nanosecond per instruction (torture --irqsoff, the icount benchmarks).
ICOUNT = ['-icount', 'shift=0,sleep=off']

# What `rbdev bench` (UML and guest rows) and `rbdev cost` measure: the
# series as a kernel that keeps the KUnit suites but not the test points runs
# it (the points' no-op jumps are instructions too, and TCG pays for each);
# `rbdev cost` counts the series with its points as well (column "points").
# The test command's smoke run uses the test kernels, points and all.
PERF_VARIANT = {'base': 'x86', 'series': 'x86-nopoints'}
