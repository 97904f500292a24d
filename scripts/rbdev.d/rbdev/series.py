"""The patch series: the steps committed onto v6.12.117 in a git repo in
the cache, written out with git format-patch and a cover letter, and
checked (git am, byte identity with the test tree, MAINTAINERS,
checkpatch); with --bisect every commit built. The same for the stable
fixes, and for the fixes for mainline on the 7.3 base (--fixes), in a
git repo of their own."""

import glob
import json
import os
import re
import shutil
import subprocess
import time

from .build import build_dir, build_lock, ccache_env, jobs
from .checks import LAYERS, SELFTEST_IGNORE
from .common import CACHE, DATA, REPO, die, log, overlay_files, patched_paths, read, run
from .config import (
    KERNEL_VERSION, MAINLINE_FIXES_DIR, MAINLINE_FIXES_TREE, MAINLINE_PKG, MAINLINE_SUITE, SRC_PKG,
    SRC_TARBALL, SRC_VERSION, UML_KCONFIG_OFF_ARGS)
from .kunit import kunit_tool
from .mainline import ensure_mainline
from .results import Results, kunit_json_cases, load_expected
from .setup import (
    ensure_pristine, patch_list, series_steps, sync_tree)
from .stats import GUEST_UNTABLED, fmt


SERIES_GIT = 'git'            # under CACHE: the pristine tree, committed once
SERIES_TAG = f'v{KERNEL_VERSION}'
# The kinds of patches and the base each goes onto: its git repo and work
# trees under CACHE, and the tree of `rbdev test` it must equal.
KIND_BASE = {'series': ('6.12', 'series'), 'stable': ('6.12', 'stable'),
             'fixes': ('7.3', MAINLINE_FIXES_TREE)}
GITS = {'6.12': (SERIES_GIT, 'series-wt', 'series-am'), '7.3': ('git-7.3', 'fixes-wt', 'fixes-am')}
SERIES_IDENT = os.environ.get('RBDEV_IDENT', 'rbdev <rbdev@localhost>')
SUBJECT_MAX = 75
# checkpatch warns "added, moved or deleted file(s), does MAINTAINERS need
# updating?" on every patch that adds a file; it does not look whether an
# entry covers it. series_check() asks get_maintainer.pl for each added file
# instead and fails on one that no entry covers, so the warning is ignored.
# And the repo has no history before v6.12.117, so every Fixes: commit is
# unknown to it (UNKNOWN_COMMIT_ID); checkpatch still checks their form
# (GIT_COMMIT_ID).
SERIES_CHECKPATCH_IGNORE = 'FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID'


def series_coverage(kind, steps):
    """Problems with what the steps cover: every file and every patch of
    the kind's tree exactly once, and nothing else."""
    got_files = [f for s in steps for f in s['files']]
    got_patches = [p for s in steps for p in s['patches']]
    if kind == 'series':
        want_files = set(overlay_files(False))
        want_patches = {os.path.relpath(p, REPO) for p in patch_list(kind)}
    elif kind == 'fixes':
        want_files = set()
        want_patches = {os.path.relpath(p, REPO) for p in
                        glob.glob(os.path.join(REPO, MAINLINE_FIXES_DIR, '*.patch'))}
    else:
        # The fixes only: every patch of patches/stable, and a fix from
        # patches/series that the series carries too.
        want_files = set()
        want_patches = {os.path.relpath(p, REPO) for p in
                        glob.glob(os.path.join(REPO, 'patches', 'stable', '*.patch'))}
        want_patches |= {p for p in got_patches if p.startswith('patches/series/')}
    problems = []
    for what, want, got in (('file', want_files, got_files), ('patch', want_patches, got_patches)):
        for x in sorted(want - set(got)):
            problems.append(f'the {what} {x} is in no step')
        for x in sorted(set(got) - want):
            problems.append(f'the {what} {x} of a step is not in the repo\'s overlay')
        for x in sorted({x for x in got if got.count(x) > 1}):
            problems.append(f'the {what} {x} is in more than one step')
    expected = load_expected()
    # A renamed or removed path must be gone again after the last step.
    final = set(want_files)
    for s in steps:
        for path in [new for _, new in s['renames']] + s['removes']:
            if path in final:
                problems.append(f'{s["name"]}: {path} is renamed to or removed, '
                                'but the overlay has it')
    gone = {p for s in steps for p in s['removes']}
    for s in steps:
        for _, new in s['renames']:
            if new not in gone:
                problems.append(f'{s["name"]}: {new} is never removed by a later step')
    for s in steps:
        for name in s['tests']:
            k, _, n = name.partition(':')
            if (k, n) not in expected:
                problems.append(f'{s["name"]}: Tests: {name} is not in tests/expected-results.txt')
        if len(s['subject']) > SUBJECT_MAX:
            problems.append(f'{s["name"]}: subject longer than {SUBJECT_MAX} characters')
    return problems


def git(repo, *args, check=True, env=None, **kw):
    e = dict(os.environ, **(env or {}))
    name, email = re.match(r'(.*) <(.*)>', SERIES_IDENT).groups()
    e.update(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_COMMITTER_NAME=name,
             GIT_COMMITTER_EMAIL=email)
    r = subprocess.run(['git', '-C', repo, *args], capture_output=True, text=True, env=e, **kw)
    if check and r.returncode:
        die(f'git {" ".join(args)} in {repo} exited {r.returncode}:\n{r.stdout}{r.stderr}')
    return r


def base_tag(kind):
    """The tag of the release @kind's patches go onto: v6.12.117, or for
    the mainline fixes the 7.3.y the mainline base is."""
    if KIND_BASE[kind][0] == '6.12':
        return SERIES_TAG
    return 'v' + read(ensure_mainline() + '.version', 'r').split()[1]


def series_repo(kind='series'):
    """CACHE/git (CACHE/git-7.3 for the mainline fixes): a repository
    whose first commit, tagged with the release (base_tag()), is the
    pristine tree exactly (ignored files included); its work tree is
    empty. Made once per base version (about 2 min)."""
    line = KIND_BASE[kind][0]
    name, wt, am = GITS[line]
    if line == '6.12':
        pristine, version = ensure_pristine(), SRC_VERSION
        message = f'Debian {SRC_PKG} {SRC_VERSION}, unpacked from {SRC_TARBALL}.'
    else:
        pristine = ensure_mainline()
        version = read(pristine + '.version', 'r').split()[0]
        message = f'Debian {MAINLINE_PKG} {version} of {MAINLINE_SUITE}.'
    tag = base_tag(kind)
    repo = os.path.join(CACHE, name)
    stamp = os.path.join(CACHE, name + '.version')
    if os.path.exists(stamp) and read(stamp, 'r').strip() == version:
        return repo
    log(f'committing the pristine {tag} tree to {repo} (once, about 2 min) ...')
    shutil.rmtree(repo, ignore_errors=True)
    # Work trees of an earlier repository would point at a gitdir that is gone.
    for d in (wt, am) + ((os.path.join('bisect', 'src'),) if line == '6.12' else ()):
        shutil.rmtree(os.path.join(CACHE, d), ignore_errors=True)
    os.makedirs(repo)
    git(repo, 'init', '-q', '-b', 'pristine')
    git(repo, 'config', 'core.autocrlf', 'false')
    git(repo, f'--work-tree={pristine}', 'add', '-A', '-f', '.')
    git(repo, 'commit', '-q', '-m', f'Linux {tag[1:]}\n\n{message}')
    git(repo, 'tag', tag)
    # The index now describes the pristine tree; the repo's own work tree
    # stays empty, so reset it to nothing tracked there.
    git(repo, 'read-tree', '--empty')
    with open(stamp, 'w') as f:
        f.write(version + '\n')
    return repo


def series_worktree(repo, name, tag=SERIES_TAG):
    """A detached work tree of the repo at @tag, CACHE/<name>."""
    wt = os.path.join(CACHE, name)
    if not os.path.exists(os.path.join(wt, '.git')):
        shutil.rmtree(wt, ignore_errors=True)
        git(repo, 'worktree', 'prune')
        log(f'checking out {tag} into {wt} (about 30 s) ...')
        git(repo, 'worktree', 'add', '-q', '--detach', wt, tag)
    git(wt, 'am', '--abort', check=False)
    git(wt, 'checkout', '-q', '--detach', '-f', tag)
    git(wt, 'clean', '-q', '-f', '-d', '--', *series_paths(wt))
    return wt


def series_paths(wt):
    """The top-level paths a series may touch (for cleaning a work tree
    without walking the whole kernel)."""
    return [p for p in ('kernel', 'include', 'Documentation', 'tools', 'MAINTAINERS')
            if os.path.exists(os.path.join(wt, p))]


def series_commit(kind, steps):
    """Commit the steps onto their release (base_tag()) as branch
    rbdev-<kind>; returns (repo, worktree)."""
    repo, tag = series_repo(kind), base_tag(kind)
    wt = series_worktree(repo, GITS[KIND_BASE[kind][0]][1], tag)
    git(wt, 'checkout', '-q', '-B', f'rbdev-{kind}', tag)
    for s in steps:
        for old, new in s['renames']:
            git(wt, 'mv', old, new)
        for f in s['removes']:
            git(wt, 'rm', '-q', f)
        for f in s['files']:
            dst = os.path.join(wt, f)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy(os.path.join(REPO, f), dst)
            git(wt, 'add', '-f', f)
        for p in s['patches']:
            r = git(wt, 'apply', '--index', os.path.join(REPO, p), check=False)
            if r.returncode:
                die(f'{s["name"]}: {p} does not apply with git apply:\n{r.stderr}')
        body = s['body'].rstrip('\n')
        # The sign-off joins a changelog's trailer block (Fixes:, Cc:).
        last = body.rsplit('\n\n', 1)[-1].splitlines()
        trailers = all(re.match(r'^[A-Z][\w-]*: ', ln) for ln in last)
        msg = f'{s["subject"]}\n\n{body}\n{"" if trailers else chr(10)}Signed-off-by: {SERIES_IDENT}\n'
        git(wt, 'commit', '-q', '-F', '-', input=msg)
    return repo, wt


def series_export(kind, wt, out, cover):
    os.makedirs(out, exist_ok=True)
    for f in glob.glob(os.path.join(out, '*.patch')):
        os.unlink(f)
    tag = base_tag(kind)
    git(wt, 'format-patch', '-q', '--break-rewrites', '-M', '--cover-letter', f'--base={tag}',
        '-o', out, f'{tag}..rbdev-{kind}')
    patches = sorted(glob.glob(os.path.join(out, '*.patch')))
    letter = patches[0]
    subject, blurb = cover
    text = read(letter, 'r').replace('*** SUBJECT HERE ***', subject)
    text = text.replace('*** BLURB HERE ***', blurb.rstrip('\n'))
    with open(letter, 'w') as f:
        f.write(text)
    return patches


def series_identity(kind, wt):
    """Compare the work tree (the release plus the patches) with the
    synced tree of that kind the tests run on: every path either changes
    or the overlay touches must hold the same bytes, or be absent in
    both."""
    tree = KIND_BASE[kind][1]
    src = sync_tree(tree)
    changed = set(git(wt, 'diff', '--name-only', base_tag(kind), 'HEAD').stdout.split())
    touched = set(read(os.path.join(CACHE, tree, 'overlay.manifest'), 'r').split())
    if kind != 'series':
        # The trees of the fixes have the tests too; only the fixes' paths compare.
        touched = set()
    problems = []
    for rel in sorted(changed | touched):
        a, b = os.path.join(wt, rel), os.path.join(src, rel)
        if os.path.exists(a) != os.path.exists(b):
            problems.append(f'{rel}: in {"the series" if os.path.exists(a) else "the test tree"} only')
        elif os.path.exists(a) and read(a) != read(b):
            problems.append(f'{rel}: differs from the test tree')
    return len(changed | touched), problems


# Findings of checkpatch on the emitted patches that are excused, each
# only on the patch line it names: (type, that line, why).
SERIES_EXCUSED = (
    ('INCLUDE_LINUX', r'^\+#include <asm/nmi\.h>$',
     'register_nmi_handler() is x86 API from asm/nmi.h; linux/nmi.h includes '
     'asm/nmi.h only with HAVE_ACPI_APEI_NMI or an arch watchdog'),
)


def checkpatch_patch(tree, patch):
    """checkpatch --strict on one emitted patch, from the top of @tree.
    Selftest patches get check-style's exceptions (SELFTEST_IGNORE, no
    CHECKs); the kernel's, only SERIES_EXCUSED. Returns the findings."""
    lines = read(patch, 'r').splitlines()
    files = patched_paths(patch)
    selftest = files and all(f.startswith('tools/testing/') for f in files)
    ignore = SERIES_CHECKPATCH_IGNORE + (',' + SELFTEST_IGNORE if selftest else '')
    levels = 'ERROR|WARNING' if selftest else 'ERROR|WARNING|CHECK'
    r = subprocess.run(['perl', 'scripts/checkpatch.pl', '--strict', '--terse', '--show-types',
                        '--ignore', ignore, patch], cwd=tree, capture_output=True, text=True)
    found = []
    for ln in r.stdout.splitlines():
        m = re.search(rf':(\d+): ({levels}):(\w+):', ln)
        if not m:
            continue
        at = lines[int(m.group(1)) - 1] if int(m.group(1)) <= len(lines) else ''
        if any(m.group(3) == typ and re.search(rx, at) for typ, rx, _ in SERIES_EXCUSED):
            continue
        found.append(ln.replace(os.path.dirname(patch) + '/', ''))
    if r.returncode and not found and not re.search(r': (ERROR|WARNING|CHECK):', r.stdout):
        found.append(f'checkpatch.pl exited {r.returncode}: {r.stderr.strip()[-300:]}')
    return found


def series_check(kind, repo, patches):
    """git am the emitted series onto a clean release (base_tag()),
    compare the result with the test tree, and run checkpatch --strict on
    every patch. Returns [(name, ok, detail)]."""
    rows = []
    tag = base_tag(kind)
    am = series_worktree(repo, GITS[KIND_BASE[kind][0]][2], tag)
    r = git(am, 'am', '-q', '--whitespace=error-all', *patches[1:], check=False)
    rows.append(('git-am', r.returncode == 0,
                 f'{len(patches) - 1} patches on {tag}' if r.returncode == 0 else
                 (r.stdout + r.stderr).strip()[-800:]))
    if r.returncode:
        return rows
    n, problems = series_identity(kind, am)
    rows.append(('byte-identical', not problems, f'{n} paths' if not problems else
                 '; '.join(problems[:10])))
    added = git(am, 'diff', '--name-only', '--diff-filter=A', tag, 'HEAD').stdout.split()
    uncovered = []
    for f in added:
        r = subprocess.run(['perl', 'scripts/get_maintainer.pl', '--no-git', '--no-git-fallback',
                            '--no-rolestats', '--sections', '-f', f], cwd=am,
                           capture_output=True, text=True)
        if not re.search(r'^(TRACING|RING BUFFER)', r.stdout, re.M):
            uncovered.append(f)
    rows.append(('maintainers-cover-added-files', not uncovered,
                 f'{len(added)} added files' if not uncovered else
                 'not covered: ' + ' '.join(uncovered)))
    for p in patches[1:]:
        found = checkpatch_patch(am, p)
        rows.append((f'checkpatch {os.path.basename(p)}', not found, '; '.join(found[:6])))
    return rows


def line_count(paths):
    return sum(read(p, 'r').count('\n') for p in paths)


def cover_letter(kind, steps):
    """(subject, blurb) of the cover letter, with the counts and the last
    results found in the cache (each says when it ran): each fact is
    worked out only if the letter names it."""
    ours = [os.path.join(REPO, 'kernel/trace', f) for f in
            ('ring_buffer_internal.h',) + tuple(f for f in LAYERS)]
    tests = [f for s in steps for f in s['files'] if 'kunit' in f or 'torture' in f or
             'selftest' in f or f.startswith('tools/')]
    text = read(os.path.join(DATA, kind, 'cover-letter.txt'), 'r')
    upstream = os.path.join('kernel', 'trace', 'ring_buffer.c')
    facts = {
        'ours': lambda: f'{line_count(ours):,}', 'files': lambda: str(len(ours)),
        'upstream': lambda: f'{line_count([os.path.join(ensure_pristine(), upstream)]):,}',
        'tests': lambda: f'{line_count([os.path.join(REPO, f) for f in tests]):,}',
        'ntests': lambda: str(len(tests)), 'results': lambda: cover_results(kind),
        'bench': cover_bench,
    }
    subject, _, blurb = text.partition('\n\n')
    for k, v in facts.items():
        if '{' + k + '}' in blurb:
            blurb = blurb.replace('{' + k + '}', v())
    return subject.strip(), blurb


def cover_results(kind):
    """The last `rbdev test` of the series, from the cache: its rows of the
    series, or for the stable fixes its rows of the stable kernel; for the
    mainline fixes, the last `rbdev mainline --fixes`."""
    if kind == 'fixes':
        path, run_of = os.path.join(CACHE, MAINLINE_FIXES_TREE, 'kunit-results.json'), \
            '`rbdev mainline --fixes`'
    else:
        path, run_of = os.path.join(CACHE, 'series', 'test-results.json'), '`rbdev test`'
    if not os.path.exists(path):
        return f'  (no {run_of} run in this cache yet)\n'
    rows = [r for r in json.load(open(path))
            if kind == 'fixes' or r['kind'].endswith('-stable') == (kind == 'stable')]
    if not rows:
        return f'  (the last {run_of} in this cache has no rows of the {kind} kernel)\n'

    when = time.strftime('%Y-%m-%d', time.gmtime(os.path.getmtime(path)))
    by = {}
    for r in rows:
        k = by.setdefault(r['kind'], [0, 0, 0])
        k[0 if not r['ok'] else 1 if r['result'] == 'PASS' else 2] += 1
    lines = [f'  {k:18} {v[1]:4} passed {v[2]:3} expected non-PASS {v[0]:3} failed'
             for k, v in by.items()]
    fails = sum(v[0] for v in by.values())
    return (f'{run_of} of {when} in the cache this series was made from '
            f'({len(rows) - fails} passed, {fails} failed):\n\n' + '\n'.join(lines) + '\n')


def cover_bench():
    path = os.path.join(CACHE, 'bench', 'bench.json')
    if not os.path.exists(path):
        return '  (no `rbdev bench` run in this cache yet)\n'
    d = json.load(open(path))
    when = time.strftime('%Y-%m-%d', time.gmtime(os.path.getmtime(path)))
    rows = [r for r in d['table'] if not GUEST_UNTABLED.search(r['metric'])]
    w = max((len(r['metric']) for r in rows), default=6)
    out = [f'One `rbdev bench` run of {when}, medians (ratio = series/base):', '',
           f'  {"metric":{w}} {"base":>10} {"series":>10} {"ratio":>6}']
    for r in rows:
        ratio = f'{r["ratio"]:.3f}' if r['ratio'] is not None else '-'
        out.append(f'  {r["metric"]:{w}} {fmt(r["base"]["median"]):>10} '
                   f'{fmt(r["series"]["median"]):>10} {ratio:>6}')
    return '\n'.join(out) + '\n'


def series_bisect(kinds=('uml', 'x86')):
    """Build every commit of the emitted series in a work tree of its own
    (CACHE/bisect/src), oldest first: the UML KUnit config, with the KUnit
    suites run where they exist (interleavings to depth 1), the x86_64
    guest config, and W=1 on the C files each commit touches. Returns
    [(name, ok, detail)]; a commit's KUnit cases are judged against the
    base's expectations until the commit that builds the rewrite and the
    series' from it on."""
    repo = series_repo()
    shas = git(repo, 'rev-list', '--reverse', f'{SERIES_TAG}..rbdev-series').stdout.split()
    if not shas:
        die('no series to bisect: run "rbdev series" first')
    wt = os.path.join(CACHE, 'bisect', 'src')
    if not os.path.exists(os.path.join(wt, '.git')):
        shutil.rmtree(wt, ignore_errors=True)
        git(repo, 'worktree', 'prune')
        os.makedirs(os.path.dirname(wt), exist_ok=True)
        git(repo, 'worktree', 'add', '-q', '--detach', wt, SERIES_TAG)
    rows = []
    for i, sha in enumerate(shas, 1):
        subject = git(repo, 'log', '-1', '--format=%s', sha).stdout.strip()
        git(wt, 'checkout', '-q', '--detach', '-f', sha)
        log(f'bisect {i}/{len(shas)}: {subject}')
        # What the commit writes: a pure rename (R100) writes nothing new.
        # A file that no Makefile line builds yet still compiles alone
        # (kbuild's single targets), so each layer of the rewrite is
        # checked in the commit that adds it.
        status = git(wt, 'diff', '--name-status', '-M', f'{sha}~1', sha).stdout.splitlines()
        touched = [ln.split('\t')[-1] for ln in status if not ln.startswith('R100')]
        # A file compiled alone is no kernel object to kbuild, so objtool
        # skips it: the commit that adds its object to the Makefile
        # compiles it again, now with objtool.
        mk = git(wt, 'diff', f'{sha}~1', sha, '--', 'kernel/trace/Makefile').stdout
        for ln in mk.splitlines():
            if ln.startswith('+obj-'):
                touched += [f'kernel/trace/{o[:-2]}.c' for o in re.findall(r'\b\w+\.o\b', ln)]
        touched = [f for f in dict.fromkeys(touched)
                   if re.match(r'kernel/trace/[^/]+\.c$', f) and os.path.exists(os.path.join(wt, f))]
        for k in kinds:
            t0 = time.time()
            ok, detail = (bisect_uml if k == 'uml' else bisect_x86)(wt, touched)
            rows.append((f'{i:02d} {k} {subject}', ok, f'{detail} ({time.time() - t0:.0f} s)'))
            log(f'  {k}: {"ok" if ok else "FAILED"} {detail} ({time.time() - t0:.0f} s)')
    return rows


def w1_warnings(out):
    return [ln for ln in out.splitlines() if re.search(r'(warning|error):', ln)]


def kconfig_symbols(wt):
    return set(re.findall(r'^(?:menu)?config (\w+)', read(os.path.join(wt, 'kernel/trace/Kconfig'), 'r'),
                          re.M))


@build_lock
def bisect_uml(wt, touched):
    bdir = build_dir('bisect', 'uml')
    os.makedirs(bdir, exist_ok=True)
    # The repo's .kunitconfig without the options this commit does not have yet.
    syms = kconfig_symbols(wt)
    cfg = os.path.join(CACHE, 'bisect', 'kunitconfig')
    with open(cfg, 'w') as f:
        for ln in read(os.path.join(REPO, 'kernel/trace/.kunitconfig'), 'r').splitlines():
            m = re.match(r'CONFIG_(\w+)=', ln)
            if m and m.group(1).startswith('RING_BUFFER') and m.group(1) not in syms:
                continue
            f.write(ln + '\n')
    has_kunit = 'RING_BUFFER_KUNIT_TEST' in syms
    out = os.path.join(bdir, 'kunit.json')
    if os.path.exists(out):
        os.unlink(out)
    common = [f'--build_dir={bdir}', f'--kunitconfig={cfg}', f'--jobs={jobs()}',
              '--make_options', 'CC=ccache gcc', *UML_KCONFIG_OFF_ARGS]
    if has_kunit:
        cmd = kunit_tool('run', *common, '--timeout=900', f'--json={out}',
                         '--kernel_args=ring_buffer_interleave_kunit.depth=1')
    else:
        cmd = kunit_tool('build', *common)
    r = run(cmd, cwd=wt, env=ccache_env(), check=False, logfile=os.path.join(bdir, 'kunit.log'))
    if not has_kunit:
        if r.returncode:
            return False, f'UML build failed, see {bdir}/kunit.log'
        detail = 'built (no KUnit suite yet)'
    else:
        if not os.path.exists(out):
            return False, f'no KUnit results, see {bdir}/kunit.log'
        # Before the rewrite the tree is the base with tests: judge by the
        # base's expectations; from the rewrite on, by the series'.
        # The rewrite's files come in before the commit that builds them.
        built = read(os.path.join(wt, 'kernel/trace/Makefile'), 'r')
        kernel = 'series' if 'ring_buffer_read.o' in built else 'base'
        res = Results(kernel)
        for name, status in kunit_json_cases(out):
            res.add('kunit-uml', name, status)
        bad = [r for r in res.rows if not r[4]]
        if not res.rows or bad:
            return False, (f'{len(bad)} of {len(res.rows)} KUnit cases not as expected on the '
                           f'{kernel} column: ' + ', '.join(r[1] for r in bad[:5]))
        detail = f'KUnit {len(res.rows)} cases as expected ({kernel} column)'
    if touched:
        objs = [f[:-2] + '.o' for f in touched]
        w1 = os.path.join(bdir, 'w1.log')
        r = run(['make', '-C', wt, f'O={bdir}', 'ARCH=um', 'CC=ccache gcc', 'W=1', f'-j{jobs()}']
                + objs, env=ccache_env(), check=False, logfile=w1)
        warns = w1_warnings(read(w1, 'r'))
        if r.returncode or warns:
            return False, f'W=1: {"; ".join(warns[:4]) or "make failed"}'
        detail += f', W=1 clean on {len(objs)} object(s)'
    return True, detail


@build_lock
def bisect_x86(wt, touched):
    bdir = build_dir('bisect', 'x86')
    os.makedirs(bdir, exist_ok=True)
    env = ccache_env()
    make = ['make', '-C', wt, f'O={bdir}', 'ARCH=x86_64', 'CC=ccache gcc']
    # The guest's config for every commit; options it does not know yet drop.
    if not os.path.exists(os.path.join(bdir, '.config')):
        run(make + ['tinyconfig'], env=env, logfile=os.path.join(bdir, 'config.log'))
    run([os.path.join(wt, 'scripts/kconfig/merge_config.sh'), '-m', '-O', bdir,
         os.path.join(bdir, '.config'), os.path.join(DATA, 'configs', 'x86_64-qemu.config')],
        cwd=wt, env=env, logfile=os.path.join(bdir, 'merge.log'))
    run(make + ['olddefconfig'], env=env, logfile=os.path.join(bdir, 'olddefconfig.log'))
    r = run(make + [f'-j{jobs()}', 'bzImage', 'modules'], env=env, check=False,
            logfile=os.path.join(bdir, 'build.log'))
    if r.returncode:
        return False, f'x86_64 build failed, see {bdir}/build.log'
    detail = 'x86_64 guest config built'
    if touched:
        objs = [f[:-2] + '.o' for f in touched]
        w1 = os.path.join(bdir, 'w1.log')
        r = run(make + ['W=1', f'-j{jobs()}'] + objs, env=env, check=False, logfile=w1)
        warns = w1_warnings(read(w1, 'r'))
        if r.returncode or warns:
            return False, f'W=1: {"; ".join(warns[:4]) or "make failed"}'
        detail += f', W=1 clean on {len(objs)} object(s)'
    return True, detail


def series_emit(kind, out):
    """Check the steps, commit them and write the patches to @out; returns
    (repo, patches), the cover letter first. Dies on a step problem."""
    steps = series_steps(kind)
    problems = series_coverage(kind, steps)
    for p in problems:
        log(p)
    if problems:
        die(f'{len(problems)} problem(s) with the steps in {os.path.join(DATA, kind)}')
    repo, wt = series_commit(kind, steps)
    patches = series_export(kind, wt, out, cover_letter(kind, steps))
    log(f'{len(patches) - 1} patches and a cover letter in {out}')
    return repo, patches


def series_stage(res, bisect):
    """The test command's series stage: emit the series and the stable
    fixes and check both (git am, bytes, MAINTAINERS, checkpatch), and
    with @bisect build every commit of the series."""
    for kind in ('series', 'stable'):
        try:
            repo, patches = series_emit(kind, os.path.join(CACHE, f'{kind}-out'))
            rows = [('steps-cover-the-overlay', True, '')] + series_check(kind, repo, patches)
            if kind == 'series' and bisect:
                rows += series_bisect()
        except SystemExit:
            # die() has said why; the rest of the test command still runs.
            rows = [('emit-and-check', False, 'stopped: see the message above')]
        for name, ok, detail in rows:
            res.add(f'{kind}-patches', name, 'PASS' if ok else 'FAIL', detail)
