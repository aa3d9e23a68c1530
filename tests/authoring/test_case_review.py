"""`evalcase review-case`: a review record with the version it judged, written in place."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.index.digest import reviewed_content_digest
from evalcase.lint.api import lint_repository
from evalcase.loader import load
from evalcase.yamlwrite import append_to_list
from tests.helpers import BASE_REPO, invoke

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
    proc = invoke(
        "review-case", CASE, "--reviewer", "退款业务专家", "--result", "approved",
        "--for", "regression", "--date", "2026-07-08", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "refund_eligibility_001 v1" in proc.stdout
    doc = load(CASE, (repo / CASE).read_bytes())
    (record,) = doc.get(("metadata", "review_records"))
    digest = reviewed_content_digest(doc.data, ("title", "metadata"))
    assert record == {
        "reviewer": "退款业务专家",
        "review_result": "approved",
        "case_id": "refund_eligibility_001",
        "case_version": "v1",
        "content_digest": digest,
        "reviewed_at": "2026-07-08",
        "approved_for": ["regression"],
    }
    assert doc.get(("metadata", "review_status")) == "approved"  # no EC403 left behind
    assert _codes(repo) == set()
    fmt = invoke("fmt", "--check", CASE, cwd=repo)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    # The case changes and is bumped: the approval no longer covers it.
    new = (repo / CASE).read_text("utf-8").replace("case_version: v1", "case_version: v2", 1)
    (repo / CASE).write_text(new)
    assert "EC411" in _codes(repo)
    proc = invoke(
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
        proc = invoke("review-case", CASE, *args, cwd=repo)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("evalcase: error:"), proc.stderr
        assert "Traceback" not in proc.stderr
    proc = invoke(
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


def _review(repo: Path, path: str, result: str, *extra: str) -> None:
    proc = invoke(
        "review-case", path, "--reviewer", "退款业务专家", "--result", result, *extra, cwd=repo
    )
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_review_status_follows_every_result_and_fmt_agrees(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    for result, extra in (
        ("needs_revision", ("--fix", "补充负向行为")),
        ("rejected", ()),
        ("approved", ("--for", "regression")),
    ):
        _review(repo, CASE, result, *extra)
        doc = load(CASE, (repo / CASE).read_bytes())
        assert doc.get(("metadata", "review_status")) == result
        fmt = invoke("fmt", "--check", CASE, cwd=repo)
        assert fmt.returncode == 0, (result, fmt.stdout + fmt.stderr)
    assert len(doc.get(("metadata", "review_records"))) == 3


def test_copied_approvals_and_edits_after_approval_are_findings(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    _review(repo, CASE, "approved", "--for", "regression")
    assert _codes(repo) == set()
    # Five cases copied from the approved one, approvals included.
    text = (repo / CASE).read_text("utf-8")
    copies = []
    for n in range(2, 7):
        name = f"refund_eligibility_{n:03d}"
        copy = CASE.replace("refund_eligibility_001", name)
        body = re.sub(r"^case_id: .*$", f"case_id: {name}", text, count=1, flags=re.M)
        body = body.replace("能不能退？", f"能不能退？（第 {n} 单）")  # not EC417's duplicate
        (repo / copy).write_text(body, "utf-8")
        copies.append(copy)
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    copied = {f.path for f in result.findings if f.code == "EC419"}
    assert copied == set(copies)
    first = next(f for f in result.findings if f.code == "EC419" and f.path == copies[0])
    assert "refund_eligibility_001" in (repo / copies[0]).read_text().splitlines()[first.line - 1]
    assert "reviewed case 'refund_eligibility_001'" in first.message
    # The original is edited after its approval, without a case_version bump.
    edited = text.replace("expected_behavior:\n", "expected_behavior:\n  - 先核对签收时间。\n", 1)
    assert edited != text
    (repo / CASE).write_text(edited, "utf-8")
    assert "EC419" in _codes(repo)
    # A governance edit (tags, owner) is not a change of what was reviewed.
    (repo / CASE).write_text(text.replace("tags: [refund]", "tags: [refund, policy]"), "utf-8")
    assert "EC419" not in _codes(repo)


def test_repeated_for_options_are_merged_into_one_approval(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    text = (repo / CASE).read_text("utf-8")
    (repo / CASE).write_text(
        text.replace("dataset_role: iteration", "dataset_role: [golden, regression]")
    )
    assert {"EC403", "EC412"} <= _codes(repo)  # golden unapproved, regression too
    proc = invoke(
        "review-case", CASE, "--reviewer", "退款业务专家", "--result", "approved",
        "--for", "golden", "--for", "regression,golden", "--date", "2026-07-08", cwd=repo,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = load(CASE, (repo / CASE).read_bytes())
    (record,) = doc.get(("metadata", "review_records"))
    assert record["approved_for"] == ["golden", "regression"]
    assert _codes(repo) == set()
