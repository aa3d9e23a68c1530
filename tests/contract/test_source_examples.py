"""The case contract's first tests: the source documents' own examples.

``tests/data/source_examples`` holds every example case and record of the source
documents (the eval case schema chapter's generic, LLM, RAG, tool, side-effect and agent
cases; the offline-evaluation page's eval_suite case and JSON Lines record), transcribed
as a team would (its README says what a transcription adds). Copied into a real git
repository with the example refund agent, it lints clean, and each dataset runs and is
graded: ``rule_checks`` by the ``trace_rule`` grader they imply, ``judge`` by the
``llm_rubric`` it implies (pending without a judge, never pass), no attempt in error."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke

SOURCE = Path(__file__).resolve().parents[1] / "data" / "source_examples"
DATASETS = ("refund_regression_set", "refund_rag_core_set", "refund_agent_v3")
# Every example of the documents, by the case it became.
EXAMPLES = {
    "refund_eligibility_001": "the generic case",
    "llm_instruction_001": "the LLM case",
    "rag_refund_policy_014": "the RAG case",
    "tool_refund_check_008": "the tool case",
    "tool_refund_submit_009": "the side-effect policy",
    "agent_refund_account_change_002": "the agent case",
    "refund_policy_edge_001": "the offline eval_suite's case",
    "data_delete_case_001": "the offline JSON Lines record case_001",
}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    repo = tmp_path_factory.mktemp("source_examples") / "repo"
    shutil.copytree(SOURCE, repo)
    shutil.copytree(REPO_ROOT / "examples" / "refund_agent", repo / "examples" / "refund_agent")
    (repo / ".gitignore").write_text("/outputs/\n/reports/\n.evalcase/\n", "utf-8")
    init_repo(repo)
    commit_all(repo, "the source documents' examples")
    lint = invoke("lint", "--no-cache", cwd=repo)
    runs = {name: invoke("run", name, "--progress", "none", cwd=repo) for name in DATASETS}
    grades: dict[str, list[dict[str, Any]]] = {}
    for path in (repo / "reports").glob("*/*/grades.jsonl"):
        for line in _lines(path):
            grades.setdefault(line["case_id"], []).append(line)
    yield {"repo": repo, "lint": lint, "runs": runs, "grades": grades}


@pytest.mark.slow
def test_the_transcribed_examples_lint_clean(examples: dict[str, Any]) -> None:
    lint = examples["lint"]
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "All checks passed" in lint.stdout
    cases = {p.stem for p in examples["repo"].glob("datasets/*/cases/*.yaml")}
    assert set(EXAMPLES) <= cases


@pytest.mark.slow
def test_every_example_runs_and_is_graded(examples: dict[str, Any]) -> None:
    for name, proc in examples["runs"].items():
        assert "Traceback" not in proc.stderr, proc.stderr
        assert " 0 errors ->" in proc.stdout, (name, proc.stdout, proc.stderr)
    grades = examples["grades"]
    assert set(EXAMPLES) <= set(grades), set(EXAMPLES) - set(grades)
    for case_id, lines in grades.items():
        # no rule check is left unrun and no grader lacks what it needs
        assert all(line["grader"] != "(rule_checks)" for line in lines), case_id
        assert all(line.get("kind") != "grader_error" for line in lines), (case_id, lines)


@pytest.mark.slow
def test_rule_checks_and_judge_run_as_the_documents_mean(examples: dict[str, Any]) -> None:
    # The generic case writes rule_checks and judge, no graders list: they imply a hard
    # trace_rule (which decides the privacy check) and a hard llm_rubric (pending here,
    # with no judge configured: the case is pending, never passed).
    by_grader = {line["grader"]: line for line in examples["grades"]["refund_eligibility_001"]}
    assert set(by_grader) == {"trace_rule", "llm_rubric"}
    assert by_grader["trace_rule"]["hard"] and by_grader["llm_rubric"]["hard"]
    assert by_grader["trace_rule"]["verdict"] in ("pass", "fail")
    assert by_grader["llm_rubric"]["verdict"] == "pending"
    # The JSON Lines record's forbidden tool is checked by the implied trace_rule.
    record = {line["grader"]: line for line in examples["grades"]["data_delete_case_001"]}
    assert set(record) == {"trace_rule", "llm_rubric"}
    assert record["trace_rule"]["verdict"] in ("pass", "fail")
    out = examples["runs"]["refund_regression_set"].stdout
    assert "pending" in out and "refund_eligibility_001" in out


@pytest.mark.slow
def test_a_policy_change_case_reads_both_corpus_versions(examples: dict[str, Any]) -> None:
    found = []
    for path in examples["repo"].glob("outputs/*/*/attempts.jsonl"):
        for record in _lines(path):
            if record["case_id"] != "rag_refund_policy_change_016":
                continue
            for event in record.get("trace") or ():
                result = event.get("result")
                if event.get("tool") == "policy_search" and isinstance(result, dict):
                    found += [p.get("effective_date") for p in result.get("passages", ())]
    # the 2026-01 policy's passage and the 2026-07 one, both in force on 2026-07-08
    assert "2026-01-01" in found and "2026-07-01" in found, found
