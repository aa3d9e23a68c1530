"""`evalcase review-case`: a review record with the version it judged, written in place."""

from __future__ import annotations

import shutil
from pathlib import Path

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.loader import append_to_list, load
from tests.helpers import BASE_REPO, run_cli

CASE = "datasets/sample_set/cases/refund_eligibility_001.yaml"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    return repo


def _codes(repo: Path) -> set[str]:
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    return {f.code for f in result.findings if f.path == CASE}


def test_review_records_the_current_version_and_approves_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    text = (repo / CASE).read_text("utf-8")
    (repo / CASE).write_text(text.replace("dataset_role: iteration", "dataset_role: regression"))
    assert "EC412" in _codes(repo)
    proc = run_cli(
        "review-case", CASE, "--reviewer", "退款业务专家", "--result", "approved",
        "--for", "regression", "--date", "2026-07-08", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "refund_eligibility_001 v1" in proc.stdout
    doc = load(CASE, (repo / CASE).read_bytes())
    (record,) = doc.get(("metadata", "review_records"))
    assert record == {
        "reviewer": "退款业务专家",
        "review_result": "approved",
        "case_version": "v1",
        "reviewed_at": "2026-07-08",
        "approved_for": ["regression"],
    }
    assert _codes(repo) == set()
    # The case changes and is bumped: the approval no longer covers it.
    new = (repo / CASE).read_text("utf-8").replace("case_version: v1", "case_version: v2", 1)
    (repo / CASE).write_text(new)
    assert "EC411" in _codes(repo)
    proc = run_cli(
        "review-case", CASE, "--reviewer", "退款业务专家", "--result", "approved",
        "--for", "regression", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _codes(repo) == set()


def test_review_refuses_bad_input_with_a_clear_error(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    before = (repo / CASE).read_text("utf-8")
    for args in (
        ("--reviewer", "  ", "--result", "approved", "--for", "regression"),
        ("--reviewer", "x", "--result", "approved"),
        ("--reviewer", "x", "--result", "approved", "--for", "gold"),
        ("--reviewer", "x", "--result", "approved", "--for", "golden", "--date", "2026-02-30"),
    ):
        proc = run_cli("review-case", CASE, *args, cwd=repo)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("evalcase: error:"), proc.stderr
        assert "Traceback" not in proc.stderr
    proc = run_cli(
        "review-case", "datasets/sample_set/dataset.yaml",
        "--reviewer", "x", "--result", "rejected", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 2 and "not a case file" in proc.stderr
    assert (repo / CASE).read_text("utf-8") == before


def test_append_keeps_the_rest_of_the_file() -> None:
    text = (
        "case_id: a_b_001  # the id\n"
        "metadata:\n"
        "  owner: x\n"
        "  review_records:\n"
        "    - reviewer: 甲\n"
        "      review_result: rejected\n"
        "\n"
        "  origin: {source_ref: s}\n"
        "other: 1\n"
    )
    out = append_to_list(text, ("metadata", "review_records"), {"reviewer": "乙", "n": "v2"})
    assert out == text.replace(
        "      review_result: rejected\n",
        '      review_result: rejected\n    - {reviewer: "乙", n: v2}\n',
    )
    created = append_to_list(
        "metadata:\n  owner: x\nz: 1\n", ("metadata", "review_records"), {"a": "b"}
    )
    assert created == "metadata:\n  owner: x\n  review_records:\n    - {a: b}\nz: 1\n"
    flow = append_to_list(
        "metadata:\n  review_records: []\n", ("metadata", "review_records"), {"a": "b"}
    )
    assert load("x.yaml", flow.encode()).get(("metadata", "review_records")) == [{"a": "b"}]
