"""Where a run reads its dataset: the working tree when it is clean (or ``--allow-dirty``,
recorded), or a release tag / commit read straight from git without a checkout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evalcase.config import Config
from evalcase.model import FatalError
from evalcase.run.driver import Source

INPUT_ROOTS = ("datasets", "fixtures")
WORKTREE = "WORKTREE"


@dataclass(frozen=True)
class Loaded:
    source: Source
    dataset: Any  # evalcase.index.dataset.Dataset
    tasks: tuple[Any, ...]
    suites: dict[str, Any]
    manifest_agent: str | None
    skipped: dict[str, list[str]]  # case path -> why it cannot be run (--skip-invalid)


def load(config: Config, spec: str, *, allow_dirty: bool, skip_invalid: bool = False) -> Loaded:
    """Read ``DATASET[@REF]`` for a new run."""
    from evalcase.versioning.revisions import open_repo, parse_spec

    repo = open_repo(config)
    try:
        if not repo.has_commits():
            raise FatalError(f"{config.root} has no commit yet: commit the dataset, then run it")
        rev = parse_spec(config, repo, spec)
        if rev.commit is None:
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
    at = None if label == WORKTREE else commit
    return _read(config, rev.dataset_id, at, commit, dirty, label, skip_invalid)


def check_not_committed(config: Config, run_dir: Path) -> None:
    """Refuse to resume a run whose folder git tracks. ``--resume`` starts the agent its
    ``run.json`` names; a run folder someone committed (``outputs/`` is ignored, so it
    was force-added, as in a pull request) is data and may not name what runs."""
    from evalcase.versioning.revisions import open_repo

    try:
        rel = run_dir.resolve().relative_to(config.root.resolve()).as_posix()
    except ValueError:
        return  # outside the repository: git cannot have brought it
    repo = open_repo(config)
    try:
        committed = repo.has_commits() and repo.tracks_any(rel)
    finally:
        repo.close()
    if committed:
        raise FatalError(
            f"refusing to resume: git tracks files in {rel}; a committed run folder is data "
            "and cannot choose the agent a resume starts. Start a new run instead"
        )


def reload(config: Config, meta: Mapping[str, Any]) -> Loaded:
    """Read the dataset of an earlier run (``--resume``) where that run read it: the same
    commit, or the working tree (its content digest then decides whether it is the same)."""
    from evalcase.versioning.revisions import open_repo

    dataset_id = str(meta["dataset"]["id"])
    commit = str(meta["commit"])
    label = str(meta.get("revision") or WORKTREE)
    dirty = bool(meta.get("dirty"))
    if label == WORKTREE:
        repo = open_repo(config)
        try:
            dirty = bool(repo.dirty_paths(INPUT_ROOTS))
        finally:
            repo.close()
    at = None if label == WORKTREE else commit
    return _read(config, dataset_id, at, commit, dirty, label, bool(meta.get("skipped")))


def _read(
    config: Config,
    dataset_id: str,
    at: str | None,
    commit: str,
    dirty: bool,
    label: str,
    skip_invalid: bool,
) -> Loaded:
    from evalcase.index.dataset import load_dataset

    dataset = load_dataset(config.root, dataset_id, revision=at, config=config)
    skipped = {
        path: [f"{p.field}: {p.message}" for p in problems]
        for path, problems in sorted(dataset.problems.items())
    }
    if skipped and not skip_invalid:
        lines = [f"  {path}: {why}" for path, whys in skipped.items() for why in whys]
        raise FatalError(
            f"{len(skipped)} case(s) of {dataset_id} cannot be run (fix them, or pass "
            "--skip-invalid to run the others; the run then lists them as skipped):\n"
            + "\n".join(lines[:20])
            + ("\n  ..." if len(lines) > 20 else "")
        )
    if not dataset.tasks:
        why = [f"  {path}: {why}" for path, whys in skipped.items() for why in whys]
        raise FatalError(
            f"dataset {dataset_id} has no case to run"
            + ("; not runnable yet:\n" + "\n".join(why[:20]) if why else "")
        )
    tasks = with_handlers(dataset.tasks, config)
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
    manifest_agent = agent if isinstance(agent, str) else None
    return Loaded(source, dataset, tasks, suites, manifest_agent, skipped)


def with_handlers(tasks: Sequence[Any], config: Config) -> tuple[Any, ...]:
    """The tasks with each tool ``handler`` name replaced by the function the trusted
    configuration registers for it (``[run.handlers]`` or the ``evalcase.handlers`` entry
    points). A fixture naming anything else (an import path, an unregistered name) stops
    the run before any attempt: data never names code (evalcase.trust)."""
    from evalcase.trust import handler_problem, registered_handlers

    if not any(b.handler for t in tasks for b in t.env.tools.values()):
        return tuple(tasks)
    registered = registered_handlers(config.raw.get("run") or {})
    problems: dict[str, str] = {}
    out = []
    for task in tasks:
        tools = dict(task.env.tools)
        for name, behaviour in tools.items():
            if not behaviour.handler:
                continue
            problem = handler_problem(behaviour.handler, registered)
            if problem is not None:
                where = f"fixture {behaviour.fixture_id or name}"
                problems.setdefault(where, problem)
                continue
            tools[name] = replace(behaviour, handler=registered[behaviour.handler])
        out.append(replace(task, env=replace(task.env, tools=tools)))
    if problems:
        lines = [f"  {where}: {why}" for where, why in sorted(problems.items())]
        raise FatalError(
            "refusing to run: a fixture names a tool handler the configuration does not "
            "register:\n" + "\n".join(lines[:20]) + ("\n  ..." if len(lines) > 20 else "")
        )
    return tuple(out)
