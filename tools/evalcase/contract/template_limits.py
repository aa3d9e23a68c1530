"""Prompt templates rendered under limits, like expressions.

A prompt fixture's templates are data, written by anyone with a pull request, and Jinja2
is a programming language: ``{% for a in range(100000) %}{% for b in range(100000) %}``,
``lipsum(50000000)`` or ``'a' * 3000000000`` would hold the runner (or lint) for hours
or take gigabytes. Jinja's sandbox keeps templates away from Python's internals; this
adds the bounds, in process (the CEL worker pool's killable process was measured too:
see docs/untrusted-input.md, "Prompt templates"):

- ``range()`` gives at most :data:`MAX_RANGE` items; ``lipsum()`` at most
  :data:`MAX_LIPSUM` paragraphs of at most :data:`MAX_LIPSUM` words;
- a string or list built by ``*``, ``+``, ``~``, ``%``, a filter or a method is at most
  :data:`MAX_OUTPUT` characters (items), checked before it is built where its size can
  be known (repetition, concatenation, padding widths, ``replace``), else right after;
  an integer argument above :data:`MAX_OUTPUT` (a width, a count) is refused, and so is
  ``**`` with an exponent above :data:`MAX_EXPONENT`;
- every loop iteration, call, filter and operator is a step: at most :data:`MAX_STEPS`
  per render, and the render stops at its deadline (the attempt's, at run time);
- the rendered text is at most :data:`MAX_OUTPUT` characters;
- a Python error a template provokes (``1 / 0``, a recursion without end) is the
  template's error, never a crash of the run.

A render that exceeds a limit raises :class:`TemplateLimit` (a Jinja ``SecurityError``),
whose message names the limit; lint reports it as EC342.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, wraps
from typing import Any

from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment
from jinja2.visitor import NodeTransformer

MAX_OUTPUT = 1_000_000  # characters of a rendered template, or of any value built in it
MAX_RANGE = 10_000  # items of one range()
MAX_STEPS = 1_000_000  # loop iterations, calls, filters and operators of one render
MAX_LIPSUM = 100  # paragraphs of lipsum(), and words per paragraph
MAX_EXPONENT = 1_000  # right operand of **
LINT_SECONDS = 5.0  # how long lint lets one template render (the step limit comes first)

# A numeric width or precision in a %-format or a {}-format spec.
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\d+|\*)?(?:\.(\d+|\*))?[a-zA-Z%]")
_BRACE_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_DIGITS = re.compile(r"\d+")
_NESTED_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")


class TemplateLimit(SecurityError):
    """A render that exceeded one of the limits (the message says which)."""


@dataclass
class _Budget:
    deadline: float | None
    steps: int = 0


_local = threading.local()


@contextmanager
def budget(deadline: float | None) -> Iterator[None]:
    """Renders in this thread count their steps afresh and stop at ``deadline`` (a
    ``time.monotonic()`` value; None: only the step limit)."""
    saved = getattr(_local, "budget", None)
    _local.budget = _Budget(deadline)
    try:
        yield
    finally:
        _local.budget = saved


def tick(count: int = 1) -> None:
    """One more step of the current render; raises at the step limit or the deadline."""
    state: _Budget | None = getattr(_local, "budget", None)
    if state is None:
        return
    state.steps += count
    if state.steps > MAX_STEPS:
        raise TemplateLimit(
            f"the template took more steps than the limit of {MAX_STEPS:,} (loop "
            "iterations, calls, filters); a loop over a loop?"
        )
    checks = state.deadline is not None and (state.steps & 255 == 0 or count > 1)
    if checks and time.monotonic() >= state.deadline:  # type: ignore[operator]
        raise TemplateLimit("the template was still rendering at the deadline")


def _sized(value: Any, what: str) -> Any:
    if isinstance(value, str | list | tuple | bytes | dict) and len(value) > MAX_OUTPUT:
        raise TemplateLimit(f"{what} built a value of {len(value):,} items, over {MAX_OUTPUT:,}")
    return value


def _check_args(args: Iterable[Any], what: str) -> None:
    for arg in args:
        if isinstance(arg, int) and not isinstance(arg, bool) and abs(arg) > MAX_OUTPUT:
            raise TemplateLimit(f"{what} was given {arg:,}, over the limit of {MAX_OUTPUT:,}")


def _check_format(text: str, what: str) -> None:
    """A %- or {}-format whose width or precision alone is over the limit."""
    numbers: list[str] = []
    for m in _PERCENT_SPEC.finditer(text):
        numbers += [g for g in m.groups() if g and g != "*"]
    for m in _BRACE_SPEC.finditer(text):
        numbers += _DIGITS.findall(m[1])
    for n in numbers:
        if len(n) > 7 or int(n) > MAX_OUTPUT:
            raise TemplateLimit(f"{what} pads to {n} characters, over {MAX_OUTPUT:,}")


def _length(value: Any) -> int:
    return len(value) if isinstance(value, str | list | tuple | bytes) else 0


def bounded_range(*args: Any) -> range:
    tick()
    values = range(*args)
    if len(values) > MAX_RANGE:
        raise TemplateLimit(f"range() of {len(values):,} items, over the limit of {MAX_RANGE:,}")
    return values


def bounded_iter(iterable: Any) -> Iterator[Any]:
    """A for loop's iterable, each iteration a step."""
    for item in iterable:
        tick()
        yield item


def bounded_concat(items: tuple[Any, ...]) -> str:
    """``a ~ b``: the joined text, refused before it is built when too long."""
    tick()
    texts = [str(i) for i in items]
    if sum(len(t) for t in texts) > MAX_OUTPUT:
        raise TemplateLimit(f"'~' would build more than {MAX_OUTPUT:,} characters")
    return "".join(texts)


def _lipsum(real: Callable[..., Any]) -> Callable[..., Any]:
    def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> Any:
        tick()
        if n > MAX_LIPSUM or min > MAX_LIPSUM or max > MAX_LIPSUM:
            raise TemplateLimit(
                f"lipsum() of {n} paragraphs of up to {max} words, over the limit of {MAX_LIPSUM}"
            )
        return real(n, html, min, max)

    return lipsum


# Filters and str methods whose integer parameters size what they build (a width, a
# count of slices or batches): a parameter above MAX_OUTPUT is refused before the call.
_SIZING_FILTERS = frozenset({"center", "indent", "wordwrap", "batch", "slice"})
_SIZING_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


def _filter(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
    what = f"the {name} filter"
    skip = 2 if hasattr(real, "jinja_pass_arg") else 1  # the context, then the value

    @wraps(real)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        tick()
        value = args[skip - 1] if len(args) >= skip else None
        if name in _SIZING_FILTERS:
            _check_args((*args[skip:], *kwargs.values()), what)
        if name == "replace" and isinstance(value, str):
            old, new = [*args[skip:], "", ""][:2]
            if isinstance(old, str) and isinstance(new, str) and old:
                grown = value.count(old) * max(len(new) - len(old), 0)
                if len(value) + grown > MAX_OUTPUT:
                    raise TemplateLimit(f"{what} would build more than {MAX_OUTPUT:,} characters")
        if name == "format" and isinstance(value, str):
            _check_format(value, what)
        return _sized(real(*args, **kwargs), what)

    if hasattr(real, "jinja_pass_arg"):
        bounded.jinja_pass_arg = real.jinja_pass_arg  # type: ignore[attr-defined]
    return bounded


class _Bounds(NodeTransformer):
    """Every for loop iterates through :func:`bounded_iter`; every ``~`` joins through
    :func:`bounded_concat` (autoescape is off for prompts: plain strings)."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)
        node.iter = nodes.Call(
            nodes.EnvironmentAttribute("bounded_iter"), [node.iter], [], None, None
        )
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        call = nodes.Call(
            nodes.EnvironmentAttribute("bounded_concat"),
            [nodes.Tuple(list(node.nodes), "load")],
            [],
            None,
            None,
        )
        call.set_lineno(node.lineno)
        return call


class BoundedEnvironment(SandboxedEnvironment):
    """Jinja's sandbox with the limits of this module."""

    intercepted_binops = frozenset({"*", "+", "**", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals["range"] = bounded_range
        self.globals["lipsum"] = _lipsum(self.globals["lipsum"])  # type: ignore[arg-type]
        self.filters = {name: _filter(name, f) for name, f in self.filters.items()}
        self.bounded_iter = bounded_iter
        self.bounded_concat = bounded_concat

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        bounded: nodes.Template = _Bounds().visit(tree)
        return bounded

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        tick()
        what = f"'{operator}'"
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                if _length(seq) and isinstance(count, int) and _length(seq) * count > MAX_OUTPUT:
                    raise TemplateLimit(
                        f"'*' would build {_length(seq) * count:,} items, over {MAX_OUTPUT:,}"
                    )
        elif operator == "+":
            if _length(left) + _length(right) > MAX_OUTPUT:
                raise TemplateLimit(f"'+' would build more than {MAX_OUTPUT:,} items")
        elif operator == "**":
            if isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
                raise TemplateLimit(f"'**' with an exponent of {right}, over {MAX_EXPONENT:,}")
        elif operator == "%" and isinstance(left, str):
            _check_format(left, what)
        return _sized(super().call_binop(context, operator, left, right), what)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None
        text = value.__self__
        what = f"{value.__name__}()"

        def bounded(*args: Any, **kwargs: Any) -> str:
            _check_format(text, what)
            if _NESTED_SPEC.search(text):  # a width taken from an argument: '{:{}}'
                for arg in (*args, *kwargs.values()):
                    _check_args(arg.values() if isinstance(arg, Mapping) else (arg,), what)
            return _sized(wrapper(*args, **kwargs), what)  # type: ignore[no-any-return]

        return bounded

    def call(
        __self,  # Jinja's own signature (a keyword named self may be passed)
        __context: Any,
        __obj: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        tick()
        name = getattr(__obj, "__name__", "")
        what = f"{name or 'a call'}()"
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, str) and name in _SIZING_METHODS:
            _check_args((*args, *kwargs.values()), what)
        return _sized(super().call(__context, __obj, *args, **kwargs), what)


@lru_cache(maxsize=256)
def _compiled(environment: BoundedEnvironment, source: str) -> Any:
    # Compiling is most of a render's cost (about 10 ms for a typical prompt, measured
    # by benchmarks/template_bench.py): a prompt's templates serve every case.
    return environment.from_string(source)


def render(environment: BoundedEnvironment, source: str, values: Mapping[str, Any]) -> str:
    """``source`` rendered with ``values`` under the limits (call within :func:`budget`).
    Raises TemplateLimit at a limit; Jinja's TemplateError for a template error; any
    other exception the template provoked as it is (the caller words it)."""
    template = _compiled(environment, source)
    out: list[str] = []
    size = 0
    for chunk in template.generate(**values):
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise TemplateLimit(f"the rendered text is longer than {MAX_OUTPUT:,} characters")
        out.append(chunk)
        tick()
    return "".join(out)
