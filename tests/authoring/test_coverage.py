"""Coverage matrix (seed 004 step 4), the required-cell lint rule, and `evalcase stats`."""

from __future__ import annotations

import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.loader import load
from tests.helpers import BASE_REPO, REPO_ROOT, invoke

WORKOUT = "workout_plan_edit_set"
STRUCTURES = ["regular", "ai_generated", "single_exercise", "special"]
OPERATIONS = ["adjust_param", "add", "delete", "replace", "time_compress", "safety_avoid"]


def test_workout_plan_edit_set_shows_the_seeds_matrix() -> None:
    proc = invoke("coverage", WORKOUT, cwd=REPO_ROOT)
    # Its high-risk cells are required, and each holds an approved case.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gap:" not in proc.stdout
    lines = proc.stdout.splitlines()
    assert lines[0] == f"coverage of {WORKOUT}"
    assert lines[1].split() == ["plan_structure", "\\", "operation", *OPERATIONS]
    assert [line.split()[0] for line in lines[2:6]] == STRUCTURES

    report = json.loads(invoke("coverage", WORKOUT, "--format", "json", cwd=REPO_ROOT).stdout)
    assert report["dimensions"] == {"plan_structure": STRUCTURES, "operation": OPERATIONS}
    assert len(report["cells"]) == 24  # 4 x 6: every cell shown, empty ones too
    assert len(report["required"]) == 6 and report["gaps"] == []
    assert sum(c["required"] for c in report["cells"]) == 6
    # Every case sits where its metadata.coverage says, approved ones counted.
    by_cell = {(c["cell"]["plan_structure"], c["cell"]["operation"]): c for c in report["cells"]}
    for path in sorted((REPO_ROOT / "datasets" / WORKOUT / "cases").glob("*.yaml")):
        case = load(path.name, path.read_bytes()).data
        meta = case["metadata"]
        cell = meta.get("coverage")
        if not cell:
            assert case["case_id"] in report["unplaced"]
            continue
        held = by_cell[(cell["plan_structure"], cell["operation"])]
        roles = (
            meta["dataset_role"]
            if isinstance(meta["dataset_role"], list)
            else [meta["dataset_role"]]
        )
        if "observation" in roles:
            assert case["case_id"] in held["observation"]
        elif meta["review_status"] == "approved":
            assert case["case_id"] in held["approved"]
        else:
            assert case["case_id"] in held["other"]


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []

    def handle_data(self, data: str) -> None:
        if data.strip():
            self.cells.append(data.strip())


def test_markdown_and_html_carry_the_same_matrix() -> None:
    md = invoke("coverage", WORKOUT, "--format", "md", cwd=REPO_ROOT).stdout
    rows = [r for r in md.splitlines() if r.startswith("| ")]
    assert rows[0].split(" | ")[1:] == [*OPERATIONS[:-1], OPERATIONS[-1] + " |"]
    assert [r.split(" | ")[0].removeprefix("| ") for r in rows[1:]] == STRUCTURES
    page = invoke("coverage", WORKOUT, "--format", "html", cwd=REPO_ROOT).stdout
    parser = _Cells()
    parser.feed(page)
    assert all(name in parser.cells for name in STRUCTURES + OPERATIONS)


def repo_with_required_cell(tmp_path: Path, status: str, role: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    manifest = repo / "datasets/sample_set/dataset.yaml"
    # Right after the dimensions, so the key lands in `coverage:` whatever follows it.
    manifest.write_text(
        manifest.read_text("utf-8").replace(
            "    user_state: [verified, unverified]\n",
            "    user_state: [verified, unverified]\n"
            "  required:\n    - {item_state: opened, user_state: unverified}\n",
        ),
        "utf-8",
    )
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    text = case.read_text("utf-8")
    text = text.replace("  review_status: draft", f"  review_status: {status}")
    text = text.replace("  dataset_role: iteration", f"  dataset_role: {role}")
    text += "  coverage: {item_state: opened, user_state: unverified}\n"
    if status == "approved":
        text += (
            "  review_records:\n"
            '    - {reviewer: 退款业务专家, review_result: approved, reviewed_at: "2026-07-01",'
            " approved_for: [iteration]}\n"
        )
    case.write_text(text, "utf-8")
    return repo


def codes(repo: Path) -> list[tuple[str, str, int]]:
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    return [
        (f.code, f.path, f.line) for f in result.findings if f.code.startswith(("EC45", "EC31"))
    ]


def test_an_empty_required_cell_is_a_lint_error_until_an_approved_case_holds_it(
    tmp_path: Path,
) -> None:
    draft = repo_with_required_cell(tmp_path / "a", "draft", "iteration")
    assert codes(draft) == [("EC452", "datasets/sample_set/dataset.yaml", 11)]
    message = next(
        f.message
        for f in lint_repository(load_config(draft), use_cache=False, jobs=1).findings
        if f.code == "EC452"
    )
    assert "item_state=opened, user_state=unverified" in message
    assert "refund_eligibility_001.yaml names it but is not approved" in message
    gap = invoke("coverage", "sample_set", cwd=draft)
    assert gap.returncode == 1
    assert "gap: required cell item_state=opened, user_state=unverified" in gap.stdout

    observed = repo_with_required_cell(tmp_path / "b", "approved", "observation")
    assert ("EC452", "datasets/sample_set/dataset.yaml", 11) in codes(observed)

    held = repo_with_required_cell(tmp_path / "c", "approved", "iteration")
    assert codes(held) == []
    ok = invoke("coverage", "sample_set", cwd=held)
    assert ok.returncode == 0 and "gap:" not in ok.stdout


def test_coverage_of_a_dataset_without_dimensions_is_a_clear_error() -> None:
    proc = invoke("coverage", "refund_regression_set", cwd=REPO_ROOT)
    assert proc.returncode == 2
    assert "declares no coverage dimensions" in proc.stderr


@pytest.mark.slow
def test_stats_slices_every_case(tmp_path: Path) -> None:
    proc = invoke("stats", "--format", "json", cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    files = sorted((REPO_ROOT / "datasets").glob("*/cases/*.yaml"))
    assert stats["total"] == len(files)
    assert sum(stats["dataset"].values()) == len(files)
    assert sum(stats["risk_level"].values()) == len(files)
    assert sum(stats["review_status"].values()) == len(files)
    assert set(stats) >= {"case_type", "role", "owner", "source"}
    owners = {load("x", p.read_bytes()).data["metadata"]["owner"] for p in files}
    assert set(stats["owner"]) == owners
    text = invoke("stats", WORKOUT, cwd=REPO_ROOT).stdout
    assert text.startswith("13 cases") and "by review status:" in text
    bad = invoke("stats", "nope_set", cwd=REPO_ROOT)
    assert bad.returncode == 2 and "no dataset nope_set" in bad.stderr
