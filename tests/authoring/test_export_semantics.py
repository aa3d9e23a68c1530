"""Each export means what the case means, checked by running the peer tools themselves
on every bundled dataset with model-free answerers:

- Inspect AI: a solver that answers with a case's reference (its reference, required
  points and expected behaviours) scores C with ``evalcase_scorer``; one that answers a
  forbidden phrase, or only the first of several required points, scores I. The grader
  model is a local Inspect model API that reads the grader prompt's sections ("all of
  these", "none of these") and nothing else.
- promptfoo: ``promptfoo eval`` with its echo provider gives, on a case written with
  every kind of check, the verdict evalcase's own deterministic graders give.
- OpenAI evals: ``Includes`` and ``Match`` with a local completion function agree with
  ``must_include`` on one required point given as alternatives.

test_export_agreement.py grades every bundled dataset's exports in all three tools.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evalcase.authoring.exports import export
from evalcase.authoring.exports.view import ExportCase, from_task
from evalcase.config import load_config
from evalcase.index.dataset import load_dataset
from evalcase.yamlwrite import round_trip_load
from tests.authoring.export_agreement import MODEL_GRADED, Probe, evals_verdicts, promptfoo_eval
from tests.authoring.test_exports import DATASETS, evals_site, promptfoo_dir
from tests.helpers import REPO_ROOT

__all__ = ["evals_site", "promptfoo_dir"]  # fixtures, imported for their names

KINDS = ("reference", "forbidden", "partial")


@cache
def cases(dataset: str) -> dict[str, ExportCase]:
    return {t.case_id: from_task(t) for t in load_dataset(REPO_ROOT, dataset).tasks}


@cache
def exported(dataset: str, fmt: str) -> str:
    return export(load_config(REPO_ROOT), dataset, fmt)[1].text


def answer(case: ExportCase, kind: str) -> str | None:
    """The answer of one kind, or None when the case has nothing of that kind."""
    if kind == "reference":
        parts = list(case.references) + list(case.exact)
        parts += [g[0] for g in case.must_include] + list(case.expected_behavior)
        return "\n".join(parts)
    if kind == "forbidden":
        bad = list(case.must_not_include) + list(case.negative_behavior)
        return bad[0] if bad else None
    required = [g[0] for g in case.must_include] or list(case.expected_behavior)
    return required[0] if len(required) > 1 else None


def evalcase_text_verdict(case: ExportCase, text: str) -> bool:
    """evalcase's deterministic graders on ``text`` (the portable key is the judge's)."""
    # Here, not at the top: the scorer's module imports inspect_ai (1.4 s), which every
    # worker would otherwise pay while collecting, whichever tests it then runs.
    from evalcase.authoring.exports.inspect_scorer import text_verdicts

    return all(passed for _, passed, _ in text_verdicts(case.portable_key, text))


def judged(case: ExportCase, text: str) -> bool:
    """What the local judge decides: every expected behaviour present, no negative one."""
    if not case.portable_key.get("model_graded"):
        return True
    return all(b in text for b in case.expected_behavior) and not any(
        b in text for b in case.negative_behavior
    )


# --- Inspect AI -------------------------------------------------------------------------


def _section(prompt: str, title: str) -> list[str]:
    match = re.search(rf"\[{re.escape(title)}\]\n(.*?)(?:\n\n\[|\n\nReply|\Z)", prompt, re.S)
    if not match:
        return []
    return [x[2:] for x in match.group(1).splitlines() if x.startswith("- ") and x != "- (none)"]


def _register_judge() -> None:
    from inspect_ai.model import ModelAPI, ModelOutput, modelapi

    @modelapi(name="evalcase_test_judge")
    class SectionJudge(ModelAPI):  # a grader model that reads only the prompt's sections
        async def generate(self, input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
            prompt = input[-1].text
            answer_text = re.search(r"\[ANSWER\]\n(.*?)\n\n\[", prompt, re.S)
            said = answer_text.group(1) if answer_text else ""
            ok = all(b in said for b in _section(prompt, "THE ANSWER MUST DO ALL OF THESE"))
            ok = ok and not any(
                b in said for b in _section(prompt, "THE ANSWER MUST DO NONE OF THESE")
            )
            return ModelOutput.from_content(
                self.model_name, f"checked\nGRADE: {'C' if ok else 'I'}"
            )


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
def test_inspect_scores_reference_correct_and_forbidden_or_partial_incorrect(
    dataset: str, tmp_path: Path
) -> None:
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import json_dataset
    from inspect_ai.model import ModelOutput
    from inspect_ai.solver import Generate, TaskState, solver

    from evalcase.authoring.exports.inspect_scorer import evalcase_scorer

    _register_judge()
    path = tmp_path / "cases.jsonl"
    path.write_text(exported(dataset, "inspect"), "utf-8")
    by_id = cases(dataset)
    seen: dict[str, int] = {}
    for kind in KINDS:
        answers = {cid: answer(c, kind) for cid, c in by_id.items()}
        answers = {k: v for k, v in answers.items() if v is not None}

        @solver
        def answers_with(table: dict[str, str] = answers) -> Any:  # model-free
            async def solve(state: TaskState, generate: Generate) -> TaskState:
                state.output = ModelOutput.from_content("none", table[str(state.sample_id)])
                return state

            return solve

        samples = [s for s in json_dataset(str(path)) if str(s.id) in answers]
        task = Task(
            dataset=samples,
            solver=answers_with(),
            scorer=evalcase_scorer("evalcase_test_judge/sections"),
        )
        [log] = inspect_eval(
            task, model="mockllm/model", log_dir=str(tmp_path / kind), display="none"
        )
        assert log.status == "success", log.error
        assert log.samples and len(log.samples) == len(answers)
        for s in log.samples:
            case = by_id[str(s.id)]
            text = answers[str(s.id)]
            got = s.scores["evalcase_scorer"].value
            want = evalcase_text_verdict(case, text) and judged(case, text)
            assert got == ("C" if want else "I"), (kind, s.id, s.scores["evalcase_scorer"])
            if kind != "reference":
                assert got == "I", (kind, s.id)  # forbidden or partial never passes
            seen[f"{kind}:{got}"] = seen.get(f"{kind}:{got}", 0) + 1
    assert seen.get("reference:C"), seen
    assert seen.get("forbidden:I") and seen.get("partial:I"), seen


# --- every kind of deterministic check, on a case written for it ------------------------


def _checks_repo(tmp_path: Path) -> Path:
    """The base repository with one case per kind of check: an exact answer, required
    points in grader ``values`` (one given as alternatives), forbidden phrases and
    patterns; and a JSON Schema."""
    import shutil

    from tests.helpers import BASE_REPO

    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    cases_dir = repo / "datasets/sample_set/cases"
    text = (cases_dir / "refund_eligibility_001.yaml").read_text("utf-8")
    (cases_dir / "refund_eligibility_001.yaml").write_text(
        text.replace(
            "evaluator_config:\n",
            "reference: 可以退\nconstraints: {must_not_include: [保证]}\n"
            "evaluator_config:\n  graders:\n"
            "    - {type: exact_match}\n"
            "    - {type: must_include, values: [可以, [退, 换]]}\n"
            "    - {type: regex, must_match: ['^可以'], must_not_match: ['[0-9]{3}']}\n",
        ),
        "utf-8",
    )
    text = (cases_dir / "refund_tool_submit_001.yaml").read_text("utf-8")
    schema = (
        "{type: json_schema, schema: {type: object, required: [order_id], properties: "
        "{order_id: {type: string}}}}"
    )
    (cases_dir / "refund_tool_submit_001.yaml").write_text(
        text.replace("evaluator_config:\n", f"evaluator_config:\n  graders:\n    - {schema}\n"),
        "utf-8",
    )
    return repo


ANSWERS = {
    "refund_eligibility_001": ["可以退", "  可以退\n", "可以退。", "可以换", "保证可以退",
                               "退可以", "可以退 123"],
    "refund_tool_submit_001": ['{"order_id": "ORDER_1"}', '{"id": 1}', "不是 JSON",
                               '{"order_id": 7}'],
}  # fmt: skip


def _checks_cases(repo: Path) -> tuple[dict[str, ExportCase], str, str]:
    config = load_config(repo)
    by_id = {t.case_id: from_task(t) for t in load_dataset(repo, "sample_set", config=config).tasks}
    promptfoo = export(config, "sample_set", "promptfoo")[1].text
    openai = export(config, "sample_set", "openai-evals")[1].text
    return by_id, promptfoo, openai


@pytest.mark.slow
def test_promptfoo_agrees_with_evalcase_on_every_kind_of_check(
    promptfoo_dir: Path, tmp_path: Path
) -> None:
    by_id, text, _ = _checks_cases(_checks_repo(tmp_path))
    # constraints.must_not_include is read by no configured grader: evalcase never checks
    # it, so no export does.
    assert set(by_id["refund_eligibility_001"].text_graders) == {
        "exact_match", "must_include", "regex"}  # fmt: skip
    assert by_id["refund_tool_submit_001"].text_graders == ("json_schema",)
    tests, expected = [], []
    for test in round_trip_load(text)["tests"]:
        case = by_id[test["description"]]
        asserts = [a for a in test["assert"] if a["type"] not in MODEL_GRADED]
        assert not any(a.get("value") == "保证" for a in asserts)
        for reply in ANSWERS[case.case_id]:
            alone = {k: v for k, v in test.items() if k != "prompts"}  # under the one below
            tests.append({**alone, "assert": asserts,
                          "vars": {**test["vars"], "evalcase_answer": reply}})  # fmt: skip
            expected.append(evalcase_text_verdict(case, reply))
    config = {"prompts": ["{{evalcase_answer}}"], "providers": ["echo"], "tests": tests}
    got = [bool(r["success"]) for r in promptfoo_eval(promptfoo_dir, config, tmp_path)]
    assert got == expected
    assert any(got) and not all(got)


@pytest.mark.slow
def test_openai_evals_includes_agrees_with_must_include_on_one_required_point(
    evals_site: Path, tmp_path: Path
) -> None:
    import shutil

    from tests.helpers import BASE_REPO

    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    path = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    path.write_text(
        path.read_text("utf-8").replace(
            "evaluator_config:\n",
            "evaluator_config:\n  graders:\n    - {type: must_include, values: [[退货, 换货]]}\n",
        ),
        "utf-8",
    )
    config = load_config(repo)
    case = next(
        from_task(t)
        for t in load_dataset(repo, "sample_set", config=config).tasks
        if t.case_id == "refund_eligibility_001"
    )
    rendered = export(config, "sample_set", "openai-evals")[1]
    assert "must_include" in rendered.carried
    assert [json.loads(x)["ideal"] for x in rendered.text.splitlines()] == [["退货", "换货"]]
    replies = ["可以退货", "可以换货哦", "可以退", "不行"]
    probes_ = [Probe("sample_set", case.case_id, str(i), r, evalcase_text_verdict(case, r))
               for i, r in enumerate(replies)]  # fmt: skip
    got = evals_verdicts(probes_, {"sample_set": rendered}, evals_site, tmp_path)
    verdicts = [got[p.key] for p in probes_]
    assert verdicts == [p.want for p in probes_]
    assert verdicts == [True, True, False, False]
