# SPDX-License-Identifier: GPL-2.0
"""The harness's checks of itself: its unit tests (scripts/rbdev.d/tests),
each planted fault of tests/planted.py run against them in a copy of the
harness (the tests must fail with every one), pyflakes and pycodestyle on
every Python file of the harness."""

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

from .common import DATA, REPO, log

# pycodestyle's defaults, and tabs: the harness embeds C and shell text.
PYCODESTYLE = ['--max-line-length=110',
               '--ignore=E121,E123,E126,E226,E24,E704,W503,W504,W191,E101']


def python_files():
    """Every Python file of the harness, as repo paths."""
    files = [os.path.join(REPO, 'scripts', 'rbdev')]
    for pat in ('*.py', 'rbdev/*.py', 'tests/*.py'):
        files += sorted(glob.glob(os.path.join(DATA, pat)))
    return [os.path.relpath(f, REPO) for f in files]


def unit_tests(data=DATA):
    """Run the unit tests of the harness in @data: (ok, the tail of their output)."""
    try:
        r = subprocess.run([sys.executable, '-m', 'unittest', 'discover', '-s', 'tests', '-t', '.'],
                           cwd=data, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return False, 'the unit tests did not end in 600 s'
    tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or ['']
    return r.returncode == 0, tail[0]


def planted_faults():
    """FAULTS of tests/planted.py."""
    spec = importlib.util.spec_from_file_location('planted',
                                                  os.path.join(DATA, 'tests', 'planted.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.FAULTS


def plant(name, path, old, new):
    """Run the unit tests on a copy of the harness with one fault planted:
    (caught, detail). A fault whose text is not found exactly once is an
    error of the list, not caught."""
    with tempfile.TemporaryDirectory(prefix=f'rbdev-plant-{name}-') as top:
        # The copy sits where the repo has it (REPO is common.py's fourth
        # parent), the rest of the repo linked in: tests that read repo
        # files must read the repo's, not fail on a missing one.
        d = os.path.join(top, os.path.relpath(DATA, REPO))
        os.makedirs(d)
        for parent in (REPO, os.path.dirname(DATA)):
            here = os.path.join(top, os.path.relpath(parent, REPO))
            for entry in os.listdir(parent):
                if entry not in ('.git', 'scripts', 'rbdev.d') and \
                        not os.path.exists(os.path.join(here, entry)):
                    os.symlink(os.path.join(parent, entry), os.path.join(here, entry))
        for entry in os.listdir(DATA):
            if entry in ('rbdev', 'tests'):
                shutil.copytree(os.path.join(DATA, entry), os.path.join(d, entry),
                                ignore=shutil.ignore_patterns('__pycache__'))
            else:
                os.symlink(os.path.join(DATA, entry), os.path.join(d, entry))
        target = os.path.join(d, path)
        with open(target) as f:
            text = f.read()
        if text.count(old) != 1:
            return False, f'{path}: the text to replace is there {text.count(old)} times'
        with open(target, 'w') as f:
            f.write(text.replace(old, new))
        ok, tail = unit_tests(d)
        return not ok, tail


def lint():
    """(pyflakes problems, pycodestyle problems) on python_files()."""
    files = python_files()
    out = []
    for cmd in (['pyflakes3'], ['pycodestyle', *PYCODESTYLE]):
        if not shutil.which(cmd[0]):
            out.append([f'{cmd[0]} is not installed'])
            continue
        r = subprocess.run(cmd + files, cwd=REPO, capture_output=True, text=True)
        out.append([ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()])
    return out[0], out[1]


# The documents whose rbdev commands and options must exist.
READMES = ('README.md', os.path.join('scripts', 'rbdev.d', 'README.md'))


def readme_problems(parser, paths=READMES):
    """Each "rbdev COMMAND" in @paths (repo paths) must be a command of
    @parser, and each --option after it on the same line, up to a "#"
    comment or the end of a code span, one of that command's."""
    sub = next(a for a in parser._actions if a.dest == 'cmd')
    problems = []
    for path in paths:
        with open(os.path.join(REPO, path)) as f:
            text = f.read()
        for no, ln in enumerate(text.splitlines(), 1):
            for m in re.finditer(r'\brbdev ([a-z][a-z0-9-]*)([^#`]*)', ln):
                cmd, rest = m.groups()
                if cmd not in sub.choices:
                    problems.append(f'{path}:{no}: "rbdev {cmd}" is no command')
                    continue
                opts = sub.choices[cmd]._option_string_actions
                for opt in re.findall(r'(?<![\w-])(--[a-z][a-z0-9-]*)', rest):
                    if opt not in opts and opt not in parser._option_string_actions:
                        problems.append(f'{path}:{no}: rbdev {cmd} has no {opt}')
    return problems


def check_harness(res=None, parser=None):
    """Every check of this module; rows in @res if given; with @parser
    (rbdev's argparse parser) the READMEs too. True if all pass."""
    rows = []
    ok, tail = unit_tests()
    rows.append(('harness-unittest', ok, tail))
    for name, path, old, new in planted_faults():
        caught, tail = plant(name, path, old, new)
        rows.append((f'harness-planted-{name}', caught,
                     'the tests failed' if caught else f'NOT caught: {tail}'))
    # The control: the same copy with nothing planted must pass, or every
    # fault above would count as caught by a copy that fails anyway.
    caught, tail = plant('control', 'rbdev/common.py', 'import os\n', 'import os\n')
    control_ok = not caught
    rows.append(('harness-plant-control', control_ok,
                 'the copy passes' if control_ok else f'the copy fails unplanted: {tail}'))
    if parser is not None:
        bad = readme_problems(parser)
        for p in bad:
            log('  ' + p)
        rows.append(('readme-commands', not bad, f'{len(bad)} problems'))
    flakes, style = lint()
    rows.append(('harness-pyflakes', not flakes, f'{len(flakes)} problems'))
    rows.append(('harness-pycodestyle', not style, f'{len(style)} problems'))
    for p in flakes + style:
        log('  ' + p)
    for name, good, detail in rows:
        if res is not None:
            res.add('static', name, 'PASS' if good else 'FAIL', '' if good else detail)
        elif not good or name == 'harness-unittest':
            log(f'{name}: {"ok" if good else "FAIL"} {detail}')
    log(f'check-harness: unit tests {"pass" if rows[0][1] else "FAIL"}, '
        f'{sum(1 for n, g, _ in rows if n.startswith("harness-planted") and g)} of '
        f'{sum(1 for n, _, _ in rows if n.startswith("harness-planted"))} planted faults caught '
        f'(the copy without one {"passes" if control_ok else "FAILS"}), '
        f'{len(flakes)} pyflakes and {len(style)} pycodestyle problems')
    return all(g for _, g, _ in rows)
