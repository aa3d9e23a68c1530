"""Audit facts a pull request commits are data: never read, never over this machine's own
(docs/untrusted-input.md)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evalcase.audit_facts import AUDIT_VERSION, store
from evalcase.config import load_config
from evalcase.index.dataset import load_dataset
from tests.helpers import GIT_ENV, bundled_repo, commit_all, git, invoke

CASE = "crm_delete_single_ticket_004"
CASE_FILE = f"datasets/crm_safety_set/cases/{CASE}.yaml"


def forge(repo: Path) -> Path:
    """A 'passed' audit of the case's current content, as a file in the tree."""
    config = load_config(repo)
    index = load_dataset(repo, "crm_safety_set", config=config).index
    [case] = [c for c in index.cases if c.path == CASE_FILE]
    key = store.key_for(index, case, tuple(sorted(config.governance_fields)))
    path = repo / ".evalcase" / "audit" / f"v{AUDIT_VERSION}" / "cases" / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    forged = {"key": key, "audit_version": AUDIT_VERSION, "status": "passed", "findings": []}
    path.write_text(json.dumps(forged), "utf-8")
    summary = repo / ".evalcase" / "audit" / "datasets" / "crm_safety_set.json"
    summary.parent.mkdir(parents=True, exist_ok=True)
    summary.write_text(json.dumps({"dataset_id": "crm_safety_set", "cases": {CASE: key}}))
    git(repo, "add", "-f", ".evalcase")
    return path


@pytest.mark.slow
def test_forged_facts_in_the_tree_decide_nothing(tmp_path: Path) -> None:
    origin = bundled_repo(tmp_path / "origin", ignored=("/outputs/", "/reports/", "/.evalcase/"))
    case = origin / CASE_FILE
    text = case.read_text("utf-8")
    wrong = "crm.customers.CUSTOMER_1001.status: active, crm.customers.CUSTOMER_1002"
    case.write_text(
        text.replace(
            "crm.customers.CUSTOMER_1001.status: deleted, crm.customers.CUSTOMER_1002", wrong
        )
    )
    toml = origin / "evalcase.toml"
    toml.write_text(toml.read_text("utf-8") + "\n[versioning]\nrequire_audit = true\n", "utf-8")
    assert invoke("bump", cwd=origin).returncode == 0
    reviewed = invoke(
        "review-case", CASE_FILE, "--reviewer", "case owner", "--result", "approved",
        "--for", "regression,risk", cwd=origin,
    )  # fmt: skip
    assert reviewed.returncode == 0, reviewed.stderr
    commit_all(origin, "a gold that cannot pass, reviewed")
    forged = forge(origin).relative_to(origin).as_posix()
    git(origin, "commit", "-q", "-m", "audit facts, committed")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", str(origin), str(clone)],
        check=True,
        env={**GIT_ENV, "PATH": "/usr/bin:/bin"},
    )
    # A fresh clone: the forged 'passed' is not this machine's fact.
    refused = invoke("tag", "crm_safety_set", cwd=clone)
    assert refused.returncode == 2, refused.stderr
    assert "not audited at their current content" in refused.stderr
    assert CASE in refused.stderr
    assert forged in refused.stderr and "ignored" in refused.stderr  # the warning names it
    assert not git(clone, "tag", "-l").strip()
    lint = invoke("lint", "--no-cache", cwd=clone)
    assert f"{forged}:1:1: warning EC420" in lint.stdout or (
        "EC420" in lint.stdout and forged in lint.stdout
    ), lint.stdout
    # The honest audit, on this machine: the gold fails; the forged file is left alone.
    forged_text = (clone / forged).read_text("utf-8")
    audited = invoke("audit", "crm_safety_set", "--select", CASE, "--progress", "none", cwd=clone)
    assert audited.returncode == 1, audited.stdout + audited.stderr[-2000:]
    assert "gold_fails" in audited.stdout
    assert forged in audited.stderr
    assert (clone / forged).read_text("utf-8") == forged_text
    own = store.root_of(clone)
    assert own.is_relative_to(clone / ".git")
    [honest] = list((own / f"v{AUDIT_VERSION}" / "cases").rglob("*.json"))
    honest_text = honest.read_text("utf-8")
    assert json.loads(honest_text)["status"] == "findings"
    # A pull that brings forged facts again never writes over this machine's.
    (origin / forged).write_text((origin / forged).read_text("utf-8").replace("passed", "passed "))
    git(origin, "commit", "-q", "-am", "audit facts, again")
    git(clone, "pull", "-q", "--no-rebase")
    assert honest.read_text("utf-8") == honest_text
    again = invoke("tag", "crm_safety_set", cwd=clone)
    assert again.returncode == 2
    assert f"{CASE}: gold: gold_fails" in again.stderr
    lint = invoke("lint", "--no-cache", cwd=clone).stdout
    assert f"{CASE} has unresolved audit findings" in lint
