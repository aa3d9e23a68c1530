"""One agent view, delivered whole: every bundled case is run through the ``openai:``
adapter (the real openai client) against a real chat-completions server on 127.0.0.1,
and what the server received is checked against the case's AgentView: each field with a
value arrives (rendered as docs/running.md describes), and nothing of the JudgeSpec does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from evalcase.contract.task import Task
from evalcase.run import chat_view
from evalcase.run.adapters import rendering
from evalcase.run.executors import AttemptJob
from evalcase.run.protocol import tool_specs
from tests.contract.test_agent_view import TASKS, agent_source, secrets
from tests.run.openai_server import Server, completion
from tests.run.support import run_attempt

KEY_VAR = "EVALCASE_TEST_CHAT_VIEW_KEY"


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    served = Server([], default=(200, completion("ok"), {}))
    with served.running():
        yield served


def _attempt(task: Task, server: Server) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    server.requests.clear()
    job = AttemptJob(
        task.case_id,
        task.case_version,
        task.agent,
        task.env,
        "openai:walk-model",
        {"base_url": server.url, "api_key_env": KEY_VAR, "backoff_s": 0.01},
        seed=1,
        attempt=1,
        timeout_s=30,
    )
    record = run_attempt(job)
    return record, list(server.requests)


def _context_block(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    blocks = [
        m["content"]
        for m in messages
        if m["role"] == "system" and str(m["content"]).startswith(chat_view.CONTEXT_HEADER)
    ]
    assert len(blocks) <= 1, blocks
    if not blocks:
        return None
    loaded = yaml.safe_load(blocks[0][len(chat_view.CONTEXT_HEADER) :])
    assert isinstance(loaded, dict)
    return loaded


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=list))


@pytest.mark.parametrize("task", TASKS, ids=[t.case_id for t in TASKS])
def test_every_agent_view_field_reaches_the_model_and_no_judge_field_does(
    task: Task, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VAR, "sk-walk")
    record, requests = _attempt(task, server)
    assert record["status"] == "completed", record["error"]
    view = task.agent
    # One request per user turn (the server never calls a tool); the last holds them all.
    assert len(requests) == len(view.user_turns)
    last = requests[-1]
    messages = last["messages"]
    sent = [(m["role"], m["content"]) for m in messages]
    # attempt_key: as the request's end-user identifier, in every request
    assert all(r["user"] == f"{view.attempt_key}-1" for r in requests)
    # system: the first message
    if view.system:
        assert sent[0] == ("system", view.system)
    # history, then the user turns, in order, with nothing of them lost
    conversation = [(t.role, t.content) for t in view.history]
    for text in view.user_turns:
        conversation += [("user", text), ("assistant", "ok")]
    rest = [s for s in sent if not (s[0] == "system" and s[1] == view.system)]
    rest = [s for s in rest if not str(s[1]).startswith(chat_view.CONTEXT_HEADER)]
    assert rest == conversation[:-1]  # the last reply is the attempt's output
    assert record["output"] == "ok"
    # context, now, locale: the context block, as YAML
    block = _context_block(messages)
    params = dict(view.params)
    wanted = {k: params[k] for k in chat_view.CONTEXT_PARAMS if params.get(k) is not None}
    if view.context:
        wanted["context"] = _plain(view.context)
    assert (block or {}) == _plain(wanted)
    # tools: every card as a function, in every request
    for request in requests:
        assert request.get("tools", []) == tool_specs(view)
    # params: each either a generation setting on the request or in the context block
    for name, value in params.items():
        assert name in chat_view.GENERATION or name in chat_view.CONTEXT_PARAMS, (
            f"params.{name} has no rendering: add it to chat_view"
        )
        if name in chat_view.GENERATION:
            assert all(r[name] == value for r in requests), name
    # Nothing of the answer key or of what only the environment knows went over the wire.
    wire = json.dumps(requests, ensure_ascii=False)
    source = agent_source(task)
    assert sorted(s for s in secrets(task) if s in wire and s not in source) == []
    assert task.case_id not in wire


def test_the_walk_covers_contexts_nows_generation_settings_and_histories() -> None:
    # So the walk above is not vacuous: the bundled cases exercise every rendered part.
    assert any(t.agent.context for t in TASKS)
    assert any(t.agent.params.get("now") for t in TASKS)
    assert any(set(t.agent.params) & set(chat_view.GENERATION) for t in TASKS)
    assert any(t.agent.history for t in TASKS)
    assert any(t.agent.tools for t in TASKS)


def test_the_context_block_reaches_the_model_for_the_cases_of_the_issue(server: Server) -> None:
    by_id = {t.case_id: t for t in TASKS}
    task = by_id["agent_refund_account_change_002"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_VAR, "sk-walk")
        _, requests = _attempt(task, server)
    assert "ORDER_2001" in json.dumps(requests[0]["messages"], ensure_ascii=False)
    task = by_id["llm_instruction_elderly_summary_002"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(KEY_VAR, "sk-walk")
        _, requests = _attempt(task, server)
    block = _context_block(requests[0]["messages"])
    assert block is not None and block["context"]["policy_excerpt"]


def test_the_rendering_version_is_the_adapters() -> None:
    assert rendering("openai:m") == chat_view.VERSION
    assert rendering("cmd:python agent.py") is None
    assert rendering("nonsense:x") is None
