"""Audit facts on disk: one JSON file per case content and audit version.

Where: in the repository's common git directory, ``.git/evalcase/audit/`` (a case
repository in a subfolder of the work tree: ``.git/evalcase/audit/sub/<folder>/``), where
no commit, pull or checkout can write, and which every work tree of the repository
shares; outside a git repository, the user's cache (``$XDG_CACHE_HOME`` or
``~/.cache``) ``evalcase/audit/<digest of the folder's path>/``. Facts are computed on the
machine that audits, like runs; ``evalcase audit`` rebuilds them. Facts a tree carries are
data anyone with a pull request writes: files git tracks under the case repository's
``.evalcase/audit/`` (where facts lived before) are never read, and :func:`tracked_facts`
names them for lint (EC420) and ``evalcase tag`` to warn about (docs/untrusted-input.md)::

    .git/evalcase/audit/
      v<AUDIT_VERSION>/cases/<key[:2]>/<key>.json   one case's audit (CaseAudit.to_dict)
      datasets/<dataset_id>.json                    the last audit of a dataset: its
                                                    version and each case's key
      work/<session>/                               runs, answer keys, resume state

A case's **key** is the digest of its content as versioning sees it (the case's
execution and judging fields, governance and identity left out: the lint facts'
``content_digest``) and of the content of every fixture it references: edit the case
or one of its fixtures and its audit is stale; record a review and it is not. The audit
version is part of the path, so a new panel or analysis makes every stored audit stale.

This module is what lint (EC420) and ``evalcase tag`` import: no runner, no grader, no
agent; it only reads and writes JSON, and computes keys from a ``RepoIndex``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcase.atomic import write_atomic
from evalcase.audit_facts import AUDIT_VERSION
from evalcase.model import FatalError

if TYPE_CHECKING:
    from evalcase.index.facts import CaseFacts
    from evalcase.index.repo import RepoIndex

LEGACY = Path(".evalcase") / "audit"  # in the tree: never read (the module's documentation)

# A case's audit status, as reports, lint and tag read it.
PASSED = "passed"  # the gold passes; every panel agent fails (or is declared)
FINDINGS = "findings"  # at least one unresolved finding
UNPROVEN = "unproven"  # no finding, but a panel agent is not shown to fail (judge pending)
MISSING = "missing"  # no audit of this content at this audit version
STATUSES = (PASSED, UNPROVEN, FINDINGS, MISSING)


def root_of(repo_root: Path) -> Path:
    """Where this machine's audit facts of the case repository at ``repo_root`` live."""
    from evalcase import gitio

    root = repo_root.resolve()
    common = gitio.common_dir(root)
    if common is not None:
        top = gitio.find_top(root)
        rel = root.relative_to(top).as_posix() if top is not None else "."
        base = common / "evalcase" / "audit"
        return base if rel == "." else base / "sub" / rel
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.blake2b(str(root).encode("utf-8"), digest_size=8).hexdigest()
    return Path(cache) / "evalcase" / "audit" / digest


def tracked_facts(repo_root: Path) -> list[str]:
    """Audit facts the tree carries: files git tracks under ``.evalcase/audit/``
    (committed with ``git add -f``, or pulled). Never read; [] when there are none (one
    directory check, then one ``git ls-files``)."""
    if not (repo_root / LEGACY).exists():
        return []
    from evalcase import gitio

    try:
        repo = gitio.Repo(repo_root)
    except FatalError:  # not a git repository: nothing is tracked
        return []
    try:
        return sorted(repo.tracked([LEGACY.as_posix()]))
    except (gitio.GitError, FatalError):
        return []
    finally:
        repo.close()


def tracked_warning(paths: list[str]) -> str:
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return (
        f"audit facts committed to the tree are ignored: {shown} (facts are data a pull "
        "request can write; this machine's own are in the git directory, made by "
        f"`evalcase audit`); remove them: git rm -r --cached {LEGACY.as_posix()}"
    )


def key_of(case_digest: str, fixture_digests: Mapping[str, str]) -> str:
    blob = json.dumps(
        {"case": case_digest, "fixtures": sorted(fixture_digests.items())},
        separators=(",", ":"),
    )
    return hashlib.blake2b(blob.encode("utf-8"), digest_size=16).hexdigest()


def case_keys(
    index: RepoIndex, governance: Collection[str], dataset_dir: str | None = None
) -> dict[str, str]:
    """case ID -> key, for the cases of one dataset folder (every case when None)."""
    from evalcase.index.digest import case_id_of

    return {
        case_id_of(case): key_for(index, case, governance)
        for case in index.cases
        if dataset_dir is None or case.dataset_dir == dataset_dir
    }


def key_for(index: RepoIndex, case: CaseFacts, governance: Collection[str]) -> str:
    """The key of one case: its content digest and its fixtures' (module doc)."""
    from evalcase.index.digest import case_digest, fixture_digest, fixture_id_of

    fixtures = {fixture_id_of(f): fixture_digest(f) for f in index.referenced_fixtures([case])}
    return key_of(case_digest(case, governance), fixtures)


def _case_path(repo_root: Path, key: str, version: str = AUDIT_VERSION) -> Path:
    return root_of(repo_root) / f"v{version}" / "cases" / key[:2] / f"{key}.json"


def _read(path: Path) -> dict[str, Any] | None:
    try:
        loaded = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _write(path: Path, value: Mapping[str, Any]) -> None:
    text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    write_atomic(path, text, parents=True)


def read_case(repo_root: Path, key: str) -> dict[str, Any] | None:
    """The stored audit of this content at the current audit version, if any."""
    found = _read(_case_path(repo_root, key))
    if found is None or found.get("key") != key or found.get("audit_version") != AUDIT_VERSION:
        return None
    return found


def write_case(repo_root: Path, key: str, facts: Mapping[str, Any]) -> None:
    _write(_case_path(repo_root, key), {**facts, "key": key, "audit_version": AUDIT_VERSION})


def read_dataset(repo_root: Path, dataset_id: str) -> dict[str, Any] | None:
    return _read(root_of(repo_root) / "datasets" / f"{dataset_id}.json")


def write_dataset(repo_root: Path, dataset_id: str, summary: Mapping[str, Any]) -> None:
    _write(root_of(repo_root) / "datasets" / f"{dataset_id}.json", summary)


def has_store(repo_root: Path) -> bool:
    return (root_of(repo_root) / "datasets").is_dir()


def stamp(repo_root: Path) -> str:
    """Changes whenever an audit is stored (every audit rewrites its dataset's summary):
    part of lint's whole-run cache key, since EC420 reads the store. One directory
    listing; "" without a store."""
    folder = root_of(repo_root) / "datasets"
    legacy = "legacy;" if (repo_root / LEGACY).exists() else ""  # EC420 names tracked facts
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return legacy
    return legacy + ";".join(f"{e.name}:{e.stat().st_mtime_ns}" for e in entries)


@dataclass(frozen=True)
class CaseStatus:
    case_id: str
    status: str  # one of STATUSES
    findings: tuple[str, ...] = ()  # one line each: "agent: why"
    warnings: tuple[str, ...] = ()
    stale: bool = False  # an earlier content (or audit version) of the case was audited


def status_of(repo_root: Path, case_id: str, key: str, earlier: str | None = None) -> CaseStatus:
    """What the store says of this content of the case. ``earlier``: the key the last
    audit of its dataset recorded for it (a different one makes a missing audit stale)."""
    facts = read_case(repo_root, key)
    if facts is None:
        return CaseStatus(case_id, MISSING, stale=earlier is not None and earlier != key)
    findings = tuple(summary(f) for f in facts.get("findings") or () if isinstance(f, Mapping))
    warnings = tuple(str(w) for w in facts.get("warnings") or ())
    status = str(facts.get("status") or (FINDINGS if findings else PASSED))
    return CaseStatus(case_id, status, findings, warnings)


def summary(finding: Mapping[str, Any]) -> str:
    graders = ", ".join(str(g) for g in finding.get("graders") or ())
    by = f" ({graders})" if graders else ""
    return f"{finding.get('agent')}: {finding.get('kind')}{by}: {finding.get('reason')}"


NOT_AUDITED = "not audited"  # a report's word for MISSING: no audit of the content that ran


def case_status(
    repo_root: Path,
    index: RepoIndex,
    case: CaseFacts,
    governance: Collection[str],
    last: Mapping[str, Any] | None,
) -> CaseStatus:
    """The audit status of this content of the case: the one lookup lint (EC420), ``tag``,
    ``audit``, run reports and the viewer share. The content is the case's key
    (:func:`key_for`: its execution and judging fields and its fixtures; governance left
    out, so recording a review keeps its audit); ``last``: the last audit of its dataset
    (:func:`read_dataset`), whose recorded key makes a missing audit stale."""
    from evalcase.index.digest import case_id_of

    case_id = case_id_of(case)
    earlier = _mapping(_mapping(last).get("cases")).get(case_id)
    return status_of(repo_root, case_id, key_for(index, case, governance), earlier)


def report_statuses(
    repo_root: Path, dataset_id: str, ran: Mapping[str, str | None]
) -> dict[str, str]:
    """case ID -> audit status word, for a run's cases: ``ran`` maps each case to the key
    of the content that ran (:func:`key_for`), None when that content is not known (the
    case changed since a dirty run). A status is :func:`status_of` that key, the lookup
    lint and ``tag`` make; ``not audited`` for a missing audit or an unknown content. {}
    when the dataset was never audited here (a report then says nothing of audits)."""
    last = read_dataset(repo_root, dataset_id)
    if last is None:
        return {}
    recorded = _mapping(last.get("cases"))
    out: dict[str, str] = {}
    for case_id, key in sorted(ran.items()):
        found = None if key is None else status_of(repo_root, case_id, key, recorded.get(case_id))
        out[case_id] = NOT_AUDITED if found is None or found.status == MISSING else found.status
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
