"""Prompts end to end, as a user runs them: a real repository whose intent cases share two
prompt fixtures, `evalcase run --prompt a,b` (and the manifest's prompts), the reports
sliced by prompt, `evalcase compare RUN --prompts a,b`, and the prompt's generation
settings on every request of a real openai: agent against a server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.run import chat_view
from tests.helpers import commit_all, invoke
from tests.run.openai_server import Server, completion
from tests.run.prompt_repo import CASES, write_prompt_repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prompts") / "repo"
    root.mkdir()
    return write_prompt_repo(root)


def _run_dir(stdout: str, root: Path) -> Path:
    line = next(ln for ln in stdout.splitlines() if ln.startswith("run "))
    return root / line.split(" -> ")[-1]


def _records(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "attempts.jsonl").read_text("utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _report(repo: Path, run_dir: Path) -> dict[str, Any]:
    found = list((repo / "reports").glob(f"*/{run_dir.name}/report.json"))
    assert len(found) == 1, found
    report: dict[str, Any] = json.loads(found[0].read_text("utf-8"))
    return report


def test_the_repository_lints_clean(repo: Path) -> None:
    proc = invoke("lint", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_run_prompt_a_b_runs_every_case_once_per_prompt_and_compare_names_the_difference(
    repo: Path,
) -> None:
    proc = invoke("run", "intents", "--prompt", "intent_full,intent_narrow", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    run_dir = _run_dir(proc.stdout, repo)
    records = _records(run_dir)
    assert len(records) == 2 * len(CASES)
    by_prompt: dict[str, dict[str, dict[str, Any]]] = {}
    for r in records:
        by_prompt.setdefault(r["prompt"], {})[r["case_id"]] = r
    assert set(by_prompt) == {"intent_full@v1", "intent_narrow@v1"}
    full, narrow = by_prompt["intent_full@v1"], by_prompt["intent_narrow@v1"]
    # numbered across prompts, sampled alike
    assert {r["attempt"] for r in full.values()} == {1}
    assert {r["attempt"] for r in narrow.values()} == {2}
    assert all(full[c]["seed"] == narrow[c]["seed"] for c in full)
    # what the agent received is the rendered prompt
    first = full["intent_route_002"]["messages"]
    assert first[0] == {
        "role": "system",
        "content": "Classify the message. Labels: refund, shipping, other. "
        "Answer with the label only.",
    }
    assert first[1]["content"] == "Message (app): Where is my parcel? The delivery is late"
    assert narrow["intent_route_002"]["output"] == "other"  # it was never offered "shipping"
    meta = json.loads((run_dir / "run.json").read_text("utf-8"))
    assert meta["prompts"] == {"intent_full": "v1", "intent_narrow": "v1"}
    assert meta["planned"] == 8 and meta["options"]["prompts"] == ["intent_full", "intent_narrow"]
    # the summary, report.json and report.md slice by prompt
    assert "prompt intent_full@v1" in proc.stdout and "prompt intent_narrow@v1" in proc.stdout
    report = _report(repo, run_dir)
    slices = report["slices"]["prompt"]
    assert slices["intent_full@v1"]["pass@1"] == 1.0
    assert slices["intent_narrow@v1"]["pass@1"] == 0.75
    rows = {(c["case_id"], c["prompt"]): c["status"] for c in report["cases"]}
    assert rows[("intent_route_002", "intent_narrow@v1")] == "fail"
    assert rows[("intent_route_002", "intent_full@v1")] == "pass"
    assert [(c["case_id"], c["prompt"]) for c in report["failing_cases"]] == [
        ("intent_route_002", "intent_narrow@v1")
    ]
    md = run_dir.parents[2] / "reports" / run_dir.parent.name / run_dir.name / "report.md"
    assert "### By prompt" in md.read_text("utf-8")
    # "prompt b regresses these cases", in one command
    proc = invoke(
        "compare", run_dir.name, "--prompts", "intent_full,intent_narrow", "--format", "json",
        cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["regressed"] == ["intent_route_002"]
    assert result["fixed"] == [] and result["new_cases"] == [] and result["removed_cases"] == []
    assert sorted(result["still_passing"]) == [
        "intent_route_001",
        "intent_route_003",
        "intent_route_004",
    ]
    assert result["base"]["pass@1"] == 1.0 and result["new"]["pass@1"] == 0.75
    proc = invoke("compare", run_dir.name, "--prompts", "intent_narrow,intent_full", cwd=repo)
    assert "fixed (1): intent_route_002" in proc.stdout
    proc = invoke("compare", run_dir.name, "--prompts", "intent_full,nope", cwd=repo)
    assert proc.returncode == 2 and "no attempt with prompt 'nope'" in proc.stderr


@pytest.mark.slow
def test_the_manifest_prompts_are_the_default_and_one_prompt_runs_alone(repo: Path) -> None:
    proc = invoke("run", "intents", "--no-grade", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    records = _records(_run_dir(proc.stdout, repo))
    assert sorted({r["prompt"] for r in records}) == ["intent_full@v1", "intent_narrow@v1"]
    proc = invoke("run", "intents", "--no-grade", "--prompt", "intent_narrow", cwd=repo)
    records = _records(_run_dir(proc.stdout, repo))
    assert len(records) == len(CASES) and {r["prompt"] for r in records} == {"intent_narrow@v1"}
    assert {r["attempt"] for r in records} == {1}


@pytest.mark.slow
def test_an_unknown_prompt_or_a_missing_variable_stops_the_run_before_it_starts(
    repo: Path, tmp_path: Path
) -> None:
    outputs = tmp_path / "outputs"
    proc = invoke("run", "intents", "--prompt", "intent_fulll", "--outputs", str(outputs), cwd=repo)
    assert proc.returncode == 2
    assert "unknown prompt(s) intent_fulll" in proc.stderr and "intent_full" in proc.stderr
    assert not outputs.exists()
    case = repo / "datasets" / "intents" / "cases" / "intent_route_004.yaml"
    original = case.read_text("utf-8")
    case.write_text(original.replace("  channel: app\n", "  shop: web\n"), "utf-8")
    try:
        proc = invoke("run", "intents", "--allow-dirty", "--outputs", str(outputs), cwd=repo)
        assert proc.returncode == 2
        assert "intent_route_004: prompt intent_full@v1 user" in proc.stderr
        assert "no attribute 'channel'" in proc.stderr
        assert not outputs.exists()
        lint = invoke("lint", cwd=repo)
        assert "intent_route_004.yaml:1:10: EC341" in lint.stdout
    finally:
        case.write_text(original, "utf-8")


@pytest.mark.slow
def test_the_prompt_and_its_generation_settings_reach_every_openai_request(
    repo: Path, tmp_path: Path
) -> None:
    server = Server([], default=(200, completion("refund"), {}))
    config = repo / "evalcase.toml"
    original = config.read_text("utf-8")
    with server.running():
        config.write_text(
            original + f'model = {{ spec = "openai:tiny", base_url = "{server.url}", '
            'api_key_env = "EVALCASE_TEST_PROMPT_KEY" }\n',
            "utf-8",
        )
        commit_all(repo, "a local model")
        proc = invoke(
            "run", "intents", "--no-grade", "--agent", "model", "--prompt", "intent_full",
            cwd=repo, env={"EVALCASE_TEST_PROMPT_KEY": "sk-local"},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len(server.requests) == len(CASES)
    for request in server.requests:
        # the prompt's generation_config overrides the case's (temperature 0.5, 16 tokens)
        assert request["temperature"] == 0 and request["max_tokens"] == 8
        assert request["messages"][0]["content"].startswith("Classify the message. Labels:")
        block = request["messages"][1]["content"]
        assert block.startswith(chat_view.CONTEXT_HEADER) and "channel: app" in block
        assert request["messages"][2]["content"].startswith("Message (app): ")
    meta = json.loads((_run_dir(proc.stdout, repo) / "run.json").read_text("utf-8"))
    assert meta["agent"]["rendering"] == chat_view.VERSION


@pytest.mark.slow
def test_a_prompt_by_case_run_counts_cases_and_gates_each_prompt(tmp_path: Path) -> None:
    root = write_prompt_repo(tmp_path / "repo")
    manifest = root / "datasets" / "intents" / "dataset.yaml"
    manifest.write_text(
        manifest.read_text("utf-8") + "gates:\n  - {name: all_pass, min_pass_rate: 1.0}\n",
        "utf-8",
    )
    commit_all(root, "a gate")
    proc = invoke("run", "intents", "--prompt", "intent_full,intent_narrow", cwd=root)
    run_dir = _run_dir(proc.stdout, root)
    summary = _report(root, run_dir)["summary"]
    # four cases, each run under two prompts: four cases, not eight
    assert (summary["cases"], summary["prompts"], summary["case_runs"]) == (4, 2, 8)
    assert "4 cases × 2 prompts: 8 case runs" in proc.stdout
    gates = {g["name"]: g for g in _report(root, run_dir)["gates"]}
    # the gate per prompt: the narrow prompt's miss is not averaged with the full one's
    assert gates["all_pass [intent_full@v1]"]["verdict"] == "pass"
    assert gates["all_pass [intent_full@v1]"]["cases"] == 4
    assert gates["all_pass [intent_narrow@v1]"]["verdict"] == "fail"
    assert gates["all_pass [intent_narrow@v1]"]["failing"] == ["intent_route_002"]
    assert proc.returncode == 1  # a measured gate failed


@pytest.mark.slow
def test_gates_name_a_prompt_only_over_cases_that_ran_under_it(tmp_path: Path) -> None:
    """42.10: two of four cases name `prompt: intent_full` and the manifest names no
    prompts. A gate over every case is no prompt's gate; a gate whose cases all ran under
    the prompt is labelled with it; the summary counts the prompted cases."""
    root = write_prompt_repo(tmp_path / "repo")
    manifest = root / "datasets" / "intents" / "dataset.yaml"
    text = manifest.read_text("utf-8").replace("prompts: [intent_full, intent_narrow]\n", "")
    manifest.write_text(
        text + "gates:\n  - {name: all_pass, min_pass_rate: 0.5}\n"
        "  - {name: risky_pass, risk_levels: [P1], min_pass_rate: 0.5}\n",
        "utf-8",
    )
    for n in (1, 2):
        case = root / "datasets" / "intents" / "cases" / f"intent_route_{n:03d}.yaml"
        body = case.read_text("utf-8").replace("risk_level: P2\n", "risk_level: P1\n")
        case.write_text(body + "prompt: intent_full\n", "utf-8")
    commit_all(root, "two cases name a prompt")
    assert invoke("lint", cwd=root).returncode == 0
    proc = invoke("run", "intents", cwd=root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = _report(root, _run_dir(proc.stdout, root))
    prompts = {r["case_id"]: r.get("prompt") for r in report["attempts"]}
    assert prompts == {"intent_route_001": "intent_full@v1", "intent_route_002": "intent_full@v1",
                       "intent_route_003": None, "intent_route_004": None}  # fmt: skip
    assert sorted(g["name"] for g in report["gates"]) == [
        "all_pass",
        "risky_pass [intent_full@v1]",
    ]
    assert {g["name"]: g["cases"] for g in report["gates"]}["all_pass"] == 4
    assert (report["summary"]["cases"], report["summary"]["prompted_cases"]) == (4, 2)
    assert "4 cases, 2 under 1 prompt" in proc.stdout
    assert "× 1 prompts" not in proc.stdout
