"""A reference to a fixture, corpus version or knowledge base that does not exist.

Cases name what they depend on by ID: state and conversation fixtures, tool definitions,
rubrics (``fixtures/<kind>/<id>.yaml``), and corpora by their ``corpus_version`` and
``knowledge_base``. A reference that resolves to nothing makes the case impossible to run
or silently changes what it checks (a misspelt forbidden tool forbids nothing).

Tools named in ``expected_tool_sequence``, ``expected_args``, ``side_effect_policy`` and
``tool_schema`` must be among the case's available tools (EC303, EC309), whose
existence is checked where they are offered; so a misspelt tool is reported once.

Passing::

    available_tools: [order_lookup]
    rubric: refund_policy_faithfulness_v1
    environment_requirements:
      corpus_version: refund_policy_2026_07

Failing::

    available_tools: [order_lookpu]       # did you mean 'order_lookup'?
    environment_requirements:
      corpus_version: refund_policy_2026_08
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.facts import CORPUS_VERSION, KNOWLEDGE_BASE, PROMPT
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import EXPECTED_KINDS, did_you_mean, fixture_kinds, listing
from evalcase.model import Finding, Severity
from evalcase.naming import character_problems

CODE = "EC301"
NAME = "unknown-fixture"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

# Tool references that must be available tools: EC303 / EC309 report them when they are not.
DERIVED = frozenset(
    {
        "expected_tool_sequence",
        "expected_calls.tool",
        "expected_args",
        "side_effect_policy.tool",
        "tool_schema",
    }
)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    known = index.fixtures_by_id
    by_kind: dict[str, list[str]] | None = None
    # Fast path: per reference kind, the targets that resolve.
    fine = {
        CORPUS_VERSION: set(index.corpora_by_version) | set(known),
        KNOWLEDGE_BASE: set(index.knowledge_bases),
    }
    for case in index.checked_cases():
        for ref in case.refs:
            if ref[2] in fine.get(ref[1], known):
                continue
            field, kind, target, line, col = ref
            if kind == PROMPT:
                continue  # a prompt that is not a prompt fixture is EC340's
            if index.unresolvable(kind, target):
                continue  # the unreadable fixture file is reported, not each use of it
            if kind == CORPUS_VERSION:
                if target in index.corpora_by_version or target in known or not target:
                    continue  # a non-corpus fixture ID here is EC302's
                message = (
                    f"{field} {target!r}: no corpus fixture has this corpus_version"
                    f"{did_you_mean(target, index.corpora_by_version)}; known corpus versions: "
                    f"{listing(index.corpora_by_version) or 'none'}"
                )
            elif kind == KNOWLEDGE_BASE:
                if target in index.knowledge_bases or not target:
                    continue
                message = (
                    f"{field} {target!r}: no corpus fixture has this knowledge_base"
                    f"{did_you_mean(target, index.knowledge_bases)}; known knowledge bases: "
                    f"{listing(index.knowledge_bases) or 'none'}"
                )
            else:
                if target in known or field in DERIVED or not target:
                    continue
                if by_kind is None:
                    by_kind = {}
                    for fixture_id, fixture_kind in fixture_kinds(index).items():
                        by_kind.setdefault(fixture_kind, []).append(fixture_id)
                kinds = EXPECTED_KINDS.get(kind, (kind,))
                same_kind = [i for k in kinds for i in by_kind.get(k, [])]
                hint = did_you_mean(target, same_kind) or did_you_mean(target, known)
                chars = character_problems(target)
                if chars:
                    hint += f" (it contains {chars}; IDs are ASCII)"
                message = (
                    f"fixture {target!r} in {field} does not exist{hint}; fixtures are "
                    f"referenced by ID: fixtures/{kinds[0]}/<id>.yaml"
                )
            yield report(case.path, line, col, message)
