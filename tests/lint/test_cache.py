"""The lint cache makes lint faster and never changes what it finds."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.model import Finding

CASE = "datasets/refund_regression_set/cases/refund_eligibility_001.yaml"


def run(repo: Path, *, cache: bool) -> tuple[list[Finding], bool, int]:
    result = lint_repository(load_config(repo), use_cache=cache, jobs=1)
    return result.findings, result.cache_hit, result.files_checked


def same_with_and_without_cache(repo: Path) -> list[Finding]:
    cached, _hit, _n = run(repo, cache=True)
    uncached, _hit2, _n2 = run(repo, cache=False)
    assert cached == uncached
    return cached


def test_warm_run_is_served_from_the_cache(example_repo: Path) -> None:
    first, hit, _ = run(example_repo, cache=True)
    assert not hit
    assert (example_repo / ".evalcase_cache" / "CACHEDIR.TAG").is_file()
    assert (example_repo / ".evalcase_cache" / ".gitignore").read_text().strip().endswith("*")
    second, hit, _ = run(example_repo, cache=True)
    assert hit and second == first


@pytest.mark.slow
def test_identical_findings_through_edits_deletes_renames_and_config(example_repo: Path) -> None:
    assert same_with_and_without_cache(example_repo) == []
    case = example_repo / CASE
    # edit
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    edited = same_with_and_without_cache(example_repo)
    # The risk level is wrong, and the case is no longer what its approval saw.
    assert sorted(f.code for f in edited if f.path == CASE) == ["EC104", "EC419"]
    # rename (the file name no longer matches nothing else; findings move with it)
    renamed = case.with_name("refund_eligibility_009.yaml")
    case.rename(renamed)
    after_rename = same_with_and_without_cache(example_repo)
    assert any(f.path.endswith("refund_eligibility_009.yaml") for f in after_rename)
    assert not any(f.path == CASE for f in after_rename)
    # delete
    renamed.unlink()
    same_with_and_without_cache(example_repo)
    # a fixture edit
    fixture = next((example_repo / "fixtures/tool").glob("*.yaml"))
    fixture.write_text(fixture.read_text("utf-8") + "unexpected_field: 1\n", "utf-8")
    assert any(f.code == "EC102" for f in same_with_and_without_cache(example_repo))
    # a config change
    (example_repo / "evalcase.toml").write_text('[lint]\nignore = ["EC102"]\n')
    assert not any(f.code == "EC102" for f in same_with_and_without_cache(example_repo))
    (example_repo / "evalcase.toml").write_text("[lint]\nmax_file_bytes = 500\n")
    tight = same_with_and_without_cache(example_repo)
    assert any(f.code == "EC005" for f in tight)


@pytest.mark.slow
@pytest.mark.parametrize(
    "damage", ["truncate", "flip", "flip-early", "garbage", "empty", "foreign", "directory"]
)
def test_a_damaged_store_is_ignored_and_rebuilt(example_repo: Path, damage: str) -> None:
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    expected, _, _ = run(example_repo, cache=False)
    assert expected
    run(example_repo, cache=True)
    store = example_repo / ".evalcase_cache" / "lint.sqlite"
    blob = store.read_bytes()
    if damage == "truncate":
        store.write_bytes(blob[: len(blob) // 2])
    elif damage == "flip":
        store.write_bytes(blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:])
    elif damage == "flip-early":
        # Inside the first data pages (past the 100-byte header): rows or b-tree cells.
        middle = 4096 + 200
        store.write_bytes(blob[:middle] + bytes(b ^ 0x5A for b in blob[middle:middle + 64])
                          + blob[middle + 64:])  # fmt: skip
    elif damage == "garbage":
        store.write_bytes(b"\x00" * 1000)
    elif damage == "empty":
        store.write_bytes(b"")
    elif damage == "foreign":
        # A valid SQLite database written by something else (or another evalcase).
        store.unlink()
        db = sqlite3.connect(store)
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
        db.execute("INSERT INTO meta VALUES ('schema', 'evalcase-lint-store-1')")
        db.execute("INSERT INTO meta VALUES ('namespace', 'someone else')")
        db.commit()
        db.close()
    else:
        store.unlink()
        store.mkdir()
    findings, _hit, _ = run(example_repo, cache=True)
    assert findings == expected
    # The per-file path: a change elsewhere invalidates the whole-run entry.
    (example_repo / "fixtures/state/extra_note.yaml").write_text("x: 1\n", "utf-8")
    findings, hit, _ = run(example_repo, cache=True)
    assert not hit
    assert [f for f in findings if f.path != "fixtures/state/extra_note.yaml"] == expected
    (example_repo / "fixtures/state/extra_note.yaml").unlink()
    if damage != "directory":
        # Rebuilt: after one more full run, runs are hits again, with the same findings.
        run(example_repo, cache=True)
        again, hit, _ = run(example_repo, cache=True)
        assert hit and again == expected
    shutil.rmtree(example_repo / ".evalcase_cache", ignore_errors=True)


def test_a_failing_file_never_passes_through_the_cache(example_repo: Path) -> None:
    """Fix a file, lint (cached clean), break it again with the same bytes as before."""
    case = example_repo / CASE
    good = case.read_text("utf-8")
    bad = good.replace("risk_level: P1", "risk_level: P7")
    case.write_text(bad, "utf-8")
    first, _, _ = run(example_repo, cache=True)
    case.write_text(good, "utf-8")
    assert run(example_repo, cache=True)[0] == []
    case.write_text(bad, "utf-8")
    assert run(example_repo, cache=True)[0] == first


@pytest.mark.slow
def test_a_cache_committed_to_the_repository_is_never_trusted(example_repo: Path) -> None:
    """A pull request could force-add a crafted cache; lint must not read it."""
    from tests.helpers import commit_all, git, init_repo

    case = example_repo / CASE
    bad = case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7")
    init_repo(example_repo)
    commit_all(example_repo, "examples")
    clean, _, _ = run(example_repo, cache=True)  # the cache now says: no findings
    assert clean == []
    case.write_text(bad, "utf-8")
    expected, _, _ = run(example_repo, cache=False)
    assert any(f.code == "EC104" for f in expected)
    # Whatever a committed cache holds, it is ignored: findings come from the files.
    git(example_repo, "add", "-f", ".evalcase_cache")
    git(example_repo, "commit", "-q", "-m", "force-add the cache")
    findings, hit, _ = run(example_repo, cache=True)
    assert not hit
    assert findings == expected


# --- the store in a git repository: the commit tree plus what differs from it ---------

DUP = "datasets/refund_regression_set/cases/refund_eligibility_002.yaml"


def staged(repo: Path, paths: list[str], *, cache: bool) -> tuple[list[Finding], bool, int]:
    result = lint_repository(
        load_config(repo), paths=paths, cwd=repo, staged=True, use_cache=cache, jobs=1
    )
    return result.findings, result.cache_hit, result.files_checked


def hook_agrees(repo: Path, paths: list[str]) -> list[Finding]:
    """What the hook reports through the store equals what it reports without one."""
    cached, _hit, n = staged(repo, paths, cache=True)
    uncached, _hit2, n2 = staged(repo, paths, cache=False)
    assert cached == uncached
    assert n == n2
    return cached


@pytest.mark.slow
def test_commit_hook_through_the_store_matches_an_uncached_run(example_repo: Path) -> None:
    from tests.helpers import commit_all, git, init_repo

    init_repo(example_repo)
    commit_all(example_repo, "examples")
    assert same_with_and_without_cache(example_repo) == []  # the store's tree is HEAD
    case = example_repo / CASE
    text = case.read_text("utf-8")
    # A governance-only change (title), committed: the next run syncs the tree.
    case.write_text(text.replace("title: ", "title: (retitled) ", 1), "utf-8")
    git(example_repo, "add", CASE)
    assert hook_agrees(example_repo, [CASE]) == []
    git(example_repo, "commit", "-q", "-m", "retitle")
    # A new case that copies another one's ID and input: both duplicate rules answer
    # from the store's case ID and fingerprint indexes, for the new file.
    dup = example_repo / DUP
    dup.write_text(text.replace("title: ", "title: (copy) ", 1), "utf-8")
    git(example_repo, "add", DUP)
    found = hook_agrees(example_repo, [DUP])
    assert "EC206" in {f.code for f in found}, found
    # Reported on the other file too when that one is what the hook was given.
    assert "EC206" in {f.code for f in hook_agrees(example_repo, [CASE])}
    # A broken case and a content change without a version bump (history, EC501).
    case.write_text(text.replace("risk_level: P1", "risk_level: P7"), "utf-8")
    git(example_repo, "add", CASE)
    found = hook_agrees(example_repo, [CASE, DUP])
    assert {"EC104", "EC206"} <= {f.code for f in found}, found
    git(example_repo, "commit", "-q", "-m", "break")
    # A fixture edit: the cases using it are checked through it (a full run).
    fixture = next(p for p in sorted((example_repo / "fixtures/tool").glob("*.yaml")))
    rel = fixture.relative_to(example_repo).as_posix()
    fixture.write_text(fixture.read_text("utf-8") + "unexpected_field: 1\n", "utf-8")
    git(example_repo, "add", rel)
    assert "EC102" in {f.code for f in hook_agrees(example_repo, [rel])}
    # Deleting and renaming, staged.
    git(example_repo, "rm", "-q", DUP)
    hook_agrees(example_repo, [CASE])
    git(example_repo, "mv", CASE, CASE.replace("_001", "_009"))
    hook_agrees(example_repo, [CASE.replace("_001", "_009")])
    git(example_repo, "commit", "-q", "-m", "more")
    # History moved on without the hook (a commit made elsewhere, a reset): the tree is
    # synced from git, whatever the store last saw.
    git(example_repo, "reset", "-q", "--hard", "HEAD~2")
    same_with_and_without_cache(example_repo)
    hook_agrees(example_repo, [CASE])


def test_the_hook_loads_only_what_the_change_touches(example_repo: Path) -> None:
    """Work not repeated: the hook analyses the one staged file, and loads a bounded set
    of other files from the store (not every case)."""
    from evalcase.lint import linter as linter_module
    from tests.helpers import commit_all, git, init_repo

    init_repo(example_repo)
    commit_all(example_repo, "examples")
    run(example_repo, cache=True)
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("title: ", "title: (x) ", 1), "utf-8")
    git(example_repo, "add", CASE)
    seen: dict[str, int] = {}
    original = linter_module.Linter._partial

    def spy(self: linter_module.Linter, state: object, focus: set[str]) -> object:
        sources, results, contents = original(self, state, focus)  # type: ignore[arg-type]
        seen["sources"], seen["results"] = len(sources), len(results)
        seen["analysed"] = self.analysed
        return sources, results, contents

    linter_module.Linter._partial = spy  # type: ignore[assignment,method-assign]
    try:
        result = lint_repository(
            load_config(example_repo), paths=[CASE], cwd=example_repo, staged=True, jobs=1
        )
    finally:
        linter_module.Linter._partial = original  # type: ignore[method-assign]
    cases = len(list(example_repo.glob("datasets/*/cases/*.yaml")))
    fixtures = len(list(example_repo.glob("fixtures/*/*.yaml")))
    manifests = len(list(example_repo.glob("datasets/*/dataset.yaml")))
    assert seen["sources"] == 1 and seen["analysed"] == 1
    # The staged case, every fixture and manifest: no other case.
    assert seen["results"] == 1 + fixtures + manifests < cases + fixtures + manifests
    assert result.findings == []


@pytest.mark.slow
def test_exact_copies_and_manifest_rules_answer_from_the_store(example_repo: Path) -> None:
    """The "content" and "dataset" lookups: a copy under another ID (EC417) is found from
    the store's content index; a checked manifest's suites and gates (EC310, EC311) see
    every case of its dataset, through a partial run, as they do without the store."""
    from evalcase.lint import linter as linter_module
    from tests.helpers import commit_all, git, init_repo

    manifest_rel = "datasets/refund_regression_set/dataset.yaml"
    manifest = example_repo / manifest_rel
    manifest.write_text(
        manifest.read_text("utf-8")
        .replace(
            "suites:\n",
            "suites:\n  picked:\n    case_ids: [refund_eligibility_001, no_such_case_001]\n"
            "  nothing:\n    tags: [no_case_has_this_tag]\n",
            1,
        )
        .replace(
            "gates:\n", "gates:\n  - {name: empty_gate, suite: nothing, min_pass_rate: 1.0}\n", 1
        ),
        "utf-8",
    )
    init_repo(example_repo)
    commit_all(example_repo, "examples")
    run(example_repo, cache=True)  # the store now holds HEAD
    partial_runs: list[int] = []
    original = linter_module.Linter._partial

    def spy(self: linter_module.Linter, state: object, focus: set[str]) -> object:
        partial_runs.append(len(focus))
        return original(self, state, focus)  # type: ignore[arg-type]

    def focused(paths: list[str], *, staged: bool) -> list[Finding]:
        config = load_config(example_repo)
        linter_module.Linter._partial = spy  # type: ignore[assignment,method-assign]
        try:
            cached = lint_repository(
                config, paths=paths, cwd=example_repo, staged=staged, jobs=1
            ).findings
        finally:
            linter_module.Linter._partial = original  # type: ignore[method-assign]
        uncached = lint_repository(
            config, paths=paths, cwd=example_repo, staged=staged, use_cache=False, jobs=1
        ).findings
        assert cached == uncached
        return cached

    found = focused([manifest_rel], staged=False)
    assert {"EC310", "EC311"} <= {f.code for f in found}, found
    assert partial_runs, "the manifest was checked without a partial run"
    copy_rel = CASE.replace("_001", "_077")
    copy = example_repo / copy_rel
    text = (example_repo / CASE).read_text("utf-8")
    copy.write_text(
        text.replace("refund_eligibility_001", "refund_eligibility_077").replace(
            "title: ", "title: (copy) ", 1
        ),
        "utf-8",
    )
    git(example_repo, "add", copy_rel)
    partial_runs.clear()
    found = focused([copy_rel], staged=True)
    assert "EC417" in {f.code for f in found}, found
    assert partial_runs


@pytest.mark.slow
def test_a_released_dataset_keeps_the_partial_hook(example_repo: Path) -> None:
    """With release tags the hook still loads only the change, the fixtures and manifests,
    and the cases the history rules read (those changed since the release, those holding
    an ID another dataset released): datasets' contents come from the store's entries.
    It finds what a run without the store finds: a released dataset that changed (EC505),
    a case left at the released dataset_version (EC506), a released ID reused (EC507)."""
    from evalcase.actions import tag_dataset
    from evalcase.lint import linter as linter_module
    from tests.helpers import commit_all, git, init_repo

    init_repo(example_repo)
    commit_all(example_repo, "examples")
    tag_dataset(load_config(example_repo), "refund_regression_set")
    run(example_repo, cache=True)  # the store now holds HEAD
    loaded: list[int] = []
    original = linter_module.Linter._partial

    def spy(self: linter_module.Linter, state: object, focus: set[str]) -> object:
        sources, results, contents = original(self, state, focus)  # type: ignore[arg-type]
        assert contents is not None
        loaded.append(len(results))
        return sources, results, contents

    def hook(rel: str) -> set[str]:
        git(example_repo, "add", rel)
        loaded.clear()
        linter_module.Linter._partial = spy  # type: ignore[assignment,method-assign]
        try:
            found = hook_agrees(example_repo, [rel])
        finally:
            linter_module.Linter._partial = original  # type: ignore[method-assign]
        assert len(loaded) == 1, "the hook did not run partially"
        return {f"{f.code} {f.path}" for f in found}

    def edit(rel: str, old: str, new: str) -> None:
        path = example_repo / rel
        text = path.read_text("utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), "utf-8")

    manifest = "datasets/refund_regression_set/dataset.yaml"
    everything = len(list(example_repo.glob("*/**/*.yaml")))
    # A content change in the released dataset: the case and the dataset need bumps.
    edit(CASE, "risk_level: P1", "risk_level: P0")
    found = hook(CASE)
    assert {f"EC501 {CASE}", f"EC505 {manifest}"} <= found, found
    assert loaded[0] < everything
    git(example_repo, "commit", "-q", "-m", "riskier")
    # The next commit touches another case's title only: the dataset is still changed
    # since its release (the earlier case is read from the store's entries).
    other = "datasets/refund_regression_set/cases/llm_instruction_001.yaml"
    edit(other, "title: ", "title: (retitled) ")
    assert f"EC505 {manifest}" in hook(other)
    git(example_repo, "commit", "-q", "-m", "retitle")
    # Bumped, committed without the hook; the first case still says dataset_version v1.
    edit(manifest, "dataset_version: v1", "dataset_version: v2")
    git(example_repo, "commit", "-q", "-am", "bump the dataset")
    edit(other, "title: (retitled) ", "title: (again) ")
    found = hook(other)
    assert f"EC506 {CASE}" in found and f"EC505 {manifest}" not in found, found
    git(example_repo, "commit", "-q", "-m", "again")
    # Another dataset takes a released ID for a different case, committed without the
    # hook: a later commit's hook still reports it.
    reused = "datasets/crm_safety_set/cases/refund_eligibility_001.yaml"
    text = (example_repo / CASE).read_text("utf-8")
    (example_repo / reused).write_text(
        text.replace("dataset_id: refund_regression_set", "dataset_id: crm_safety_set").replace(
            "input: ", "input: (another case) ", 1
        ),
        "utf-8",
    )
    git(example_repo, "add", reused)
    git(example_repo, "commit", "-q", "-m", "reuse")
    edit(other, "title: (again) ", "title: (and again) ")
    assert f"EC507 {reused}" in hook(other)


@pytest.mark.slow
def test_a_work_tree_run_sees_edits_untracked_and_deleted_files(example_repo: Path) -> None:
    from tests.helpers import commit_all, init_repo

    init_repo(example_repo)
    commit_all(example_repo, "examples")
    same_with_and_without_cache(example_repo)
    case = example_repo / CASE
    case.write_text(case.read_text("utf-8").replace("risk_level: P1", "risk_level: P7"), "utf-8")
    (example_repo / DUP).write_text(case.read_text("utf-8"), "utf-8")  # untracked copy
    found = same_with_and_without_cache(example_repo)
    assert {"EC104", "EC206"} <= {f.code for f in found}
    (example_repo / DUP).unlink()
    case.unlink()
    same_with_and_without_cache(example_repo)


def test_every_repo_rule_says_which_cases_it_reads() -> None:
    """A repo rule without CASE_LOOKUPS makes every commit hook load every case (correct,
    but the hook then costs what the repository holds)."""
    from evalcase.lint.base import CASE_LOOKUP_KINDS
    from evalcase.lint.rules import RULES

    for rule in RULES.values():
        if rule.scope != "repo":
            continue
        lookups = getattr(rule.module, "CASE_LOOKUPS", None)
        assert isinstance(lookups, tuple), f"{rule.code} declares no CASE_LOOKUPS"
        assert set(lookups) <= CASE_LOOKUP_KINDS, (rule.code, lookups)
