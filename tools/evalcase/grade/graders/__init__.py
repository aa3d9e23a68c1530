"""The grader registry: stable names, each implemented by ``evalcase.grade.graders.<name>``.

This module imports no grader, so lint can read the names cheaply; ``load`` imports one.
Every grader module has ``NAME``, ``VERSION``, ``grade(spec, attempt, ctx) -> Grade`` and
``needs(spec) -> str | None``. ``spec`` is the case's ``JudgeSpec`` (read by attribute),
``attempt`` an :class:`evalcase.contract.records.Observed` (the typed record, its calls
``ToolCallRecord`` s, and the states rebuilt from the case's initial state); a grader
loaded here also takes a record's JSON object and reads it as :func:`observed` does.
``needs`` says what the case must configure for the grader to grade, as
one predicate over the case's judge view (``None``: it can grade; else why not). The
grader returns that reason as its ``error``, and lint (EC320) reports it at the grader's
line, so a case lint accepts never ends in a grader error for lack of configuration.

Custom graders register through the ``evalcase.graders`` entry point group and point at a
module (or object) with ``grade(spec, attempt, ctx) -> Grade``, ``NAME``, ``VERSION`` and
optionally ``needs``; the engine loads them (``evalcase.grade.engine.load_grader``), this
module never imports the plugin machinery (no import circle with ``evalcase.plugins``).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, TypeVar

from evalcase.contract.graders import RENAMED as _RENAMED
from evalcase.contract.records import Observed

P = ParamSpec("P")
S = TypeVar("S")
T = TypeVar("T")

# name -> one-line summary (the first line of the module's docstring; a test keeps them equal)
GRADERS: dict[str, str] = {
    "state_match": "The final business state matches final_state_check.",
    "tool_calls": "The agent made the expected tool calls, in the expected order.",
    "tool_policy": "Required tools were called and forbidden tools were not.",
    "side_effect_policy": "Every side-effect call met its policy at the moment it was made.",
    "trace_rule": "CEL rules over the trace and the case's named rule checks hold.",
    "conversation_end": "The conversation ended by a stop signal, not by a limit.",
    "exact_match": "The answer equals the reference.",
    "must_include": "The answer contains every required phrase.",
    "must_not_include": "The answer contains none of the forbidden phrases.",
    "regex": "The answer matches the required patterns and none of the forbidden ones.",
    "json_schema": "The answer is JSON valid against a schema.",
    "constraints": "The answer respects length, sentence and format constraints.",
    "no_privacy_leak": "The answer reveals no personal data of anyone but the current user.",
    "no_promise": "The answer makes none of the promises the case names.",
    "citation": "Cited passages exist, were retrieved and are in force.",
    "evidence_recall_at_k": "Retrieval found the gold evidence within the first k passages.",
    "llm_rubric": "An LLM judge scores the answer on the rubric's dimensions.",
    "human": "A person reviews the attempt (evalcase review).",
}

NAMES: frozenset[str] = frozenset(GRADERS)

# Old names still accepted in cases (docs/grading.md) and what they became: kept in the
# contract, where grading's configuration is read (evalcase.grade.spec) without this module.
RENAMED = _RENAMED


def _no_needs(spec: Any) -> str | None:
    return None


@dataclass(frozen=True)
class LoadedGrader:
    name: str
    version: str
    doc: str
    grade: Callable[..., Any]
    plugin: bool = False
    # What the case must configure (see the module documentation); None: it can grade.
    needs: Callable[[Any], str | None] = _no_needs


def observed(attempt: Observed | Mapping[str, Any]) -> Observed:
    """``attempt`` as graders read it: an :class:`Observed` as it is, a record's JSON object
    read with the initial state it carries (:meth:`Observed.of`)."""
    return attempt if isinstance(attempt, Observed) else Observed.of(attempt)


def reads_attempt(
    func: Callable[Concatenate[S, Observed, P], T],
) -> Callable[Concatenate[S, Observed | Mapping[str, Any], P], T]:
    """A grader's (or rule check's) ``grade`` that also takes a record's JSON object (read
    as :func:`observed` reads it): the body reads the typed :class:`Observed` only."""

    @functools.wraps(func)
    def call(spec: S, attempt: Observed | Mapping[str, Any], /, *a: P.args, **k: P.kwargs) -> T:
        return func(spec, observed(attempt), *a, **k)

    return call


def _typed(grade: Callable[..., Any]) -> Callable[..., Any]:
    """``grade`` taking a case's judge fields as a mapping as well as a ``JudgeSpec``."""

    def call(spec: Any, *rest: Any) -> Any:
        if isinstance(spec, Mapping):
            from evalcase.grade.spec import judge_spec_from_case

            spec = judge_spec_from_case(spec)
        return grade(spec, *rest)

    return call


def load(name: str) -> LoadedGrader:
    """The built-in grader called ``name``. KeyError if there is none."""
    if name not in GRADERS:
        raise KeyError(f"no built-in grader named {name!r}")
    module = importlib.import_module(f"evalcase.grade.graders.{name}")
    return LoadedGrader(
        name, str(module.VERSION), module.__doc__ or "", _typed(module.grade), needs=module.needs
    )


def needs(name: str, spec: Any) -> str | None:
    """Why the built-in grader ``name`` cannot grade a case with judge view ``spec``
    (None: it can). Unknown names are not this module's to judge (EC303 reports them)."""
    if name not in GRADERS:
        return None
    return load(name).needs(spec)
