"""A prompt's template reads a variable the case cannot supply.

Prompt templates are rendered with ``StrictUndefined``: a variable the case does not have
is an error when the run starts, never an empty string in front of a model. Each case is
checked against every prompt it runs with (its own ``prompt`` and its manifest's
``prompts``) and reported at the case: at its ``prompt`` line when it names the prompt,
else at its ``case_id``. A case offers ``input`` (when it has a user turn), ``turns``,
``context`` and ``context.KEY`` for each key of its context, ``now``, ``locale`` and the
prompt's own ``data``; ``user`` templates also get ``turn``. A template that does not parse
is reported the same way.

Passing (the case has ``context.channel``)::

    # fixtures/prompt/intent_router.yaml
    user: "Message ({{ context.channel }}): {{ turn }}"
    # the case
    prompt: intent_router
    context: {channel: app}

Failing::

    prompt: intent_router          # the case has no context.channel
    context: {order_id: ORDER_1}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.contract.prompt import missing
from evalcase.index.digest import text
from evalcase.index.facts import PROMPT, FixtureFacts
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import fixture_kind, listing
from evalcase.model import Finding, Severity

CODE = "EC341"
NAME = "prompt-variable-missing"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# A manifest's prompts apply to every case of its dataset.
CASE_LOOKUPS: tuple[str, ...] = ("dataset",)

report = reporter(CODE, NAME, SEVERITY)


def _prompt(index: RepoIndex, prompt_id: str) -> FixtureFacts | None:
    found = index.fixtures_by_id.get(prompt_id)
    return found[0] if found and fixture_kind(found[0]) == PROMPT else None  # else EC340


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        manifest = index.manifests_by_dir.get(case.dataset_dir)
        runs: dict[str, tuple[int, int]] = {}
        at = (case.case_id[1], case.case_id[2]) if case.case_id else (1, 1)
        for target, _line, _col in manifest.prompts if manifest else ():
            runs.setdefault(str(target), at)
        for _field, kind, target, line, col in case.refs:
            if kind == PROMPT:
                runs[target] = (line, col)
        for prompt_id, (line, col) in runs.items():
            prompt = _prompt(index, prompt_id)
            if prompt is None:
                continue
            where = f"prompt {prompt_id} ({prompt.path})"
            for field, variable, t_line, _ in prompt.prompt_vars:
                if not variable:
                    yield report(
                        case.path, line, col,
                        f"{where}: its {field} template (line {t_line}) does not parse; "
                        "fix the template",
                    )  # fmt: skip
            needed: dict[str, list[str]] = {}
            for field, variable, _, _ in prompt.prompt_vars:
                if variable and missing([variable], case.prompt_offers, user=field == "user"):
                    needed.setdefault(variable, []).append(field)
            for variable, fields in needed.items():
                offered = [o for o in case.prompt_offers if o != "data"]
                yield report(
                    case.path,
                    line,
                    col,
                    f"{where} reads {{{{ {variable} }}}} in {', '.join(dict.fromkeys(fields))}, "
                    f"which case {text(case.case_id) or case.path} cannot supply (it offers "
                    f"{listing(offered)}); add it to the case's context, or use another prompt",
                )
