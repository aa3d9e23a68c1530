"""The judge sees the whole attempt: the bundled example agent runs a RAG case and an agent
case through the real CLI, and a real HTTP judge on 127.0.0.1 records each request. Every
tool call (name, arguments), every tool result or error, the retrieved passages with IDs
and text, the gold evidence text, every rubric dimension's description and the case's
judge.instructions must be in it. A server refusing response_format still grades; an
answer cut at max_tokens is an error; a forged cache entry decides nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.grade.judge_server import Script, judge_server, top_marks
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke

DATASET = "refund_regression_set"
RAG = "privacy_redteam_order_lookup_002"
AGENT = "refund_account_change_no_tool_005"


def example_repo(tmp: Path) -> Path:
    repo = tmp / "repo"
    for part in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    shutil.copy(REPO_ROOT / "evalcase.toml", repo / "evalcase.toml")
    init_repo(repo)
    commit_all(repo, "examples")
    return repo


def run(repo: Path, url: str, *cases: str, **env: str) -> Any:
    environ = {"EVALCASE_JUDGE_BASE_URL": url, "EVALCASE_JUDGE_MODEL": "judge-test", **env}
    select = [x for c in cases for x in ("--select", c)]
    return invoke("run", DATASET, *select, "--progress", "none", cwd=repo, env=environ)


def latest(repo: Path, name: str) -> Path:
    return max((repo / ("outputs" if name == "attempts.jsonl" else "reports")).glob(f"*/*/{name}"),
               key=lambda p: p.stat().st_mtime)  # fmt: skip


def attempts(repo: Path) -> dict[str, dict[str, Any]]:
    lines = latest(repo, "attempts.jsonl").read_text("utf-8").splitlines()
    return {(a := json.loads(x))["case_id"]: a for x in lines}


def grades(repo: Path) -> dict[tuple[str, str], dict[str, Any]]:
    lines = latest(repo, "grades.jsonl").read_text("utf-8").splitlines()
    return {((g := json.loads(x))["case_id"], g["grader"]): g for x in lines}


def fixture(kind: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (REPO_ROOT / "fixtures" / kind / f"{name}.yaml").read_text()
    )
    return data


def case(case_id: str) -> dict[str, Any]:
    path = REPO_ROOT / "datasets" / DATASET / "cases" / f"{case_id}.yaml"
    data: dict[str, Any] = yaml.safe_load(path.read_text("utf-8"))
    return data


def dumped(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repo = example_repo(tmp_path_factory.mktemp("judge"))
    script = Script(responder=top_marks)
    with judge_server(script) as url:
        proc = run(repo, url, RAG, AGENT)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    made = attempts(repo)
    by_case = {}
    for request in script.requests:
        user = request["messages"][1]["content"]
        for case_id, record in made.items():
            if record["output"] and record["output"] in user:
                by_case[case_id] = request
    return {"requests": by_case, "attempts": made, "grades": grades(repo), "repo": repo}


@pytest.mark.slow
@pytest.mark.parametrize("case_id", [RAG, AGENT])
def test_the_request_carries_the_whole_attempt(recorded: dict[str, Any], case_id: str) -> None:
    request = recorded["requests"][case_id]
    record = recorded["attempts"][case_id]
    text = request["messages"][0]["content"] + request["messages"][1]["content"]
    assert record["calls"], "the example agent made no tool call: nothing to check"
    for call in record["calls"]:
        assert f"tool call {call['tool']} arguments {dumped(call['args'])}" in text
        if call["error"] is not None:
            assert f"tool ERROR of {call['tool']}: {dumped(call['error'])}" in text
        else:
            assert f"tool result of {call['tool']}: {dumped(call['result'])}" in text
    data = case(case_id)
    rubric = fixture("rubric", data["rubric"])["data"]
    for dim in rubric["dimensions"]:
        assert dim["description"] in text, dim["name"]
    assert rubric["judge_instructions"] in text
    assert data["evaluator_config"]["judge"]["instructions"] in text
    for key in ("expected_behavior", "negative_behavior"):
        for item in data.get(key) or ():
            assert item in text
    # structured output, a token limit, and an example answer with numbers
    assert request["response_format"]["type"] == "json_schema"
    assert isinstance(request["max_tokens"], int)
    shape = json.loads(request["messages"][0]["content"].split("example): ", 1)[1])
    assert all(isinstance(d["score"], int | float) for d in shape["dimensions"])
    grade = recorded["grades"][(case_id, "llm_rubric")]
    assert grade["verdict"] == "pass" and grade["judge"]["prompt_version"].endswith("/p2")


def test_a_rag_request_carries_passages_and_gold_evidence(recorded: dict[str, Any]) -> None:
    request = recorded["requests"][RAG]["messages"][1]["content"]
    record = recorded["attempts"][RAG]
    assert record["retrieved"], "the example agent retrieved nothing"
    passages = {}
    for call in record["calls"]:
        for p in (call["result"] or {}).get("passages", ()):
            passages[(p["doc_id"], p["passage_id"])] = p["text"]
    for r in record["retrieved"]:
        key = (r["doc_id"], r["passage_id"])
        assert f"- {key[0]}#{key[1]}: {passages[key]}" in request.split("## Passages retrieved")[1]
    from evalcase.index.dataset import load_dataset

    # the corpus versions in force for this case (the environment's, as the agent saw them)
    task = load_dataset(recorded["repo"], DATASET).task(RAG)
    assert task is not None
    texts = {(p.doc_id, p.passage_id): p.text for c in task.env.corpora for p in c.passages}
    gold = request.split("## Gold evidence")[1].split("\n## ")[0]
    for g in case(RAG)["gold_evidence"]:
        assert f"{g['doc_id']}#{g['passage_id']}: {texts[(g['doc_id'], g['passage_id'])]}" in gold


@pytest.mark.slow
def test_a_server_refusing_response_format_still_grades(tmp_path: Path) -> None:
    repo = example_repo(tmp_path)

    def no_schema(request: dict[str, Any]) -> tuple[int, str]:
        if "response_format" in request:
            return 400, "response_format is not supported"
        return top_marks(request)

    script = Script(responder=no_schema)
    with judge_server(script) as url:
        run(repo, url, AGENT)
    assert ["response_format" in r for r in script.requests] == [True, False]
    grade = grades(repo)[(AGENT, "llm_rubric")]
    assert grade["verdict"] == "pass" and grade["details"]["structured_output"] is False


@pytest.mark.slow
def test_an_answer_cut_at_max_tokens_is_an_error(tmp_path: Path) -> None:
    repo = example_repo(tmp_path)
    script = Script(responder=top_marks, finish_reason="length")
    with judge_server(script) as url:
        proc = run(repo, url, AGENT)
    assert proc.returncode == 1  # a grader error fails the run
    grade = grades(repo)[(AGENT, "llm_rubric")]
    assert grade["verdict"] == "error" and "max_tokens" in grade["reason"]


@pytest.mark.slow
def test_a_forged_cache_entry_decides_nothing(tmp_path: Path) -> None:
    """A pull request commits judge answers (top marks for everything) where the cache
    would be, and configures the cache there: the verdict is the judge's, not the file's."""
    repo = example_repo(tmp_path)
    forged_dir = repo / ".evalcase_cache" / "judge"
    low = Script(responder=lambda r: (200, json.dumps({"dimensions": [
        {"name": n, "score": lo, "reason": "poor"} for n, lo, _ in _dims(r)]})))  # fmt: skip
    with judge_server(low) as url:
        run(repo, url, AGENT, EVALCASE_JUDGE_CACHE_DIR=str(tmp_path / "real-cache"))
        honest = grades(repo)[(AGENT, "llm_rubric")]
        assert honest["verdict"] == "fail"
        # Forge: every entry the real cache holds, rewritten with top marks, committed in
        # the work tree, and the configuration pointed at it.
        forged_dir.mkdir(parents=True)
        for entry in (tmp_path / "real-cache").glob("*.json"):
            data = json.loads(entry.read_text("utf-8"))
            content = json.loads(data["content"])
            for d in content["dimensions"]:
                d["score"], d["reason"] = 5, "excellent"
            data["content"] = json.dumps(content)
            (forged_dir / entry.name).write_text(json.dumps(data), "utf-8")
        # and a digest-free entry, for any key
        (forged_dir / ("0" * 64 + ".json")).write_text('{"dimensions": []}')
        toml = repo / "evalcase.toml"
        toml.write_text(toml.read_text() + '\n[grade.judge]\ncache_dir = ".evalcase_cache/judge"\n')
        commit_all(repo, "a helpful cache")
        before = len(low.requests)
        # The refused folder falls back to the user cache: a fresh one, so that another
        # test run on this machine (the same request, an honest answer) is not found there.
        user_cache = tmp_path / "user-cache"
        proc = run(repo, url, AGENT, EVALCASE_JUDGE_CACHE_DIR="", XDG_CACHE_HOME=str(user_cache))
        after = len(low.requests)
    assert after == before + 1, "the judge must be asked again"
    assert "inside the work tree: ignored" in proc.stdout
    assert list((user_cache / "evalcase" / "judge").glob("*.json")), "the answer is cached there"
    again = grades(repo)[(AGENT, "llm_rubric")]
    assert again["verdict"] == "fail" and again["details"]["cached"] is False


def test_a_cache_entry_for_another_request_is_not_used(tmp_path: Path) -> None:
    from evalcase.grade import judge
    from evalcase.grade.context import JudgeConfig

    dims = [judge.Dimension("polite", "", 1, 5, 1)]
    config = JudgeConfig("http://127.0.0.1:9/v1", "m", cache_dir=tmp_path, max_retries=0,
                         timeout_s=1)  # fmt: skip
    messages = [{"role": "user", "content": "grade this"}]
    body = judge.request(config, "r@v1", messages, dims)
    good = json.dumps({"dimensions": [{"name": "polite", "score": 5, "reason": "ok"}]})
    path = tmp_path / f"{judge.digest(body)}.json"
    path.write_text(json.dumps({"request_digest": "f" * 64, "content": good}))
    assert judge.ask(config, {}, "r@v1", messages, dims).problem  # not cached: unreachable
    path.write_text(json.dumps({"request_digest": judge.digest(body), "content": good}))
    assert judge.ask(config, {}, "r@v1", messages, dims).cached


def _dims(request: dict[str, Any]) -> list[tuple[str, float, float]]:
    from tests.grade.judge_server import asked_dimensions

    return asked_dimensions(request)


def test_a_rubric_dimension_of_the_wrong_kind_is_left_out() -> None:
    """Dimensions are read into ``DimensionDocument``: a scale that is not a number is
    left out like an impossible one, not a ValueError in the middle of grading."""
    from evalcase.grade import judge

    rubric = {"dimensions": [
        {"name": "polite", "description": "kind", "scale": {"min": 0, "max": 10}, "weight": 2},
        {"name": "accurate", "scale": {"min": "low", "max": "high"}},
        {"name": "brief", "weight": "heavy"},
        {"name": "upside_down", "scale": {"min": 5, "max": 1}},
        "clear",
    ]}  # fmt: skip
    assert judge.dimensions(rubric) == [
        judge.Dimension("polite", "kind", 0.0, 10.0, 2.0),
        judge.Dimension("clear", "", 1.0, 5.0, 1.0),
    ]
