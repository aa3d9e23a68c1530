"""Prompts as versioned fixtures: ``fixtures/prompt/<prompt_id>.yaml``.

A prompt fixture (``kind: prompt``) holds the system prompt an agent runs with and,
optionally, message templates, a template for each user turn, generation settings and
data of its own::

    fixture_id: intent_router
    fixture_version: v2
    kind: prompt
    description: Routes a customer message to one intent label.
    source: synthetic
    desensitized: true
    data:
      system: |
        Answer with exactly one label of: {{ data.labels | join(", ") }}.
        {% if now %}Today is {{ now }}.{% endif %}
      messages:                      # optional: placed after the system prompt
        - {role: user, content: "Where is my parcel?"}
        - {role: assistant, content: "order_status"}
      user: "Customer ({{ context.channel }}): {{ turn }}"   # optional: each user turn
      generation_config: {temperature: 0, max_tokens: 8}      # optional
      variables:                     # optional: the prompt's own data, as `data`
        labels: [order_status, refund, other]

Templates are Jinja2, rendered in its sandboxed environment with ``StrictUndefined``:
a variable the case does not supply is an error (lint EC341 reports it at the case),
never an empty string. Rendering is bounded (evalcase.contract.template_limits: range,
lipsum, repetition, output size, steps, a deadline); a template that exceeds a limit is
an error too (lint EC342 reports it at the template). Variables: ``input`` (the case's
first user turn), ``turns`` (every scripted user turn), ``context`` (the case's context,
fixture references removed), ``now`` and ``locale`` (when the case has them), ``data`` (the prompt's
``variables``) and, in ``user`` only, ``turn`` (the user turn being rendered). ``now`` and
``locale`` are always defined, None when the case has none (so ``{% if now %}`` works);
``input`` only when the case has a user turn.

Applied to an :class:`~evalcase.contract.task.AgentView` (:func:`apply`), the prompt
replaces the case's system prompt, puts its messages before the case's history, renders
every user turn through ``user``, and its ``generation_config`` overrides the case's key
by key (the prompt is what a comparison between prompts varies). A prompt's ID and version
(``id@version``) are recorded with every attempt that ran with it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any

from evalcase.contract.task import AgentView, Turn

KIND = "prompt"
TEMPLATE_FIELDS = ("system", "messages", "user")
# The variables every case offers a template, and the one only ``user`` has.
ALWAYS = ("turns", "context", "data", "now", "locale")
TURN = "turn"


@dataclass(frozen=True)
class Prompt:
    prompt_id: str
    version: str
    system: str
    messages: tuple[tuple[str, str], ...] = ()  # (role, template)
    user: str | None = None
    generation: Mapping[str, Any] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.prompt_id}@{self.version}"


class PromptError(ValueError):
    """A prompt that cannot be rendered for a case (undefined variable, bad template);
    ``limit``: it exceeded a limit of evalcase.contract.template_limits."""

    def __init__(self, message: str, *, limit: bool = False) -> None:
        super().__init__(message)
        self.limit = limit


def prompt_of(fixture_id: str, fixture: Mapping[str, Any]) -> Prompt:
    """The prompt of a prompt fixture document (schema-checked by lint; read defensively)."""
    data = fixture.get("data")
    body: Mapping[str, Any] = data if isinstance(data, Mapping) else {}
    messages = tuple(
        (str(m.get("role", "user")), str(m.get("content", "")))
        for m in body.get("messages") or ()
        if isinstance(m, Mapping)
    )
    user = body.get("user")
    generation = body.get("generation_config")
    variables = body.get("variables")
    return Prompt(
        fixture_id,
        str(fixture.get("fixture_version") or ""),
        str(body.get("system") or ""),
        messages,
        user if isinstance(user, str) else None,
        dict(generation) if isinstance(generation, Mapping) else {},
        dict(variables) if isinstance(variables, Mapping) else {},
    )


@cache
def _environment(lenient: bool = False) -> Any:
    from jinja2 import ChainableUndefined, StrictUndefined

    from evalcase.contract.template_limits import BoundedEnvironment

    # Prompts are data anyone with a PR writes: the sandbox keeps templates away from
    # attributes that reach Python internals, and its limits bound what a render may cost
    # (evalcase.contract.template_limits); StrictUndefined makes a missing variable an
    # error instead of an empty string in front of a model. Lint's trial render
    # (:func:`exceeds`) is lenient instead: a case's variables are EC341's business.
    return BoundedEnvironment(
        undefined=ChainableUndefined if lenient else StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )


def variables(view: AgentView, prompt: Prompt) -> dict[str, Any]:
    """What a template may read for this case (see the module documentation)."""
    out: dict[str, Any] = {
        "turns": list(view.user_turns),
        "context": _plain(view.context),
        "data": _plain(prompt.data),
    }
    if view.user_turns:
        out["input"] = view.user_turns[0]
    for key in ("now", "locale"):
        out[key] = view.params.get(key)
    return out


def render_text(
    template: str, values: Mapping[str, Any], where: str, deadline: float | None = None
) -> str:
    """``template`` rendered under the limits of evalcase.contract.template_limits, by
    ``deadline`` (a ``time.monotonic()`` value)."""
    from jinja2 import TemplateError

    from evalcase.contract.template_limits import TemplateLimit, budget, render

    try:
        with budget(deadline):
            return render(_environment(), template, values)
    except TemplateLimit as exc:
        raise PromptError(f"{where}: {exc} (lint: EC342)", limit=True) from None
    except TemplateError as exc:
        raise PromptError(f"{where}: {exc}") from None
    except RecursionError:
        raise PromptError(f"{where}: the template recurses without end", limit=True) from None
    except MemoryError:
        raise PromptError(f"{where}: the template ran out of memory", limit=True) from None
    except Exception as exc:  # 1 / 0, int("x")...: the template's error, never a crash
        raise PromptError(f"{where}: {type(exc).__name__}: {exc}") from None


def exceeds(template: str, data: Mapping[str, Any]) -> tuple[str, int] | None:
    """Lint's trial render: the limit ``template`` exceeds, and the template line where
    it stopped, when rendered with the prompt's own ``data`` and every case variable
    undefined (lenient: empty, iterable, falsy), within LINT_SECONDS; None when it
    renders (or fails for another reason: other rules report those)."""
    import time

    from evalcase.contract.template_limits import LINT_SECONDS, TemplateLimit, budget, render

    values = {"data": _plain(data), "now": None, "locale": None}
    try:
        with budget(time.monotonic() + LINT_SECONDS):
            render(_environment(lenient=True), template, values)
    except TemplateLimit as exc:
        return str(exc), _template_line(exc)
    except RecursionError as exc:
        return "the template recurses without end", _template_line(exc)
    except MemoryError as exc:
        return "the template ran out of memory", _template_line(exc)
    except Exception:
        return None
    return None


def _template_line(exc: BaseException) -> int:
    """The template line an exception was raised at (Jinja rewrites tracebacks so that
    a template's frames carry its own line numbers), else 1."""
    line = 1
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def apply(prompt: Prompt, view: AgentView, deadline: float | None = None) -> AgentView:
    """The view an agent receives when it runs with ``prompt`` (raises PromptError);
    every render stops at ``deadline``."""
    values = variables(view, prompt)
    where = f"prompt {prompt.label}"
    system = render_text(prompt.system, values, f"{where} system", deadline)
    messages = tuple(
        Turn(role if role in ("system", "user", "assistant") else "user", text)  # type: ignore[arg-type]
        for i, (role, template) in enumerate(prompt.messages)
        for text in (render_text(template, values, f"{where} messages[{i}]", deadline),)
    )
    turns = view.user_turns
    if prompt.user is not None:
        template = prompt.user
        turns = tuple(
            render_text(template, {**values, TURN: t}, f"{where} user", deadline)
            for t in view.user_turns
        )
    params = {**view.params, **prompt.generation}
    return replace(
        view,
        system=system or None,
        history=messages + tuple(view.history),
        user_turns=turns,
        params=params,
    )


def offered(input_value: Any, interaction: Any, context: Any) -> tuple[str, ...]:
    """The variable paths a case can supply, from its document's fields: roots, and
    ``context.KEY`` for each key of its context (what lint compares templates against)."""
    out = list(ALWAYS)
    turns = [t for t in interaction or () if isinstance(t, Mapping) and t.get("role") == "user"]
    if input_value is not None or turns:
        out.append("input")
    if isinstance(context, Mapping):
        out += [f"context.{k}" for k in context if k != "fixtures"]
    return tuple(out)


def referenced(template: str, data: Mapping[str, Any] | None = None) -> list[str] | str:
    """The variable paths a template reads (roots, and ``context.KEY`` one level down),
    or the syntax error's message."""
    from jinja2 import TemplateSyntaxError, meta, nodes

    try:
        tree = _environment().parse(template)
    except TemplateSyntaxError as exc:
        return f"line {exc.lineno}: {exc.message}"
    roots = meta.find_undeclared_variables(tree)
    found: dict[str, None] = dict.fromkeys(sorted(roots))
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        base = node.node
        if not (isinstance(base, nodes.Name) and base.name == "context" and "context" in roots):
            continue
        key = node.attr if isinstance(node, nodes.Getattr) else _const(node.arg)
        if isinstance(key, str):
            found[f"context.{key}"] = None
    return list(found)


def missing(needed: Sequence[str], supplied: Sequence[str], *, user: bool) -> list[str]:
    """The paths of ``needed`` the case cannot supply."""
    have = set(supplied) | ({TURN} if user else set())
    return [n for n in needed if n not in have]


def _const(node: Any) -> Any:
    from jinja2 import nodes

    return node.value if isinstance(node, nodes.Const) else None


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
