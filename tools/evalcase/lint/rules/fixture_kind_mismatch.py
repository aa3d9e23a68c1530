"""A reference to a fixture of the wrong kind (a state fixture where a tool is expected...).

Each field expects one kind: ``available_tools``, ``environment.tools`` and
``forbidden_tools`` tool definitions; ``state.fixtures`` and ``initial_state.fixtures``
state fixtures; ``context.fixtures`` state or conversation fixtures; ``rubric`` and
``evaluator_config.judge.rubric`` rubrics; ``environment_requirements.corpus_version``
the corpus_version of a corpus. A fixture of another kind loads as nonsense at run time.

Passing::

    initial_state:
      fixtures: [refund_order_headphone_signed_10d]

Failing::

    initial_state:
      fixtures: [order_lookup]      # a tool definition, not a state fixture
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.facts import CORPUS_VERSION, KNOWLEDGE_BASE, PROMPT
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import EXPECTED_KINDS, KIND_WORDS, fixture_kinds
from evalcase.model import Finding, Severity

CODE = "EC302"
NAME = "fixture-kind-mismatch"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

_DERIVED = frozenset(
    {
        "expected_tool_sequence",
        "expected_calls.tool",
        "expected_args",
        "side_effect_policy.tool",
        "tool_schema",
    }
)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    kinds = fixture_kinds(index)
    # Fast path: per reference kind, the targets that are fine.
    fine: dict[str, set[str]] = {
        kind: {i for i, k in kinds.items() if k in wanted}
        for kind, wanted in EXPECTED_KINDS.items()
    }
    fine[CORPUS_VERSION] = set(index.corpora_by_version)
    fine[KNOWLEDGE_BASE] = set(index.knowledge_bases)
    for case in index.checked_cases():
        for ref in case.refs:
            ok = fine.get(ref[1])
            if ok is not None and ref[2] in ok:
                continue
            field, kind, target, line, col = ref
            if kind == PROMPT:
                continue  # a prompt that is not a prompt fixture is EC340's
            if kind == KNOWLEDGE_BASE:
                continue  # EC301
            expected = EXPECTED_KINDS.get(kind)
            if expected is not None:
                actual = kinds.get(target)
                # Unknown (EC301), right kind, or a tool checked where it is offered.
                if actual is None or actual in expected or field in _DERIVED:
                    continue
                fixture = index.fixtures_by_id[target][0]
                wanted = " or ".join(KIND_WORDS.get(k, k) for k in expected)
                yield report(
                    case.path,
                    line,
                    col,
                    f"{target!r} in {field} is {KIND_WORDS.get(actual, actual)} "
                    f"({fixture.path}), but {field} expects {wanted}",
                )
            elif kind == CORPUS_VERSION and target not in index.corpora_by_version:
                actual = kinds.get(target)
                if actual is None:
                    continue  # EC301
                fixture = index.fixtures_by_id[target][0]
                if actual == "corpus":
                    version = fixture.corpus_version
                    shown = f"; its corpus_version is {version!r}" if version else ""
                    message = (
                        f"{field} {target!r} is the ID of a corpus fixture, not a corpus "
                        f"version{shown}: write the corpus_version"
                    )
                else:
                    message = (
                        f"{field} {target!r} is {KIND_WORDS.get(actual, actual)} "
                        f"({fixture.path}), but {field} names a corpus by its corpus_version"
                    )
                yield report(case.path, line, col, message)
