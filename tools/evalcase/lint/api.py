"""The one entry point commands and hooks use to lint a repository."""

from __future__ import annotations

import os
from pathlib import Path

from evalcase.config import Config
from evalcase.files import GitTree, Snapshot, WorkTree
from evalcase.lint.linter import Linter, LintResult, filter_to, resolve_paths
from evalcase.model import FatalError


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
    whole repository is still the context for cross-file rules.
    """
    from evalcase import versioning

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
    linter = Linter(config, snapshot, use_cache=use_cache, jobs=jobs, history=history)
    only = None
    if paths is not None:
        wanted = resolve_paths(root, paths, cwd or Path.cwd())
        only = filter_to(snapshot.files(), wanted)
    return linter.run(only)
