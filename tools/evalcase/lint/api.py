"""The one entry point commands and hooks use to lint a repository."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.config import Config
from evalcase.files import GitTree, Snapshot, WorkTree
from evalcase.lint.linter import Linter, LintResult, filter_to, resolve_paths
from evalcase.model import FatalError, Finding


def lint_repository(
    config: Config,
    *,
    paths: list[str] | None = None,
    cwd: Path | None = None,
    base: str | None = None,
    staged: bool = False,
    use_cache: bool = True,
    jobs: int | None = None,
) -> LintResult:
    """Lint the repository at config.root.

    ``staged``: read files from the git index (what is about to be committed), with the
    base defaulting to PRE_COMMIT_FROM_REF or HEAD, as a pre-commit hook needs.
    ``paths``: report only findings on these files or folders (relative to ``cwd``); the
    whole repository is still the context for cross-file rules; under ``staged``, the
    cases a named fixture reaches (they reference it) are re-checked and their findings
    of the repository rules reported too. History findings (EC5xx)
    that involve them are reported too (a changed fixture makes its datasets' manifests
    need a bump), and under ``staged`` all of them: they are about the commit as a whole
    (a deleted case shows up on files pre-commit did not pass).
    ``base``: a branch name stands for its merge base with HEAD (see evalcase.versioning.history).
    """
    from evalcase import gitio

    with gitio.one_head():
        return _lint_repository(
            config, paths=paths, cwd=cwd, base=base, staged=staged, use_cache=use_cache, jobs=jobs
        )


def _lint_repository(
    config: Config,
    *,
    paths: list[str] | None,
    cwd: Path | None,
    base: str | None,
    staged: bool,
    use_cache: bool,
    jobs: int | None,
) -> LintResult:
    from evalcase.versioning import history as versioning

    root = config.root
    is_git = versioning.is_git_repository(root)
    if (staged or base) and not is_git:
        raise FatalError(f"{root} is not a git repository; --staged and --base need one")
    snapshot: Snapshot
    if staged:
        snapshot = GitTree(root, None)
        if base is None:
            base = os.environ.get("PRE_COMMIT_FROM_REF") or "HEAD"
    else:
        snapshot = WorkTree(root, config.max_file_bytes, config.max_state_fixture_bytes)
    history = versioning.history_for(config, base=base, staged=staged) if is_git else None
    if use_cache and is_git and _cache_is_committed(config):
        # A cache that came with the checkout was written by whoever committed it, not by
        # this machine: it could make bad files pass. Lint without it.
        use_cache = False
    linter = Linter(
        config,
        snapshot,
        use_cache=use_cache,
        jobs=jobs,
        history=history,
        git_state=use_cache and is_git,
        staged=staged,
    )
    try:
        if linter.is_empty() and (
            not staged
            or not WorkTree(root, config.max_file_bytes, config.max_state_fixture_bytes).files()
        ):
            # Under --staged an index without cases is fine while the work tree has some (they
            # are not added yet); a folder without any is a misplaced root, not a pass.
            raise FatalError(nothing_to_check(root))
        if paths is None:
            return linter.run()
        cwd = cwd or Path.cwd()
        only = linter.select(resolve_paths(root, paths, cwd))
        if not staged:
            # pre-commit passes what its file pattern matched; people pass what they typed,
            # and a typo must not be reported as "All checks passed".
            check_paths(root, paths, cwd, only)
        result = linter.run(focus=only)
        cases: dict[str, bool] = {}  # path -> is a case: asked once per path, not per finding
        result.findings = [f for f in result.findings if _reported(f, only, staged, cases)]
        return result
    finally:
        linter.close()


class StagedSources(Mapping[str, bytes]):
    """The staged contents of the files findings are on (``paths``: the path a reporter
    asks by -> the path relative to config.root), what ``--staged`` findings' positions
    were computed on, for a reporter to quote; the work tree may differ (a formatter
    rewrote the file after it was staged).

    Read as the reporter asks, a window of files at a time in the order of ``paths``
    (findings come sorted by path): a hook quoting findings in 30,000 cases holds a few
    hundred of them, never all (130 MB at 100,000 cases). A path not staged is missing.
    ``close()`` ends the git process it reads through."""

    def __init__(self, config: Config, paths: Mapping[str, str], window: int = 256) -> None:
        self._root = config.root
        self._paths = dict(paths)
        self._order = list(self._paths)
        self._at = {path: i for i, path in enumerate(self._order)}
        self._window = window
        self._shown: frozenset[str] = frozenset()
        self._loaded: dict[str, bytes] = {}
        self._repo: Any = None

    def __getitem__(self, path: str) -> bytes:
        if path not in self._shown:
            start = self._at[path]  # KeyError: not a path of this report
            shown = self._order[start : start + self._window]
            if self._repo is None:
                from evalcase import gitio

                self._repo = gitio.Repo(self._root)
            staged = self._repo.staged_contents([self._paths[p] for p in shown])
            self._shown = frozenset(shown)
            self._loaded = {p: staged[self._paths[p]] for p in shown if self._paths[p] in staged}
        return self._loaded[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def close(self) -> None:
        if self._repo is not None:
            self._repo.close()
            self._repo = None


@dataclass(frozen=True)
class BaseChoice:
    """What plain ``evalcase lint`` and ``evalcase bump`` compare with: ``ref`` (None:
    no base), and ``note``, what the user should hear about that choice ('' for none)."""

    ref: str | None
    note: str = ""


def default_base(config: Config) -> BaseChoice:
    """What plain ``evalcase lint`` compares with in a git repository: the configured
    ``[versioning] base_branch`` (its merge base with HEAD), else HEAD, so that what lint
    accepts the commit hook accepts too. No base outside git or before the first commit.

    A configured branch that exists neither here nor as ``origin/<branch>`` is a
    FatalError, except in a repository whose only branch is HEAD's (no other local
    branch, no remote-tracking one): a repository just started (``git init`` named its
    branch ``master`` while evalcase.toml says ``main``) has no base branch yet, so the
    comparison is with HEAD, as the commit hook's is, and the note says why."""
    from evalcase import gitio

    if not gitio.Repo.is_repo(config.root):
        return BaseChoice(None)
    repo = gitio.Repo(config.root)
    try:
        if not repo.has_commits():
            return BaseChoice(None)
        branch = config.base_branch
        if not branch:
            return BaseChoice("HEAD")
        for candidate in (branch, f"origin/{branch}"):
            if repo.symbolic_full_name(candidate):
                return BaseChoice(candidate)
        head = repo.symbolic_full_name("HEAD")
        if head.startswith("refs/heads/") and repo.branches() == [head]:
            return BaseChoice(
                "HEAD",
                f"note: base_branch = {branch!r} ({config.source} [versioning]) names no "
                f"branch yet; {head.removeprefix('refs/heads/')!r} is this repository's only "
                "branch, so this compares with HEAD, as the commit hook does (rename the "
                f"branch with `git branch -m {branch}`, or set base_branch to it)",
            )
        raise FatalError(
            f"base_branch = {branch!r} ({config.source} [versioning]) names no branch here "
            f"(nor origin/{branch}); fetch it, pass --base REF, or --no-base to skip the "
            "version checks against a base"
        )
    finally:
        repo.close()


def nothing_to_check(root: Path) -> str:
    """Why a folder has nothing to lint, and where cases might be instead."""
    hint = ""
    found = find_case_folders(root)
    if found:
        shown = ", ".join(os.path.relpath(root / f) for f in found[:3])
        hint = (
            f" Cases were found in {shown}: pass --root {os.path.relpath(root / found[0])}, "
            f'or put root = "{found[0]}" in {root / "evalcase.toml"}.'
        )
    return (
        f"nothing to check in {root}: evalcase expected YAML files under datasets/ and "
        f"fixtures/ (datasets/<dataset_id>/dataset.yaml, "
        f"datasets/<dataset_id>/cases/<case_id>.yaml, fixtures/<kind>/<fixture_id>.yaml).{hint}"
    )


def find_case_folders(root: Path, depth: int = 3) -> list[str]:
    """Folders below ``root`` (a few levels deep) holding datasets/<id>/dataset.yaml."""
    out: list[str] = []
    skip = {"node_modules", "__pycache__", "site-packages"}
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        level = len(here.relative_to(root).parts)
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in skip and level < depth
        )
        if here != root and any((here / "datasets").glob("*/dataset.yaml")):
            out.append(here.relative_to(root).as_posix())
    return out


def check_paths(root: Path, paths: list[str], cwd: Path, selected: set[str]) -> None:
    """Each path given on the command line exists, lies in the case repository and holds
    something evalcase checks (one of the ``selected`` files); otherwise a FatalError
    saying what was expected."""
    for raw in paths:
        full = (cwd / raw).absolute()
        if not full.exists() and not full.is_symlink():
            raise FatalError(f"{raw}: no such file or folder")
        wanted = resolve_paths(root, [raw], cwd)
        if not wanted:
            raise FatalError(
                f"{raw} is outside the case repository {root}; pass --root to lint another one"
            )
        if not filter_to(selected, wanted):
            raise FatalError(
                f"{raw}: nothing to check there: evalcase checks YAML files under datasets/ "
                "and fixtures/ (a dataset folder, a case, a manifest or a fixture)"
            )


def _reported(finding: Finding, only: set[str], staged: bool, cases: dict[str, bool]) -> bool:
    """Whether the hook or a path-limited run reports ``finding``: those on the named
    files; history findings that involve them (under ``staged`` all: they are about the
    commit as a whole); and under ``staged`` the repository rules' findings on cases a
    staged fixture reaches (the linter keeps only those beside the focus): a renamed tool
    parameter breaks the cases that call the tool, which the commit did not touch."""
    from evalcase.lint.linter import is_case
    from evalcase.lint.rules import RULES

    if finding.path in only:
        return True
    rule = RULES.get(finding.code)
    if rule is None:
        return False
    if rule.scope == "repo":
        if not staged:
            return False
        found = cases.get(finding.path)
        if found is None:
            found = cases[finding.path] = is_case(finding.path)
        return found
    if rule.scope != "history":
        return False
    return staged or any(path in only for path, _, _ in finding.related)


def _cache_is_committed(config: Config) -> bool:
    from evalcase import gitio

    repo = gitio.Repo(config.root)
    try:
        return repo.tracks_any(config.cache_dir)
    finally:
        repo.close()
