"""Which prompt each attempt runs with: ``--prompt a,b``, else the manifest's ``prompts``,
else each case's own ``prompt:`` (else none: the case's own system prompt, if any).

With chosen prompts every selected case runs once per prompt (times ``--repeat``). The
attempts of one case are numbered across prompts, so an attempt stays identified by case
and number everywhere (records, reviews, resume): with ``--repeat 2`` and prompts ``a,b``
prompt ``a`` gets attempts 1-2 and ``b`` 3-4. The seed of an attempt depends on its number
within its prompt, so ``a``'s attempt 1 and ``b``'s attempt 3 sample alike.

Every view is rendered before the first attempt: a template a case cannot fill stops the
run with the list (lint reports the same as EC341), rather than recording an error per
attempt. Each case's rendering is bounded like an attempt (evalcase.contract.template_limits,
stopped at ``--timeout``): a template that exceeds a limit stops the run the same way
(lint: EC342).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalcase.contract.prompt import Prompt, PromptError, apply
from evalcase.model import FatalError
from evalcase.run.spec import AgentView


class PromptedTask(Protocol):
    @property
    def case_id(self) -> str: ...
    @property
    def agent(self) -> AgentView: ...
    @property
    def meta(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class Variant:
    """One case as it runs with one prompt."""

    case_id: str
    view: AgentView
    prompt: str | None  # "id@version"
    slot: int  # which of the chosen prompts (0 without chosen prompts)


def split(values: Sequence[str]) -> tuple[str, ...]:
    """``("a,b", "c")`` -> ``("a", "b", "c")`` (--prompt is repeatable and takes lists)."""
    out: dict[str, None] = {}
    for value in values:
        out.update(dict.fromkeys(p.strip() for p in value.split(",") if p.strip()))
    return tuple(out)


def plan(
    tasks: Sequence[PromptedTask],
    prompts: Mapping[str, Prompt],
    chosen: Sequence[str],
    timeout_s: float | None = None,
) -> list[Variant]:
    """The variants to run, in order (raises FatalError listing every problem). Each
    case's rendering stops after ``timeout_s`` (an attempt's deadline); a prompt that
    exceeds a limit of evalcase.contract.template_limits for one case is not rendered
    again for the others (each would fail alike, one deadline after another)."""
    unknown = [p for p in chosen if p not in prompts]
    if unknown:
        known = ", ".join(sorted(prompts)) or "none"
        raise FatalError(
            f"unknown prompt(s) {', '.join(unknown)}: prompts are fixtures "
            f"(fixtures/prompt/<id>.yaml); known: {known}"
        )
    out: list[Variant] = []
    problems: list[str] = []
    exceeded: dict[str, str] = {}  # prompt label -> the case it exceeded a limit for

    def add(task: PromptedTask, prompt: Prompt | None, slot: int) -> None:
        if prompt is None:
            out.append(Variant(task.case_id, task.agent, None, slot))
            return
        if prompt.label in exceeded:
            problems.append(
                f"  {task.case_id}: not rendered: prompt {prompt.label} exceeded a limit "
                f"for {exceeded[prompt.label]}"
            )
            return
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        try:
            view = apply(prompt, task.agent, deadline)
        except PromptError as exc:
            problems.append(f"  {task.case_id}: {exc}")
            if exc.limit:
                exceeded[prompt.label] = task.case_id
            return
        out.append(Variant(task.case_id, view, prompt.label, slot))

    if chosen:
        for slot, prompt_id in enumerate(chosen):
            for task in tasks:
                add(task, prompts[prompt_id], slot)
    else:
        for task in tasks:
            own = task.meta.get("prompt")
            if isinstance(own, str) and own not in prompts:
                problems.append(f"  {task.case_id}: prompt {own!r} does not exist")
                continue
            add(task, prompts[own] if isinstance(own, str) else None, 0)
    if problems:
        raise FatalError(
            f"{len(problems)} case(s) cannot be rendered with their prompt (evalcase lint "
            "reports them as EC340/EC341/EC342):\n"
            + "\n".join(problems[:20])
            + ("\n  ..." if len(problems) > 20 else "")
        )
    return out


def versions(variants: Sequence[Variant]) -> dict[str, str]:
    """Prompt ID -> version of the prompts a run uses (run.json ``prompts``)."""
    out: dict[str, str] = {}
    for v in variants:
        if v.prompt:
            prompt_id, _, version = v.prompt.rpartition("@")
            out[prompt_id] = version
    return dict(sorted(out.items()))
