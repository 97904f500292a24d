# SPDX-License-Identifier: GPL-2.0
"""What the tests share: the fixtures directory and a scratch repo with an
expected-results file of the test's own."""

import os
import tempfile
from unittest import mock

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def expected_repo(text):
    """A context that points results.load_expected() at @text."""
    from rbdev import results
    d = tempfile.mkdtemp(prefix='rbdev-test-')
    os.makedirs(os.path.join(d, 'tests'))
    with open(os.path.join(d, 'tests', 'expected-results.txt'), 'w') as f:
        f.write(text)
    return mock.patch.object(results, 'REPO', d)
