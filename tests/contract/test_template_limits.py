"""Prompt templates render under limits (issue 32): the probes end as a clear error,
never a hung or bloated run; ordinary templates render as before."""

from __future__ import annotations

import time

import pytest

from evalcase.contract import template_limits as limits
from evalcase.contract.prompt import Prompt, PromptError, apply, exceeds, render_text
from evalcase.contract.task import AgentView

PROBES = {
    "nested range": "{% for a in range(100000) %}{% for b in range(100000) %}.{% endfor %}"
    "{% endfor %}",
    "lipsum": "{{ lipsum(50000000) }}",
    "repetition": "{{ 'a' * 3000000000 }}",
    "nested loops within range": "{% for a in range(10000) %}{% for b in range(10000) %}"
    "{% endfor %}{% endfor %}",
    "doubling": "{% set ns = namespace(s='a') %}{% for i in range(40) %}"
    "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
    "padding filter": "{{ 'a' | center(3000000000) }}",
    "padding method": "{{ 'a'.ljust(3000000000) }}",
    "percent width": "{{ '%3000000000d' % 1 }}",
    "format width": "{{ '{:>3000000000}'.format(1) }}",
    "format width argument": "{{ '{:{}}'.format('a', 3000000000) }}",
    "replace growth": "{{ ('a' * 100000) | replace('a', 'aaaaaaaaaaaaaaaaaaaa') }}",
    "power": "{{ 10 ** 100000000 }}",
    "long output": "{% for i in range(10000) %}{{ '.' * 1000 }}{% endfor %}",
}


@pytest.mark.parametrize("name", PROBES)
def test_each_probe_is_a_limit_error(name: str) -> None:
    with pytest.raises(PromptError) as caught:
        render_text(PROBES[name], {}, "prompt p@v1 system", time.monotonic() + 5)
    assert caught.value.limit
    assert "EC342" in str(caught.value)
    assert exceeds(PROBES[name], {}) is not None  # lint's trial render (EC342) too


def test_a_render_stops_at_its_deadline() -> None:
    with pytest.raises(PromptError, match="deadline"):
        render_text("{% for i in range(5000) %}{{ i }}{% endfor %}", {}, "p", time.monotonic())


def test_a_recursion_or_a_python_error_is_the_templates_error() -> None:
    with pytest.raises(PromptError, match="recurses"):
        render_text("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", {}, "p")
    with pytest.raises(PromptError, match="ZeroDivisionError"):
        render_text("{{ 1 / 0 }}", {}, "p")


def test_ordinary_templates_render_as_before() -> None:
    prompt = Prompt(
        "router",
        "v1",
        "Labels: {{ data.labels | join(', ') }}.{% for i in range(2) %} {{ '-' * 3 }}{% endfor %}"
        " {{ '%5d' | format(42) }} {{ '{}'.format(5000000) }} {{ 'x' ~ turns | length }}",
        user="({{ context.channel }}) {{ turn }}",
        data={"labels": ["refund", "other"]},
    )
    view = apply(prompt, AgentView("k", None, (), ("hi",), {"channel": "app"}, (), {}))
    assert view.system == "Labels: refund, other. --- ---    42 5000000 x1"
    assert view.user_turns == ("(app) hi",)
    assert exceeds(prompt.system, prompt.data) is None


def test_lint_finds_the_line_where_the_render_stopped() -> None:
    found = exceeds("Hello\n{{ data.x }}\n\n{{ lipsum(50000000) }}", {"x": 1})
    assert found is not None and found[1] == 4
    assert limits.MAX_RANGE < 100000  # the range(100000) is refused outright
