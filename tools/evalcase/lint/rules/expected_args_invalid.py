"""Expected arguments that the tool's parameter schema rejects (type, required, unknown).

A wrong type, a missing required argument or an argument the tool does not have.

``expected_args`` must be a call the tool could actually receive: each entry is
validated against the ``parameters`` JSON Schema of the tool definition
(``fixtures/tool/<tool>.yaml``). An argument not listed in the schema's ``properties`` is
reported even when the schema allows additional properties, since the tool would ignore
it and the expectation could never be observed. Each finding is on the argument's line;
a missing argument is reported at the tool's entry. A tool definition whose parameters
are not a valid JSON Schema is reported by EC418 on the keyword that is wrong; one that
is valid but cannot be evaluated (a ``$ref`` to nothing) is reported here, on the tool
definition.

Passing::

    expected_args:
      refund_submit: {order_id: ORDER_123, amount: 59.0}

Failing::

    expected_args:
      refund_submit: {order_id: 123, amount: "59", coupon: C1}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalcase.config import Config
from evalcase.contract.param_schema import validator
from evalcase.index.facts import FixtureFacts
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import did_you_mean, fixture_kind, listing
from evalcase.model import Finding, Severity

CODE = "EC304"
NAME = "expected-args-invalid"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

_TYPES = {
    "string": "text",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
    "null": "empty",
}


class _Tool:
    """One tool's parameter schema, compiled once and only when a case uses it.

    The compiled Rust validator (jsonschema-rs, when installed) answers the yes/no
    question; the Python validator, built only when some arguments fail, explains why.
    """

    def __init__(self, fixture: FixtureFacts) -> None:
        self.fixture = fixture
        self.parameters: dict[str, Any] = fixture.parameters or {}
        props = self.parameters.get("properties")
        self.properties: dict[str, Any] | None = props if isinstance(props, dict) else None
        self.error: str | None = None
        self.reported = False
        self._validator: Any = None
        self.fast: Any = None
        if not fixture.parameters_valid:
            # Reported by EC418 on the keyword that is wrong; nothing to check here.
            self.error = "not a valid JSON Schema"
            self.reported = True
            return
        blob = _json(self.parameters)
        if '"$ref"' in blob or '"$dynamicRef"' in blob:
            return  # the accelerator might fetch remote references; the full validator never does
        try:
            import jsonschema_rs

            self.fast = jsonschema_rs.validator_for(self.parameters)
        except Exception:  # optional accelerator: not installed, or cannot compile
            self.fast = None

    def _full(self) -> Any:
        if self._validator is None and self.error is None:
            self._validator = validator(self.parameters)
            if self._validator is None:
                # Reported by EC418 on the keyword that is wrong; nothing to check here.
                self.error = "not a valid JSON Schema"
                self.reported = True
        return self._validator

    def errors(self, args: dict[str, Any]) -> list[Any]:
        if self.fast is not None:
            try:
                if self.fast.is_valid(args):
                    return []
            except Exception:
                pass
        validator = self._full()
        if validator is None:
            return []
        try:
            return list(validator.iter_errors(args))
        except Exception as exc:  # e.g. an unresolvable $ref
            self.error = f"cannot be evaluated: {exc}"
            return []


def _json(value: Any) -> str:
    import json

    return json.dumps(value, default=str)


def _describe(value: Any) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"the text {value!r}" if len(value) <= 40 else "text"
    if isinstance(value, int | float):
        return f"the number {value}"
    return "a mapping" if isinstance(value, dict) else "a list"


def _explain(error: Any) -> str:
    if error.validator == "type":
        wanted = error.validator_value
        wanted = [wanted] if isinstance(wanted, str) else list(wanted)
        words = " or ".join(_TYPES.get(w, str(w)) for w in wanted)
        return f"should be {words}, not {_describe(error.instance)}"
    if error.validator == "enum":
        return (
            f"{_describe(error.instance)} is not one of "
            f"{', '.join(repr(v) for v in error.validator_value)}"
        )
    return str(error.message)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    tools: dict[str, _Tool | None] = {}
    for case in index.checked_cases():
        for tool_name, args, tool_line, tool_col, arg_locs in case.expected_args:
            if not isinstance(args, dict):
                continue
            if tool_name not in tools:
                fixture = index.fixture(tool_name)
                usable = (
                    fixture is not None
                    and fixture_kind(fixture) == "tool"
                    and fixture.parameters is not None
                )
                tools[tool_name] = _Tool(fixture) if usable and fixture is not None else None
            tool = tools[tool_name]
            if tool is None or tool.error is not None:
                continue
            known = tool.properties
            unknown = [n for n in args if n not in known] if known is not None else []
            errors = tool.errors(args)
            if not unknown and not errors:
                continue
            where = {name: (line, col) for name, line, col in arg_locs}
            for name in unknown:
                line, col = where.get(str(name), (tool_line, tool_col))
                yield report(
                    case.path,
                    line,
                    col,
                    f"argument {name!r} is not a parameter of tool {tool_name!r}"
                    f"{did_you_mean(str(name), known or ())}; its parameters: "
                    f"{listing(known or ()) or 'none'} ({tool.fixture.path})",
                )
            for error in errors:
                path = list(error.absolute_path)
                if error.validator in ("additionalProperties", "unevaluatedProperties") and (
                    known is not None and not path
                ):
                    continue  # reported above, one finding per argument
                if error.validator == "required" and not path:
                    missing = error.message.split("'")[1] if "'" in error.message else "?"
                    yield report(
                        case.path,
                        tool_line,
                        tool_col,
                        f"expected_args for {tool_name!r} lack the required argument "
                        f"{missing!r}; a real call must carry it ({tool.fixture.path})",
                    )
                    continue
                if path:
                    line, col = where.get(str(path[0]), (tool_line, tool_col))
                    shown = str(path[0]) + "".join(
                        f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:]
                    )
                    message = f"argument {shown!r} of tool {tool_name!r} {_explain(error)}"
                else:
                    line, col = tool_line, tool_col
                    message = f"expected_args for {tool_name!r}: {_explain(error)}"
                yield report(
                    case.path,
                    line,
                    col,
                    f"{message}, per the tool's parameters ({tool.fixture.path})",
                )
    for tool in tools.values():
        if tool is not None and tool.error is not None and not tool.reported:
            tool.reported = True
            line, col = tool.fixture.parameters_at or (1, 1)
            yield report(
                tool.fixture.path,
                line,
                col,
                f"data.parameters is not a usable JSON Schema ({tool.error}); the "
                "expected_args of cases that use this tool cannot be checked",
            )
