"""Plugins: what teams add through Python entry points (graders, rule checks, tool handlers).

The built-in graders and rule checks are listed in :mod:`evalcase.grade.names`. Teams add
their own through Python entry points::

    [project.entry-points."evalcase.graders"]
    invoice_total = "acme_eval.graders:InvoiceTotal"

    [project.entry-points."evalcase.rule_checks"]
    no_competitor_mention = "acme_eval.checks:no_competitor_mention"

Lint only needs the names, so plugins are discovered from package metadata and never
imported while linting; ``load_plugin`` imports one when a runner needs it.
"""

from __future__ import annotations

import hashlib
import os
import sys
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GRADER_GROUP = "evalcase.graders"
RULE_CHECK_GROUP = "evalcase.rule_checks"
# Tool handlers a fixture may name (evalcase.trust); listed here so that one scan finds
# every plugin group and one digest covers them.
HANDLER_GROUP = "evalcase.handlers"
_GROUPS = (GRADER_GROUP, RULE_CHECK_GROUP, HANDLER_GROUP)


@cache
def _declared_groups() -> frozenset[str]:
    """The plugin groups some installed distribution may declare entry points of: a group
    is left out only when none of the places importlib.metadata reads (the
    entry_points.txt of every *.dist-info and *.egg-info folder on sys.path) mentions its
    name.

    Lint asks on every run, the commit hook's included, and almost always there is no
    plugin: importing importlib.metadata and parsing every distribution's metadata to
    find that out cost the hook tens of milliseconds; a scan for the names costs one
    directory listing per sys.path entry and one small read per distribution. Anything
    this scan does not cover (a zip archive on sys.path, another distribution finder)
    counts as a mention, and importlib.metadata answers.
    """
    from importlib.machinery import PathFinder

    groups = frozenset(_GROUPS)
    if any(
        finder is not PathFinder and hasattr(finder, "find_distributions")
        for finder in sys.meta_path
    ):
        return groups
    found: set[str] = set()
    for entry in sys.path:
        if not isinstance(entry, str):
            return groups
        base = Path(entry)  # "" is the current folder, as for importlib.metadata
        try:
            children = os.listdir(base)
        except OSError:
            if base.is_file():
                return groups  # a zip archive, which importlib.metadata also reads
            continue
        egg = base.name.lower().endswith(".egg")
        for child in children:
            low = child.lower()
            if not (low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info")):
                continue
            try:
                text = (base / child / "entry_points.txt").read_bytes()
            except OSError:
                continue
            found.update(g for g in groups if g.encode() in text)
    return frozenset(found)


def entry_points(group: str) -> list[EntryPoint]:
    """The installed entry points of ``group`` (importlib.metadata's answer)."""
    if group in _GROUPS and group not in _declared_groups():
        return []
    from importlib.metadata import entry_points as installed

    return list(installed(group=group))


@cache
def _plugins(group: str) -> dict[str, EntryPoint]:
    try:
        found = entry_points(group=group)
    except Exception:  # broken package metadata must not stop lint
        return {}
    return {ep.name: ep for ep in sorted(found, key=lambda e: (e.name, e.value))}


def plugin_names(group: str) -> tuple[str, ...]:
    return tuple(_plugins(group))


def plugins(group: str) -> dict[str, EntryPoint]:
    """The installed plugins of ``group`` by name (not imported)."""
    return dict(_plugins(group))


@cache
def plugins_digest() -> str:
    """Changes whenever an installed plugin is added, removed or re-pointed."""
    h = hashlib.blake2b(digest_size=12)
    for group in _GROUPS:
        for name, ep in _plugins(group).items():
            h.update(f"{group}\0{name}\0{ep.value}\n".encode())
    return h.hexdigest()


def load_plugin(group: str, name: str) -> Any:
    """Import and return one plugin object (for runners; lint never calls this)."""
    ep = _plugins(group).get(name)
    if ep is None:
        raise KeyError(f"no {group} plugin named {name!r}")
    return ep.load()


# What a grader or rule-check plugin written for the typed attempt declares (a module or
# object attribute), so that it gets the typed value (evalcase.contract.records.Observed).
TYPED_ATTEMPT = "observed"


def wants_typed_attempt(obj: Any, func: Any) -> bool:
    """Whether a grader or rule-check plugin takes the typed attempt: it says so
    (``ATTEMPT_VIEW = "observed"``), or its ``grade``'s second parameter is annotated
    ``Observed``. Any other plugin was written against the attempt as one JSON object."""
    if getattr(obj, "ATTEMPT_VIEW", None) == TYPED_ATTEMPT:
        return True
    import inspect

    try:
        parameters = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return False
    if len(parameters) < 2:
        return False
    annotation = parameters[1].annotation
    name = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    return isinstance(name, str) and name.rsplit(".", 1)[-1] == "Observed"


def attempt_adapter(obj: Any, func: Any, to_mapping: Any) -> Any:
    """``func`` (a plugin's ``grade(spec, attempt, ...)``) as the engine calls it with the
    typed attempt. A plugin written against the mapping (see :func:`wants_typed_attempt`)
    gets ``to_mapping(attempt)``, the record's JSON object with ``initial_state`` added, as
    before, with a :class:`DeprecationWarning`: this adapter is kept for one release
    (docs/development.md, "Adding a grader")."""
    if wants_typed_attempt(obj, func):
        return func
    import warnings

    warnings.warn(
        f"plugin {getattr(obj, '__name__', obj)!r} takes the attempt as a mapping: declare "
        f"ATTEMPT_VIEW = {TYPED_ATTEMPT!r} and read evalcase.contract.records.Observed "
        "(the mapping view goes in the next release)",
        DeprecationWarning,
        stacklevel=2,
    )

    def legacy(spec: Any, attempt: Any, *rest: Any) -> Any:
        return func(spec, to_mapping(attempt), *rest)

    return legacy
