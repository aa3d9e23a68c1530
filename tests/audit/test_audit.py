"""`evalcase audit` on real repositories: the gold, the panel, may_pass, the store."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from evalcase.audit.runner import AuditOptions, AuditResult, audit
from evalcase.config import load_config
from evalcase.contract.attempt import AttemptRecord
from evalcase.run.executors import AttemptJob
from tests.helpers import bundled_repo, commit_all, git, invoke

IGNORED = ("/outputs/", "/reports/", "/.evalcase/")
REFUND = "datasets/refund_regression_set/cases"
SUBMIT = f"{REFUND}/tool_refund_submit_confirmed_010.yaml"
PROMISE = f"{REFUND}/llm_safety_no_arrival_promise_003.yaml"
RUBRIC_LINE = "    - {type: llm_rubric, weight: 0.6}\n"
REGEX_LINE = "    - {type: regex, weight: 0.4, must_not_match:"
REFUSAL_REGEX = (
    '    - {type: regex, weight: 0.4, must_match: ["(没办法|无法|can\'t|cannot)"], must_not_match:'
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return bundled_repo(tmp_path / "repo", ignored=IGNORED)


def edit(repo: Path, rel: str, old: str, new: str) -> None:
    path = repo / rel
    text = path.read_text("utf-8")
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new, 1), "utf-8")


def audit_one(repo: Path, case_id: str, **kw: object) -> AuditResult:
    options = AuditOptions(select=(case_id,), concurrency=2, **kw)  # type: ignore[arg-type]
    return audit(load_config(repo), "refund_regression_set", options)


@pytest.mark.slow
def test_a_gold_that_contradicts_its_final_state_check_is_a_finding(repo: Path) -> None:
    case = "tool_refund_submit_confirmed_010"
    first = audit_one(repo, case)
    assert first.cases[case]["outcomes"]["gold"] == "passes"
    assert not first.cases[case]["findings"]
    edit(
        repo, SUBMIT,
        "expected: {orders.ORDER_6001.refund_status: refund_submitted,",
        "expected: {orders.ORDER_6001.refund_status: refund_completed,",
    )  # fmt: skip
    second = audit_one(repo, case)
    assert second.audited == (case,), "a new content is audited again"
    facts = second.cases[case]
    assert facts["status"] == "findings"
    gold = [f for f in facts["findings"] if f["agent"] == "gold"]
    assert [f["kind"] for f in gold] == ["gold_fails"]
    assert gold[0]["graders"] == ["state_match"]
    assert "refund_completed" in gold[0]["reason"]
    assert not second.ok
    # Unchanged content is read from the store, not run again.
    assert audit_one(repo, case).audited == ()


def test_the_audits_runs_share_one_executor_session(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On Ray, each session is a connection and a job whose workers start afresh: the
    audit's eight runs (gold, the panel, the mutants) go through one. The ray executor is
    replaced by the local pool, recording how it is used."""
    from contextlib import contextmanager

    from evalcase.run import executors
    from evalcase.run.executors.local import LocalExecutor

    events: list[str] = []

    class Recording(LocalExecutor):
        name = "ray"

        @contextmanager
        def session(self) -> Iterator[None]:
            events.append("enter")
            yield
            events.append("exit")

        def run(self, jobs: Iterable[AttemptJob], concurrency: int) -> Iterator[AttemptRecord]:
            events.append("run")
            yield from super().run(jobs, concurrency)

    monkeypatch.setitem(executors.EXECUTORS, "ray", lambda config, address: Recording())
    result = audit_one(repo, "tool_refund_submit_confirmed_010", executor="ray")
    assert result.cases["tool_refund_submit_confirmed_010"]["outcomes"]["gold"] == "passes"
    assert events == ["enter", *["run"] * 8, "exit"], events


@pytest.mark.slow
def test_a_case_the_silent_agent_passes_is_a_finding_naming_it(repo: Path) -> None:
    edit(repo, PROMISE, RUBRIC_LINE, "")  # only the judge failed the silent agent
    done = invoke(
        "audit", "refund_regression_set", "--select", "llm_safety_no_arrival_promise_003",
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "silent: panel_passes (regex, trace_rule)" in done.stdout
    assert "1 with findings" in done.stdout


@pytest.mark.slow
def test_judge_pending_is_not_shown_to_fail_never_a_pass(repo: Path) -> None:
    facts = audit_one(repo, "llm_safety_no_arrival_promise_003").cases[
        "llm_safety_no_arrival_promise_003"
    ]
    assert facts["outcomes"]["silent"] == "not_shown_to_fail"
    assert facts["status"] == "unproven"
    assert not facts["findings"]
    assert any("silent is not shown to fail" in w for w in facts["warnings"])


@pytest.mark.slow
def test_a_refusal_case_declares_that_refuse_may_pass(repo: Path) -> None:
    case = "llm_safety_no_arrival_promise_003"
    edit(repo, PROMISE, RUBRIC_LINE, "")
    edit(repo, PROMISE, REGEX_LINE, REFUSAL_REGEX)
    undeclared = audit_one(repo, case).cases[case]
    assert [(f["agent"], f["kind"]) for f in undeclared["findings"]] == [("refuse", "panel_passes")]
    assert undeclared["outcomes"]["silent"] == "fails"
    edit(
        repo, PROMISE, "rubric: refund_service_quality_v1\n",
        "rubric: refund_service_quality_v1\naudit:\n  may_pass: [refuse]\n"
        "  reason: declining to promise a date is the right answer\n",
    )  # fmt: skip
    lint = invoke("lint", "--no-cache", cwd=repo).stdout
    assert " EC1" not in lint, lint  # the field is part of the contract (EC419: not reviewed)
    declared = audit_one(repo, case).cases[case]
    assert declared["outcomes"]["refuse"] == "declared"
    assert declared["findings"] == []
    assert declared["status"] == "passed"
    assert declared["declared"] == ["refuse"]
    edit(repo, PROMISE, "may_pass: [refuse]", "may_pass: [lazy]")
    assert "EC104" in invoke("lint", "--no-cache", cwd=repo).stdout  # not a panel agent


@pytest.mark.slow
def test_tag_refuses_unresolved_findings_and_records_an_override(repo: Path) -> None:
    edit(
        repo, SUBMIT,
        "expected: {orders.ORDER_6001.refund_status: refund_submitted,",
        "expected: {orders.ORDER_6001.refund_status: refund_completed,",
    )  # fmt: skip
    assert invoke("bump", cwd=repo).returncode == 0
    reviewed = invoke(
        "review-case", SUBMIT, "--reviewer", "case owner", "--result", "approved",
        "--for", "golden", cwd=repo,
    )  # fmt: skip
    assert reviewed.returncode == 0, reviewed.stderr
    commit_all(repo, "a gold that cannot pass, reviewed")
    audited = invoke(
        "audit", "refund_regression_set", "--select", "tool_refund_submit_confirmed_010",
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    assert audited.returncode == 1, audited.stderr[-2000:]
    lint = invoke("lint", "--no-cache", cwd=repo)
    assert "EC420" in lint.stdout and "tool_refund_submit_confirmed_010" in lint.stdout
    refused = invoke("tag", "refund_regression_set", cwd=repo)
    assert refused.returncode == 2
    assert "audit problems" in refused.stderr
    assert "tool_refund_submit_confirmed_010: gold: gold_fails (state_match)" in refused.stderr
    assert not git(repo, "tag", "-l").strip()
    empty = invoke("tag", "refund_regression_set", "--override-audit", " ", cwd=repo)
    assert empty.returncode == 2 and "needs a reason" in empty.stderr
    accepted = invoke(
        "tag", "refund_regression_set", "--override-audit", "known gold defect, fixed in v2",
        cwd=repo,
    )  # fmt: skip
    assert accepted.returncode == 0, accepted.stderr
    message = git(repo, "cat-file", "-p", "refund_regression_set@v1")
    assert "audit-override: known gold defect, fixed in v2" in message
    assert "audit-unresolved: tool_refund_submit_confirmed_010: gold: gold_fails" in message


@pytest.mark.slow
def test_require_audit_makes_an_unaudited_release_a_refusal(repo: Path) -> None:
    plain = invoke("tag", "english_support_set", cwd=repo)
    assert plain.returncode == 0, plain.stderr
    assert "have no audit" in plain.stderr
    toml = repo / "evalcase.toml"
    toml.write_text(toml.read_text("utf-8") + "\n[versioning]\nrequire_audit = true\n", "utf-8")
    commit_all(repo, "releases need an audit")
    refused = invoke("tag", "crm_safety_set", cwd=repo)
    assert refused.returncode == 2
    assert "not audited at their current content" in refused.stderr
    assert invoke("audit", "crm_safety_set", "--progress", "none", cwd=repo).returncode == 0
    assert invoke("tag", "crm_safety_set", cwd=repo).returncode == 0


@pytest.mark.slow
def test_an_interrupted_audit_resumes_its_runs(repo: Path) -> None:
    import json
    import shutil

    case = "refund_eligibility_001"
    first = audit_one(repo, case, keep_runs=True)
    from evalcase.audit_facts import AUDIT_VERSION
    from evalcase.audit_facts.store import root_of

    work = next((root_of(repo) / "work").iterdir())
    # As if interrupted: the facts were never written, the refuse run stopped midway.
    shutil.rmtree(root_of(repo) / f"v{AUDIT_VERSION}")
    refuse = next(work.glob(f"runs/*/{first.runs['refuse']}"))
    (refuse / "attempts.jsonl").write_text("", "utf-8")
    meta = json.loads((refuse / "run.json").read_text("utf-8"))
    (refuse / "run.json").write_text(json.dumps({**meta, "status": "interrupted"}), "utf-8")
    again = audit_one(repo, case)
    assert again.runs == first.runs, "the same runs, resumed, not new ones"
    assert again.cases[case]["outcomes"] == first.cases[case]["outcomes"]
    assert not work.exists(), "the runs are removed once the facts are stored"


@pytest.mark.slow
def test_a_run_report_shows_each_cases_audit_status(repo: Path) -> None:
    import json

    picked = ("--select", "llm_intent_*")
    audited = invoke("audit", "english_support_set", *picked, "--progress", "none", cwd=repo)
    assert audited.returncode == 0, audited.stderr[-2000:]
    edit(
        repo, "datasets/english_support_set/cases/llm_intent_complaint_005.yaml",
        "generation_config: {temperature: 0}", "generation_config: {temperature: 0.1}",
    )  # fmt: skip
    done = invoke(
        "run", "english_support_set", *picked, "--agent", "english_agent", "--allow-dirty",
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    [report] = list((repo / "reports").glob("*/*/report.json"))
    audit_section = json.loads(report.read_text("utf-8"))["audit"]
    assert audit_section["cases"]["llm_intent_cancel_order_003"] == "passed"
    # The run ran content the audit never saw: not its audit's status.
    assert audit_section["cases"]["llm_intent_complaint_005"] == "not audited"
    assert "### Audit" in (report.parent / "report.md").read_text("utf-8")


@pytest.mark.slow
def test_a_report_lint_and_tag_give_one_audit_status_whatever_the_governance(
    repo: Path,
) -> None:
    """42.8: after an audit, a case's title is edited (governance: its audit key stays,
    its run digest does not) and committed. The run's report said "not audited" while
    lint and tag counted it audited: all three now ask the store one way, and a re-grade
    keeps the report's status."""
    import json

    from evalcase.audit_facts import release
    from evalcase.index.dataset import load_dataset

    picked = ("--select", "llm_intent_*")
    audited = invoke("audit", "english_support_set", *picked, "--progress", "none", cwd=repo)
    assert audited.returncode == 0, audited.stderr[-2000:]
    case = "datasets/english_support_set/cases/llm_intent_cancel_order_003.yaml"
    edit(repo, case, "title: Undoing", "title: Reverting")
    commit_all(repo, "a clearer title")
    done = invoke(
        "run", "english_support_set", *picked, "--agent", "english_agent",
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    [report] = list((repo / "reports").glob("*/*/report.json"))
    statuses = json.loads(report.read_text("utf-8"))["audit"]["cases"]

    linted = invoke("lint", "--no-cache", "--format", "json", cwd=repo)
    stale = {f["path"] for f in json.loads(linted.stdout) if f["code"] == "EC420"}
    dataset = load_dataset(repo, "english_support_set")
    assert dataset.index is not None
    config = load_config(repo)
    gate = release.check(
        repo, dataset.index, tuple(sorted(config.governance_fields)),
        "datasets/english_support_set", "english_support_set",
    )  # fmt: skip
    assert case not in stale and "llm_intent_cancel_order_003" not in gate.unaudited
    assert statuses["llm_intent_cancel_order_003"] == "passed"  # was "not audited"
    for case_id, status in statuses.items():  # the report's word is lint's and tag's
        assert (status == "not audited") == (case_id in gate.unaudited), case_id

    [run_dir] = [p for p in (repo / "outputs").glob("*/*") if (p / "run.json").exists()]
    # The viewer's run page shows the report's status.
    from starlette.testclient import TestClient

    from evalcase.results.view_pages import make_app

    client = TestClient(make_app(config), base_url="http://127.0.0.1:8765")
    page = client.get(f"/runs/{run_dir.name}")
    assert page.status_code == 200, page.text[-2000:]
    [row] = [r for r in page.text.split("<tr>") if "llm_intent_cancel_order_003" in r]
    assert '<td class="audit">passed</td>' in row

    def graded_now(before: set[Path]) -> Path:
        [new] = set((repo / "reports").glob("*/*/**/report.json")) - before
        return new

    seen = set((repo / "reports").glob("*/*/**/report.json"))
    regraded = invoke("grade", run_dir.name, cwd=repo)
    assert regraded.returncode in (0, 1), regraded.stderr[-2000:]
    newest = graded_now(seen)
    assert json.loads(newest.read_text("utf-8"))["audit"]["cases"] == statuses

    # The facts changed (this machine's audit of the case is gone): the next grading says so.
    from evalcase.audit_facts.store import root_of

    [facts] = [
        f
        for f in root_of(repo).glob("v*/cases/*/*.json")
        if json.loads(f.read_text("utf-8")).get("case_id") == "llm_intent_cancel_order_003"
    ]
    facts.unlink()
    seen.add(newest)
    again = invoke("grade", run_dir.name, cwd=repo)
    assert again.returncode in (0, 1), again.stderr[-2000:]
    latest = graded_now(seen)
    assert json.loads(latest.read_text("utf-8"))["audit"]["cases"] == {
        **statuses,
        "llm_intent_cancel_order_003": "not audited",
    }
