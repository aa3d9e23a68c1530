"""A case's ``prompt`` or a manifest's ``prompts`` names no prompt fixture.

Prompts are versioned fixtures, ``fixtures/prompt/<prompt_id>.yaml`` with ``kind:
prompt``. A name that resolves to nothing (or to a fixture of another kind) stops
``evalcase run`` before the first attempt; lint says so where the name is written.

Passing::

    prompt: intent_router          # fixtures/prompt/intent_router.yaml

Failing::

    prompt: intent_ruoter          # did you mean 'intent_router'?
    prompts: [refund_service_quality_v1]   # a rubric, not a prompt
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.facts import PROMPT
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import KIND_WORDS, did_you_mean, fixture_kinds, listing
from evalcase.model import Finding, Severity

CODE = "EC340"
NAME = "unknown-prompt"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def problem(target: str, field: str, kinds: dict[str, str], prompts: list[str]) -> str | None:
    """Why ``target`` is not a prompt, or None when it is one."""
    actual = kinds.get(target)
    if actual == PROMPT:
        return None
    if actual is not None:
        return (
            f"{target!r} in {field} is {KIND_WORDS.get(actual, actual)}, not a prompt; "
            f"prompts: {listing(prompts) or 'none'}"
        )
    return (
        f"prompt {target!r} in {field} does not exist{did_you_mean(target, prompts)}; prompts "
        f"are fixtures/prompt/<id>.yaml with kind: prompt (known: {listing(prompts) or 'none'})"
    )


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    kinds = fixture_kinds(index)
    prompts = sorted(i for i, k in kinds.items() if k == PROMPT)
    for case in index.checked_cases():
        for field, kind, target, line, col in case.refs:
            if kind != PROMPT or index.unresolvable(kind, target):
                continue
            why = problem(target, field, kinds, prompts)
            if why is not None:
                yield report(case.path, line, col, why)
    for manifest in index.manifests:
        for target, line, col in manifest.prompts:
            why = problem(str(target), "prompts", kinds, prompts)
            if why is not None:
                yield report(manifest.path, line, col, why)
