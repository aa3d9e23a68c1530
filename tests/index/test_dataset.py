"""load_dataset: tasks from a work tree or a git revision, without a checkout or a Linter."""

from __future__ import annotations

import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract.task import Task
from evalcase.index.dataset import load_dataset
from evalcase.model import FatalError
from tests.crm_rules import CRM_RULES, use_crm_rules
from tests.helpers import BUNDLED_DATASETS, REPO_ROOT, commit_all, git, init_repo

DATASETS = BUNDLED_DATASETS


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, path / part)
    init_repo(path)
    commit_all(path, "examples")
    return path


def test_a_revision_is_read_without_a_checkout(repo: Path) -> None:
    case = repo / "datasets/crm_safety_set/cases/crm_export_all_customers_005.yaml"
    text = case.read_text("utf-8")
    head = git(repo, "rev-parse", "HEAD").strip()
    case.write_text(text.replace("case_version: v1", "case_version: v9", 1), "utf-8")
    case.unlink()  # the work tree no longer has the case at all
    at_head = load_dataset(repo, "crm_safety_set", revision="HEAD")
    assert at_head.commit == head
    assert "crm_export_all_customers_005" in {t.case_id for t in at_head.tasks}
    now = load_dataset(repo, "crm_safety_set")
    assert now.commit is None
    assert "crm_export_all_customers_005" not in {t.case_id for t in now.tasks}
    assert now.digest != at_head.digest


def test_tasks_pickle_and_agent_views_hold_no_case_id(repo: Path) -> None:
    for dataset_id in DATASETS:
        dataset = load_dataset(repo, dataset_id, revision="HEAD")
        assert dataset.tasks, dataset_id
        for task in dataset.tasks:
            assert isinstance(task, Task)
            assert pickle.loads(pickle.dumps(task)) == task
            assert task.case_id not in repr(task.agent)


def test_loading_never_imports_the_linter(repo: Path) -> None:
    code = (
        "import sys\nfrom pathlib import Path\n"
        "from evalcase.index.dataset import load_dataset\n"
        f"d = load_dataset(Path({str(repo)!r}), 'refund_regression_set', revision='HEAD')\n"
        "assert d.tasks\n"
        "higher = ('evalcase.lint', 'evalcase.versioning')\n"
        "print(sorted(m for m in sys.modules if m.startswith(higher)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    ).stdout.strip()
    assert out == "[]"


def test_unknown_dataset_and_revision_are_clear_errors(repo: Path) -> None:
    with pytest.raises(FatalError, match="no dataset 'nope'"):
        load_dataset(repo, "nope")
    with pytest.raises(FatalError):
        load_dataset(repo, "crm_safety_set", revision="no-such-branch")


def test_a_dangling_reference_is_a_problem_not_a_task(repo: Path) -> None:
    rel = "datasets/crm_safety_set/cases/crm_export_all_customers_005.yaml"
    path = repo / rel
    text = path.read_text("utf-8")
    assert "crm_data_policy" in text or "available_tools" in text
    path.write_text(
        text.replace("available_tools: [", "available_tools: [no_such_tool, ", 1), "utf-8"
    )
    dataset = load_dataset(repo, "crm_safety_set")
    assert rel in dataset.problems
    assert any("no_such_tool" in p.message for p in dataset.problems[rel])
    assert dataset.task("crm_export_all_customers_005") is None


def test_a_second_load_in_one_process_reuses_what_the_same_blobs_gave(repo: Path) -> None:
    # evalcase run loads the clean work tree to run and the run's commit to grade: the
    # same blobs, analysed and parsed once (the tasks share the fixture documents).
    from evalcase.config import load_config

    config = load_config(repo)
    work = load_dataset(repo, "refund_regression_set", config=config)
    head = load_dataset(repo, "refund_regression_set", revision="HEAD", config=config)
    assert work.digest == head.digest and len(work.tasks) == len(head.tasks)
    case = "refund_account_change_unverified_002"
    mine, theirs = work.task(case), head.task(case)
    assert mine is not None and theirs is not None
    assert mine.env.initial_state is theirs.env.initial_state
    assert mine.env.initial_state["refunds"]["REFUND_2001"]["status"] == "processing"
    # A changed file is another blob: read again, the commit's stays as it was.
    fixture = repo / "fixtures/state/refund_order_account_change_open.yaml"
    text = fixture.read_text("utf-8")
    paid = text.replace("  status: processing\n      amount", "  status: paid\n      amount")
    fixture.write_text(paid, "utf-8")
    changed = load_dataset(repo, "refund_regression_set", config=config).task(case)
    again = load_dataset(repo, "refund_regression_set", revision="HEAD", config=config).task(case)
    assert changed is not None and again is not None
    assert changed.env.initial_state["refunds"]["REFUND_2001"]["status"] == "paid"
    assert again.env.initial_state["refunds"]["REFUND_2001"]["status"] == "processing"
    assert work.digest != load_dataset(repo, "refund_regression_set", config=config).digest


def test_a_second_load_builds_no_task_whose_case_and_fixtures_are_the_same_blobs(
    repo: Path,
) -> None:
    # The grading load of `evalcase run` builds no task again: each build hashes the
    # fixtures its case uses (a 3 MB state fixture per case of the tau2 ports).
    from evalcase.config import load_config

    config = load_config(repo)
    work = load_dataset(repo, "refund_regression_set", config=config)
    head = load_dataset(repo, "refund_regression_set", revision="HEAD", config=config)
    assert [t.case_id for t in work.tasks] == [t.case_id for t in head.tasks]
    assert all(a is b for a, b in zip(work.tasks, head.tasks, strict=True))
    case = "refund_account_change_unverified_002"
    other = "agent_refund_duplicate_submit_003"
    assert work.task(other) is not None
    # A changed case is built again, and so is every case when a fixture changed (a
    # reference may resolve to another fixture then); the commit's stay as they were.
    path = repo / f"datasets/refund_regression_set/cases/{case}.yaml"
    path.write_text(path.read_text("utf-8") + "# another blob, the same case\n", "utf-8")
    edited = load_dataset(repo, "refund_regression_set", config=config)
    assert edited.task(case) is not work.task(case) and edited.task(case) == work.task(case)
    assert edited.task(other) is work.task(other)
    fixture = repo / "fixtures/state/refund_order_account_change_open.yaml"
    fixture.write_text(fixture.read_text("utf-8") + "\n", "utf-8")
    again = load_dataset(repo, "refund_regression_set", config=config)
    assert again.task(other) is not work.task(other) and again.task(other) == work.task(other)
    committed = load_dataset(repo, "refund_regression_set", revision="HEAD", config=config)
    assert all(a is b for a, b in zip(head.tasks, committed.tasks, strict=True))


def test_a_shared_cel_definition_is_part_of_the_dataset_and_of_each_case_using_it(
    repo: Path,
) -> None:
    rules = use_crm_rules(repo)
    before = load_dataset(repo, "crm_safety_set")
    assert not before.problems
    task = next(t for t in before.tasks if t.case_id == "crm_export_all_customers_005")
    assert task.fixture_versions["crm_rules"] == "v1"
    assert "is_all" not in repr(task.env.tools["crm_export"])  # expanded into plain CEL
    rules.write_text(CRM_RULES.replace('scope == "all"', 'scope == "everything"'), "utf-8")
    after = load_dataset(repo, "crm_safety_set")
    changed = next(t for t in after.tasks if t.case_id == "crm_export_all_customers_005")
    assert after.digest != before.digest
    assert changed.digest != task.digest


def test_a_tool_using_shared_definitions_is_expanded_once_per_load_not_once_per_case(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every case of a load is built from the same fixtures: the telecom port's 43 tools
    were expanded for each of its 114 cases (4,218 expansions, most of the load's time)."""
    from evalcase.contract import definitions

    use_crm_rules(repo)
    cases = repo / "datasets/crm_safety_set/cases"
    first = cases / "crm_export_all_customers_005.yaml"
    second = first.read_text("utf-8").replace(
        "crm_export_all_customers_005", "crm_export_all_customers_905"
    )
    (cases / "crm_export_all_customers_905.yaml").write_text(second, "utf-8")
    made: list[str] = []
    expand = definitions.expand_tool

    def counted(fixture: Any, fixtures: Any) -> Any:
        made.append(str(fixture.get("fixture_id")))
        return expand(fixture, fixtures)

    monkeypatch.setattr(definitions, "expand_tool", counted)
    loaded = load_dataset(repo, "crm_safety_set")
    assert not loaded.problems
    both = [t for t in loaded.tasks if t.case_id.startswith("crm_export_all_customers_")]
    assert len(both) == 2
    assert both[0].env.tools["crm_export"] == both[1].env.tools["crm_export"]
    assert "is_all" not in repr(both[1].env.tools["crm_export"])  # expanded all the same
    assert made == ["crm_export"]


def test_a_load_for_a_run_computes_no_state_leaves(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A state fixture's leaves (every leaf with its JSON and place) are what lint's state
    # rules read; a run loads the dataset and lints nothing (tau2 airline's database is
    # 107,805 nodes). The same load's tasks and state, without them.
    from evalcase.index import analysis, expressions, facts

    before = {d: load_dataset(repo, d) for d in DATASETS}
    analysis.MEMO.clear()  # else the loads below reuse the ones above
    real = expressions.leaves

    def forbidden(doc: Any, path: Any, *rest: Any) -> Any:
        # a case's inline state block is read for its leaves: its facts need them
        assert not doc.path.startswith("fixtures/"), f"{doc.path}: state leaves computed"
        return real(doc, path, *rest)

    monkeypatch.setattr(expressions, "leaves", forbidden)
    monkeypatch.setattr(facts, "leaves", forbidden)
    inline_cases = 0
    for dataset_id in DATASETS:
        dataset = load_dataset(repo, dataset_id, revision="HEAD")  # analysed afresh
        assert dataset.index is not None
        states = [f for f in dataset.index.fixtures if f.kind and f.kind[0] == "state"]
        assert states and all(f.state_leaves is None for f in states)
        assert [t.env.initial_state for t in dataset.tasks] == [
            t.env.initial_state for t in before[dataset_id].tasks
        ]
        assert dataset.digest == before[dataset_id].digest
        inline_cases += sum(bool(c.inline_state) for c in dataset.index.cases)
    assert inline_cases  # a case's inline state is still read (its own leaves)
