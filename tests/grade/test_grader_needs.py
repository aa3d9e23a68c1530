"""Lint proves every grader can grade: each grader's ``needs`` predicate is what both its
error and lint's EC320 say. The registry is walked, so no grader ships without a case
that lacks its inputs (the finding and the error, the same words) and one that has them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalcase.config import load_config
from evalcase.contract.build import judge_view
from evalcase.grade.graders import GRADERS, load, needs
from evalcase.lint.api import lint_repository
from tests.grade.attempts import attempt
from tests.helpers import BASE_REPO

# The part of a valid tool case that says nothing about grading (EC320's good sample).
SAMPLE = Path(__file__).parents[1] / "rules" / "samples" / "EC320" / "good"
TEMPLATE = (SAMPLE / "refund_tool_submit_324.yaml").read_text("utf-8")
HEAD = TEMPLATE[: TEMPLATE.index("evaluator_config:")]
TAIL = TEMPLATE[TEMPLATE.index("metadata:") :]
HEAD = "\n".join(
    line for line in HEAD.splitlines() if not line.startswith(("#", "expected_tool_sequence"))
)
# The template's expected tool arguments give tool_calls its input; cases below that must
# lack it drop them.
_NO_CALLS = ("expected_args:", "  order_lookup:", "  refund_submit: {order_id")

FSC = {"expected": {"orders.ORDER_123.refund_status": "refund_submitted"}}

# grader -> (case fields and grader options it lacks, fields and options that satisfy it).
# A grader that needs nothing has None as its first entry.
INPUTS: dict[str, tuple[dict[str, Any] | None, dict[str, Any]]] = {
    "state_match": ({"final_state_check": {"type": "state_match"}}, {"final_state_check": FSC}),
    "tool_calls": ({"-calls": True}, {}),
    "tool_policy": ({"-calls": True}, {"forbidden_tools": ["refund_submit"]}),
    "side_effect_policy": ({"-policy": True}, {}),
    "trace_rule": ({}, {"trace_requirement": {"rules": ["size(calls) <= 3"]}}),
    "exact_match": ({}, {"@expected": "可以退款"}),
    "must_include": ({}, {"@values": ["原路"]}),
    "must_not_include": ({}, {"@values": ["保证到账"]}),
    "regex": ({"@must_match": ["("]}, {"@must_not_match": ["保证.{0,6}到账"]}),
    "json_schema": ({"@schema": {"type": "objekt"}}, {"@schema": {"type": "object"}}),
    "constraints": ({"@tone": "礼貌"}, {"@max_chars": 80}),
    "no_privacy_leak": (None, {}),
    "no_promise": ({"@preset": "refnud"}, {"@preset": "refund"}),
    "citation": ({}, {"citation_requirement": "cite the policy"}),
    "evidence_recall_at_k": (
        {"citation_requirement": "cite"},
        {"gold_evidence": [{"doc_id": "refund_policy", "passage_id": "p1"}]},
    ),
    "llm_rubric": (
        {"rubric": {"dimensions": [{"name": "x", "scale": {"min": 3, "max": 1}}]}},
        {"rubric": "refund_policy_faithfulness_v1"},
    ),
    "human": (None, {}),
    "conversation_end": (None, {}),
}


def test_every_grader_is_walked() -> None:
    assert set(INPUTS) == set(GRADERS)
    for name in GRADERS:
        assert callable(load(name).needs), f"{name} declares no needs()"


def case_text(case_id: str, grader: str, inputs: dict[str, Any]) -> tuple[str, int]:
    """A case file whose one grader is ``grader`` with ``inputs``; and that grader's line."""
    options = {k[1:]: v for k, v in inputs.items() if k.startswith("@")}
    fields = {k: v for k, v in inputs.items() if not k.startswith(("@", "-"))}
    lines = HEAD.replace("refund_tool_submit_324", case_id).splitlines()
    if inputs.get("-calls"):
        lines = [ln for ln in lines if not ln.startswith(_NO_CALLS)]
    if inputs.get("-policy"):
        start = lines.index("side_effect_policy:")
        end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
        del lines[start:end]
    if "rubric" in fields:
        lines = [ln for ln in lines if not ln.startswith("rubric:")]
    text = "\n".join(lines) + "\n"
    if fields:
        text += yaml.safe_dump(fields, allow_unicode=True, sort_keys=False)
    grader_line = text.count("\n") + 3
    text += "evaluator_config:\n  graders:\n    - " + yaml.safe_dump(
        {"type": grader, **options}, allow_unicode=True, default_flow_style=True, width=10**6
    )
    return text + TAIL, grader_line


def _spec(text: str) -> Any:
    return judge_view(yaml.safe_load(text), {})


@pytest.fixture(scope="module")
def linted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str]]]:
    """EC320 findings (line, message) per case file, from one lint of a real repository."""
    repo = tmp_path_factory.mktemp("needs") / "repo"
    shutil.copytree(BASE_REPO, repo)
    cases = repo / "datasets" / "sample_set" / "cases"
    for i, (grader, (missing, satisfied)) in enumerate(sorted(INPUTS.items())):
        for kind, inputs in (("bad", missing), ("good", satisfied)):
            if inputs is None:
                inputs = {}
            case_id = f"refund_tool_{kind}_{900 + i}"
            (cases / f"{case_id}.yaml").write_text(case_text(case_id, grader, inputs)[0], "utf-8")
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    out: dict[str, list[tuple[int, str]]] = {}
    for f in result.findings:
        # EC326 reports what EC320 cannot see from one file: a side_effect_policy grader
        # with no policy of the case's own nor of its offered tools' fixtures.
        if f.code == "EC320" or (f.code == "EC326" and "'side_effect_policy'" in f.message):
            out.setdefault(Path(f.path).stem, []).append((f.line, f.message))
    return out


@pytest.mark.parametrize("grader", sorted(GRADERS))
def test_missing_inputs_give_the_finding_and_the_error_from_one_predicate(
    grader: str, linted: dict[str, list[tuple[int, str]]]
) -> None:
    i = sorted(INPUTS).index(grader)
    missing, satisfied = INPUTS[grader]
    grade = load(grader).grade
    if missing is None:  # needs nothing: a bare case is gradable, lint says nothing
        text, _ = case_text("x", grader, {})
        assert needs(grader, _spec(text)) is None
        assert f"refund_tool_bad_{900 + i}" not in linted
    else:
        text, line = case_text("x", grader, missing)
        reason = needs(grader, _spec(text))
        assert reason, f"{grader}: a case lacking its inputs must be reported"
        result = grade(_spec(text), attempt("保证今天到账"))
        assert (result.verdict, result.reason) == ("error", reason)
        assert linted[f"refund_tool_bad_{900 + i}"] == [(line, _lint_message(grader, reason))]
    text, _ = case_text("x", grader, satisfied)
    assert needs(grader, _spec(text)) is None
    assert f"refund_tool_good_{900 + i}" not in linted


def _lint_message(grader: str, reason: str) -> str:
    return (
        f"grader {grader!r} cannot grade this case: {reason}; every attempt would end in "
        "grader_error: configure it, or remove the grader"
    )
