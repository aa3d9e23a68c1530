"""The one entry point commands and hooks use to lint a repository."""

from __future__ import annotations

import os
from pathlib import Path

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
    whole repository is still the context for cross-file rules. History findings (EC5xx)
    that involve them are reported too (a changed fixture makes its datasets' manifests
    need a bump), and under ``staged`` all of them: they are about the commit as a whole
    (a deleted case shows up on files pre-commit did not pass).
    ``base``: a branch name stands for its merge base with HEAD (see evalcase.versioning.history).
    """
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
        snapshot = WorkTree(root, config.max_file_bytes)
    history = versioning.history_for(config, base=base, staged=staged) if is_git else None
    if use_cache and is_git and _cache_is_committed(config):
        # A cache that came with the checkout was written by whoever committed it, not by
        # this machine: it could make bad files pass. Lint without it.
        use_cache = False
    linter = Linter(config, snapshot, use_cache=use_cache, jobs=jobs, history=history)
    if paths is None:
        return linter.run()
    only = filter_to(snapshot.files(), resolve_paths(root, paths, cwd or Path.cwd()))
    result = linter.run(focus=only)
    result.findings = [f for f in result.findings if _reported(f, only, staged)]
    return result


def _reported(finding: Finding, only: set[str], staged: bool) -> bool:
    from evalcase.lint.rules import RULES

    if finding.path in only:
        return True
    rule = RULES.get(finding.code)
    if rule is None or rule.scope != "history":
        return False
    return staged or any(path in only for path, _, _ in finding.related)


def _cache_is_committed(config: Config) -> bool:
    from evalcase import gitio

    repo = gitio.Repo(config.root)
    try:
        return repo.tracks_any(config.cache_dir)
    finally:
        repo.close()
