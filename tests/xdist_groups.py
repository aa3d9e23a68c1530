"""Which pytest-xdist worker runs which tests (a pytest plugin; tests/conftest.py loads it).

- A module's tests that share a module-scoped fixture (a graded run, an exported
  dataset, a repository with its commits) get an ``xdist_group`` mark naming the
  module, so that one worker builds the fixture once. Spread over both workers, each
  built it: up to 40 s of CPU twice. An explicit ``xdist_group`` mark (the Ray
  cluster's) is kept as it is.
- ``--dist loadgroup`` learns a test's group from an ``@group`` suffix that the worker
  appends to its node ID. pytest-xdist 3.8 appends it to the attribute that held the
  node ID before pytest 9.2, which now keeps it elsewhere: the suffix is lost and the
  groups ignored, silently (pytest-dev/pytest-xdist#1386). :func:`_suffix` appends it
  the way 3.8 means to wherever xdist did not; once xdist does, it finds every suffix
  in place and changes nothing.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Generator[None, None, None]:
    _group_module_fixtures(items)
    yield  # every other plugin's hook: deselection, then xdist's own suffixes
    if getattr(config.option, "loadgroup", False):  # in xdist workers under loadgroup
        for item in items:
            _suffix(item)


def _group_module_fixtures(items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.Function) or item.get_closest_marker("xdist_group"):
            continue
        defs = item._fixtureinfo.name2fixturedefs
        if any(d[-1].scope == "module" for d in defs.values() if d):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


def group_of(item: pytest.Item) -> str | None:
    """The item's group as pytest-xdist names it (its marks' names, sorted, joined)."""
    names = set()
    for mark in item.iter_markers("xdist_group"):
        names.add(str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")))
    return "_".join(sorted(names)) if names else None


def _suffix(item: pytest.Item) -> None:
    group = group_of(item)
    nodeid = item.nodeid
    # How xdist's scheduler reads a suffix back: after the last "@" that follows any "]".
    if group is None or nodeid.rfind("@") > nodeid.rfind("]"):
        return
    structured = getattr(item, "_id", None)  # pytest >= 9.2
    if structured is not None:
        item._id = type(structured).parse(f"{nodeid}@{group}")
