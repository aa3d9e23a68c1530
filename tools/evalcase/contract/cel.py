"""CEL, the one expression language of the case contract.

CEL (the Common Expression Language of Kubernetes validation rules and cloud IAM
conditions) is side-effect free, always terminates and is typed. The implementation is
``cel-expr-python`` (Google's cel-cpp with Python bindings): measured here it imports in
about 15 ms, evaluates a compiled expression over a prepared scope in microseconds and
reports syntax errors and undeclared names with line and column
(``benchmarks/cel_bench.py`` has the figures and the alternatives).

The library is imported only when an expression must be compiled or evaluated, and every
result is cached by the expression's text: lint stores :func:`analyze` results with each
file's facts, so a warm lint never imports it.

- :func:`analyze` (lint): syntax error, or the names the expression reads
  (``orders.ORDER_2001.status``, ``args``...), each with its line and column.
- :func:`compile`: a :class:`Program`, or a :class:`CelError`.
- :func:`scope` + :func:`evaluate` (runner, graders): a value, or an :class:`EvalError`.
  A scope converts the variables once; evaluating many expressions over one scope is
  cheap (a state document of a few hundred orders costs milliseconds to convert).
- :class:`Scopes` (the runner's environment, one per attempt): converted variables kept
  across evaluations, so that a 3 MB state is converted once per change, not once per
  evaluation (cel-cpp converts a variable lazily, on the first evaluation that reads it,
  at about 20 ms per MB, and an activation cannot be extended).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from evalcase.model import FatalError

_PACKAGE = "cel-expr-python"
_LOCATED = re.compile(r"<input>:(\d+):(\d+): (.*)")
_UNDECLARED = re.compile(r"undeclared reference to '([^']+)'")


@dataclass(frozen=True)
class CelError:
    """An expression that does not compile; line and column are 1-based, in the expression."""

    line: int
    column: int
    message: str


@dataclass(frozen=True)
class EvalError:
    """An expression that compiled but failed on these values (a missing key, 1/0...)."""

    message: str


@dataclass(frozen=True)
class Reference:
    """A name an expression reads: the variable and the fields selected from it, as far
    as they are static (``orders.ORDER_2001.status``; ``orders[args.id]`` reads ``orders``
    and ``args.id``). Line and column (1-based, in the expression) are where it starts."""

    name: str
    line: int
    column: int

    @property
    def root(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))


@dataclass(frozen=True)
class Analysis:
    error: CelError | None
    references: tuple[Reference, ...] = ()

    @property
    def roots(self) -> frozenset[str]:
        return frozenset(r.root for r in self.references)


@dataclass(frozen=True, eq=False)
class Program:
    """A compiled expression (one per distinct text per process)."""

    source: str
    _expression: Any

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Compiled code does not cross processes; its text does.
        return (_recompile, (self.source,))


def _recompile(source: str) -> Program:
    program = compile(source)
    if isinstance(program, CelError):
        raise ValueError(program.message)
    return program


@dataclass(frozen=True, eq=False)
class Scope:
    """Variables converted once for many evaluations."""

    names: frozenset[str]
    _activation: Any


@lru_cache(maxsize=1)
def _cel() -> Any:
    try:
        from cel_expr_python import cel
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise FatalError(
            f"CEL expressions need the '{_PACKAGE}' package: pip install {_PACKAGE} "
            f"(it is a dependency of evalcase; reinstall evalcase) ({exc})"
        ) from exc
    return cel


# The extensions cel-cpp itself ships, enabled by name through its environment config
# (the Python binding exposes only some as classes; the config reaches all of them):
# ``cel.bind``; lists (``flatten``, ``sort``, ``slice``, ``distinct``, ``lists.range``...);
# ``math.*``; ``optional``; sets (``sets.contains``...); strings (``split``, ``join``,
# ``format``, ``upperAscii``...); two-variable comprehensions (``all(i, v, ...)``).
EXTENSIONS = (
    ("bindings", None),
    ("lists", 2),
    ("math", 2),
    ("optional", 2),
    ("sets", None),
    ("strings", 4),
    ("two-var-comprehensions", None),
)
_SUM_RANGE = (-(2**63), 2**63 - 1)


def _config_yaml() -> str:
    lines = ["extensions:"]
    for name, version in EXTENSIONS:
        lines.append(f'  - name: "{name}"')
        if version is not None:
            lines.append(f"    version: {version}")
    return "\n".join(lines) + "\n"


def list_sum(values: list[Any]) -> int | float:
    """``list.sum()``, which no CEL extension ships: the sum of a list of numbers. Ints
    and doubles mix (JSON state writes ``100`` and ``100.5`` alike), giving a double
    when any element is one; an int sum beyond 64 bits, or an element that is not a
    number, is an error value like CEL's own arithmetic errors."""
    total: int | float = 0
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"sum() of a list holding {type(value).__name__} {value!r}")
        total += value
    if isinstance(total, int) and not _SUM_RANGE[0] <= total <= _SUM_RANGE[1]:
        raise ValueError("integer overflow in sum()")
    return total


@lru_cache(maxsize=1)
def _env() -> Any:
    cel = _cel()
    list_dyn = cel.Type.List(cel.Type.DYN)
    functions = [
        cel.FunctionDecl(
            "sum",
            [cel.Overload("list_sum", cel.Type.DYN, [list_dyn], is_member=True, impl=list_sum)],
        )
    ]
    return cel.NewEnv(config=cel.NewEnvConfigFromYaml(_config_yaml()), functions=functions)


def _errors(message: str) -> list[tuple[int, int, str]]:
    return [(int(m[1]), int(m[2]), m[3].strip()) for m in _LOCATED.finditer(message)]


def _start(source: str, name: str, line: int, column: int) -> int:
    """The column where ``name`` starts, given a column the checker reported inside it
    (for ``a.b.c`` it reports the last dot)."""
    lines = source.split("\n")
    if not 1 <= line <= len(lines):
        return column
    text = lines[line - 1]
    at = column - 1
    start = text.find(name)
    while start != -1:
        if start <= at < start + len(name):
            return start + 1
        start = text.find(name, start + 1)
    return column


# cel-cpp's parser stops at a nesting depth of 32 (a chain of ``+``, nested parentheses,
# calls or selections each add a level; ``&&`` and ``||`` chains are balanced and do
# not). The Python binding offers no parser option, and its environment configuration
# ignores keys it does not know (measured: a ``limits`` entry changes nothing), so the
# limit cannot be lifted here: an expression that exceeds it is reported with the way
# to split it (docs/contract.md, "Expressions nested too deeply").
DEPTH_LIMIT = 32
DEPTH_MESSAGE = (
    f"the expression nests deeper than CEL's parser allows ({DEPTH_LIMIT} levels: a long "
    "chain of '+', or deeply nested parentheses or calls); split it: name a part with "
    "cel.bind(name, part, rest), or sum a list ([a, b, c].sum())"
)
_DEPTH = re.compile(r"max recursion depth|recursion limit exceeded", re.IGNORECASE)
# The checker reports at most 20 problems, then this (a long expression's later names).
_TOO_MANY = "maximum number of ERROR issues exceeded"
_MAX_ROUNDS = 256  # distinct free names one expression may read (each round finds one or more)


def _lines(source: str) -> int:
    return source.count("\n") + 1


@lru_cache(maxsize=64)
def _env_declaring(names: tuple[str, ...]) -> Any:
    """An environment like :func:`_env` where ``names`` are declared (as ``dyn``)."""
    cel = _cel()
    list_dyn = cel.Type.List(cel.Type.DYN)
    functions = [
        cel.FunctionDecl(
            "sum",
            [cel.Overload("list_sum", cel.Type.DYN, [list_dyn], is_member=True, impl=list_sum)],
        )
    ]
    return cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(_config_yaml()),
        functions=functions,
        variables=dict.fromkeys(names, cel.Type.DYN),
    )


def _problem(source: str, message: str) -> CelError:
    """The first located problem of a compiler message (a position outside the
    expression, as cel-cpp gives for its depth limit, is its start)."""
    if _DEPTH.search(message):
        return CelError(1, 1, DEPTH_MESSAGE)
    found = _errors(message)
    # A problem of its own first: a free name, or what follows from one, only after.
    found.sort(key=lambda e: (not _own(e[2]), _UNDECLARED.search(e[2]) is not None))
    for line, column, text in found:
        if _TOO_MANY in text:
            continue
        if not 1 <= line <= _lines(source) or column < 1:
            line, column = 1, 1
        return CelError(line, column, text)
    return CelError(1, 1, message.strip() or "does not compile")


def _own(text: str) -> bool:
    """A checker problem that is not a free name nor a consequence of one: an undeclared
    name is of type ``*error*`` (a comprehension over one says so), and the checker
    reports no overload problem for a ``*error*`` operand."""
    return _UNDECLARED.search(text) is None and _TOO_MANY not in text and "*error*" not in text


@lru_cache(maxsize=8192)
def analyze(source: str) -> Analysis:
    """Syntax, and every name the expression reads, or an error: never part of them.

    The expression is compiled with nothing declared, so that the checker reports each
    free name with its position. cel-cpp's checker stops after 20 problems; when it did,
    the names found so far are declared and the expression is checked again, until no
    name is left (a name read more than 20 times is listed where the checker first
    reported it). A syntax error, the parser's depth limit, a type error in an expression
    that reads no name, or a checker that stopped short without naming anything new is
    the expression's error, with the names left out: a caller never acts on a partial
    list of the names an expression reads."""
    if not isinstance(source, str) or not source.strip():
        return Analysis(CelError(1, 1, "empty expression"))
    declared: dict[str, None] = {}
    refs: dict[tuple[str, int, int], Reference] = {}
    for _round in range(_MAX_ROUNDS):
        env = _env_declaring(tuple(declared)) if declared else _env()
        try:
            env.compile(source)
        except Exception as exc:
            message = str(exc)
            if _DEPTH.search(message):
                return Analysis(CelError(1, 1, DEPTH_MESSAGE))
            found = _errors(message)
            fresh = 0
            for line, column, text in found:
                undeclared = _UNDECLARED.search(text)
                if undeclared is None:
                    continue
                name = undeclared[1]
                ref = Reference(name, line, _start(source, name, line, column))
                refs.setdefault((ref.name, ref.line, ref.column), ref)
                if name not in declared:
                    declared[name] = None
                    fresh += 1
            stopped = _TOO_MANY in message
            if stopped and fresh:
                continue  # checked again with these names declared (as dyn), for the rest
            if refs and not stopped:
                # The checker's other problems are guesses about the names' types; the
                # runner compiles without the checker, and compares across types
                # (``size(args.items) > 1.5`` runs; the checker says int > double).
                return Analysis(None, tuple(refs.values()))
            return Analysis(_problem(source, message))
        return Analysis(None, tuple(refs.values()))
    return Analysis(CelError(1, 1, f"the expression reads more than {_MAX_ROUNDS} names; split it"))


@lru_cache(maxsize=8192)
def compile(source: str) -> Program | CelError:
    """The expression compiled for evaluation, or where it fails to parse."""
    if not isinstance(source, str) or not source.strip():
        return CelError(1, 1, "empty expression")
    try:
        expression = _env().compile(source, disable_check=True)
    except Exception as exc:
        return _problem(source, str(exc))
    return Program(source, expression)


def parsed_tree(source: str) -> bytes | None:
    """The expression's parsed tree, serialized (a ``cel.expr.ParsedExpr`` in a protobuf
    ``Any``; macros expanded, no checker), or None when it does not parse: the binding
    exposes no tree object (evalcase.contract.selections reads this one)."""
    try:
        serialized = _env().compile(source, disable_check=True).serialize()
    except Exception:  # a parse error: EC601 reports it from compile()
        return None
    return serialized if isinstance(serialized, bytes) else None


def plain(value: Any) -> Any:
    """A value CEL can read: tuples as lists, other mappings as dicts, recursively."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def scope(variables: Mapping[str, Any]) -> Scope | EvalError:
    """Variables prepared for evaluation (converted to CEL values once)."""
    try:
        activation = _env().Activation(data=plain(variables))
    except Exception as exc:
        return EvalError(f"cannot pass these values to CEL: {exc}")
    return Scope(frozenset(variables), activation)


def evaluate(program: Program | str, variables: Scope | Mapping[str, Any]) -> Any:
    """The expression's value as plain Python data, or an :class:`EvalError` (or the
    :class:`CelError` of a text that does not compile)."""
    if isinstance(program, str):
        compiled = compile(program)
        if isinstance(compiled, CelError):
            return compiled
        program = compiled
    if not isinstance(variables, Scope):
        prepared = scope(variables)
        if isinstance(prepared, EvalError):
            return prepared
        variables = prepared
    cel = _cel()
    try:
        value = program._expression.eval(variables._activation)
    except Exception as exc:
        return EvalError(str(exc).strip())
    try:
        if value.type() == cel.Type.ERROR:
            return EvalError(_clean(str(value.value())))
        return canonical(value.plain_value())
    except Exception:  # a value with no plain form (an optional): say so, never crash
        return EvalError(
            "the expression gives a value that is not plain data (an optional, such as "
            "list.first(), needs .orValue(default) or .value())"
        )


def _key_order(key: Any) -> tuple[str, Any]:
    return (type(key).__name__, key)


def canonical(value: Any) -> Any:
    """``value`` with every mapping's keys in sorted order. cel-cpp hands maps back in its
    hash order, which differs from one process to the next (a map passed in unchanged
    too): without this, a tool result's JSON, the record of a run and a grader's quoted
    values would change order between two runs of the same case."""
    kind = type(value)
    if kind is dict:
        return {k: canonical(value[k]) for k in sorted(value, key=_key_order)}
    if kind is list:
        return [canonical(v) for v in value]
    return value


_LITERAL_INT_BOUND = 1 << 63
_RETAINED = 64 << 20


def _rss() -> int:
    """Resident bytes of this process (Linux); 0 elsewhere (activations are then kept)."""
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * 4096
    except (OSError, ValueError, IndexError):
        return 0


_COMPREHENSION = re.compile(r"\.\s*(all|exists|exists_one|map|filter)\s*\(")
_TOKENS = itertools.count(1)  # process-wide: a worker serves many attempts' Scopes
_CONTENT_TOKENS: dict[tuple[str, str], int] = {}


def content_token(digest: str, name: str) -> int:
    """One token per (content digest, name) for the whole process (see :meth:`Scopes.pin`)."""
    token = _CONTENT_TOKENS.get((digest, name))
    if token is None:
        if len(_CONTENT_TOKENS) > 65536:
            _CONTENT_TOKENS.clear()  # a token forgotten here is only sent again
        token = _CONTENT_TOKENS.setdefault((digest, name), next(_TOKENS))
    return token


# content token -> its value's literal (or None): see Scopes._literal
_PINNED_LITERALS: dict[int, str | None] = {}
_LITERAL_NODES = 4096  # a value of more nodes is converted, not written as a literal
_LITERAL_CHARS = 65536  # nor a longer one (the parser has its own limits)


def literal(value: Any, budget: int = _LITERAL_NODES) -> str | None:
    """``value`` as a CEL literal equal to what the binding would convert it to, or None
    when it is too large (more than ``budget`` nodes) or has no exact literal (int keys,
    tuples, numbers out of range, lone surrogates...)."""
    nodes = [0]

    def fits(v: Any) -> bool:
        nodes[0] += 1
        if nodes[0] > budget:
            return False
        if v is None or isinstance(v, bool | str):
            return True
        if isinstance(v, int):
            return -_LITERAL_INT_BOUND < v < _LITERAL_INT_BOUND
        if isinstance(v, float):
            return v == v and v not in (float("inf"), float("-inf"))
        if type(v) is list:
            return nodes[0] + len(v) <= budget and all(fits(x) for x in v)
        if type(v) is dict:
            return nodes[0] + len(v) <= budget and all(
                type(k) is str and fits(x) for k, x in v.items()
            )
        return False

    if not fits(value):
        return None
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    if len(text) > _LITERAL_CHARS:
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return text


@dataclass(eq=False)
class _Entry:
    """One activation: the objects it was built from, and the names already converted."""

    data: dict[str, Any]
    activation: Any
    warm: set[str]
    stale: set[str]
    rss: int  # the process's resident bytes when it was made


class Scopes:
    """Variables converted once for every evaluation that reads them unchanged.

    cel-cpp converts a Python variable to CEL values when an evaluation first reads it
    and keeps the result in the activation; an activation cannot take new names. So this
    keeps a few activations, and evaluates an expression in the one that already holds
    the same objects (by identity) for the names it reads. A name bound to another object
    (the call's ``args``, a ``let`` value, a ``foreach`` element) that is small is passed
    as a literal binding around the expression (``[value].map(name, expression)[0]``),
    so the large, unchanged state keys stay converted; a large one gets a new activation.
    The caller must :meth:`invalidate` a name whose object it changed in place (the
    environment does for every state change). A name's literal (or that it has none: a
    large state key) is worked out once per object and change, not per evaluation: an
    unchanged collection of 1,000 orders is not walked again by every expression that
    reads it while an older activation lacks it. What an evaluation builds stays in its
    activation until the activation goes: one that has grown the process by 64 MB after
    a comprehension is let go."""

    def __init__(self, keep: int = 3) -> None:
        self.keep = keep
        self._entries: list[_Entry] = []
        self.conversions: dict[str, int] = {}  # name -> times converted (for tests, docs)
        self.activations = 0
        self._tokens: dict[str, tuple[Any, int]] = {}
        self._literals: dict[str, tuple[Any, str | None]] = {}  # name -> (object, literal)
        self._pins: dict[str, tuple[Any, int]] = {}  # name -> (object, content token)

    def invalidate(self, names: Iterable[str]) -> None:
        """These names' objects changed in place: never read their old conversions."""
        gone = set(names)
        for entry in self._entries:
            entry.stale |= gone & set(entry.data)
        self._entries = [e for e in self._entries if len(e.stale) < len(e.data) or not e.data]
        for name in gone:
            self._tokens.pop(name, None)
            self._literals.pop(name, None)
            self._pins.pop(name, None)

    def _literal(self, name: str, value: Any) -> str | None:
        """:func:`literal` of ``value``, kept while ``name`` is bound to this unchanged object,
        and for the whole process by the token of a pinned value (:meth:`pin`: the token
        names its content): every attempt on one initial state asks about the same
        unchanged keys, and sizing a large one walks 4,096 nodes to say no."""
        held = self._literals.get(name)
        if held is not None and held[0] is value:
            return held[1]
        pinned = self._pins.get(name)
        token = pinned[1] if pinned is not None and pinned[0] is value else None
        if token is not None and token in _PINNED_LITERALS:
            text = _PINNED_LITERALS[token]
        else:
            text = literal(value)
            if token is not None:
                if len(_PINNED_LITERALS) > 512:
                    _PINNED_LITERALS.clear()  # forgotten: only sized again
                _PINNED_LITERALS[token] = text
        self._literals[name] = (value, text)
        return text

    def pin(self, name: str, value: Any, token: int) -> None:
        """Give ``value``, bound to ``name``, a token from :func:`content_token`: the caller
        vouches that the object holds that token's content until it invalidates the name
        (:meth:`invalidate`). Workers that hold a value by that token (sent for another
        attempt on the same initial state) then evaluate over theirs, already converted,
        and this one is not sent."""
        self._tokens[name] = self._pins[name] = (value, token)

    def token(self, name: str, value: Any) -> int:
        """A number that stays the same while ``name`` is bound to this unchanged object
        (workers keep values by it, so that an unchanged state is sent once)."""
        held = self._tokens.get(name)
        if held is not None and held[0] is value:
            return held[1]
        token = next(_TOKENS)
        self._tokens[name] = (value, token)
        return token

    def _pick(
        self, roots: frozenset[str], variables: Mapping[str, Any], literals: dict[str, str | None]
    ) -> _Entry | None:
        best: tuple[int, _Entry] | None = None
        for entry in self._entries:
            same = {r for r in roots if _same(entry, r, variables[r])}
            others = roots - same
            for r in others:
                if r not in literals:
                    literals[r] = self._literal(r, variables[r])
            if any(literals[r] is None for r in others):
                continue
            score = len(same & entry.warm) * 2 + len(same)
            if best is None or score > best[0]:
                best = (score, entry)
        return None if best is None else best[1]

    def _new(self, variables: Mapping[str, Any]) -> _Entry | EvalError:
        data = dict(variables)
        try:
            activation = _env().Activation(data=data)
        except Exception as exc:
            return EvalError(f"cannot pass these values to CEL: {exc}")
        self.activations += 1
        entry = _Entry(data, activation, set(), set(), _rss())
        self._entries.insert(0, entry)
        del self._entries[self.keep :]
        return entry

    def evaluate(self, source: str, variables: Mapping[str, Any]) -> Any:
        """:func:`evaluate` of ``source`` over ``variables``, reusing conversions."""
        analysis = analyze(source)
        if analysis.error is not None:
            compiled = compile(source)
            if isinstance(compiled, CelError):
                return compiled  # with its position
            named: frozenset[str] = frozenset(variables)  # the checker could not tell
        else:
            named = analysis.roots
        roots = frozenset(r for r in named if r in variables)
        comprehension = _COMPREHENSION.search(source) is not None
        literals: dict[str, str | None] = {}
        entry = self._pick(roots, variables, literals)
        if entry is None:
            made = self._new(variables)
            if isinstance(made, EvalError):
                return made
            entry = made
        bound = {r for r in roots if not _same(entry, r, variables[r])}
        text = source
        for name in sorted(bound):
            text = f"[{literals[name]}].map({name}, {text})[0]"
        for name in roots - bound - entry.warm:
            self.conversions[name] = self.conversions.get(name, 0) + 1
        entry.warm |= roots - bound
        program = compile(source) if text == source else _compile_once(text)
        if isinstance(program, CelError):
            if text == source:
                return program
            return evaluate(source, {r: variables[r] for r in roots})  # converted afresh
        value = evaluate(program, Scope(frozenset(entry.data), entry.activation))
        if comprehension and _rss() - entry.rss > _RETAINED:
            # What an evaluation builds stays in its activation until the activation goes
            # (cel-cpp's arena: a filter over a map of 3,000 entries keeps 150 MB): an
            # activation that has grown the process by _RETAINED is let go.
            self._entries = [e for e in self._entries if e is not entry]
        if isinstance(value, EvalError) and "Non-CEL value type" in value.message:
            return evaluate(source, {r: variables[r] for r in roots})  # plain() converts
        return value


def _same(entry: _Entry, name: str, value: Any) -> bool:
    return name in entry.data and name not in entry.stale and entry.data[name] is value


def _compile_once(source: str) -> Program | CelError:
    """Compiled without the cache (a binding's text is seen once)."""
    try:
        return Program(source, _env().compile(source, disable_check=True))
    except Exception as exc:
        found = _errors(str(exc))
        return CelError(*found[0]) if found else CelError(1, 1, str(exc).strip())


def _clean(message: str) -> str:
    return message.replace("found in Activation", "defined here").strip()


def is_loaded() -> bool:
    """Whether the CEL library has been imported in this process (a warm lint must not)."""
    import sys

    return "cel_expr_python" in sys.modules


# The variables each context offers (docs/contract.md "How a case runs"). Contexts marked
# in STATE_CONTEXTS also offer every top-level key of the state document (``orders``,
# ``session``...); a reserved name wins over a state key of the same name.
CONTEXT_VARIABLES: dict[str, frozenset[str]] = {
    "tool": frozenset({"args", "call", "state"}),
    "fault": frozenset({"args", "call"}),
    "permission": frozenset({"args", "call", "calls", "state"}),
    "precondition": frozenset({"args", "call", "calls", "state"}),
    "assert": frozenset({"state", "initial", "calls", "output"}),
    "trace": frozenset({"trace", "calls", "output", "state", "initial"}),
    # a scripted user turn's when: the agent's last reply, the calls, user turns sent
    "user_turn": frozenset({"message", "calls", "turn"}),
}
STATE_CONTEXTS = frozenset({"tool", "permission", "precondition", "assert"})
RESERVED = frozenset().union(*CONTEXT_VARIABLES.values())


def variables(
    context: str, state: Mapping[str, Any] | None = None, **values: Any
) -> dict[str, Any]:
    """The variables of one context (CONTEXT_VARIABLES), for :func:`scope`.

    ``state``: the state document; in STATE_CONTEXTS its top-level keys become variables
    too (a reserved name wins over a state key of the same name). ``values``: ``args``,
    ``call``, ``calls``, ``initial``, ``output``, ``trace``; a variable of the context
    that is not given is empty (``{}``, ``[]`` or ``""``), never absent."""
    offered = CONTEXT_VARIABLES.get(context)
    if offered is None:
        raise ValueError(f"unknown CEL context {context!r}; one of {', '.join(CONTEXT_VARIABLES)}")
    empty: dict[str, Any] = {
        "args": {},
        "call": {},
        "calls": [],
        "state": {},
        "initial": {},
        "output": "",
        "trace": [],
        "message": "",
        "turn": 0,
    }
    out: dict[str, Any] = {}
    document = dict(state or {})
    if context in STATE_CONTEXTS:
        out.update(document)
    for name in offered:
        if name == "state":
            out[name] = document
        else:
            out[name] = values.get(name, empty[name])
    return out
