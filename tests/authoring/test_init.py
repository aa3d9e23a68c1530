"""`evalcase init`: a new repository that lints, formats and runs its hooks at once."""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest
from ruamel.yaml import YAML

from evalcase.authoring.init import SCHEMA_MAP, Hooks, init_repository
from evalcase.loader import load
from evalcase.model import FatalError
from tests.helpers import commit_all, git, identify, init_repo, invoke
from tests.published_hook import PublishedHook, run


def test_init_writes_a_repository_that_lints_clean(tmp_path: Path) -> None:
    target = tmp_path / "cases"
    proc = invoke(
        "init", str(target), "--domain", "shop,crm", "--ability", "order,refund",
        "--owner", "shop_eval_team", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "case shop_order_shipped_status_001" in proc.stdout
    config = tomllib.loads((target / "evalcase.toml").read_text("utf-8"))
    assert config["naming"] == {"domains": ["shop", "crm"], "abilities": ["order", "refund"]}
    for name in (".gitignore", ".github/workflows/evalcase.yml", ".pre-commit-config.yaml"):
        assert (target / name).is_file()
    ignored = (target / ".gitignore").read_text("utf-8").split()
    assert {"/outputs/", "/reports/", ".evalcase_cache/"} <= set(ignored)
    linted = invoke("lint", cwd=target)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "All checks passed (5 files)" in linted.stdout
    formatted = invoke("fmt", "--check", cwd=target)
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    # The example runs: its task builds (state, tool behaviour, expected calls).
    from evalcase.index.dataset import load_dataset

    dataset = load_dataset(target, "shop_regression_set")
    assert dataset.problems == {} and len(dataset.tasks) == 1
    task = dataset.tasks[0]
    assert task.env.initial_state["orders"]["ORDER_1001"]["status"] == "shipped"
    assert [c.tool for c in task.judge.expected_calls.any_of[0].calls] == ["order_lookup"]


def test_the_example_uses_the_teams_own_vocabulary(tmp_path: Path) -> None:
    result = init_repository(tmp_path / "r", ("fitness",), ("edit",), "coach_team")
    assert result.case_id == "fitness_edit_shipped_status_001"
    # A word outside the vocabulary is what lint would catch: the example is inside it.
    text = (tmp_path / "r/evalcase.toml").read_text("utf-8")
    assert 'domains = ["fitness"]' in text


def test_the_editor_mapping_covers_every_file_and_its_schemas_accept_them(
    tmp_path: Path,
) -> None:
    root = tmp_path / "r"
    init_repository(root)
    settings = json.loads((root / ".vscode/settings.json").read_text("utf-8"))
    mapping = settings["yaml.schemas"]
    assert set(mapping) == {f"./schemas/{name}" for name in SCHEMA_MAP}
    yaml_files = [p.relative_to(root).as_posix() for p in root.rglob("*.yaml")]
    yaml_files = [p for p in yaml_files if p.startswith(("datasets/", "fixtures/"))]
    assert len(yaml_files) == 5
    store = {p.name: json.loads(p.read_text("utf-8")) for p in (root / "schemas").glob("*.json")}
    registry = _registry(store)
    for rel in yaml_files:
        matches = [
            schema
            for schema, globs in mapping.items()
            if any(fnmatch.fnmatch(rel, g.replace("**/", "*")) for g in globs)
        ]
        assert len(matches) == 1, rel
        schema = store[matches[0].removeprefix("./schemas/")]
        data = load(rel, (root / rel).read_bytes()).data
        validator = jsonschema.Draft202012Validator(schema, registry=registry)
        assert not list(validator.iter_errors(data)), rel
    broken = load("x", (root / yaml_files[0]).read_bytes()).data
    broken["unknown_field_for_the_editor"] = 1
    schema_name = next(
        s for s, g in mapping.items() if fnmatch.fnmatch(yaml_files[0], g[0].replace("**/", "*"))
    )
    validator = jsonschema.Draft202012Validator(
        store[schema_name.removeprefix("./schemas/")], registry=registry
    )
    assert list(validator.iter_errors(broken))


def _registry(store: dict[str, dict[str, object]]) -> object:
    from referencing import Registry, Resource

    return Registry().with_resources(
        (name, Resource.from_contents(schema)) for name, schema in store.items()
    )


def test_the_ci_workflow_is_a_valid_github_workflow(tmp_path: Path) -> None:
    root = tmp_path / "r"
    init_repository(root, hooks=Hooks("https://example.invalid/evalcase.git", "abc123"))
    workflow = root / ".github/workflows/evalcase.yml"
    proc = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema",
         "vendor.github-workflows", str(workflow)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = workflow.read_text("utf-8")
    assert 'evalcase lint --base "origin/${{ github.base_ref' in text
    assert "evalcase run support_regression_set --suite smoke" in text
    assert "git+https://example.invalid/evalcase.git@abc123" in text


@pytest.mark.parametrize(
    ("domains", "message"),
    [(("Shop",), "'Shop' cannot be a case-ID domain"), ((), "at least one domain")],
)
def test_bad_vocabulary_is_a_clear_error(domains: tuple[str, ...], message: str) -> None:
    with pytest.raises(FatalError, match=message):
        init_repository(Path("/nonexistent/never-written"), domains, ("order",))


def test_init_overwrites_nothing(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "datasets").mkdir(parents=True)
    (root / "evalcase.toml").write_text("# mine\n", "utf-8")
    proc = invoke("init", str(root), cwd=tmp_path)
    assert proc.returncode == 2
    assert "already has evalcase.toml" in proc.stderr
    assert (root / "evalcase.toml").read_text("utf-8") == "# mine\n"
    assert not (root / ".gitignore").exists()


@pytest.mark.slow
def test_init_then_pre_commit_run_all_files_then_lint(
    tmp_path: Path, published_hook: PublishedHook
) -> None:
    """The issue's check, with the hooks taken from a snapshot of this checkout."""
    target = tmp_path / "x"
    proc = invoke(
        "init", str(target),
        "--hooks-repo", str(published_hook.repo), "--hooks-rev", published_hook.rev,
        cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    init_repo(target)
    git(target, "add", "-A")
    env = published_hook.env()
    ran = run([sys.executable, "-m", "pre_commit", "run", "--all-files"], target, env)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, output
    assert "evalcase fmt" in output and "evalcase lint" in output
    assert output.count("Passed") >= 2
    commit_all(target, "init")
    linted = invoke("lint", cwd=target)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_a_local_hooks_repository_is_named_and_ci_says_what_to_set(tmp_path: Path) -> None:
    local = tmp_path / "evalcase-checkout"
    proc = invoke("init", str(tmp_path / "r"), "--hooks-repo", str(local),
                   "--hooks-rev", "abc123", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"the hooks repository {local} is a path on this machine" in proc.stderr
    assert "EVALCASE_PIP_SPEC" in proc.stderr and "--hooks-repo URL" in proc.stderr
    workflow = (tmp_path / "r" / ".github/workflows/evalcase.yml").read_text("utf-8")
    # CI never installs from a path of the machine that ran init: it takes the
    # repository variable and fails saying so while it is unset
    assert "file://" not in workflow and str(local) not in workflow
    assert "${{ vars.EVALCASE_PIP_SPEC || '' }}" in workflow
    assert "::error::set the repository variable EVALCASE_PIP_SPEC" in workflow
    # a shared repository: no warning, and CI installs from it unless the variable says
    shared = invoke("init", str(tmp_path / "s"), "--hooks-repo",
                     "https://git.example.com/evalcase.git", "--hooks-rev", "abc123",
                     cwd=tmp_path)  # fmt: skip
    assert shared.returncode == 0 and "warning" not in shared.stderr, shared.stderr
    text = (tmp_path / "s" / ".github/workflows/evalcase.yml").read_text("utf-8")
    spec = "evalcase @ git+https://git.example.com/evalcase.git@abc123"
    assert "${{ vars.EVALCASE_PIP_SPEC || '" + spec + "' }}" in text


def test_the_install_step_fails_clearly_without_the_variable(tmp_path: Path) -> None:
    """The workflow's install script, run by bash as CI runs it, with the variable unset."""
    root = tmp_path / "r"
    init_repository(root, hooks=Hooks(str(tmp_path / "local"), "abc123"))
    text = (root / ".github/workflows/evalcase.yml").read_text("utf-8")
    workflow = YAML(typ="safe").load(text)
    (step,) = [s for s in workflow["jobs"]["lint"]["steps"] if s.get("name") == "Install evalcase"]
    env = {"EVALCASE_PIP_SPEC": "", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        ["bash", "-c", step["run"]], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert "::error::set the repository variable EVALCASE_PIP_SPEC" in proc.stdout


@pytest.mark.slow
def test_inits_steps_work_where_git_names_the_first_branch_master(tmp_path: Path) -> None:
    target = tmp_path / "cases"
    proc = invoke("init", str(target), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "`git init -b main`" in proc.stdout  # the branch evalcase.toml names
    # A user whose git makes `master` (or who typed plain `git init`) and commits.
    subprocess.run(["git", "-c", "init.defaultBranch=master", "init", "-q"], cwd=target, check=True)
    identify(target)
    commit_all(target, "the first commit")
    assert git(target, "branch", "--show-current").strip() == "master"
    for command in ("lint", "bump"):
        proc = invoke(command, cwd=target)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "base_branch = 'main'" in proc.stderr and "compares with HEAD" in proc.stderr
    assert "nothing to bump" in proc.stdout
    # A second branch makes the missing base a real mistake again: which one is meant?
    git(target, "branch", "other")
    proc = invoke("lint", cwd=target)
    assert proc.returncode == 2 and "names no branch here" in proc.stderr, proc.stderr
