"""CEL: compile, analyze (syntax errors and free names with positions), evaluate."""

from __future__ import annotations

import pickle
import subprocess
import sys
from typing import Any

import pytest

from evalcase.contract import cel
from tests.helpers import REPO_ROOT

STATE = {
    "orders": {"ORDER_2001": {"owner_user_id": "USER_A", "status": "processing", "items": [1]}},
    "session": {"current_user_id": "USER_A", "user_authenticated": False},
}


def test_the_seed_precondition_evaluates_over_a_state_document() -> None:
    expr = "orders.ORDER_2001.owner_user_id == session.current_user_id"
    assert cel.evaluate(expr, STATE) is True
    assert cel.evaluate("session.user_authenticated", STATE) is False


@pytest.mark.parametrize(
    ("expr", "line", "column"),
    [
        ("orders.ORDER_2001.status ==", 1, 28),
        ("a ==\n  && b", 2, 3),
        ("orders.ORDER_2001.status = 'x'", 1, 26),
    ],
)
def test_a_syntax_error_has_line_and_column(expr: str, line: int, column: int) -> None:
    analysis = cel.analyze(expr)
    assert analysis.error is not None
    assert (analysis.error.line, analysis.error.column) == (line, column)
    compiled = cel.compile(expr)
    assert isinstance(compiled, cel.CelError)
    assert (compiled.line, compiled.column) == (line, column)


def test_analyze_names_every_free_variable_where_it_starts() -> None:
    expr = "orders[args.order_id].status == 'x' &&\n  calls.exists(c, c.tool == 'refund_submit')"
    analysis = cel.analyze(expr)
    assert analysis.error is None
    found = {(r.name, r.line, r.column) for r in analysis.references}
    assert found == {("orders", 1, 1), ("args.order_id", 1, 8), ("calls", 2, 3)}
    assert analysis.roots == {"orders", "args", "calls"}
    # a comprehension variable is bound, not free
    assert "c" not in analysis.roots


def test_a_static_selection_is_reported_as_a_state_path() -> None:
    (ref,) = cel.analyze("size(orders.ORDER_6001.refunds) <= 1").references
    assert ref.path == ("orders", "ORDER_6001", "refunds")
    assert ref.column == 6


def test_evaluation_errors_are_values() -> None:
    missing = cel.evaluate("orders.ORDER_9.status == 'x'", STATE)
    assert isinstance(missing, cel.EvalError)
    assert "ORDER_9" in missing.message
    unknown = cel.evaluate("nobody == 1", STATE)
    assert isinstance(unknown, cel.EvalError)
    assert isinstance(cel.evaluate("1 +", STATE), cel.CelError)
    assert isinstance(cel.analyze("").error, cel.CelError)


def test_one_scope_serves_many_evaluations() -> None:
    scope = cel.scope(STATE)
    assert isinstance(scope, cel.Scope)
    assert cel.evaluate("size(orders.ORDER_2001.items)", scope) == 1
    assert cel.evaluate("'ORDER_2001' in orders", scope) is True
    assert cel.evaluate("orders.ORDER_2001", scope) == STATE["orders"]["ORDER_2001"]


def test_compiled_programs_are_cached_by_text_and_pickle_as_text() -> None:
    a = cel.compile("session.user_authenticated == true")
    assert a is cel.compile("session.user_authenticated == true")
    assert isinstance(a, cel.Program)
    again = pickle.loads(pickle.dumps(a))
    assert again.source == a.source
    assert cel.evaluate(again, STATE) is False


def test_importing_evalcase_does_not_import_the_cel_library() -> None:
    code = (
        "import sys\n"
        "import evalcase.contract.cel, evalcase.contract.build, evalcase.index.dataset\n"
        "import evalcase.lint.linter\n"
        "print('cel_expr_python' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout.strip()
    assert out == "False"


# --- the extensions cel-cpp ships, and list.sum() -----------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("cel.bind(x, args.n * 2, x + x)", 12),
        ("[[1, 2], [3]].flatten()", [1, 2, 3]),
        ("lists.range(3)", [0, 1, 2]),
        ("[3, 1, 2].sort()", [1, 2, 3]),
        ("math.greatest(1, 2.5)", 2.5),
        ("math.least([3, 1])", 1),
        ('"a,b".split(",").join("-")', "a-b"),
        ('"HAT%d".format([7])', "HAT7"),
        ("sets.contains([1, 2], [2])", True),
        ("[1, 2].all(i, v, v > i)", True),
        ('{"a": 1}.?b.orValue(0)', 0),
        ("args.prices.sum()", 350.5),
        ("[1, 2, 3].sum()", 6),
        ("[].sum()", 0),
        ("args.n < 3.5 && args.n == 3.0", True),
    ],
)
def test_extensions_evaluate(source: str, expected: Any) -> None:
    value = cel.evaluate(source, {"args": {"n": 3, "prices": [100, 250.5]}})
    assert value == expected
    assert type(value) is type(expected)
    # lint compiles with the same environment: no syntax error, only the free names
    analysis = cel.analyze(source)
    assert analysis.error is None
    assert analysis.roots <= {"args"}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("9223372036854775807 + 1", "overflow"),
        ("[9223372036854775807, 1].sum()", "overflow"),
        ('[1, "2"].sum()', "str"),
        ("[true].sum()", "bool"),
        ("1 + 2.5", "No matching overloads"),
        ("1 / 0", "divide by zero"),
        ("[1].first()", "orValue"),
    ],
)
def test_unsafe_arithmetic_is_an_error_value(source: str, message: str) -> None:
    value = cel.evaluate(source, {})
    assert isinstance(value, cel.EvalError)
    assert message in value.message


def test_lint_reports_a_function_no_extension_ships() -> None:
    analysis = cel.analyze("[1].flattenn()")
    assert analysis.error is None
    assert [r.name for r in analysis.references] == ["flattenn"]


@pytest.mark.slow
def test_maps_come_back_in_the_same_order_in_every_process() -> None:
    # cel-cpp's map order is its hash order, which changes per process; a tool result's
    # JSON and a run's records must not. Keys come back sorted, in every process.
    program = (
        "{'kilo': 1, 'alpha': {'zulu': 1, 'echo': 2, 'bravo': 3}, 'mike': [{'yankee': 1, "
        "'delta': 2}], 'charlie': 4, 'x': m}"
    )
    code = (
        "import json; from evalcase.contract import cel; "
        f"print(json.dumps(cel.evaluate({program!r}, "
        "{'m': {'quebec': 1, 'foxtrot': 2, 'golf': 3, 'hotel': 4}})))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO_ROOT,
        ).stdout
        for _ in range(3)
    }
    assert len(outputs) == 1, outputs
    (text,) = outputs
    assert text.strip() == (
        '{"alpha": {"bravo": 3, "echo": 2, "zulu": 1}, "charlie": 4, "kilo": 1, '
        '"mike": [{"delta": 2, "yankee": 1}], "x": {"foxtrot": 2, "golf": 3, "hotel": 4, '
        '"quebec": 1}}'
    )
