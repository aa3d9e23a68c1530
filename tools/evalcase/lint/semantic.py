"""Helpers shared by the semantic rules (identity, references, governance)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from evalcase import suites
from evalcase.files import FIXTURE_KINDS, looks_like
from evalcase.index.analysis import FileContext
from evalcase.index.facts import CaseFacts, FixtureFacts, ManifestFacts
from evalcase.index.repo import RepoIndex
from evalcase.loader import Document, Path
from evalcase.model import FileKind
from evalcase.naming import ascii_form

Located = tuple[Any, int, int]


def data_of(doc: Document, ctx: FileContext, kind: FileKind) -> dict[str, Any] | None:
    """The document's mapping when the file is of ``kind`` and looks like one (a file that
    looks like another kind is reported by EC014 alone)."""
    if not doc.ok or ctx.source.kind is not kind:
        return None
    looks = looks_like(doc.data)
    if looks is not None and looks is not kind:
        return None
    data: dict[str, Any] = doc.data
    return data


def judge_view_of(doc: Document, data: dict[str, Any]) -> Any:
    """The case's judge view (evalcase.contract.build.judge_view), built once per file
    for the rules that read it (EC318, EC327, EC328); None for a shape that gives none
    (the schema rules report it)."""
    if "judge_view" not in doc.memo:
        # Imported here: only cases with graders or rule checks pay for the grading model.
        from evalcase.contract.build import judge_view

        try:
            doc.memo["judge_view"] = judge_view(data, {})
        except Exception:  # a shape the schema rejects (EC1xx) is not a rule's to report
            doc.memo["judge_view"] = None
    return doc.memo["judge_view"]


def located(doc: Document, path: Path) -> Located | None:
    missing = object()
    value = doc.get(path, missing)
    if value is missing:
        return None
    line, col = doc.locate(path)
    return (value, line, col)


def string_items(doc: Document, path: Path) -> Iterator[tuple[int, str, int, int]]:
    """(index, text, line, column) of the string items of the list at ``path``."""
    value = doc.get(path)
    if not isinstance(value, list):
        return
    for i, item in enumerate(value):
        if isinstance(item, str):
            line, col = doc.locate((*path, i))
            yield i, item, line, col


def roles(doc: Document) -> list[tuple[str, int, int]]:
    """metadata.dataset_role as (role, line, column), whether one role or a list."""
    value = doc.get(("metadata", "dataset_role"))
    if isinstance(value, str):
        line, col = doc.locate(("metadata", "dataset_role"))
        return [(value, line, col)]
    return [(v, ln, c) for _, v, ln, c in string_items(doc, ("metadata", "dataset_role"))]


def did_you_mean(value: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or an empty string."""
    pool = sorted(set(candidates))
    if not pool:
        return ""
    plain = ascii_form(value)
    if plain != value and plain in pool:
        return f" (did you mean {plain!r}?)"
    close = difflib.get_close_matches(value, pool, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def listing(names: Iterable[str], limit: int = 12) -> str:
    items = sorted(set(names))
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


@dataclass
class Approval:
    """Where a case stands after its review records (oldest first).

    The current approval is the run of approved reviews after the last review that was
    not an approval: a later rejection or request for revision withdraws what earlier
    reviews approved, and several reviewers approving in a row add up. An approval holds
    for the ``case_version`` it names only: an approval of another version, or one that
    does not say which version it approved, approves nothing now (``stale``).
    """

    approved: bool = False
    approved_for: set[str] = field(default_factory=set)
    # The latest review, when it is a rejection or request for revision: its index.
    blocking: int | None = None
    last_approval: int | None = None
    count: int = 0
    # Approvals (indexes) after the last blocking review that hold for another or an
    # unstated case_version.
    stale: list[int] = field(default_factory=list)


def approval(doc: Document) -> Approval:
    records = doc.get(("metadata", "review_records"))
    if not isinstance(records, list):
        return Approval()
    current = doc.get(("case_version",))
    state = Approval(count=len(records))
    for i, record in enumerate(records):
        result = record.get("review_result") if isinstance(record, dict) else None
        if result == "approved":
            assert isinstance(record, dict)
            if record.get("case_version") != current or not isinstance(current, str):
                state.stale.append(i)
                continue
            if not state.approved:
                state.approved_for = set()
            state.approved = True
            state.blocking = None
            state.last_approval = i
            uses = record.get("approved_for")
            if isinstance(uses, list):
                state.approved_for |= {u for u in uses if isinstance(u, str)}
        else:
            state.approved = False
            state.approved_for = set()
            state.blocking = i
            state.last_approval = None
            state.stale = []
    return state


def approved_for_at(doc: Document, state: Approval) -> tuple[int, int]:
    """Where the current approval's ``approved_for`` is (its review record without one):
    what a finding about the scope of an approval points at."""
    assert state.last_approval is not None
    path = ("metadata", "review_records", state.last_approval)
    uses = doc.get((*path, "approved_for"))
    return doc.locate((*path, "approved_for") if uses is not None else path)


def review_verdict(doc: Document, index: int) -> tuple[str, str, int, int]:
    """(verdict, reviewer, line, column of the verdict) of review record ``index``."""
    path: Path = ("metadata", "review_records", index)
    record = doc.get(path)
    verdict = record.get("review_result") if isinstance(record, dict) else None
    reviewer = record.get("reviewer") if isinstance(record, dict) else None
    line, col = doc.locate((*path, "review_result"))
    return str(verdict), str(reviewer) if reviewer is not None else "?", line, col


# What each kind of reference expects, in words.
EXPECTED_KINDS = {
    "tool": ("tool",),
    "state": ("state",),
    "state|conversation": ("state", "conversation"),
    "rubric": ("rubric",),
    "prompt": ("prompt",),
}
KIND_WORDS = {
    "tool": "a tool definition",
    "state": "a state fixture",
    "conversation": "a conversation fixture",
    "rubric": "a rubric",
    "corpus": "a corpus",
    "prompt": "a prompt",
    "cel": "a cel fixture (shared CEL definitions)",
}


def fixture_kind(fixture: FixtureFacts) -> str:
    """The kind a fixture declares (its folder when the declaration is missing or wrong)."""
    if fixture.kind is not None and fixture.kind[0] in FIXTURE_KINDS:
        return str(fixture.kind[0])
    return fixture.dir_kind


def fixture_kinds(index: RepoIndex) -> dict[str, str]:
    """Fixture ID -> kind, for the first fixture holding each ID (duplicates are EC207's)."""
    return {fid: fixture_kind(found[0]) for fid, found in index.fixtures_by_id.items()}


def tool_definitions(index: RepoIndex) -> dict[str, FixtureFacts]:
    """Fixture ID -> tool definition, for fixtures of kind tool."""
    out = {}
    for fid, found in index.fixtures_by_id.items():
        if fixture_kind(found[0]) == "tool":
            out[fid] = found[0]
    return out


# --- suites and gates ------------------------------------------------------------------
# Views that feed release gates: an observation case must be in none of them, and a case
# in any of them needs an approval that covers it.
GATED_ROLES = ("golden", "risk", "red_team", "regression")


def countable(case: CaseFacts) -> bool:
    """Whether a case counts in pass rates: every case but an observation case
    (docs/authoring.md)."""
    return "observation" not in case.roles


def facets(case: CaseFacts) -> suites.Facets:
    """What suites select the case by (evalcase.suites)."""
    return suites.Facets(
        case_id=str(case.case_id[0]) if case.case_id else "",
        tags=case.tags,
        dataset_roles=case.roles,
        risk_level=case.risk_level,
        case_types=case.case_types,
    )


def in_suite(case: CaseFacts, selectors: dict[str, Any]) -> bool:
    """Whether a case is in a suite: evalcase.suites' selection, the one the runner and
    the gates make, over the suite's located criteria."""
    return suites.in_suite(facets(case), criteria(selectors))


def criteria(selectors: dict[str, Any]) -> suites.Criteria:
    """A suite's located criteria as evalcase.suites reads them: made once per suite by
    rules that test every case of a dataset against it (in_suite_of)."""
    return {k: tuple(str(v[0]) for v in values) for k, values in selectors.items()}


def in_suite_of(case: CaseFacts, wanted: suites.Criteria) -> bool:
    """in_suite with the suite's ``criteria`` already made."""
    return suites.in_suite(facets(case), wanted)


def dataset_cases(index: RepoIndex, manifest: ManifestFacts) -> list[CaseFacts]:
    return [c for c in index.cases if c.dataset_dir == manifest.dataset_dir]


def gate_members(
    manifest: ManifestFacts,
    cases: list[CaseFacts],
    suite: str | None,
    levels: tuple[str, ...] | None,
) -> list[CaseFacts] | None:
    """The cases a gate measures before observation cases are dropped: its suite's (the
    whole dataset without one), narrowed to its risk levels. None for an unknown suite."""
    members = cases
    if suite is not None:
        found = next((s for s in manifest.suites if s[0] == suite), None)
        if found is None:
            return None
        wanted = criteria(found[3])  # once, not once per case: a gate reads every case
        members = [c for c in members if in_suite_of(c, wanted)]
    if levels is not None:
        members = [c for c in members if c.risk_level in levels]
    return members


# --- answer keys -----------------------------------------------------------------------
def policies(doc: Document) -> list[tuple[Path, dict[str, Any]]]:
    """side_effect_policy entries as (path, mapping): one mapping or a list of them."""
    value = doc.get(("side_effect_policy",))
    if isinstance(value, dict):
        return [(("side_effect_policy",), value)]
    if isinstance(value, list):
        return [(("side_effect_policy", i), v) for i, v in enumerate(value) if isinstance(v, dict)]
    return []


def expected_tools(doc: Document) -> list[tuple[str, Path]]:
    """Every tool the answer key expects to be called, with where it says so:
    expected_calls (and its any_of alternatives), expected_tool_sequence, expected_args,
    required_tools."""
    out: list[tuple[str, Path]] = []

    def calls_of(block: Any, path: Path) -> None:
        if not isinstance(block, dict):
            return
        calls = block.get("calls")
        if isinstance(calls, list):
            for i, call in enumerate(calls):
                if isinstance(call, dict) and isinstance(call.get("tool"), str):
                    out.append((call["tool"], (*path, "calls", i, "tool")))
        alternatives = block.get("any_of")
        if isinstance(alternatives, list):
            for i, alternative in enumerate(alternatives):
                calls_of(alternative, (*path, "any_of", i))

    calls_of(doc.get(("expected_calls",)), ("expected_calls",))
    for i, tool, _, _ in string_items(doc, ("expected_tool_sequence",)):
        out.append((tool, ("expected_tool_sequence", i)))
    for i, tool, _, _ in string_items(doc, ("required_tools",)):
        out.append((tool, ("required_tools", i)))
    args = doc.get(("expected_args",))
    if isinstance(args, dict):
        out.extend((str(tool), ("expected_args", tool)) for tool in args)
    return out


def expects_arguments(doc: Document) -> bool:
    """Whether the answer key states tool arguments (expected_calls args, expected_args)."""
    if isinstance(doc.get(("expected_args",)), dict) and doc.get(("expected_args",)):
        return True

    def has_args(block: Any) -> bool:
        if not isinstance(block, dict):
            return False
        calls = block.get("calls")
        if isinstance(calls, list) and any(isinstance(c, dict) and c.get("args") for c in calls):
            return True
        alternatives = block.get("any_of")
        return isinstance(alternatives, list) and any(has_args(a) for a in alternatives)

    return has_args(doc.get(("expected_calls",)))
