"""`evalcase lint` and friends as whole processes: what users and CI see."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalcase.schemas import raw_schemas
from tests.helpers import REPO_ROOT, invoke

CASE = "datasets/refund_regression_set/cases/refund_eligibility_001.yaml"
REQUIRED = raw_schemas()["case.schema.json"]["required"]
METADATA_REQUIRED = raw_schemas()["case.schema.json"]["properties"]["metadata"]["required"]


def lint_json(repo: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    proc = invoke("lint", "--no-cache", "--format", "json", *args, cwd=repo)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.slow
def test_the_repository_lints_clean() -> None:
    proc = invoke("lint", "--no-cache", cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("All checks passed")


def _delete_top_level_key(text: str, key: str) -> str:
    """Remove ``key:`` and its block (indented or list continuation lines)."""
    lines = text.splitlines(keepends=True)
    out, skipping = [], False
    for line in lines:
        if re.match(rf"^{re.escape(key)}:", line):
            skipping = True
            continue
        if skipping and (line.startswith((" ", "-", "\t")) or not line.strip()):
            continue
        skipping = False
        out.append(line)
    return "".join(out)


@pytest.mark.slow
@pytest.mark.parametrize("field", REQUIRED)
def test_deleting_a_required_field_names_it(example_repo: Path, field: str) -> None:
    case = example_repo / CASE
    case.write_text(_delete_top_level_key(case.read_text("utf-8"), field), "utf-8")
    code, findings = lint_json(example_repo, CASE)
    assert code == 1
    matches = [f for f in findings if f["code"] == "EC101" and f["path"] == CASE]
    assert matches, findings
    assert any(f"'{field}'" in str(f["message"]) for f in matches)
    # The enclosing mapping is the whole document: line 1.
    assert any(f["line"] == 1 for f in matches)


@pytest.mark.slow
@pytest.mark.parametrize("field", METADATA_REQUIRED)
def test_deleting_a_required_metadata_field_points_at_metadata(
    example_repo: Path, field: str
) -> None:
    case = example_repo / CASE
    lines = case.read_text("utf-8").splitlines(keepends=True)
    metadata_line = next(i for i, line in enumerate(lines, 1) if line.startswith("metadata:"))
    kept = []
    skipping = False
    for line in lines:
        if line.startswith(f"  {field}:"):
            skipping = True
            continue
        if skipping and (line.startswith("    ") or line.startswith("  -")):
            continue
        skipping = False
        kept.append(line)
    case.write_text("".join(kept), "utf-8")
    code, findings = lint_json(example_repo, CASE)
    assert code == 1
    assert any(
        f["code"] == "EC101" and f["line"] == metadata_line and f"'{field}'" in str(f["message"])
        for f in findings
    ), findings


@pytest.mark.slow
def test_bad_enum_value_is_reported_at_the_value(example_repo: Path) -> None:
    case = example_repo / CASE
    text = case.read_text("utf-8")
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("risk_level:"))
    case.write_text(text.replace("risk_level: P1", "risk_level: P7"), "utf-8")
    code, findings = lint_json(example_repo)
    assert code == 1
    (finding,) = [f for f in findings if f["code"] == "EC104"]
    assert (finding["path"], finding["line"], finding["column"]) == (CASE, line, 13)
    assert "P0, P1, P2, P3" in str(finding["message"])


def test_duplicate_key_finding_names_both_lines(example_repo: Path) -> None:
    case = example_repo / CASE
    text = case.read_text("utf-8")
    total = len(text.splitlines())
    first = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.startswith("title:"))
    case.write_text(text + "title: 又一个标题\n", "utf-8")
    code, findings = lint_json(example_repo)
    assert code == 1
    (finding,) = [f for f in findings if f["code"] == "EC002"]
    assert finding["line"] == total + 1
    assert f"line {first}" in str(finding["message"]) and f"line {total + 1}" in str(
        finding["message"]
    )


def test_all_findings_are_reported_not_the_first_per_file(example_repo: Path) -> None:
    case = example_repo / CASE
    text = case.read_text("utf-8").replace("risk_level: P1", "risk_level: P9")
    text = text.replace("difficulty: Medium", "difficulty: Impossible")
    case.write_text(text.replace("negative_behavior:", "negtive_behavior:"), "utf-8")
    _code, findings = lint_json(example_repo)
    assert {f["code"] for f in findings if f["path"] == CASE} >= {"EC104", "EC102"}
    assert len([f for f in findings if f["path"] == CASE]) >= 3


@pytest.mark.slow
def test_select_ignore_statistics_exit_zero(example_repo: Path) -> None:
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    assert invoke("lint", "--no-cache", "--ignore", "EC104", cwd=example_repo).returncode in (0, 1)
    ignored = invoke("lint", "--no-cache", "--format", "json", "--ignore", "EC1", cwd=example_repo)
    assert not [f for f in json.loads(ignored.stdout) if str(f["code"]).startswith("EC1")]
    selected = invoke("lint", "--no-cache", "--select", "EC104", "--statistics", cwd=example_repo)
    assert selected.returncode == 1
    assert re.search(r"^\s+1\s+EC104\s+not-allowed-value$", selected.stdout, re.M)
    zero = invoke("lint", "--no-cache", "--exit-zero", cwd=example_repo)
    assert zero.returncode == 0 and "EC104" in zero.stdout
    assert invoke("lint", "--select", "XX999", cwd=example_repo).returncode == 2


def test_github_format_is_chosen_inside_github_actions(example_repo: Path) -> None:
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    proc = invoke("lint", "--no-cache", cwd=example_repo, env={"GITHUB_ACTIONS": "true"})
    assert proc.returncode == 1
    assert proc.stdout.startswith("::error file=" + CASE)


def test_bad_configuration_is_a_fatal_error(example_repo: Path) -> None:
    (example_repo / "evalcase.toml").write_text("[lint]\nmax_depht = 3\n")
    proc = invoke("lint", cwd=example_repo)
    assert proc.returncode == 2
    assert "max_depht" in proc.stderr and "Traceback" not in proc.stderr
    (example_repo / "evalcase.toml").write_text("[lint\n")
    proc = invoke("lint", cwd=example_repo)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_config_in_pyproject_is_read(example_repo: Path) -> None:
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    (example_repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.evalcase.lint]\nignore = ["EC104"]\n'
    )
    proc = invoke("lint", "--no-cache", cwd=example_repo)
    assert "EC104" not in proc.stdout


@pytest.mark.slow
def test_rules_and_rule_commands() -> None:
    listing = invoke("rules", cwd=REPO_ROOT)
    assert listing.returncode == 0
    assert re.search(r"^EC104\s+not-allowed-value\s+error", listing.stdout, re.M)
    explained = invoke("rule", "EC102", cwd=REPO_ROOT)
    assert explained.returncode == 0
    assert "Passing::" in explained.stdout and "Failing::" in explained.stdout
    assert "# evalcase: disable=EC102" in explained.stdout
    assert invoke("rule", "EC999", cwd=REPO_ROOT).returncode == 2


@pytest.mark.slow
def test_paths_narrow_the_report_not_the_context(example_repo: Path) -> None:
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    other = "datasets/crm_safety_set"
    assert invoke("lint", "--no-cache", other, cwd=example_repo).returncode == 0
    assert invoke("lint", "--no-cache", CASE, cwd=example_repo).returncode == 1
    sub = invoke("lint", "--no-cache", "cases/refund_eligibility_001.yaml",
                  cwd=example_repo / "datasets/refund_regression_set")  # fmt: skip
    assert sub.returncode == 1 and CASE in sub.stdout


def test_graders_lists_what_evaluator_config_may_name() -> None:
    proc = invoke("graders", cwd=REPO_ROOT)
    assert proc.returncode == 0
    assert re.search(r"^  state_match\s+\S", proc.stdout, re.M)
    assert re.search(r"^  no_privacy_leak\s+\S", proc.stdout, re.M)
