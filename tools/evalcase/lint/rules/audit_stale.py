"""A counted case whose stored audit is stale, missing, or has unresolved findings.

`evalcase audit DATASET` runs the case's answer key and a panel of degenerate agents
through the runner and stores the result by the case's content digest
(docs/audit.md). Once a dataset has been audited on this machine (the store under
``.git/evalcase/audit/`` names it), this rule reads that store, and only that store: it
never runs an agent, so the commit hook stays as fast as before. It reports a counted
case (not ``observation``) of an audited dataset

- whose content (or a fixture it uses) changed since its audit: the audit is stale;
- that no audit covers at all (a new case);
- whose audit has unresolved findings (a gold that fails its own case, a degenerate
  agent that passes it): ``evalcase tag`` refuses such a release.

A dataset never audited here gets no finding: what has not been stored is not known.
The store is this machine's, in the git directory (``.git/evalcase/audit/``), where no
commit reaches; audit facts committed to the tree (under ``.evalcase/audit/``, where they
lived before) are never read, and each such file is a finding of its own: a pull request
can write them, so they decide nothing (docs/untrusted-input.md).
Run ``evalcase audit DATASET`` to refresh; fix the case or declare a right behaviour
(``audit: {may_pass: [refuse]}``) to resolve a finding.

Passing (audited, nothing changed since)::

    $ evalcase audit refund_regression_set
    $ evalcase lint

Failing (the case changed after its audit)::

    # datasets/refund_regression_set/cases/refund_eligibility_001.yaml
    reference: "…"   # edited: the stored audit is of the old content
"""

from collections.abc import Iterable
from pathlib import Path

from evalcase.audit_facts import store
from evalcase.config import Config
from evalcase.index.digest import case_id_of, dataset_id_of
from evalcase.lint.base import RepoIndex, reporter
from evalcase.lint.semantic import countable
from evalcase.model import Finding, Severity

CODE = "EC420"
NAME = "audit-stale"
SEVERITY = Severity.WARNING
SCOPE = "repo"

# This rule reads the checked cases (with their fixtures) and the audit store.
CASE_LOOKUPS = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    root = Path(config.root)
    for path in store.tracked_facts(root):
        yield report(path, 1, 1, store.tracked_warning([path]))
    if not store.has_store(root):
        return
    governance = tuple(sorted(config.governance_fields))
    audited: dict[str, dict[str, object] | None] = {}
    for case in index.checked_cases():
        if not countable(case):
            continue
        manifest = index.manifests_by_dir.get(case.dataset_dir)
        dataset_id = dataset_id_of(manifest) if manifest is not None else case.dataset_dir
        if dataset_id not in audited:
            audited[dataset_id] = store.read_dataset(root, dataset_id)
        last = audited[dataset_id]
        if last is None:
            continue
        line, col = case.case_id[1:] if case.case_id else (1, 1)
        status = store.case_status(root, index, case, governance, last)
        if status.status == store.MISSING:
            recorded = last.get("cases")
            earlier = recorded.get(case_id_of(case)) if isinstance(recorded, dict) else None
            why = (
                "changed since its audit (the case or a fixture it uses)"
                if status.stale or earlier is not None
                else "has no audit"
            )
            yield report(
                case.path, line, col,
                f"{case_id_of(case)} {why}: run `evalcase audit {dataset_id}`",
            )  # fmt: skip
        elif status.findings:
            shown = "; ".join(status.findings[:2])
            more = f" (+{len(status.findings) - 2} more)" if len(status.findings) > 2 else ""
            yield report(
                case.path, line, col,
                f"{case_id_of(case)} has unresolved audit findings: {shown}{more}; fix the "
                "case or declare the behaviour (audit: {may_pass: [...]}); `evalcase tag` "
                "refuses the release until then",
            )  # fmt: skip
