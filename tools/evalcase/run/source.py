"""Where a run reads its dataset: the working tree when it is clean (or ``--allow-dirty``,
recorded), or a release tag / commit read straight from git without a checkout."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalcase.config import Config
from evalcase.model import FatalError
from evalcase.run.driver import Source

INPUT_ROOTS = ("datasets", "fixtures")


@dataclass(frozen=True)
class Loaded:
    source: Source
    dataset: Any  # evalcase.index.dataset.Dataset
    tasks: tuple[Any, ...]
    suites: dict[str, Any]
    manifest_agent: str | None


def load(config: Config, spec: str, *, allow_dirty: bool, revision: str | None = None) -> Loaded:
    """Read ``DATASET[@REF]``. ``revision`` forces a commit (used by --resume)."""
    from evalcase import gitio
    from evalcase.versioning.revisions import WORKTREE, open_repo, parse_spec

    repo = open_repo(config)
    try:
        if not repo.has_commits():
            raise FatalError(f"{config.root} has no commit yet: commit the dataset, then run it")
        rev = parse_spec(config, repo, spec)
        if revision is not None and revision != WORKTREE:
            commit, dirty, label = repo.rev_parse(revision), False, revision
        elif rev.commit is None:
            commit, label = repo.rev_parse("HEAD"), WORKTREE
            changed = repo.dirty_paths(INPUT_ROOTS)
            dirty = bool(changed)
            if dirty and not allow_dirty:
                shown = ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
                raise FatalError(
                    f"the working tree has uncommitted changes ({shown}): commit them, run a "
                    "committed version (DATASET@v1, DATASET@HEAD), or pass --allow-dirty "
                    "(the run is then marked dirty)"
                )
        else:
            commit, dirty, label = rev.commit, False, rev.ref or rev.spec
    finally:
        repo.close()
    del gitio
    return _read(
        config, rev.dataset_id, None if label == WORKTREE else commit, commit, dirty, label
    )


def _read(
    config: Config, dataset_id: str, at: str | None, commit: str, dirty: bool, label: str
) -> Loaded:
    from evalcase.index.dataset import load_dataset

    dataset = load_dataset(config.root, dataset_id, revision=at, config=config)
    if dataset.problems:
        lines = [
            f"  {path}: {problem}"
            for path, problems in sorted(dataset.problems.items())
            for problem in problems
        ]
        raise FatalError(
            f"{len(dataset.problems)} case(s) of {dataset_id} cannot be run; "
            "fix them (evalcase lint shows where):\n" + "\n".join(lines[:20])
        )
    if not dataset.tasks:
        raise FatalError(f"dataset {dataset_id} has no case to run")
    source = Source(
        dataset_id=dataset_id,
        dataset_version=dataset.version,
        dataset_digest=dataset.digest,
        commit=commit,
        dirty=dirty,
        revision=label,
    )
    manifest = dataset.manifest
    suites = dict(manifest.get("suites") or {})
    agent = manifest.get("agent")
    return Loaded(source, dataset, dataset.tasks, suites, agent if isinstance(agent, str) else None)
