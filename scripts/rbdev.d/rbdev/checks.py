"""The checks that need no build: check-points (every shared access of
ring_buffer.c is a test point), check-layers (the ring buffer's files
call down their layers only), check-doc (the design document's code-font
names exist), check-style (checkpatch and kernel-doc), check-imports
(this package's modules import one way, with no circle), and the test
command's static stage, which runs them and check-litmus."""

import ast
import glob
import os
import re
import subprocess
import tempfile
import time

from .common import DATA, REPO, log, read
from .harness import check_harness
from .litmus import check_litmus
from .config import MAINLINE_FIXES_TREE, MAINLINE_SERIES_TREE, MAINLINE_TREE
from .mainline import ensure_mainline
from .setup import ensure_packages, ensure_pristine, tree_content


# ---- check-points: every shared access on the ring's paths is a test point ----

# Fields that writers, nested writers and the reader share (design, "Test
# hooks"); ring_buffer.c may touch them only through the accessors of
# ring_buffer_internal.h, each of which is a test point.
SHARED_FIELDS = ('write', 'head', 'slots', 'open_count',
                 'stamp_ts', 'stamp_end', 'events', 'events_before', 'data_end',
                 'tail_bytes', 'gen', 'torn_before', 'time_stamp_abs', 'flags',
                 'record_disabled',
                 'buffer', 'commit', 'ctl')
# Functions of ring_buffer.c that may touch them directly, and why.
RAW_OK = {
    'rb_reset_cpu_ring': 'runs quiesced: no writer or reader on that CPU buffer',
    'rb_reset_cpu_state': 'runs quiesced: no writer or reader on that CPU buffer',
    'rb_validate_tail': 'debug-only validator: re-reads what it just published, reports only',
    'rb_check_invariants': 'test-only, quiesced',
    'rb_check_page': 'test-only, quiesced',
    'rb_id_at': 'test-only, quiesced (rb_check_invariants)',
    'rb_set_test_hook': 'installs the hook itself',
    'rb_test_point': 'the hook itself',
}


def c_functions(text):
    """Yield (name, first line, body, static?) for each top-level function of
    C @text, comments and strings blanked so that line numbers still hold."""
    text = c_blank(text)
    depth, start, last, name, static = 0, 0, 0, None, False
    for i, ch in enumerate(text):
        if ch == '{':
            if depth == 0:
                head = text[last:i]   # since the last top-level ';', '}' or '#' line
                m = re.search(r'(\w+)\s*\([^;{}]*\)\s*$', head)
                name = m.group(1) if m and not re.search(r'=\s*$', head[:m.start()]) else None
                static = bool(re.search(r'\bstatic\b', head))
                start = i
            depth += 1
        elif ch == '}':
            depth -= 1
            if depth == 0:
                last = i + 1
                if name:
                    yield name, text.count('\n', 0, start) + 1, text[start:i + 1], static
        elif depth == 0 and (ch == ';' or (ch == '\n' and text[last:i].lstrip().startswith('#'))):
            last = i + 1


def accessor_names(header):
    """Functions that are a test point, or call one (rb_commit_id() say)."""
    funcs = {n: body for n, _, body, _ in c_functions(header)}
    names = {'rb_test_point'}
    while True:
        more = {n for n, body in funcs.items() if n not in names and
                any(re.search(r'\b' + m + r'\(', body) for m in names)}
        if not more:
            return sorted(names - {'rb_test_point'})
        names |= more


def check_points():
    """Return (points, violations): accessor call sites in the ring buffer's
    files, and every raw access to a shared field in ring_buffer.c."""
    kt = os.path.join(REPO, 'kernel', 'trace')
    names = accessor_names(read(os.path.join(kt, 'ring_buffer_internal.h'), 'r'))
    # The claim of a CPU buffer by a control operation or the snapshot swap.
    names += [n for n, _, body, _ in c_functions(read(os.path.join(kt, 'ring_buffer_control.c'), 'r'))
              if 'rb_test_point(' in body]
    field = re.compile(r'(?:->|\.)\s*(' + '|'.join(SHARED_FIELDS) + r')\b')
    points, bad = {}, []
    for fn in ('ring_buffer.c', 'ring_buffer_read.c', 'ring_buffer_control.c'):
        text = read(os.path.join(kt, fn), 'r')
        code = c_blank(text)   # calls, not their mentions in comments
        points[fn] = sum(len(re.findall(r'\b' + n + r'\((?!struct)', code)) for n in names)
        if fn != 'ring_buffer.c':
            continue
        for name, line, body, _ in c_functions(text):
            if name in RAW_OK:
                continue
            for k, ln in enumerate(body.split('\n')):
                for m in field.finditer(ln):
                    bad.append(f'{fn}:{line + k}: {name}() touches ->{m.group(1)} '
                               'directly; use its accessor in ring_buffer_internal.h')
    return names, points, bad


def check_points_stage(res):
    names, points, bad = check_points()
    log(f'check-points: {len(names)} accessors; test points at call sites: ' +
        ', '.join(f'{k} {v}' for k, v in points.items()))
    for b in bad:
        log('  ' + b)
    res.add('static', 'check-points', 'FAIL' if bad else 'PASS',
            f'{len(bad)} raw shared accesses' if bad else '')


# ---- check-layers: the ring buffer's files form layers, with no circle ----

# Bottom to top: a file may call only what this header and the files
# before it define (ring_buffer_internal.h is the layer under all three).
LAYERS = ('ring_buffer.c', 'ring_buffer_read.c', 'ring_buffer_persist.c', 'ring_buffer_control.c',
          'ring_buffer_map.c')
# Names other code calls: the public API and the hotplug callback.
PUBLIC_RE = re.compile(r'^(__)?ring_buffer_|^trace_rb_')


def c_blank(text):
    """@text with comments and strings blanked, line numbers kept."""
    def blank(m):
        return re.sub(r'[^\n]', ' ', m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"', blank, text, flags=re.S)


def check_layers():
    """Return (edges, problems): which file calls which, every call up the
    layers (with the layers in a fixed order, none means no circle either),
    and every non-static helper no other file uses."""
    kt = os.path.join(REPO, 'kernel', 'trace')
    text = {fn: read(os.path.join(kt, fn), 'r') for fn in LAYERS}
    defs = {fn: {n: st for n, _, _, st in c_functions(t)} for fn, t in text.items()}
    exported = {fn: set(re.findall(r'EXPORT_SYMBOL\w*\((\w+)\)', t)) for fn, t in text.items()}
    owner = {n: fn for fn in LAYERS for n, st in defs[fn].items() if not st}
    edges, used_outside, problems = {}, set(), []
    for fn in LAYERS:
        calls = set(re.findall(r'\b(\w+)\s*\(', c_blank(text[fn])))
        for n in sorted(calls):
            g = owner.get(n)
            if g and g != fn:
                edges.setdefault((fn, g), []).append(n)
                used_outside.add(n)
    for (f, g), names in sorted(edges.items()):
        if LAYERS.index(g) > LAYERS.index(f):
            problems.append(f'{f} calls {", ".join(names)}() of {g}, a layer above it')
    for fn in LAYERS:
        for n, st in sorted(defs[fn].items()):
            if not st and n not in used_outside and n not in exported[fn] and \
                    not PUBLIC_RE.match(n):
                problems.append(f'{fn}: {n}() is used only in its own file: make it static')
    return edges, problems


# ---- check-doc: every name the design document puts in code font exists ----

DOC = os.path.join('Documentation', 'trace', 'ring-buffer-design.rst')
# Names the document cites from outside the kernel tree, and where from.
DOC_EXTERNAL = {
    'update_pointers': "libtraceevent's event walker (not in the kernel tree)",
    'RB_WARN_ON': "upstream's macro, in the ring_buffer.c the series replaces",
    '__rb_reserve_next': "upstream's, in the ring_buffer.c the series replaces (the Cost section)",
    'rb_commit': "upstream's, as above",
    'versatile_defconfig': "an ARM defconfig (arch/arm/configs/versatile_defconfig)",
}


def struct_fields(code):
    """{struct name: [fields]} for the struct definitions in C @code."""
    out = {}
    code = re.sub(r'/\*.*?\*/', ' ', code, flags=re.S)
    for name, body in re.findall(r'struct\s+(\w+)\s*\{(.*?)\n\s*\};', code, re.S):
        fields = []
        for decl in body.split(';'):
            decl = re.sub(r'^\s*#.*$', '', decl, flags=re.M).strip()
            if not decl:
                continue
            m = re.search(r'\(\s*\*\s*(\w+)\s*\)', decl)
            if m:
                fields.append(m.group(1))
                continue
            for part in decl.split(','):
                ids = re.findall(r'[A-Za-z_]\w*', re.split(r'[\[:]', part)[0])
                if ids:
                    fields.append(ids[-1])
        out[name] = fields
    return out


def known_names():
    """Every identifier and file name in the repo's code and in the base's
    headers, tracing code (less the ring buffer it replaces) and selftests."""
    ensure_packages()
    src = ensure_pristine()
    roots = [os.path.join(REPO, d) for d in ('kernel', 'patches', 'tools', 'include')]
    roots += [os.path.join(src, d) for d in
              ('include/linux', 'include/uapi/linux', 'include/asm-generic', 'arch/x86/include',
               'include/kunit', 'kernel/trace', 'tools/testing/selftests/ring-buffer')]
    names, files = set(), set()
    for root in roots:
        for d, _, fs in os.walk(root):
            for f in fs:
                files.add(f)
                files.add(os.path.splitext(f)[0])
                if root.startswith(src) and f == 'ring_buffer.c':
                    continue   # upstream's: the code the document describes replaces it
                if f.endswith(('.c', '.h', '.patch')) or f.startswith('Kconfig'):
                    names.update(re.findall(r'[A-Za-z_]\w*', read(os.path.join(d, f), 'r')))
    return names, files


C_WORDS = {'struct', 'unsigned', 'int', 'long', 'char', 'bool', 'void', 'const', 'u8', 'u16',
           'u32', 'u64', 'typedef', 'enum', 'return', 'if', 'else', 'for', 'while', 'static'}


def doc_names(text):
    """(token, context) for each name the document puts in code: inline
    literals (names with an underscore, fields, calls) and every name in
    its C code blocks, comments left out."""
    for lit in re.findall(r'``(.+?)``', text):
        yield lit, lit
    for block in re.findall(r'^\.\. code-block:: c\n\n((?:(?:  .*)?\n)+)', text, re.M):
        code = re.sub(r'/\*.*?\*/', ' ', block, flags=re.S)
        for line in code.splitlines():
            for tok in re.findall(r'[A-Za-z_]\w*', line):
                if tok not in C_WORDS:
                    yield tok, 'code block: ' + line.strip()


def check_doc():
    """Return (checked, problems) for the design document's code-font names."""
    text = read(os.path.join(REPO, DOC), 'r')
    names, files = known_names()
    src = ensure_pristine()
    checked, problems = set(), []
    for lit, where in doc_names(text):
        lit = re.sub(r'"[^"]*"', '', lit)
        if re.fullmatch(r'[\w./-]+\.(c|h|S|rst|txt|config|tc|litmus)', lit):
            if os.path.basename(lit) not in files and \
                    not os.path.exists(os.path.join(src, lit)) and \
                    not os.path.exists(os.path.join(REPO, lit)):
                problems.append(f'file ``{lit}`` is neither in the repo nor in the base')
            continue
        lit = re.sub(r'\[[^\]]*\]', '', lit)   # ring_buffer_reset[_cpu]()
        code_block = where.startswith('code block')
        for m in re.finditer(r'(->|\.)?\s*([A-Za-z_]\w*\*?)\s*(\()?', lit):
            tok, field, call = m.group(2), m.group(1), m.group(3)
            if not (code_block or '_' in tok or field or call):
                continue   # a variable of the prose: hv, nr, w
            checked.add(tok)
            if tok.endswith(('*', '_')):
                if not any(x.startswith(tok.rstrip('*')) for x in names):
                    problems.append(f'``{tok}``: no name starts with {tok.rstrip("*")}')
            elif tok not in names and tok not in files and tok not in DOC_EXTERNAL and \
                    'CONFIG_' + tok not in names:
                problems.append(f'``{tok}`` ({where}) is not in the code')
    # A struct shown in the document has only fields the code's struct has.
    real = struct_fields(read(os.path.join(REPO, 'kernel', 'trace', 'ring_buffer_internal.h'), 'r'))
    for block in re.findall(r'^\.\. code-block:: c\n\n((?:(?:  .*)?\n)+)', text, re.M):
        for name, fields in struct_fields(block).items():
            if name not in real:
                problems.append(f'struct {name}: not in ring_buffer_internal.h')
                continue
            for f in fields:
                checked.add(f'{name}.{f}')
                if f not in real[name]:
                    problems.append(f'struct {name} has no field {f} (it has: '
                                    f'{", ".join(real[name])})')
    return checked, sorted(set(problems))


# ---- check-style: checkpatch --strict and kernel-doc -Wall on the overlay ----

def style_files():
    """The C files the overlay adds or rewrites, as repo paths."""
    pats = ('kernel/trace/*.[ch]', 'tools/testing/selftests/*/*.c')
    return sorted(os.path.relpath(f, REPO) for pat in pats
                  for f in glob.glob(os.path.join(REPO, pat)))


# The selftest's kselftest_harness.h ASSERT_*()/EXPECT_*() are two
# statements (the check, then a loop that takes a TH_LOG()), which
# checkpatch takes for one: the braces round them and the do-while round
# ASSERT_CK() are needed. Its CHECKs (long lines of messages) are not
# counted; the kernel files get no exceptions.
SELFTEST_IGNORE = 'BRACES,SINGLE_STATEMENT_DO_WHILE_MACRO'


def check_style(root=REPO, scripts=None):
    """checkpatch --strict and kernel-doc -Wall on every C file of the
    overlay: as the repo has them, with 6.12.117's scripts, or as @root
    has them, with the @scripts of that tree's base (the rewrite on 7.3
    with 7.3's). Returns (files, [complaints])."""
    pristine = scripts or ensure_pristine()
    files = style_files()
    kd = [f for f in files if f.startswith('kernel/')]
    bad = []
    for group, levels, extra in ((kd, 'ERROR|WARNING|CHECK', []),
                                 ([f for f in files if f not in kd], 'ERROR|WARNING',
                                  ['--ignore', SELFTEST_IGNORE])):
        r = subprocess.run([os.path.join(pristine, 'scripts', 'checkpatch.pl'), '--strict',
                            '--no-tree', '--terse', '--show-types', *extra, '-f', *group],
                           cwd=root, capture_output=True, text=True)
        for f in glob.glob(os.path.join(root, '.checkpatch-camelcase.git.*')):
            os.unlink(f)
        found = [ln for ln in r.stdout.splitlines() if re.search(rf': ({levels}):', ln)]
        if r.returncode and not re.search(r': (ERROR|WARNING|CHECK):', r.stdout):
            found.append(f'checkpatch.pl exited {r.returncode}: {r.stderr.strip()[-300:]}')
        bad += found
    r = subprocess.run([os.path.join(pristine, 'scripts', 'kernel-doc'), '-none', '-Wall', *kd],
                       cwd=root, capture_output=True, text=True)
    bad += [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    return files, bad


# ---- check-imports: this package's modules import one way, with no circle ----

def package_imports(path, modules):
    """Which of @modules (this package's) the Python file @path imports,
    anywhere in it: an import inside a function counts too."""
    got = set()
    for node in ast.walk(ast.parse(read(path, 'r'), path)):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or '').split('.')
            if node.level == 0 and parts[0] != 'rbdev':
                continue
            if node.level == 0:
                parts = parts[1:]
            if parts and parts[0]:
                got.add(parts[0])              # from .common import log
            else:
                got |= {a.name for a in node.names}     # from . import common
        elif isinstance(node, ast.Import):
            got |= {a.name.split('.')[1] for a in node.names
                    if a.name.startswith('rbdev.')}
    return got & set(modules)


def check_imports():
    """Return (graph, circles, layers) for the modules of
    scripts/rbdev.d/rbdev: {module: [modules of the package it imports]},
    each circle as "a -> b -> a", and, without a circle, the modules in
    layers from the bottom, each importing only from the layers below it."""
    pkg = os.path.join(DATA, 'rbdev')
    paths = sorted(glob.glob(os.path.join(pkg, '*.py')))
    modules = [os.path.basename(p)[:-len('.py')] for p in paths]
    graph = {m: sorted(package_imports(p, modules)) for m, p in zip(modules, paths)}
    circles, state = [], {}

    def visit(m, path):
        state[m] = 'open'
        for n in graph[m]:
            if state.get(n) == 'open':
                circles.append(' -> '.join(path[path.index(n):] + [n]))
            elif n not in state:
                visit(n, path + [n])
        state[m] = 'done'
    for m in modules:
        if m not in state:
            visit(m, [m])
    layers = []
    if not circles:
        level = {}
        while len(level) < len(graph):
            before = len(level)
            for m, deps in graph.items():
                if m not in level and all(d in level for d in deps):
                    level[m] = 1 + max((level[d] for d in deps), default=-1)
            if len(level) == before:
                break   # a circle the walk above missed: what is left has no layer
        layers = [sorted(m for m in level if level[m] == n)
                  for n in range(max(level.values(), default=-1) + 1)]
    return graph, circles, layers


# ---- the static stage of the test command ----

def static_row(res, name, problems, what):
    """A static check's row: PASS without @problems, else FAIL with their
    count (@what they are) and each one in the log."""
    for p in problems:
        log('  ' + p)
    res.add('static', name, 'FAIL' if problems else 'PASS',
            f'{len(problems)} {what}' if problems else '')


def mainline_stage(res):
    """The trees of the 7.3 base (the suite's patches, the fixes for
    mainline, the rewrite's patches for 7.3) made from the repo without
    a build: every patch applies, and the rewrite's files as 7.3 has them
    pass 7.3's checkpatch and kernel-doc. Their KUnit runs are `rbdev
    mainline` (--fixes, --series)."""
    problems = []
    for kind in (MAINLINE_TREE, MAINLINE_FIXES_TREE, MAINLINE_SERIES_TREE):
        with tempfile.TemporaryDirectory() as tmp:
            _, bad = tree_content(kind, tmp)
            problems += [f'{kind}: {p}' for p in bad]
            if kind == MAINLINE_SERIES_TREE and not bad:
                files, style = check_style(root=tmp, scripts=ensure_mainline())
                log(f'checkpatch --strict, kernel-doc -Wall of 7.3: {len(files)} files')
                static_row(res, 'checkpatch-kernel-doc-7.3', style, 'complaints')
    static_row(res, 'mainline-trees', problems, 'patches that do not apply')


def static_stage(res, parser=None):
    """The checks that need no build: test points, layers, the design doc,
    the kernel's style, the memory-ordering pairs under herd7, and this
    harness's own imports, unit tests, style and READMEs (@parser: rbdev's
    command line, whose commands the READMEs name)."""
    check_points_stage(res)
    files, bad = check_style()
    log(f'checkpatch --strict, kernel-doc -Wall: {len(files)} files')
    static_row(res, 'checkpatch-kernel-doc', bad, 'complaints')
    mainline_stage(res)
    edges, problems = check_layers()
    log('check-layers: ' + '; '.join(f'{f} -> {g}' for f, g in sorted(edges)))
    static_row(res, 'check-layers', problems, 'problems')
    graph, circles, layers = check_imports()
    log(f'check-imports: {len(graph)} modules, {sum(map(len, graph.values()))} imports '
        f'among them, {len(layers)} layers')
    for c in circles:
        log('  circle: ' + c)
    res.add('static', 'check-imports', 'FAIL' if circles else 'PASS',
            f'{len(circles)} circles' if circles else '')
    check_harness(res, parser)
    checked, problems = check_doc()
    log(f'check-doc: {len(checked)} names in code font')
    static_row(res, 'check-doc', problems, 'names not found')
    t = time.time()
    rows = check_litmus()
    log(f'check-litmus: {len(rows)} runs of herd7 in {time.time() - t:.1f} s')
    for name, want, got, detail in rows:
        if got != want:
            log(f'  {name}: expected {want}, got {got} {detail}')
        res.add('static', f'litmus-{name}', 'PASS' if got == want else 'FAIL',
                f'herd7: {got}' + (f'; expected {want}: {detail}' if got != want else ''))
