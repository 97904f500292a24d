# SPDX-License-Identifier: GPL-2.0
"""The steps of the patch series as scripts/rbdev.d/<kind>/NN-*.msg says
them, a tree's files made from the repo (tree_content()), and the litmus
tests' mutants and herd7's verdict on them."""

import os
import tempfile
import unittest
from unittest import mock

from rbdev import litmus, setup
from tests.helpers import fixture


def steps_of(files):
    d = tempfile.mkdtemp(prefix='rbdev-test-')
    os.makedirs(os.path.join(d, 'stable'))
    for name, text in files.items():
        with open(os.path.join(d, 'stable', name), 'w') as f:
            f.write(text)
    with mock.patch.object(setup, 'DATA', d):
        return setup.series_steps('stable')


class TreeContent(unittest.TestCase):
    """A tree's files as pristine + overlay + patches, in a scratch dir."""
    def tree(self, patch_text):
        d = tempfile.mkdtemp(prefix='rbdev-test-')
        os.makedirs(os.path.join(d, 'pristine', 'k'))
        os.makedirs(os.path.join(d, 'repo', 'k'))
        with open(os.path.join(d, 'pristine', 'k', 'a.c'), 'w') as f:
            f.write('one\ntwo\nthree\n')
        with open(os.path.join(d, 'repo', 'k', 'new.c'), 'w') as f:
            f.write('ours\n')
        patch = os.path.join(d, 'p.patch')
        with open(patch, 'w') as f:
            f.write(patch_text)
        out = os.path.join(d, 'out')
        os.makedirs(out)
        sources = (os.path.join(d, 'pristine'), {'k/new.c': os.path.join(d, 'repo', 'k', 'new.c')},
                   [patch])
        with mock.patch.object(setup, 'tree_sources', lambda kind: sources):
            touched, problems = setup.tree_content('any', out)
        return out, touched, problems

    def test_overlay_then_patches(self):
        out, touched, problems = self.tree(
            '--- a/k/a.c\n+++ b/k/a.c\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n')
        self.assertEqual(problems, [])
        self.assertEqual(touched, {'k/a.c', 'k/new.c'})
        with open(os.path.join(out, 'k', 'a.c')) as f:
            self.assertEqual(f.read(), 'one\n2\nthree\n')
        self.assertTrue(os.path.exists(os.path.join(out, 'k', 'new.c')))

    def test_a_patch_that_does_not_apply_is_named(self):
        _, _, problems = self.tree(
            '--- a/k/a.c\n+++ b/k/a.c\n@@ -1,3 +1,3 @@\n one\n-zwei\n+2\n three\n')
        self.assertEqual(len(problems), 1)
        self.assertIn('does not apply', problems[0])


class Steps(unittest.TestCase):
    def test_headers_and_order(self):
        steps = steps_of({
            '02-b.msg': 'Subject: two\nFiles: a/b.c a/c.c\nTests: k:x\nTests: k:y\n\nWhy.\n',
            '01-a.msg': 'Subject: one\nPatches: p/1.patch\n\nBody.\n',
            'cover-letter.txt': 'not a step\n'})
        self.assertEqual([s['subject'] for s in steps], ['one', 'two'])
        self.assertEqual(steps[1]['files'], ['a/b.c', 'a/c.c'])
        self.assertEqual(steps[1]['tests'], ['k:x', 'k:y'])
        self.assertEqual(steps[0]['patches'], ['p/1.patch'])
        self.assertEqual(steps[1]['body'], 'Why.\n')

    def test_unknown_header(self):
        with self.assertRaises(SystemExit):
            steps_of({'01-a.msg': 'Subject: one\nFixes: no\n\nBody.\n'})


class Litmus(unittest.TestCase):
    def test_mutants_of_mcpu(self):
        path = os.path.join(litmus.LITMUS_DIR, 'Mcpu.litmus')
        with open(path) as f:
            text = f.read()
        m = litmus.litmus_mutants(text)
        self.assertEqual(sorted(m), ['rmb', 'wmb'])
        self.assertNotIn('smp_rmb();', m['rmb'])
        self.assertIn('smp_wmb();', m['rmb'])
        self.assertTrue(m['wmb'].startswith('C Mcpu~wmb'))
        self.assertEqual(text.count('\n'), m['rmb'].count('\n'))

    def test_weakenings(self):
        text = '\n'.join(['C T', 'r = smp_load_acquire(x); // mutant a',
                          'smp_store_release(y, 1); // mutant b',
                          'r = atomic_cmpxchg(v, 0, 1); // mutant c'])
        m = litmus.litmus_mutants(text)
        self.assertIn('r = READ_ONCE(*x);', m['a'])
        self.assertIn('WRITE_ONCE(*y, 1);', m['b'])
        self.assertIn('atomic_cmpxchg_relaxed(v, 0, 1)', m['c'])

    def test_nothing_to_weaken(self):
        with self.assertRaises(ValueError):
            litmus.litmus_mutants('C T\nWRITE_ONCE(*x, 1); // mutant x\n')

    def test_verdicts_of_real_herd7_output(self):
        for name, want in (('herd7-Mcpu.out', ('Never', '0 of 2 states')),
                           ('herd7-Mcpu-rmb.out', ('Sometimes', '1 of 4 states'))):
            out = mock.Mock(stdout=fixture(name), stderr='', returncode=0)
            with mock.patch.object(litmus.subprocess, 'run', return_value=out):
                self.assertEqual(litmus.herd7_verdict(['herd7'], 'x.litmus', '/'), want)
        out = mock.Mock(stdout='', stderr='File "x.litmus", line 3: syntax error\n',
                        returncode=1)
        with mock.patch.object(litmus.subprocess, 'run', return_value=out):
            self.assertEqual(litmus.herd7_verdict(['herd7'], 'x', '/')[0], 'ERROR')


if __name__ == '__main__':
    unittest.main()
