# SPDX-License-Identifier: GPL-2.0
"""Unit tests of the harness itself: python3 -m unittest discover -s
scripts/rbdev.d/tests -t scripts/rbdev.d (rbdev check-harness)."""
