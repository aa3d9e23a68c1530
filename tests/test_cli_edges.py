"""A newcomer's first hour (issue 11): no false "All checks passed", the team's own
vocabularies, a closed pipe, and --root wherever it is written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import (
    BASE_REPO,
    BUNDLED_DATASETS,
    GIT_ENV,
    REPO_ROOT,
    commit_all,
    init_repo,
    invoke,
)

CASE = "datasets/refund_regression_set/cases/refund_eligibility_001.yaml"


def _popen_closed_stdout(*args: str, cwd: Path) -> tuple[int, str]:
    """Run evalcase with its standard output a pipe whose reading end is already closed
    (as after `| head -1`), so that its first write meets a broken pipe."""
    env = {**os.environ, **GIT_ENV}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO_ROOT / "tools"), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcase", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    return proc.wait(), stderr


# --- a closed pipe is normal use ------------------------------------------------------


@pytest.mark.parametrize("args", [("rule", "EC104"), ("rules",), ("graders",)])
def test_a_closed_pipe_ends_quietly(args: tuple[str, ...]) -> None:
    code, stderr = _popen_closed_stdout(*args, cwd=REPO_ROOT)
    assert (code, stderr) == (0, "")


@pytest.mark.slow
def test_a_closed_pipe_keeps_lints_verdict(example_repo: Path) -> None:
    """`evalcase lint | head` under `set -o pipefail` must still fail on errors."""
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    code, stderr = _popen_closed_stdout("lint", "--no-cache", cwd=example_repo)
    assert (code, stderr) == (1, "")


def test_head_one_through_a_real_shell_pipe() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}
    proc = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m evalcase rule EC104 | head -1"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("EC104 not-allowed-value")
    assert proc.stderr == ""


# --- --root before or after the command, on every command ------------------------------


def _repo_with_severity(tmp_path: Path) -> Path:
    repo = tmp_path / "cases"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, repo / part)
    (repo / "evalcase.toml").write_text('[lint]\nseverity = { EC104 = "warning" }\n')
    return repo


@pytest.mark.slow
@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_root_is_accepted_before_and_after_every_command(tmp_path: Path, before: bool) -> None:
    repo = _repo_with_severity(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        full = ("--root", str(repo), *args) if before else (*args, "--root", str(repo))
        proc = invoke(*full, cwd=elsewhere)
        assert "no such option" not in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
        return proc

    lint = cli("lint", "--no-cache")
    assert lint.returncode == 0 and "All checks passed" in lint.stdout, lint.stderr
    # The repository's configuration is the one in force: EC104 is a warning there.
    assert "EC104  not-allowed-value            warning" in cli("rules").stdout
    assert "here: warning" in cli("rule", "EC104").stdout
    assert cli("graders").returncode == 0
    datasets = cli("datasets", "--format", "json")
    assert {d["dataset_id"] for d in json.loads(datasets.stdout)} == set(BUNDLED_DATASETS)
    # Versioning commands need git: the message says so, and names the folder given.
    for args in (
        ("tag", "crm_safety_set"),
        ("diff", "crm_safety_set@HEAD", "crm_safety_set"),
        ("export", "crm_safety_set@v1"),
        ("bump",),
    ):
        proc = cli(*args)
        assert proc.returncode == 2 and "not a git repository" in proc.stderr, (args, proc)
        assert str(repo) in proc.stderr
    init_repo(repo)
    commit_all(repo, "cases")
    assert cli("tag", "crm_safety_set").stdout.strip() == "created tag crm_safety_set@v1"
    assert cli("export", "crm_safety_set@v1").stdout.count("\n") == 6
    assert cli("diff", "crm_safety_set@v1", "crm_safety_set").returncode == 0
    assert cli("bump").stdout.strip() == "nothing to bump"


@pytest.mark.slow
def test_root_after_the_command_wins(tmp_path: Path) -> None:
    repo = _repo_with_severity(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = invoke("--root", str(empty), "lint", "--no-cache", "--root", str(repo), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


# --- no false "All checks passed" ----------------------------------------------------


def test_a_folder_with_nothing_to_check_is_a_usage_error(tmp_path: Path) -> None:
    proc = invoke("lint", cwd=tmp_path)
    assert proc.returncode == 2
    assert "All checks passed" not in proc.stdout
    assert "nothing to check" in proc.stderr and "datasets/" in proc.stderr


def test_an_empty_git_repository_is_a_usage_error(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "app")
    (repo / "datasets").mkdir()
    proc = invoke("lint", cwd=repo)
    assert proc.returncode == 2 and "nothing to check" in proc.stderr


def test_the_error_points_at_cases_kept_below(tmp_path: Path) -> None:
    app = tmp_path / "app"
    shutil.copytree(BASE_REPO, app / "evals")
    proc = invoke("lint", cwd=app)
    assert proc.returncode == 2
    assert "Cases were found in" in proc.stderr and "evals" in proc.stderr


@pytest.mark.parametrize(
    "path",
    [
        "datasets/nope",
        "datasets/refund_regression_set/cases/refund_eligibilty_001.yaml",  # misspelled
    ],
)
def test_a_path_that_does_not_exist_is_a_usage_error(example_repo: Path, path: str) -> None:
    proc = invoke("lint", "--no-cache", path, cwd=example_repo)
    assert proc.returncode == 2
    assert "All checks passed" not in proc.stdout
    assert f"{path}: no such file or folder" in proc.stderr


@pytest.mark.slow
def test_a_path_with_nothing_to_check_is_a_usage_error(example_repo: Path) -> None:
    (example_repo / "notes").mkdir()
    (example_repo / "notes" / "todo.txt").write_text("x\n")
    for path in ("notes", "notes/todo.txt", "datasets/refund_regression_set/README.md"):
        if path.endswith("README.md"):
            (example_repo / path).write_text("# notes\n")
        proc = invoke("lint", "--no-cache", path, cwd=example_repo)
        assert proc.returncode == 2, (path, proc.stdout)
        assert "nothing to check there" in proc.stderr


def test_a_path_outside_the_case_repository_is_a_usage_error(
    example_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("a: 1\n")
    proc = invoke("lint", "--no-cache", str(outside), cwd=example_repo)
    assert proc.returncode == 2 and "outside the case repository" in proc.stderr


# --- the team's own vocabularies -----------------------------------------------------


def _warehouse_repo(tmp_path: Path) -> Path:
    """A new git repository: one dataset whose case uses words of its own."""
    repo = tmp_path / "warehouse"
    shutil.copytree(BASE_REPO, repo)
    cases = repo / "datasets" / "sample_set" / "cases"
    old = cases / "refund_eligibility_001.yaml"
    text = old.read_text("utf-8").replace("refund_eligibility_001", "warehouse_picking_route_001")
    # The one case of this dataset: the base repository's other cases use refund words.
    for case in cases.glob("*.yaml"):
        case.unlink()
    (cases / "warehouse_picking_route_001.yaml").write_text(text, "utf-8")
    init_repo(repo)
    commit_all(repo, "first dataset")
    return repo


def test_a_new_repository_with_its_own_words_and_no_configuration_lints_clean(
    tmp_path: Path,
) -> None:
    repo = _warehouse_repo(tmp_path)
    assert not (repo / "evalcase.toml").exists() and not (repo / "pyproject.toml").exists()
    proc = invoke("lint", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("All checks passed")


def test_a_word_outside_the_configured_vocabulary_names_the_vocabulary(tmp_path: Path) -> None:
    repo = _warehouse_repo(tmp_path)
    (repo / "evalcase.toml").write_text(
        '[naming]\ndomains = ["warehouse"]\nabilities = ["packing"]\n'
        'extend_abilities = ["returns"]\n'
    )
    proc = invoke("lint", "--no-cache", "--format", "json", cwd=repo)
    assert proc.returncode == 1
    (finding,) = json.loads(proc.stdout)
    assert finding["code"] == "EC202"
    message = str(finding["message"])
    assert "ability 'picking' is not in the ability vocabulary of" in message
    assert "evalcase.toml [naming] abilities + extend_abilities" in message
    assert "packing, returns" in message
    assert "domain" not in message.split(";")[0].split("ability")[0]


def test_the_vocabulary_source_names_pyproject(tmp_path: Path) -> None:
    repo = _warehouse_repo(tmp_path)
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "w"\n\n[tool.evalcase.naming]\ndomains = ["store"]\n'
    )
    proc = invoke("lint", "--no-cache", "--format", "json", cwd=repo)
    (finding,) = json.loads(proc.stdout)
    assert "domain 'warehouse'" in str(finding["message"])
    assert "pyproject.toml [tool.evalcase.naming] domains" in str(finding["message"])


def test_this_repository_keeps_its_vocabulary_in_its_own_configuration() -> None:
    import tomllib

    from evalcase import config

    assert not hasattr(config, "DEFAULT_DOMAINS") and not hasattr(config, "DEFAULT_ABILITIES")
    own = tomllib.loads((REPO_ROOT / "evalcase.toml").read_text("utf-8"))
    assert "refund" in own["naming"]["domains"] and "eligibility" in own["naming"]["abilities"]


def test_the_nearest_case_repository_is_found_from_inside_it(tmp_path: Path) -> None:
    """A case repository nested in a configured one (a sample kept in tests/) is its own."""
    outer = tmp_path / "outer"
    shutil.copytree(BASE_REPO, outer / "tests" / "sample")
    (outer / "evalcase.toml").write_text('[naming]\ndomains = ["shop"]\n')
    (outer / "datasets").mkdir()
    inner = outer / "tests" / "sample" / "datasets" / "sample_set"
    proc = invoke("lint", "--no-cache", cwd=inner)
    assert proc.returncode == 0 and proc.stdout.startswith("All checks passed"), proc.stdout
    # From the outer repository, its own (empty) datasets/ is what there is to check.
    assert invoke("lint", cwd=outer).returncode == 2
