"""``analyze()`` never returns part of the names an expression reads (issue 32), and an
expression past cel-cpp's parser depth is an error that says how to split it."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalcase.contract import cel
from evalcase.run import expr as run_expr


def test_names_after_the_checkers_twentieth_problem_are_found() -> None:
    analysis = cel.analyze(" + ".join(["a"] * 30) + " + b")  # the input
    assert analysis.error is None
    assert analysis.roots == {"a", "b"}
    [b] = [r for r in analysis.references if r.name == "b"]
    assert (b.line, b.column) == (1, 121)


def test_the_checkers_type_guesses_about_free_names_are_not_errors() -> None:
    # The runner compiles without the checker and compares across numeric types: the
    # checker's "int > double" would be a false error here.
    source = "size(args.items) > 1.5"
    analysis = cel.analyze(source)
    assert analysis.error is None and analysis.roots == {"args"}
    assert cel.evaluate(source, {"args": {"items": [1, 2]}}) is True
    # With no name to guess about, the checker's verdict stands.
    assert cel.analyze('1 + "a"').error is not None


def test_a_comprehension_over_a_free_name_is_not_an_error() -> None:
    analysis = cel.analyze("calls.exists(c, c.tool == 'x') && orders.O1.status == 'a'")
    assert analysis.error is None
    assert analysis.roots == {"calls", "orders"}


@pytest.mark.parametrize(
    "source",
    [" + ".join(["a"] * 40), "(" * 40 + "a" + ")" * 40, "f(" * 40 + "a" + ")" * 40],
)
def test_past_the_parsers_depth_the_error_says_how_to_split(source: str) -> None:
    for found in (cel.analyze(source).error, cel.compile(source)):
        assert isinstance(found, cel.CelError)
        assert (found.line, found.column) == (1, 1)
        assert "cel.bind" in found.message and "32" in found.message


def test_the_split_form_the_message_suggests_evaluates() -> None:
    terms = " + ".join(["a"] * 20)
    source = f"cel.bind(part, {terms}, part + {terms}) == 40"
    assert cel.analyze(source).roots == {"a"}
    assert cel.evaluate(source, {"a": 1}) is True
    assert cel.evaluate(f"[{', '.join(['a'] * 40)}].sum() == 40", {"a": 1}) is True


NAMES = [f"n{i}" for i in range(20)]
# Groups of names, each summed and compared with its sum; the groups joined by && or ||.
groups = st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=40), min_size=1)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=groups, joiner=st.sampled_from([" && ", " || "]))
def test_expressions_are_analysed_completely_or_reported(
    groups: list[list[str]], joiner: str
) -> None:
    total = 0
    kept: list[list[str]] = []
    for group in groups:  # at most 200 references
        if total + len(group) > 200:
            break
        kept.append(group)
        total += len(group)
    values = {name: i + 1 for i, name in enumerate(NAMES)}
    source = joiner.join(f"({' + '.join(g)}) == {sum(values[n] for n in g)}" for g in kept)
    analysis = cel.analyze(source)
    if analysis.error is not None:
        # What lint's EC601 reports: the depth limit, at the expression's start.
        assert analysis.error.message == cel.DEPTH_MESSAGE
        assert max(len(g) for g in kept) >= 25
        return
    assert analysis.roots == {n for g in kept for n in g}
    # The runner passes an expression only the names analyse() found: all of them.
    assert run_expr.evaluate(source, values) is True
