"""`evalcase fmt`: one canonical layout for cases, manifests and fixtures.

What it changes: the order of top-level keys (identity, execution, judging, governance:
the layers of seed 000 section 12.3.1, in the order of the 12.3 example), the order of
keys inside ``metadata`` and ``evaluator_config``, indentation (two spaces; list dashes
indented two under their key) and line wrapping (none). What it keeps: every comment,
blank-line groups, the quoting and flow style of every value, keys it does not know
(after the known ones of their level, in their original order).

It never changes a value: each file is read with evalcase's own loader before and after
formatting and the two readings must be equal, otherwise the file is left alone and the
difference is reported. Running it twice changes nothing the second time. A file that
does not parse cleanly (a syntax error, a duplicate key, a custom tag) is left alone:
`evalcase lint` explains what to fix first.

Passing (already canonical)::

    case_id: refund_eligibility_001
    case_version: v1
    ...
    input: 耳机签收十天了，能退吗？
    expected_behavior: [识别为质量问题售后。]
    metadata: {...}

Failing (``--check`` reports it)::

    metadata: {...}
    case_id: refund_eligibility_001
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.files import classify
from evalcase.loader import Limits, load, round_trip_dump, round_trip_load
from evalcase.model import FileKind

IDENTITY = (
    "case_id", "case_version", "dataset_id", "dataset_version", "title", "scenario",
    "user_task", "ability_tags", "risk_level", "difficulty", "source", "case_types",
    "business_scenario",
)  # fmt: skip
# What the agent receives and what only the environment knows (contract.fields: agent,
# environment): the fields `evalcase new --from` copies.
EXECUTION = (
    "input", "context", "interaction", "user_simulator", "environment", "generation_config",
    "prompt",
    "initial_state",
    "state", "available_tools", "tool_schema", "environment_requirements",
)  # fmt: skip
JUDGING = (
    "goal", "user_goal", "expected_calls", "expected_tool_sequence", "expected_args",
    "expected_result_usage", "required_tools", "forbidden_tools", "side_effect_policy",
    "success_criteria", "failure_criteria", "trace_requirement", "safety_constraints",
    "final_state_check", "user_journey", "sop", "policy_constraints", "service_level",
    "business_success", "audit_requirement", "reference", "constraints", "context_policy",
    "gold_evidence", "citation_requirement", "evaluation_metrics", "expected_behavior",
    "negative_behavior", "rubric", "evaluator_config", "audit",
)  # fmt: skip
GOVERNANCE = ("metadata",)
CASE_ORDER = IDENTITY + EXECUTION + JUDGING
# Unknown keys (x- extensions, typos lint reports) go between judging and governance.
CASE_TAIL = GOVERNANCE

METADATA_ORDER = (
    "dataset_role", "tags", "owner", "review_status", "usage_rights_status",
    "review_records", "origin", "coverage",
)  # fmt: skip
EVALUATOR_ORDER = ("rule_checks", "graders", "judge", "human_review", "pass_k")
MANIFEST_ORDER = (
    "dataset_id", "dataset_version", "title", "description", "owner", "agent", "suites",
    "gates", "coverage",
)  # fmt: skip
FIXTURE_ORDER = (
    "fixture_id", "fixture_version", "kind", "description", "source", "desensitized",
    "knowledge_base", "corpus_version", "effective_from", "effective_to", "data",
)  # fmt: skip


@dataclass(frozen=True)
class FmtResult:
    """What formatting one file did. ``error`` is set when the file was left alone."""

    path: str
    changed: bool
    error: str | None = None


def _rank(order: Sequence[str], tail: Sequence[str]) -> dict[str, int]:
    ranks = {key: i for i, key in enumerate(order)}
    ranks.update({key: len(order) + 1 + i for i, key in enumerate(tail)})
    return ranks


_CASE_RANKS = _rank(CASE_ORDER, CASE_TAIL)
_UNKNOWN = len(CASE_ORDER)  # between the known keys and the tail


def _reorder(mapping: Any, ranks: dict[str, int], unknown: int) -> None:
    """Sort a ruamel CommentedMap in place; comments attached to a key move with it."""
    keys = list(mapping.keys())
    wanted = sorted(
        keys, key=lambda k: (ranks.get(k, unknown) if isinstance(k, str) else unknown, 0)
    )
    if wanted == keys:
        return
    for key in wanted:
        mapping.move_to_end(key)


def canonicalize(data: Any, kind: FileKind) -> None:
    """Put the keys of a round-trip document in canonical order, in place."""
    if not hasattr(data, "move_to_end"):
        return
    if kind is FileKind.CASE:
        _reorder(data, _CASE_RANKS, _UNKNOWN)
        for name, order in (("metadata", METADATA_ORDER), ("evaluator_config", EVALUATOR_ORDER)):
            inner = data.get(name)
            if hasattr(inner, "move_to_end"):
                _reorder(inner, _rank(order, ()), len(order))
    elif kind is FileKind.MANIFEST:
        _reorder(data, _rank(MANIFEST_ORDER, ()), len(MANIFEST_ORDER))
    elif kind is FileKind.FIXTURE:
        _reorder(data, _rank(FIXTURE_ORDER, ()), len(FIXTURE_ORDER))


def _kind_of(path: str) -> FileKind:
    kind, _ = classify(path)
    if kind is FileKind.UNKNOWN and path.endswith((".yaml", ".yml")):
        # Outside the layout (a single file given by path): guess from its keys later.
        return FileKind.UNKNOWN
    return kind


def _guess(data: Any) -> FileKind:
    if isinstance(data, dict):
        if "case_id" in data:
            return FileKind.CASE
        if "fixture_id" in data:
            return FileKind.FIXTURE
        if "dataset_id" in data:
            return FileKind.MANIFEST
    return FileKind.UNKNOWN


def format_text(text: str, path: str = "", limits: Limits | None = None) -> tuple[str, str | None]:
    """``(formatted, error)``: the canonical text of one file, or the text unchanged and
    why it was left alone."""
    before = load(path or "<text>", text.encode("utf-8"), limits)
    blocking = [f for f in before.findings if f.severity.name == "ERROR"]
    if blocking:
        first = blocking[0]
        return text, (
            f"left alone: {first.code} at line {first.line}: {first.message} "
            "(run `evalcase lint` and fix it first)"
        )
    if before.data is None:
        return text, None
    from ruamel.yaml.error import YAMLError

    try:
        data = round_trip_load(text)
        kind = _kind_of(path) if path else FileKind.UNKNOWN
        if kind is FileKind.UNKNOWN:
            kind = _guess(data)
        canonicalize(data, kind)
        out = round_trip_dump(data)
    except (YAMLError, ValueError, TypeError) as exc:
        return text, f"left alone: cannot format: {exc}"
    after = load(path or "<text>", out.encode("utf-8"), limits)
    if after.data != before.data or any(f.severity.name == "ERROR" for f in after.findings):
        return text, "left alone: formatting would change a value (please report this file)"
    return out, None


def candidates(root: Path, paths: Iterable[str]) -> list[Path]:
    """The YAML files under ``paths`` (files or folders); all of datasets/ and fixtures/
    when none is given."""
    targets = [Path(p) for p in paths] or [root / "datasets", root / "fixtures"]
    found: list[Path] = []
    for target in targets:
        if target.is_dir():
            found.extend(
                sorted(
                    p
                    for pattern in ("*.yaml", "*.yml")
                    for p in target.rglob(pattern)
                    if p.is_file() and not any(part.startswith(".") for part in p.parts[-3:])
                )
            )
        elif target.is_file():
            found.append(target)
    return sorted(set(found))


def format_files(root: Path, paths: Iterable[str], *, check: bool = False) -> list[FmtResult]:
    """Format each file in place (or only report under ``check``)."""
    results = []
    for file in candidates(root, paths):
        try:
            rel = file.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            rel = file.as_posix()
        try:
            raw = file.read_bytes()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            results.append(FmtResult(rel, False, f"left alone: cannot read it as UTF-8: {exc}"))
            continue
        formatted, error = format_text(text, rel)
        changed = error is None and formatted != text
        if changed and not check:
            file.write_bytes(formatted.encode("utf-8"))
        results.append(FmtResult(rel, changed, error))
    return results
