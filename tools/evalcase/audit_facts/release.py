"""What ``evalcase tag`` asks of the audit store before a release (docs/audit.md).

``check(repo_root, index, governance, dataset_dir, dataset_id)`` reads the stored audit
of every counted case (not ``observation``) of the dataset at its content in the commit
being tagged, and sorts the cases into those with **unresolved findings** (a release is
refused: a gold that fails its own case, a degenerate agent that passes it) and those
**not audited** at that content (refused too under ``[versioning] require_audit``, else
named in a warning). ``unproven`` cases (only the judge could fail a panel agent) are
neither: the audit could not show a defect. Nothing here runs an agent: like lint, the
release reads only what ``evalcase audit`` stored.

``override_lines(reason, gate)`` is what an override (``--override-audit REASON``) adds
to the tag message: the reason and every case it overrides, so the release says what it
went out with.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalcase.audit_facts import AUDIT_VERSION, store

if TYPE_CHECKING:
    from evalcase.index.repo import RepoIndex


@dataclass(frozen=True)
class ReleaseAudit:
    unresolved: tuple[str, ...]  # "case_id: finding" lines
    unaudited: tuple[str, ...]  # case IDs without a current audit
    unproven: tuple[str, ...]  # case IDs only a judge could fail a panel agent on

    def problems(self, require: bool) -> list[str]:
        out = [f"  {line}" for line in self.unresolved]
        if require and self.unaudited:
            shown = ", ".join(self.unaudited[:10])
            more = f" ... and {len(self.unaudited) - 10} more" if len(self.unaudited) > 10 else ""
            out.append(f"  not audited at their current content: {shown}{more}")
        return out


def check(
    repo_root: Path,
    index: RepoIndex,
    governance: Collection[str],
    dataset_dir: str,
    dataset_id: str,
) -> ReleaseAudit:
    from evalcase.index.digest import case_id_of

    unresolved: list[str] = []
    unaudited: list[str] = []
    unproven: list[str] = []
    last = store.read_dataset(repo_root, dataset_id)
    for case in sorted(index.cases, key=lambda c: c.path):
        if case.dataset_dir != dataset_dir or "observation" in case.roles:
            continue
        case_id = case_id_of(case)
        status = store.case_status(repo_root, index, case, governance, last)
        if status.status == store.MISSING:
            unaudited.append(case_id)
        elif status.status == store.UNPROVEN:
            unproven.append(case_id)
        unresolved += [f"{case_id}: {line}" for line in status.findings]
    return ReleaseAudit(tuple(unresolved), tuple(unaudited), tuple(unproven))


def override_lines(reason: str, gate: ReleaseAudit) -> list[str]:
    lines = [f"audit-override: {' '.join(reason.split())}", f"audit-version: {AUDIT_VERSION}"]
    lines += [f"audit-unresolved: {line}" for line in gate.unresolved]
    lines += [f"audit-unaudited: {case_id}" for case_id in gate.unaudited]
    return lines
