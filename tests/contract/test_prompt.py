"""Prompt fixtures rendered onto an AgentView: sandboxed Jinja2 with StrictUndefined."""

from __future__ import annotations

from typing import Any

import pytest

from evalcase.contract.prompt import PromptError, apply, missing, offered, prompt_of, referenced
from evalcase.contract.task import AgentView, Turn


def _prompt(**data: Any) -> Any:
    return prompt_of("router", {"fixture_version": "v3", "kind": "prompt", "data": data})


VIEW = AgentView(
    "k1",
    "the case's own system prompt",
    (Turn("assistant", "Hello, how can I help?"),),
    ("I want a refund", "Yes, go ahead"),
    {"channel": "app", "order_id": "ORDER_1"},
    (),
    {"temperature": 0.5, "max_tokens": 100, "now": "2026-07-08"},
)


def test_a_prompt_replaces_the_system_prompt_and_renders_every_part() -> None:
    prompt = _prompt(
        system="Labels: {{ data.labels | join(', ') }}. Today {{ now }}. First: {{ input }}",
        messages=[{"role": "user", "content": "Example for {{ context.channel }}"}],
        user="[{{ context.order_id }}] {{ turn }}",
        generation_config={"temperature": 0, "stop": ["\n"]},
        variables={"labels": ["refund", "other"]},
    )
    assert prompt.label == "router@v3"
    view = apply(prompt, VIEW)
    assert view.system == "Labels: refund, other. Today 2026-07-08. First: I want a refund"
    assert view.history == (
        Turn("user", "Example for app"),
        Turn("assistant", "Hello, how can I help?"),
    )
    assert view.user_turns == ("[ORDER_1] I want a refund", "[ORDER_1] Yes, go ahead")
    # the prompt's settings override the case's key by key
    assert view.params == {"temperature": 0, "max_tokens": 100, "now": "2026-07-08", "stop": ["\n"]}
    assert view.context == VIEW.context and view.attempt_key == VIEW.attempt_key


def test_a_variable_the_case_lacks_is_an_error_never_an_empty_string() -> None:
    with pytest.raises(PromptError, match="router@v3 system: 'dict object' has no attribute"):
        apply(_prompt(system="Customer tier {{ context.tier }}"), VIEW)
    with pytest.raises(PromptError, match="'turn' is undefined"):
        apply(_prompt(system="{{ turn }}"), VIEW)
    no_turns = AgentView("k", None, (), (), {}, (), {})
    with pytest.raises(PromptError, match="'input' is undefined"):
        apply(_prompt(system="{{ input }}"), no_turns)
    # now and locale are always defined (None without a value), so `if now` works
    assert apply(_prompt(system="{% if locale %}x{% endif %}ok"), no_turns).system == "ok"


def test_templates_are_sandboxed() -> None:
    with pytest.raises(PromptError, match="unsafe"):
        apply(_prompt(system="{{ context.__class__.__mro__ }}"), VIEW)
    with pytest.raises(PromptError, match="unsafe"):
        apply(_prompt(system="{{ ''.__class__.__subclasses__() }}"), VIEW)


def test_lint_facts_name_the_variables_a_template_reads_and_a_case_offers() -> None:
    assert referenced(
        "{{ context.channel }} {{ context['tier'] }} {% for t in turns %}{{ t }}{% endfor %}"
    ) == [
        "context",
        "turns",
        "context.channel",
        "context.tier",
    ]
    assert isinstance(referenced("{{ unclosed"), str)
    offers = offered("hello", None, {"channel": "app", "fixtures": ["x"]})
    assert "input" in offers and "context.channel" in offers and "context.fixtures" not in offers
    assert missing(["context.channel", "context.tier", "turn"], offers, user=False) == [
        "context.tier",
        "turn",
    ]
    assert missing(["turn"], offers, user=True) == []
    assert "input" not in offered(None, [{"role": "assistant", "content": "hi"}], None)
