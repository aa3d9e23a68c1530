"""The one reader of chat-completions responses, and the differences between its three
readers (the openai: adapter, the judge, the simulated user) as parameters."""

from __future__ import annotations

from typing import Any

import pytest

from evalcase import chat_completions
from evalcase.chat_completions import Completion, ToolCall, Unreadable, read


def body(message: Any = None, finish: Any = "stop", usage: Any = None, **extra: Any) -> Any:
    choice = {"index": 0, "finish_reason": finish}
    if message is not None:
        choice["message"] = message
    return {"choices": [choice], **({"usage": usage} if usage is not None else {}), **extra}


def test_text_finish_reason_usage_and_model_are_read() -> None:
    got = read(
        body({"role": "assistant", "content": "hello"}, "length",
             {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}, model="m-1")
    )  # fmt: skip
    assert got == Completion(True, "hello", (), "length",
                             {"prompt_tokens": 3, "completion_tokens": 5}, "m-1")  # fmt: skip
    assert got.cut


def test_tool_calls_are_read_only_for_the_agent() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"a":1}'}}
    response = body({"role": "assistant", "content": None, "tool_calls": [call]})
    agent = read(response, with_tools=True)
    assert isinstance(agent, Completion)
    assert agent.tool_calls == (ToolCall("c1", "lookup", '{"a":1}'),) and agent.content is None
    assert read(response).tool_calls == ()  # the judge and the simulator read text only


@pytest.mark.parametrize(
    ("response", "why"),
    [
        ({"choices": []}, "the endpoint's reply has no choices[0].message"),
        ("not an object", "the endpoint's reply has no choices[0].message"),
        (body({"role": "assistant", "tool_calls": {"id": "x"}}), "tool_calls is not a list"),
        (body({"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}),
         "tool_calls[0] lacks an id or a function name"),
        (body({"role": "assistant", "tool_calls": [{"id": "1", "function": {}}]}),
         "tool_calls[0] lacks an id or a function name"),
    ],
)  # fmt: skip
def test_what_cannot_be_an_agent_turn_is_unreadable(response: Any, why: str) -> None:
    got = read(response, with_tools=True)
    assert isinstance(got, Unreadable) and why in got.message
    # Without tools the same body is read, with nothing in it: the caller says what it lacks.
    text = read(response)
    assert text.content is None


def test_a_usage_count_that_is_not_an_integer_is_zero_or_left_out() -> None:
    response = body({"role": "assistant", "content": "x"},
                    usage={"prompt_tokens": "many", "completion_tokens": True})  # fmt: skip
    assert read(response, usage_default=0).usage == {"prompt_tokens": 0, "completion_tokens": 0}
    assert read(response).usage == {}
    assert read(body({"role": "assistant", "content": "x"}), usage_default=0).usage == {}


def test_the_three_parties_use_this_reader() -> None:
    from pathlib import Path

    package = Path(chat_completions.__file__).parent
    for module in ("run/adapters/openai.py", "grade/judge.py", "run/user_simulator.py"):
        text = (package / module).read_text("utf-8")
        assert "chat_completions.read(" in text, module
        assert '.get("choices")' not in text, module
