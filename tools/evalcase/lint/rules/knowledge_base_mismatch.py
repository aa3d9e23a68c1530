"""A case whose knowledge base does not hold the corpus version it requires.

``environment.knowledge_base`` says which knowledge base the agent retrieves from;
``environment_requirements.corpus_version`` says which corpus version the case's gold
evidence holds for. When that corpus belongs to another knowledge base, the agent
searches one corpus while it is judged against another. Reported on the
``knowledge_base`` line, with the corpus version as the related place.

Passing::

    environment: {knowledge_base: refund_policy}
    environment_requirements: {corpus_version: refund_policy_2026_07}   # of refund_policy

Failing::

    environment: {knowledge_base: crm_policy}
    environment_requirements: {corpus_version: refund_policy_2026_07}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.facts import CORPUS_VERSION, KNOWLEDGE_BASE
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity

CODE = "EC607"
NAME = "knowledge-base-mismatch"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        bases = [r for r in case.refs if r[1] == KNOWLEDGE_BASE]
        versions = [r for r in case.refs if r[1] == CORPUS_VERSION]
        if not bases or not versions:
            continue
        base = bases[0][2]
        for _field, _kind, version, line, col in versions:
            corpora = index.resolve(CORPUS_VERSION, version)
            if not corpora:
                continue  # EC301 reports an unknown corpus version
            owners = sorted({c.knowledge_base or "none" for c in corpora})
            if base in owners:
                continue
            # On the knowledge_base: it is what disagrees with the corpus the gold
            # evidence holds for (the corpus version is shown as the related place).
            yield report(
                case.path,
                bases[0][3],
                bases[0][4],
                f"environment.knowledge_base is {base!r}, but the required corpus version "
                f"{version!r} belongs to knowledge base {', '.join(owners)}; retrieval and "
                "judging would use different corpora: make them agree",
                ((case.path, line, col),),
            )
