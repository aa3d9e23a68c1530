"""The reactive user, one attempt at a time: a simulated user played by a real local
OpenAI-compatible server (scripted answers), real py: and cmd: agents, and the reactive
script without any model."""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from evalcase.contract.task import UserSimulatorSpec
from evalcase.run.executors import AttemptJob
from evalcase.run.user_prompt import GUIDELINES, OPENER, PROMPT_VERSION
from tests.helpers import REPO_ROOT
from tests.run.openai_server import Server, completion
from tests.run.support import job, run_attempt, tool, view

INSTRUCTIONS = {
    "persona": "A retired teacher, polite and brief.",
    "reason_for_call": "You want to cancel reservation EHGLP3.",
    "known_info": "Your user id is mia_li_3668.",
    "unknown_info": "You do not remember the flight number.",
    "task_instructions": "Ask for a full refund; accept a voucher if refused.",
}
SECRETS = ("retired teacher", "mia_li_3668", "accept a voucher", "flight number")
LOOKUP = tool(
    "order_lookup",
    responses=({"when": "args.order_id in orders", "result_from": "orders[args.order_id]"},),
    default={"error": {"code": "not_found", "message": "no such order"}},
)
STATE = {"orders": {"ORDER_1": {"status": "signed"}}}


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def simulated_job(
    url: str, *turns: str, max_turns: int = 30, agent: str = "py:tests.run.agents:echo", **kw: Any
) -> AttemptJob:
    base = job(
        view(*turns),
        agent=agent,
        user_simulator=UserSimulatorSpec(INSTRUCTIONS, max_turns),
        **kw,
    )
    settings = {"base_url": url, "model": "sim-model-1", "max_retries": 0, "timeout_s": 5}
    return AttemptJob(**{**base.__dict__, "user_simulator": settings})


def users(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in record["trace"] if e["type"] == "user"]


def test_a_simulated_conversation_ends_when_the_user_says_stop() -> None:
    script = [
        (200, completion("Hi, I need to cancel a reservation."), {}),
        (200, completion("It is EHGLP3, thanks."), {}),
        (200, completion("Great, that is all. ###STOP###"), {}),
    ]
    with Server(script).running() as server:
        record = run_attempt(simulated_job(server.url))
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "user_stop", "user_turns": 3}
    sent = users(record)
    assert [e["content"] for e in sent] == [
        "Hi, I need to cancel a reservation.",
        "It is EHGLP3, thanks.",
        "Great, that is all. ###STOP###",
    ]
    assert all(e["simulated"] and e["model"] == "sim-model-1" for e in sent)
    assert {e["prompt_version"] for e in sent} == {PROMPT_VERSION}
    assert sent[-1]["signal"] == "user_stop" and "signal" not in sent[0]
    # the stop turn is never sent to the agent: the agent answered two turns
    assert [m["content"] for m in record["messages"] if m["role"] == "user"] == sent_texts(2, sent)
    assert record["output"] == "echo: It is EHGLP3, thanks."
    assert record["user_usage"]["prompt_tokens"] == 33
    # what the simulator was sent: guidelines + scenario, then the flipped conversation
    first, third = server.requests[0], server.requests[2]
    assert first["model"] == "sim-model-1" and first["temperature"] == 0.0
    system = first["messages"][0]
    assert system["role"] == "system" and GUIDELINES in system["content"]
    assert "<scenario>" in system["content"] and "mia_li_3668" in system["content"]
    assert first["messages"][1:] == [{"role": "user", "content": OPENER}]
    assert [m["role"] for m in third["messages"][1:]] == ["assistant", "user"] * 2
    assert third["messages"][-1] == {"role": "user", "content": "echo: It is EHGLP3, thanks."}


def sent_texts(n: int, sent: list[dict[str, Any]]) -> list[str]:
    return [e["content"] for e in sent[:n]]


def test_the_turn_limit_ends_a_conversation_the_user_never_stops() -> None:
    default = (200, completion("And another thing..."), {})
    with Server([], default=default).running() as server:
        record = run_attempt(simulated_job(server.url, max_turns=3))
    assert record["status"] == "completed", record["error"]
    assert record["conversation"] == {"ended_by": "max_turns", "user_turns": 3}
    assert len(server.requests) == 3 and len(users(record)) == 3
    assert sum(m["role"] == "assistant" for m in record["messages"]) == 3


def test_an_unreachable_simulator_is_the_attempts_recorded_error(closed_port: int) -> None:
    record = run_attempt(simulated_job(f"http://127.0.0.1:{closed_port}/v1"))
    assert record["status"] == "error"
    assert record["error"]["kind"] == "user_simulator"
    assert "cannot reach the endpoint" in record["error"]["message"]
    assert record["conversation"]["ended_by"] == "error"
    assert not [m for m in record["messages"] if m["role"] == "assistant"]


def test_a_simulator_answer_cut_at_max_tokens_is_an_error_never_a_turn() -> None:
    script = [(200, completion("Hi, I ne", finish_reason="length"), {})]
    with Server(script).running() as server:
        record = run_attempt(simulated_job(server.url))
    assert record["status"] == "error" and record["error"]["kind"] == "user_simulator"
    assert "max_tokens" in record["error"]["message"]


def test_scripted_opening_turns_come_first_then_the_simulator_speaks() -> None:
    script = [(200, completion("Sure, it is EHGLP3. ###STOP###"), {})]
    with Server(script).running() as server:
        record = run_attempt(simulated_job(server.url, "Hi, I want to cancel a reservation."))
    assert record["status"] == "completed", record["error"]
    sent = users(record)
    assert [e.get("simulated", False) for e in sent] == [False, True]
    assert sent[0]["content"] == "Hi, I want to cancel a reservation."
    # the simulator saw its own scripted opening as its turn, the agent's reply as the user's
    assert server.requests[0]["messages"][1:] == [
        {"role": "assistant", "content": "Hi, I want to cancel a reservation."},
        {"role": "user", "content": "echo: Hi, I want to cancel a reservation."},
    ]


@pytest.mark.parametrize(
    "agent",
    [
        "py:tests.run.recording_agent:agent",
        f"cmd:{sys.executable} {REPO_ROOT / 'tests/run/cmd_agents/echo.py'}",
    ],
)
def test_the_instructions_never_reach_the_agent(
    agent: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_to = tmp_path / "requests.jsonl"
    monkeypatch.setenv("EVALCASE_RECORD_TO", str(record_to))
    script = [
        (200, completion("Hello, I am calling about a reservation."), {}),
        (200, completion("Bye. ###STOP###"), {}),
    ]
    with Server(script).running() as server:
        record = run_attempt(simulated_job(server.url, agent=agent))
    assert record["status"] == "completed", record["error"]
    sent = json.dumps(record["messages"], ensure_ascii=False)
    if record_to.exists():  # the py: agent wrote down every request it received
        sent += record_to.read_text("utf-8")
    for secret in SECRETS:
        assert secret in json.dumps(server.requests[0])  # the simulator had it
        assert secret not in sent, secret
    assert "user_simulator" not in sent and "###" not in sent


def test_an_openai_agent_never_receives_the_instructions() -> None:
    agent_server = Server([], default=(200, completion("How can I help?"), {}))
    script = [
        (200, completion("Hello, about a reservation."), {}),
        (200, completion("Bye. ###STOP###"), {}),
    ]
    with Server(script).running() as sim, agent_server.running() as agent:
        base = simulated_job(sim.url, agent="openai:agent-model")
        record = run_attempt(
            AttemptJob(**{**base.__dict__, "adapter_options": {"base_url": agent.url}})
        )
    assert record["status"] == "completed", record["error"]
    assert len(agent.requests) == 1
    text = json.dumps(agent.requests, ensure_ascii=False)
    assert "Hello, about a reservation." in text
    for secret in SECRETS:
        assert secret not in text


# --- the reactive script, no model ----------------------------------------------------------


def reactive(
    *turns: tuple[str, str | None], agent: str = "py:tests.run.agents:echo", **kw: Any
) -> AttemptJob:
    return job(
        view(*(t for t, _ in turns), **kw.pop("view", {})),
        agent=agent,
        user_conditions=tuple(w for _, w in turns),
        **kw,
    )


def test_the_next_scripted_turn_is_the_first_unused_one_whose_when_holds() -> None:
    record = run_attempt(
        reactive(
            ("Hi, cancel my reservation please.", None),
            ("Never mind.", 'message.contains("refund")'),
            ("It is EHGLP3.", 'message.contains("reservation")'),
            ("Thanks.", 'turn == 2 && message.contains("EHGLP3")'),
        )
    )
    assert record["status"] == "completed", record["error"]
    assert [(e["content"], e["turn"]) for e in users(record)] == [
        ("Hi, cancel my reservation please.", 0),
        ("It is EHGLP3.", 2),
        ("Thanks.", 3),
    ]
    assert record["conversation"] == {"ended_by": "script_end", "user_turns": 3}
    assert "Never mind." not in json.dumps(record["messages"])


def test_a_when_reads_the_calls_so_far() -> None:
    record = run_attempt(
        reactive(
            ("Look ORDER_1 up.", None),
            ("You did not look it up.", "calls.size() == 0"),
            ("Good, what is its status?", 'calls.exists(c, c.tool == "order_lookup" && c.ok)'),
            agent="py:tests.run.agents:scripted",
            view={
                "tools": (LOOKUP,),
                "context": {"script": [[["order_lookup", {"order_id": "ORDER_1"}]], []]},
            },
            tools=(LOOKUP,),
            state=STATE,
        )
    )
    assert record["status"] == "completed", record["error"]
    assert [e["content"] for e in users(record)] == [
        "Look ORDER_1 up.",
        "Good, what is its status?",
    ]


def test_no_when_holds_at_the_start_no_turn_is_sent() -> None:
    record = run_attempt(reactive(("Only after a reply.", 'message != ""')))
    assert record["status"] == "completed"
    assert record["conversation"] == {"ended_by": "script_end", "user_turns": 0}
    assert record["messages"] == [] and record["output"] is None


def test_a_when_that_cannot_be_evaluated_is_the_attempts_error() -> None:
    record = run_attempt(reactive(("Hi.", None), ("Then.", "calls[3].tool == 'x'")))
    assert record["status"] == "error" and record["error"]["kind"] == "user_script"
    assert "user turn 2" in record["error"]["message"]


def test_a_script_without_when_records_as_before() -> None:
    record = run_attempt(job(view("one", "two"), agent="py:tests.run.agents:echo"))
    assert record["status"] == "completed"
    assert "conversation" not in record and "user_usage" not in record
    assert [e["turn"] for e in users(record)] == [0, 1]


def test_the_docs_show_the_prompt_whole_at_its_version() -> None:
    from evalcase.run.user_prompt import system_prompt

    docs = (REPO_ROOT / "docs" / "contract.md").read_text("utf-8")
    example = {
        "persona": "A retired teacher, polite and brief.",
        "reason_for_call": "You want to cancel reservation EHGLP3 and get a refund.",
        "known_info": "Your user id is mia_li_3668.",
        "unknown_info": "You do not remember the flight number.",
        "task_instructions": "Ask for a full refund; accept a travel voucher if it is refused.",
    }
    assert system_prompt(example) in docs, "regenerate the prompt shown in docs/contract.md"
    assert f"version `{PROMPT_VERSION}`" in docs and OPENER in docs


SUBMIT = tool(
    "refund_submit",
    side_effect=True,
    responses=({"when": "args.order_id in orders", "result": {"status": "refund_submitted"}},),
)


def test_confirms_holds_for_a_reactive_turn_whenever_it_is_sent() -> None:
    # Script index 2 confirms; it is the second turn sent (index 1 never holds).
    record = run_attempt(
        reactive(
            ("Refund ORDER_1.", None),
            ("Why?", 'message.contains("never")'),
            (
                "Yes, I confirm.",
                "turn == 1",
            ),
            agent="py:tests.run.agents:scripted",
            view={
                "tools": (SUBMIT,),
                "context": {"script": [[], [["refund_submit", {"order_id": "ORDER_1"}]]]},
            },
            tools=(SUBMIT,),
            state=STATE,
            confirmations=(2,),
        )
    )
    assert record["status"] == "completed", record["error"]
    assert [e["turn"] for e in users(record)] == [0, 2]
    (submit,) = record["calls"]
    assert submit["user_confirmed"] is True


def test_the_simulators_key_variable_is_one_no_agent_is_given() -> None:
    from evalcase.run import isolation

    names = isolation.key_variables({"user_simulator": {"api_key_env": "EVALCASE_SIM_KEY"}}, {})
    assert "EVALCASE_SIM_KEY" in names
    # One reading with the scrubber's: whichever table names a key variable, and the
    # variables read by default, no agent is given it.
    names = isolation.key_variables(
        {"agents": {"a": {"spec": "openai:m", "api_key_env": "TEAM_A_KEY"}}},
        {"judge": {"api_key_env": "TEAM_JUDGE_KEY"}},
    )
    assert {"TEAM_A_KEY", "TEAM_JUDGE_KEY", "EVALCASE_JUDGE_API_KEY", "OPENAI_API_KEY"} <= set(
        names
    )


def test_the_judge_sees_the_simulated_conversation_and_not_the_instructions() -> None:
    from evalcase.grade.judge_prompt import Dimension, build

    script = [
        (200, completion("Hi, I need to cancel a reservation."), {}),
        (200, completion("Thanks, bye. ###STOP###"), {}),
    ]
    with Server(script).running() as server:
        record = run_attempt(simulated_job(server.url))
    dims = [Dimension("helpfulness", "", 1.0, 5.0, 1.0)]
    prompt = build({}, record, {}, dims, record["output"] or "")
    text = json.dumps(prompt.messages, ensure_ascii=False)
    assert "user: Hi, I need to cancel a reservation." in text
    assert "Thanks, bye." in text
    for secret in SECRETS:
        assert secret not in text
