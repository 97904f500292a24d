# SPDX-License-Identifier: GPL-2.0
"""The static checks' C reading (functions, accessors) and the harness's
own import graph."""

import unittest
from unittest import mock

from rbdev import checks

C = r'''
/* a comment with a brace { */
static inline int rb_a(int x)
{
	return rb_test_point(x) + "}"[0];
}

int rb_b(void)
{
	return rb_a(1);
}

static const int table[] = { 1, 2 };
void rb_c(void) { }
'''


class CReading(unittest.TestCase):
    def test_functions(self):
        # The line of each body's opening brace.
        got = [(n, line, static) for n, line, _, static in checks.c_functions(C)]
        self.assertEqual(got, [('rb_a', 4, True), ('rb_b', 9, False), ('rb_c', 14, False)])

    def test_accessors_call_a_point_directly_or_not(self):
        self.assertEqual(checks.accessor_names(C), ['rb_a', 'rb_b'])


class Imports(unittest.TestCase):
    def test_the_package_has_layers(self):
        graph, circles, layers = checks.check_imports()
        self.assertEqual(circles, [])
        self.assertIn('config', layers[0])   # data only: it imports nothing
        self.assertIn('common', layers[1])
        self.assertEqual(layers[-1], ['cli'])
        self.assertEqual(sum(len(x) for x in layers), len(graph))

    def test_a_circle_is_found(self):
        real = checks.package_imports

        def with_circle(path, modules):
            got = real(path, modules)
            return got | {'cli'} if path.endswith('common.py') else got
        with mock.patch.object(checks, 'package_imports', with_circle):
            _, circles, layers = checks.check_imports()
        self.assertTrue(any(c.startswith('common -> cli') or 'cli -> ' in c for c in circles))
        self.assertEqual(layers, [])


if __name__ == '__main__':
    unittest.main()


class Readme(unittest.TestCase):
    def test_commands_and_options_exist(self):
        import argparse
        import os
        import tempfile
        from rbdev import harness
        p = argparse.ArgumentParser()
        p.add_argument('-v', '--verbose', action='store_true')
        sub = p.add_subparsers(dest='cmd')
        sub.add_parser('test').add_argument('--full', action='store_true')
        sub.add_parser('check-doc')
        d = tempfile.mkdtemp(prefix='rbdev-test-')
        with open(os.path.join(d, 'R.md'), 'w') as f:
            f.write('scripts/rbdev test --full --verbose   # all of --ftracetest\n'
                    'run `rbdev check-doc` and `rbdev tset`, then rbdev test --fll\n')
        with mock.patch.object(harness, 'REPO', d):
            got = harness.readme_problems(p, ('R.md',))
        self.assertEqual(got, ['R.md:2: "rbdev tset" is no command',
                               'R.md:2: rbdev test has no --fll'])
