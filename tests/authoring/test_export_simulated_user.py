"""Exports never drop a part silently (issue 42, item 6), from the input the issue names:
the English support dataset cut to nine cases, one of them a case whose user is
simulated (``user_simulator:``, no ``input``), and the prompt fixture
``intent_labels_en`` named by two of them.

- promptfoo carries the simulated user: the case's test runs promptfoo's
  ``promptfoo:simulated-user`` provider with the case's instructions and turn limit, so a
  promptfoo run converses (checked with the real engine against a local server playing
  both promptfoo's conversation model and the evaluated model).
- Inspect and OpenAI evals cannot: their summary names the part and the case; jsonl
  carries it in the case's environment.
- A prompt fixture applies to the cases that name it: nine cases are nine promptfoo
  tests (each restricted to its own prompt), not nine per prompt.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalcase.authoring.exports import Rendered, export
from evalcase.authoring.exports.view import chat
from evalcase.config import load_config
from evalcase.contract.task import Task
from evalcase.index.dataset import load_dataset
from evalcase.run.prompts import plan
from evalcase.run.user_prompt import scenario
from evalcase.yamlwrite import round_trip_load
from tests.authoring.export_agreement import evalcase_verdict, promptfoo_eval
from tests.authoring.test_exports import promptfoo_check, promptfoo_dir
from tests.helpers import REPO_ROOT, commit_all, init_repo, serving

__all__ = ["promptfoo_dir"]  # a fixture, imported for its name

DATASET = "english_support_set"
CASE = "llm_refund_simulated_user_006"
NAMED = ("llm_intent_cancel_order_003", "llm_intent_order_status_002")  # name the prompt
PROMPT = "intent_labels_en"
SIMULATED = f"""case_id: {CASE}
case_version: v1
dataset_id: {DATASET}
dataset_version: v1
title: A customer the agent must ask for the order number
scenario: refund request
user_task: get a refund for a broken kettle
ability_tags: [conversation]
risk_level: P2
difficulty: Medium
source: written for the export tests; synthetic customer
case_types: [llm]
generation_config:
  system_prompt: >-
    You are the support agent of an online shop. Ask for the order number before
    promising anything.
user_simulator:
  instructions:
    persona: A polite customer who answers in one short sentence.
    reason_for_call: Your kettle (ORDER_5150) arrived broken and you want a refund.
    known_info: Your order is ORDER_5150.
    task_instructions: Give the order number only when asked; end the call once a refund is offered.
  max_turns: 3
reference: A refund is offered for ORDER_5150.
constraints: {{format: plain text}}
rubric: support_answer_quality_en_v1
expected_behavior:
  - Asks for the order number, then offers a refund.
evaluator_config:
  graders:
    - {{type: must_include, values: [refund]}}
metadata:
  dataset_role: iteration
  tags: [english, simulated_user]
  owner: ai_eval_team
  review_status: draft
  usage_rights_status: approved_for_evaluation
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nine cases: two dropped, three intent cases without their ``prompt:``, one added."""
    root = tmp_path_factory.mktemp("simulated") / "repo"
    root.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    cases = root / "datasets" / DATASET / "cases"
    for gone in ("rag_policy_refund_timing_003", "agent_status_shipped_order_002"):
        (cases / f"{gone}.yaml").unlink()
    for path in cases.glob("llm_intent_*.yaml"):
        if path.stem not in NAMED:
            text = path.read_text("utf-8")
            path.write_text(text.replace(f"prompt: {PROMPT}\n", ""), "utf-8")
    (cases / f"{CASE}.yaml").write_text(SIMULATED, "utf-8")
    init_repo(root)
    commit_all(root, "nine cases, one with a simulated user, two naming a prompt")
    return root


@pytest.fixture(scope="module")
def tasks(repo: Path) -> dict[str, Task]:
    return {t.case_id: t for t in load_dataset(repo, DATASET).tasks}


def exported(repo: Path, fmt: str) -> Rendered:
    return export(load_config(repo), DATASET, fmt)[1]


def test_the_input_is_nine_cases_two_naming_the_prompt(tasks: dict[str, Task]) -> None:
    assert len(tasks) == 9
    assert sorted(c for c, t in tasks.items() if t.meta.get("prompt") == PROMPT) == list(NAMED)
    assert tasks[CASE].env.user_simulator is not None and not tasks[CASE].agent.user_turns


# --- the summary: a format that cannot carry a simulated user says so ------------------


@pytest.mark.parametrize("fmt", ["inspect", "openai-evals"])
def test_a_format_without_simulated_users_names_the_case_and_the_part(repo: Path, fmt: str) -> None:
    from click.testing import CliRunner

    from evalcase.commands.authoring import export_command

    ran = CliRunner().invoke(
        export_command, [DATASET, "--format", fmt, "--strict", "--root", str(repo)]
    )
    assert ran.exit_code == 1, ran.output  # --strict: a loss
    summary = ran.stderr.splitlines()
    assert "simulated user (1 case)" in summary[0]
    assert f"  not carried: simulated user: {CASE}" in summary
    assert exported(repo, fmt).not_carried["simulated user"] == (CASE,)


def test_jsonl_carries_the_simulated_user_in_the_environment(repo: Path) -> None:
    rendered = exported(repo, "jsonl")
    assert rendered.carried["simulated user"] == (CASE,)
    assert "simulated user" not in rendered.not_carried
    line = next(
        json.loads(x) for x in rendered.text.splitlines() if json.loads(x)["case_id"] == CASE
    )
    assert line["environment"]["user_simulator"]["max_turns"] == 3


# --- promptfoo: the simulated user converses; a prompt applies to its cases -------------


def promptfoo_config(repo: Path) -> dict[str, Any]:
    config = round_trip_load(exported(repo, "promptfoo").text)
    assert isinstance(config, dict)
    return config


def test_promptfoo_carries_the_simulated_user(repo: Path, tasks: dict[str, Task]) -> None:
    rendered = exported(repo, "promptfoo")
    assert rendered.carried["simulated user"] == (CASE,)
    assert "simulated user" not in rendered.not_carried
    [test] = [t for t in promptfoo_config(repo)["tests"] if t["description"] == CASE]
    spec = tasks[CASE].env.user_simulator
    assert spec is not None
    assert test["provider"] == {
        "id": "promptfoo:simulated-user",
        "config": {"instructions": scenario(spec.instructions), "maxTurns": 3},
    }
    # The agent's system prompt is the prompt promptfoo sends the agent on every turn.
    assert test["vars"]["agent_system"] == tasks[CASE].agent.system
    assert "initialMessages" not in test["vars"]  # no scripted turn: the user opens


def test_promptfoo_applies_a_prompt_only_to_the_cases_that_name_it(repo: Path) -> None:
    config = promptfoo_config(repo)
    by_label = {p["label"]: p["raw"] for p in config["prompts"]}
    assert set(by_label) == {"case", f"{PROMPT}@v1", "case (simulated user)"}
    for test in config["tests"]:
        want = (
            f"{PROMPT}@v1"
            if test["description"] in NAMED
            else "case (simulated user)"
            if test["description"] == CASE
            else "case"
        )
        assert test["prompts"] == [want], test["description"]
        assert not [v for v in test["vars"] if v.startswith("messages__")]


# The agent, turn by turn: its last reply does not say "refund" (the user's first did).
AGENT_LINES = [
    "Could you give me the order number?",
    "Thank you, I have started the return for ORDER_5150.",
    "You are welcome. Your money is on its way back.",
]


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """A local server for promptfoo: ``/api/v1/task`` plays promptfoo's conversation model
    (the simulated user: three turns, never stopping), ``/v1/chat/completions`` the
    evaluated model. Both keep every request body."""
    user_lines = ["My kettle arrived broken, I want a refund.", "It is ORDER_5150.", "Thanks."]
    simulated: list[dict[str, Any]] = []
    agent: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/api/v1/task":
                simulated.append(body)
                # Its own earlier turns come back as "assistant" messages.
                turn = sum(m["role"] == "assistant" for m in body["history"])
                data: dict[str, Any] = {"result": user_lines[turn], "tokenUsage": {}}
            else:
                agent.append(body)
                users = [m for m in body["messages"] if m["role"] == "user"]
                text = "cancel_order"
                if "Ask for the order number" in json.dumps(body):
                    text = AGENT_LINES[len(users) - 1]
                data = {
                    "id": "r", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": text}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }  # fmt: skip
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield url, simulated, agent


@pytest.mark.slow
def test_promptfoo_runs_nine_tests_and_the_simulated_user_converses(
    repo: Path,
    tasks: dict[str, Task],
    promptfoo_dir: Path,
    server: tuple[str, list[dict[str, Any]], list[dict[str, Any]]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, simulated, agent = server
    monkeypatch.setenv("PROMPTFOO_REMOTE_GENERATION_URL", f"{url}/api/v1/task")
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    config = promptfoo_config(repo)
    # The model-graded assert would ask a grader model; the text checks are the point here.
    tests = [
        {**t, "assert": [a for a in t.get("assert", ()) if a["type"] != "llm-rubric"]}
        for t in config["tests"]
    ]
    provider = {"id": "openai:chat:agent-model", "config": {"apiBaseUrl": f"{url}/v1"}}
    results = promptfoo_eval(promptfoo_dir, {**config, "tests": tests, "providers": [provider]},
                             tmp_path)  # fmt: skip
    # Nine cases, nine tests: each case under its own prompt only (not 9 x 3 prompts).
    assert len(results) == 9
    assert sorted(r["testIdx"] for r in results) == list(range(9))
    labels = [p["label"] for p in config["prompts"]]
    views = {v.case_id: v.view for v in plan(list(tasks.values()), load_dataset(
        repo, DATASET).prompts, [])}  # fmt: skip
    for r in results:
        case_id = tests[r["testIdx"]]["description"]
        assert labels[r["promptIdx"]] == tests[r["testIdx"]]["prompts"][0]
        if case_id == CASE:
            continue
        view = views[case_id]
        want = chat(view.system, [(t.role, t.content) for t in view.history], view.user_turns)
        assert want in [b["messages"] for b in agent], case_id  # its own view, prompt rendered
    # The simulated user played the case's instructions for max_turns turns.
    spec = tasks[CASE].env.user_simulator
    assert spec is not None
    assert len(simulated) == 3
    assert {b["instructions"] for b in simulated} == {scenario(spec.instructions)}
    [result] = [r for r in results if tests[r["testIdx"]]["description"] == CASE]
    messages = result["response"]["metadata"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * 3
    conversation = [b for b in agent if "Ask for the order number" in json.dumps(b)]
    assert conversation[-1]["messages"][0] == {"role": "system",
                                               "content": tasks[CASE].agent.system}  # fmt: skip
    # The text checks read the agent's final answer, as evalcase's graders do: the user
    # said "refund", the agent's last reply did not, so the case fails in both.
    final = messages[-1]["content"]
    assert evalcase_verdict(tasks[CASE], final) is False
    assert result["success"] is False
    assert evalcase_verdict(tasks[CASE], "I have issued a refund.") is True


@pytest.mark.slow
def test_promptfoo_accepts_the_simulated_user_test_with_its_own_schemas(
    repo: Path, promptfoo_dir: Path, tmp_path: Path
) -> None:
    config = promptfoo_config(repo)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config, ensure_ascii=False), "utf-8")
    [report] = promptfoo_check(promptfoo_dir, tmp_path / "schema.json", [path])
    assert report["tests"] == 9 and report["prompts"] == 3
    assert report["test_errors"] == [] and report["config_errors"] == []
    schema = json.loads((tmp_path / "schema.json").read_text("utf-8"))
    assert not list(
        jsonschema.Draft7Validator(schema).iter_errors({**config, "providers": ["echo"]})
    )


@pytest.mark.parametrize("variant", ["scripted first turn", "template syntax"])
def test_promptfoo_simulated_user_variants(variant: str, tmp_path: Path) -> None:
    """A scripted first user turn opens the conversation and counts against max_turns;
    instructions promptfoo would render as a template are not carried, and said so."""
    root = tmp_path / "repo"
    cases = root / "datasets" / DATASET / "cases"
    cases.mkdir(parents=True)
    for folder in ("fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    shutil.copy(REPO_ROOT / "evalcase.toml", root / "evalcase.toml")
    shutil.copy(REPO_ROOT / "datasets" / DATASET / "dataset.yaml", cases.parent)
    text = SIMULATED
    if variant == "scripted first turn":
        text = text.replace("case_types: [llm]\n", 'case_types: [llm]\ninput: "Hello."\n')
    else:
        text = text.replace("you want a refund.", "you want a refund for {{ order }}.")
    (cases / f"{CASE}.yaml").write_text(text, "utf-8")
    init_repo(root)
    commit_all(root, "one case with a simulated user")
    rendered = exported(root, "promptfoo")
    [test] = round_trip_load(rendered.text)["tests"]
    if variant == "scripted first turn":
        assert test["provider"]["config"]["maxTurns"] == 2  # max_turns 3, one scripted
        assert json.loads(test["vars"]["initialMessages"]) == [
            {"role": "user", "content": "Hello."}
        ]
        assert rendered.carried["simulated user"] == (CASE,)
    else:
        assert "provider" not in test and test["prompts"] == ["case"]
        assert rendered.not_carried["simulated user"] == (CASE,)
        assert f"  not carried: simulated user: {CASE}" in rendered.details()
