"""`make check` shares its tests out over pytest-xdist processes with `--dist loadgroup`: the tests of one group
(one class, or a module that says so) run on one process, so that what they build once (`replayed_once`, the
access walks' population) is built once. A group that silently stops holding costs minutes, not a failure:
this test fails instead. pytest 9.2 moved a node's id where pytest-xdist 3.8 does not write its group
(pyproject.toml pins pytest below it), and a group marker added after pytest-xdist has read them is not seen
(tests/conftest.py adds the classes' first)."""

from __future__ import annotations

import pytest


@pytest.fixture
def nodeid(request) -> str:
    """The test's node id as pytest-xdist left it; outside `--dist loadgroup` there are no groups to check."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under `--dist loadgroup` (make check)")
    return request.node.nodeid


class TestAClassIsAGroup:
    def test_its_tests_carry_its_group(self, nodeid):
        assert nodeid.endswith("@tests.test_tiers.TestAClassIsAGroup"), nodeid


@pytest.mark.xdist_group("tests.test_tiers")
def test_a_test_marked_with_a_group_carries_it(nodeid):
    assert nodeid.endswith("@tests.test_tiers"), nodeid
