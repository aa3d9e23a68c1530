"""Compare two graded runs case by case, by stable case ID.

A case passes when every attempt passed (pass^k). ``fixed``: failed in BASE, passes in NEW;
``regressed``: passed in BASE, not in NEW; ``still_failing``; ``new`` / ``removed``: in one
run only; ``pending``: waiting for a judge or a person in either run, so neither fixed,
regressed nor failing (a pending case is undecided, not a failure), except for one thing
the grades of the two runs decide: a case pending in BASE (no grader failed) that fails
in NEW on a grader that passed in every BASE attempt is ``regressed`` (the part that was
decided got worse; with no judge configured, the usual case). That needs each run's
``grades.jsonl`` (``base_grades`` / ``new_grades``); without them pending stays pending.
With repeats (a case attempted more than once on either side), a change of a case's
pass rate is tested against what its repeats allow: a one-sided Fisher exact test
(:mod:`evalcase.grade.noise`; method and assumptions in docs/grading.md). The case is
``regressed`` (or ``fixed``) only when the p-value is at most ``alpha`` (0.05), else
``changed_within_noise``: a flaky case that passed 3 of 3 and then 2 of 3 is noise,
3 of 3 then 0 of 3 is not. ``noise`` holds each tested case's counts and p-value.
Single attempts on both sides keep the plain rule above: with one attempt there is no
noise to measure, so a flip is a regression. ``changed``: in both
runs, but its version or content differs, so its two verdicts judge different cases: it
is in no other bucket (never ``regressed``, so ``--fail-on-regression`` ignores it).
Slices are compared on pass@1. When the runs used different dataset digests the figures
are not like for like: the result carries a warning, and ``require_same_content``
refuses to compare at all.

Two runs over different case sets (a ``--select`` run against a whole one) are refused:
``new`` and ``removed`` would be all the comparison says, and ``regressed (0)`` would read
as a pass. ``common`` compares the shared cases only (each report narrowed to them, its
summary and slices recomputed) and names the cases left out on each side (``left_out``).
``sides`` (what :meth:`evalcase.results.refs.RunRef.describe` says of each run: agent and
its version, selection, repeats, dirty, complete) goes into the header, and a difference
of agent or selection, a dirty or an incomplete side, into ``warnings``.

Runs with prompts (``evalcase run --prompt a,b``) have one row per case and prompt; rows
are matched by case and prompt ID (``case_id [prompt]``). :func:`for_prompt` narrows a
report to one prompt's rows, so ``evalcase compare RUN --prompts a,b`` compares prompt
``a`` (as base) with prompt ``b`` (as new) in one run, or across two runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.grade.noise import fisher_greater, fisher_less
from evalcase.model import FatalError

DEFAULT_ALPHA = 0.05


def _counts(case: Mapping[str, Any]) -> tuple[int, int]:
    """(passing attempts, attempts) of a report row; pending and errors do not pass."""
    verdicts = case.get("verdicts")
    if isinstance(verdicts, list) and verdicts:
        return sum(1 for v in verdicts if v == "pass"), len(verdicts)
    n = int(case.get("attempts") or 1)
    return (n if case.get("status") == "pass" else int(case.get("passed") or 0)), n


@dataclass(frozen=True)
class Comparison:
    base: Mapping[str, Any]
    new: Mapping[str, Any]
    fixed: tuple[str, ...]
    regressed: tuple[str, ...]
    still_failing: tuple[str, ...]
    still_passing: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed_cases: tuple[str, ...]
    warnings: tuple[str, ...]
    slices: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    pending: tuple[str, ...] = ()
    within_noise: tuple[str, ...] = ()
    # per case whose pass rate changed with repeats: base and new passes/attempts, the
    # one-sided Fisher p-value, and the verdict it led to
    noise: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    alpha: float = 0.05
    # with ``common``: the cases only one side ran, left out of the comparison
    left_out: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": dict(self.base),
            "new": dict(self.new),
            "fixed": list(self.fixed),
            "regressed": list(self.regressed),
            "still_failing": list(self.still_failing),
            "still_passing": list(self.still_passing),
            "new_cases": list(self.added),
            "removed_cases": list(self.removed),
            "changed_cases": list(self.changed_cases),
            "warnings": list(self.warnings),
            "slices": {k: dict(v) for k, v in self.slices.items()},
            "pending": list(self.pending),
            "changed_within_noise": list(self.within_noise),
            "noise": {k: dict(v) for k, v in self.noise.items()},
            "alpha": self.alpha,
            "common": bool(self.left_out),
            "left_out": {k: list(v) for k, v in self.left_out.items()},
        }


def find_report(root: Path, ref: str, reports_dir: str = "reports") -> Path:
    """A report.json from a run id, a report directory, or a report.json path."""
    direct = Path(ref)
    if direct.is_file():
        return direct
    if (direct / "report.json").is_file():
        return direct / "report.json"
    found = sorted((root / reports_dir).glob(f"*/{ref}/report.json"))
    if not found:
        raise FatalError(
            f"no report for run '{ref}' under {root / reports_dir} "
            "(run `evalcase grade RUN_ID` first)"
        )
    if len(found) > 1:
        raise FatalError(f"run id '{ref}' is ambiguous: " + ", ".join(str(f.parent) for f in found))
    return found[0]


def read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FatalError(f"{path}: not a readable report ({exc})") from exc
    if not isinstance(data, dict) or "cases" not in data:
        raise FatalError(f"{path}: not an evalcase report.json")
    return data


def _ident(report: Mapping[str, Any]) -> dict[str, Any]:
    p = report.get("provenance", {})
    return {
        "run_id": report["run"]["run_id"],
        "commit": report["run"]["commit"],
        "dataset_id": p.get("dataset_id"),
        "dataset_version": p.get("dataset_version"),
        "dataset_digest": p.get("dataset_digest"),
        "pass@1": report["summary"].get("pass@1"),
        "pass^k": report["summary"].get("pass^k"),
    }


def _prompt_id(label: Any) -> str:
    """``"a@v2"`` -> ``"a"`` (rows match by prompt ID across prompt versions)."""
    if not label:
        return ""
    return str(label).rpartition("@")[0] or str(label)


def _key(case: Mapping[str, Any]) -> str:
    prompt = _prompt_id(case.get("prompt"))
    return f"{case['case_id']} [{prompt}]" if prompt else str(case["case_id"])


def prompts_of(report: Mapping[str, Any]) -> list[str]:
    """The prompt labels (id@version) a report's rows ran with."""
    return sorted({str(c["prompt"]) for c in report["cases"] if c.get("prompt")})


def for_prompt(report: Mapping[str, Any], prompt: str) -> dict[str, Any]:
    """The report as if only ``prompt`` (an ID, or id@version) had run: its rows, with
    their summary and slices recomputed, the rows keyed by case ID alone."""

    def matches(label: Any) -> bool:
        return bool(label) and (str(label) == prompt or _prompt_id(label) == prompt)

    rows = [c for c in report["cases"] if matches(c.get("prompt"))]
    if not rows:
        known = ", ".join(prompts_of(report)) or "none: the run used no prompt fixture"
        raise FatalError(f"run {report['run']['run_id']} has no attempt with prompt {prompt!r}; "
                         f"its prompts: {known}")  # fmt: skip
    label = str(rows[0]["prompt"])
    narrowed = _with_rows(report, rows)
    return {
        **narrowed,
        "run": {**report["run"], "run_id": f"{report['run']['run_id']} [{label}]"},
        "slices": {k: v for k, v in narrowed["slices"].items() if k != "prompt"},
        "cases": [{**c, "prompt": None} for c in rows],
    }


def narrow(report: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The report as if only the rows of ``keys`` had run: summary and slices recomputed."""
    wanted = set(keys)
    return _with_rows(report, [c for c in report["cases"] if _key(c) in wanted])


def _with_rows(report: Mapping[str, Any], rows: list[Mapping[str, Any]]) -> dict[str, Any]:
    from evalcase.grade.aggregate import CaseFigures, CaseMeta, rates, slices

    figures = [
        CaseFigures(
            CaseMeta.from_dict(c),
            tuple(c.get("verdicts", ())),
            tuple(c.get("scores", ())),
            tuple(c.get("failure_classes", ())),
        )
        for c in rows
    ]
    return {
        **report,
        "summary": {**report["summary"], **rates(figures)},
        "slices": slices(figures),
        "cases": list(rows),
    }


def grader_verdicts(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Per case (keyed like report rows) and grader type: ``pass`` when every grade of that
    type passed, ``fail`` when one failed, else the other verdict seen (pending, error)."""
    seen: dict[str, dict[str, set[str]]] = {}
    for row in rows:
        key = _key(row)
        seen.setdefault(key, {}).setdefault(str(row.get("grader")), set()).add(
            str(row.get("verdict"))
        )
    out: dict[str, dict[str, str]] = {}
    for key, graders in seen.items():
        out[key] = {}
        for grader, verdicts in graders.items():
            if "fail" in verdicts:
                out[key][grader] = "fail"
            elif verdicts == {"pass"}:
                out[key][grader] = "pass"
            else:
                out[key][grader] = sorted(verdicts - {"pass"})[0]
    return out


def compare(
    base: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    require_same_content: bool = False,
    base_grades: Mapping[str, Mapping[str, str]] | None = None,
    new_grades: Mapping[str, Mapping[str, str]] | None = None,
    alpha: float = DEFAULT_ALPHA,
    common: bool = False,
    sides: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
) -> Comparison:
    """Compare two reports; with ``require_same_content`` a FatalError when their dataset
    digests differ (or one is unknown). ``base_grades`` / ``new_grades``
    (:func:`grader_verdicts` of each run's grades.jsonl) let a pending case regress.
    Different case sets are a FatalError unless ``common`` (the shared cases only);
    ``sides``: each run as its run.json describes it (header and warnings)."""
    old_cases = {_key(c): c for c in base["cases"]}
    new_cases = {_key(c): c for c in new["cases"]}
    only_base = tuple(sorted(set(old_cases) - set(new_cases)))
    only_new = tuple(sorted(set(new_cases) - set(old_cases)))
    left_out: dict[str, tuple[str, ...]] = {}
    if only_base or only_new:
        _check_case_sets(base, new, only_base, only_new, len(old_cases) - len(only_base), common)
        shared = set(old_cases) & set(new_cases)
        base, new = narrow(base, shared), narrow(new, shared)
        old_cases = {k: v for k, v in old_cases.items() if k in shared}
        new_cases = {k: v for k, v in new_cases.items() if k in shared}
        left_out = {"base": only_base, "new": only_new}
    shared_cases = sorted(set(old_cases) & set(new_cases))
    a, b = _ident(base), _ident(new)
    if sides is not None:
        a.update({k: v for k, v in sides[0].items() if k not in a or a[k] is None})
        b.update({k: v for k, v in sides[1].items() if k not in b or b[k] is None})
    if require_same_content and (
        a["dataset_digest"] is None or a["dataset_digest"] != b["dataset_digest"]
    ):
        raise FatalError(
            f"runs {a['run_id']} and {b['run_id']} graded different dataset content "
            f"({a['dataset_id']} {a['dataset_version']} {str(a['dataset_digest'])[:12]} vs "
            f"{b['dataset_id']} {b['dataset_version']} {str(b['dataset_digest'])[:12]}); "
            "compare runs of the same release, or leave out --require-same-content"
        )

    def ok(case: Mapping[str, Any]) -> bool:
        return bool(case["status"] == "pass")

    changed = tuple(
        c
        for c in shared_cases
        if old_cases[c]["case_version"] != new_cases[c]["case_version"]
        or (
            old_cases[c].get("digest")
            and new_cases[c].get("digest")
            and old_cases[c]["digest"] != new_cases[c]["digest"]
        )
    )
    pending = tuple(
        c
        for c in shared_cases
        if c not in changed and "pending" in (old_cases[c]["status"], new_cases[c]["status"])
    )

    def worse(c: str) -> bool:
        """Pending in BASE, failing in NEW on a grader every BASE attempt passed."""
        if old_cases[c]["status"] != "pending" or new_cases[c]["status"] != "fail":
            return False
        before, after = (base_grades or {}).get(c, {}), (new_grades or {}).get(c, {})
        return any(v == "fail" and before.get(g) == "pass" for g, v in after.items())

    got_worse = {c for c in pending if worse(c)}
    pending = tuple(c for c in pending if c not in got_worse)
    both = [c for c in shared_cases if c not in changed and c not in pending]
    # With repeats on either side a case's change is tested against its repeats' noise
    # (evalcase.grade.noise): beyond it, regressed or fixed; within it, its own bucket.
    noise: dict[str, dict[str, Any]] = {}
    for c in both:
        if c in got_worse:
            continue
        b_pass, b_n = _counts(old_cases[c])
        n_pass, n_n = _counts(new_cases[c])
        if max(b_n, n_n) <= 1 or b_pass * n_n == n_pass * b_n:
            continue
        worse_now = n_pass * b_n < b_pass * n_n
        p = (fisher_less if worse_now else fisher_greater)(b_pass, b_n, n_pass, n_n)
        noise[c] = {
            "base": f"{b_pass}/{b_n}",
            "new": f"{n_pass}/{n_n}",
            "p": round(p, 6),
            "verdict": ("regressed" if worse_now else "fixed") if p <= alpha else "within_noise",
        }

    def tested(c: str, verdict: str) -> bool:
        return c in noise and noise[c]["verdict"] == verdict

    fixed = tuple(
        c
        for c in both
        if tested(c, "fixed") or (c not in noise and not ok(old_cases[c]) and ok(new_cases[c]))
    )
    regressed = tuple(
        c
        for c in both
        if c in got_worse
        or tested(c, "regressed")
        or (c not in noise and ok(old_cases[c]) and not ok(new_cases[c]))
    )
    within_noise = tuple(c for c in both if tested(c, "within_noise"))
    still_failing = tuple(
        c
        for c in both
        if c not in got_worse and c not in noise and not ok(old_cases[c]) and not ok(new_cases[c])
    )
    still_passing = tuple(
        c for c in both if c not in noise and ok(old_cases[c]) and ok(new_cases[c])
    )
    warnings = []
    if a["dataset_id"] != b["dataset_id"]:
        warnings.append(f"different datasets: {a['dataset_id']} vs {b['dataset_id']}")
    if a["dataset_digest"] != b["dataset_digest"]:
        warnings.append(
            f"DIFFERENT DATASET CONTENT: {a['dataset_version']} ({str(a['dataset_digest'])[:12]}) "
            f"vs {b['dataset_version']} ({str(b['dataset_digest'])[:12]}): figures are not like "
            f"for like; {len(changed)} case(s) changed"
            + (f": {', '.join(changed)}" if changed else "")
        )
    elif changed:
        warnings.append(f"case versions differ: {', '.join(changed)}")
    if sides is not None:
        warnings.extend(side_warnings(a, b))
    slices: dict[str, dict[str, dict[str, Any]]] = {}
    for key in sorted(set(base.get("slices", {})) | set(new.get("slices", {}))):
        old_s, new_s = base.get("slices", {}).get(key, {}), new.get("slices", {}).get(key, {})
        rows = {}
        for value in sorted(set(old_s) | set(new_s)):
            x = (old_s.get(value) or {}).get("pass@1")
            y = (new_s.get(value) or {}).get("pass@1")
            delta = round(y - x, 6) if x is not None and y is not None else None
            rows[value] = {"base": x, "new": y, "change": delta}
        slices[key] = rows
    return Comparison(
        a,
        b,
        fixed,
        regressed,
        still_failing,
        still_passing,
        (),
        (),
        changed,
        tuple(warnings),
        slices,
        pending,
        within_noise,
        noise,
        alpha,
        left_out,
    )


def _check_case_sets(
    base: Mapping[str, Any],
    new: Mapping[str, Any],
    only_base: tuple[str, ...],
    only_new: tuple[str, ...],
    shared: int,
    common: bool,
) -> None:
    """Refuse runs over different case sets, unless ``common`` and they share a case."""

    def some(ids: tuple[str, ...]) -> str:
        return (": " + ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")) if ids else ""

    a, b = base["run"]["run_id"], new["run"]["run_id"]
    sets = (
        f"{len(only_base)} case(s) only in BASE{some(only_base)}; "
        f"{len(only_new)} only in NEW{some(only_new)}"
    )
    if not common:
        raise FatalError(
            f"runs {a} and {b} ran different cases ({sets}; {shared} in both): what one run "
            "did not run cannot regress. Compare runs of the same selection, or pass --common "
            "to compare the shared cases only"
        )
    if not shared:
        raise FatalError(f"runs {a} and {b} have no case in common ({sets})")


def side_warnings(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What the two sides' descriptions say a reader must know: another agent, another
    selection, a dirty or an incomplete run."""
    out = []

    def agent(side: Mapping[str, Any]) -> str:
        return f"{side.get('agent') or '?'} (version {side.get('agent_version') or '?'})"

    if agent(a) != agent(b):
        out.append(f"different agents: BASE {agent(a)}, NEW {agent(b)}")
    if a.get("selection") != b.get("selection"):
        out.append(
            f"different selections: BASE {a.get('selection') or '?'}, "
            f"NEW {b.get('selection') or '?'}"
        )
    for name, side in (("BASE", a), ("NEW", b)):
        if side.get("dirty"):
            out.append(f"{name} {side['run_id']} is dirty: it read uncommitted dataset changes")
        if side.get("complete") is False:
            why = side.get("incomplete") or "attempts missing"
            out.append(f"{name} {side['run_id']} is incomplete ({why})")
    return out


def describe_side(side: Mapping[str, Any]) -> str:
    """One header line of a side: dataset and version, agent and its version, selection,
    repeats, dirty."""
    repeat = side.get("repeat")
    parts = [
        f"{side.get('dataset_id') or '?'} {side.get('dataset_version') or '?'}",
        f"agent {side.get('agent') or '?'} (version {side.get('agent_version') or '?'})",
        str(side.get("selection") or "selection ?"),
        f"repeat {repeat}" if repeat else "repeat ?",
        "dirty" if side.get("dirty") else ("clean" if "dirty" in side else "dirty ?"),
    ]
    if side.get("complete") is False:
        parts.append("incomplete")
    return ", ".join(parts)
