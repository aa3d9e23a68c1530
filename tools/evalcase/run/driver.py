"""A run: plan the attempts, hand them to an executor, write each record as it finishes.

The driver is the only writer of a run folder. It builds jobs lazily (one per case and
attempt number, seeds derived from the case and the attempt so a resumed run gives every
attempt the same seed), writes ``run.json`` before the first attempt and again at the end,
and appends each record to ``attempts.jsonl`` the moment it arrives. ``resume`` runs the
planned attempts that have no record yet, after checking that the dataset content is the
one the run started with.

A run folder has one writer at a time: the driver holds an exclusive lock on it
(:meth:`~evalcase.run.outputs.RunFolder.lock`) from the first line read to the last line
written, so a second ``run --resume`` of the same run is refused (exit 2) instead of
writing the same attempts twice. A damaged line of ``attempts.jsonl`` is skipped and
reported (``RunResult.damaged``); its attempt has no record, so ``--resume`` runs it
again. SIGTERM or SIGINT (the CLI turns both into ``KeyboardInterrupt``) ends the agents
still running and leaves ``status: interrupted`` in ``run.json``; ``--resume`` continues.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import platform
import secrets
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from evalcase import __version__
from evalcase.contract import records
from evalcase.contract.attempt import AttemptRecord
from evalcase.contract.attempt import read as read_record
from evalcase.contract.prompt import Prompt
from evalcase.model import FatalError
from evalcase.run import outputs, user_simulator
from evalcase.run import prompts as prompting
from evalcase.run.adapters import rendering
from evalcase.run.executors import AttemptJob, Executor, Limits
from evalcase.run.spec import AgentView, EnvSpec


class RunnableTask(Protocol):
    @property
    def case_id(self) -> str: ...
    @property
    def case_version(self) -> str: ...
    @property
    def agent(self) -> AgentView: ...
    @property
    def env(self) -> EnvSpec: ...
    @property
    def meta(self) -> Mapping[str, Any]: ...
    @property
    def digest(self) -> str: ...
    @property
    def fixture_versions(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class Source:
    """Where the dataset was read: a commit (``dirty`` when the work tree had changes)."""

    dataset_id: str
    dataset_version: str
    dataset_digest: str
    commit: str
    dirty: bool
    revision: str  # "WORKTREE" or the ref the user named (tag, branch, commit)


@dataclass(frozen=True)
class RunOptions:
    agent: str  # the spec, e.g. "cmd:python agent.py"
    agent_name: str | None = None  # the [run.agents] name it came from, if any
    agent_options: Mapping[str, Any] = field(default_factory=dict)
    repeat: int = 1
    concurrency: int = 4
    timeout_s: float = 120.0
    suites: tuple[str, ...] = ()
    select: tuple[str, ...] = ()
    executor: str = "local"
    limits: Limits = field(default_factory=Limits)
    seed: int = 0
    skipped: Mapping[str, Any] = field(default_factory=dict)  # case path -> why not run
    prompts: tuple[str, ...] = ()  # prompt IDs every case runs with (evalcase.run.prompts)
    # [run.user_simulator], for the cases with a user_simulator (keys by variable name).
    user_simulator: Mapping[str, Any] = field(default_factory=dict)


class Progress(Protocol):
    """How a run reports progress (the CLI draws it; the library never prints)."""

    def start(self, total: int, done: int, errors: int) -> None: ...
    def advance(self, record: AttemptRecord) -> None: ...
    def close(self) -> None: ...


class NoProgress:
    def start(self, total: int, done: int, errors: int) -> None:
        return None

    def advance(self, record: AttemptRecord) -> None:
        return None

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class RunResult:
    run_id: str
    path: Path
    attempts: int
    errors: int
    new: int
    status: str
    damaged: tuple[str, ...] = ()  # damaged lines of attempts.jsonl, skipped


def seed_for(base: int, case_id: str, attempt: int) -> int:
    digest = hashlib.blake2b(f"{base}:{case_id}:{attempt}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


# The collector's young-generation threshold during a run (Python's default: 700). An
# attempt's objects (sockets, servers, sessions, its record) live for the attempt and form
# cycles; at 700 the young collections traversed the live attempts' objects about 0.4
# times an attempt and the full ones found some 70 cyclic objects an attempt: 0.7 ms of
# the runner's CPU an attempt at concurrency 200 (benchmarks/byo_bench.py), 0.28 ms at
# 10,000. The garbage waiting for a collection stays under 10,000 objects, a few MB.
GC_YOUNG_THRESHOLD = 10_000


@contextlib.contextmanager
def _fewer_collections() -> Iterator[None]:
    """The young threshold raised to :data:`GC_YOUNG_THRESHOLD` (never lowered) while the
    run's attempts run, then set back."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], GC_YOUNG_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def public_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Agent options as recorded: values of keys that look secret are never written."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        lowered = key.lower()
        if any(
            w in lowered for w in ("key", "token", "secret", "password", "authorization")
        ) and not lowered.endswith("_env"):
            out[key] = "<redacted>"
        elif key == "headers" and isinstance(value, Mapping):
            out[key] = {k: "<redacted>" for k in value}
        elif key == "env" and isinstance(value, Mapping):
            out[key] = sorted(value)
        else:
            out[key] = value
    return out


def run_meta(
    run_id: str,
    source: Source,
    tasks: Sequence[RunnableTask],
    options: RunOptions,
    variants: Sequence[prompting.Variant] = (),
) -> dict[str, Any]:
    planned = len(variants) if variants else len(tasks)
    return {
        "run_id": run_id,
        "commit": source.commit,
        "dirty": source.dirty,
        "revision": source.revision,
        "dataset": {
            "id": source.dataset_id,
            "version": source.dataset_version,
            "digest": source.dataset_digest,
        },
        "cases": {
            t.case_id: {
                "version": t.case_version,
                "digest": t.digest,
                "fixtures": dict(t.fixture_versions),
            }
            for t in tasks
        },
        "agent": {
            "spec": options.agent,
            "name": options.agent_name,
            "options": public_options(options.agent_options),
            "version": None,
            "rendering": rendering(options.agent),
        },
        "evalcase_version": __version__,
        "options": {
            "repeat": options.repeat,
            "concurrency": options.concurrency,
            "timeout_s": options.timeout_s,
            "suites": list(options.suites),
            "select": list(options.select),
            "executor": options.executor,
            "seed": options.seed,
            "max_steps": options.limits.max_steps,
            "max_reply_bytes": options.limits.max_reply_bytes,
            "prompts": list(options.prompts),
            "max_tool_calls": options.limits.max_tool_calls,
            "max_state_bytes": options.limits.max_state_bytes,
            "max_record_bytes": options.limits.max_record_bytes,
            "cel_memory_mb": options.limits.cel_memory_mb,
        },
        "prompts": prompting.versions(variants),
        # Who played the simulated users (model, prompt version), when a case has one.
        "user_simulator": (
            user_simulator.record_of(
                options.user_simulator, tools=any(t.env.user_tools for t in tasks)
            )
            if any(t.env.user_simulator is not None for t in tasks)
            else None
        ),
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
        },
        "planned": planned * options.repeat,
        "skipped": dict(options.skipped),
        "status": "running",
        "started_at": _now(),
        "ended_at": None,
        "counts": {"attempts": 0, "errors": 0},
    }


def jobs_for(
    tasks: Sequence[RunnableTask],
    options: RunOptions,
    done: set[tuple[str, int]],
    outputs_dir: Path,
    variants: Sequence[prompting.Variant] | None = None,
) -> Iterator[AttemptJob]:
    """Jobs in attempt order; with prompts, one per case, prompt and attempt, numbered
    across prompts (see evalcase.run.prompts)."""
    agent_options = {**options.agent_options, "outputs_dir": str(outputs_dir)}
    by_id = {t.case_id: t for t in tasks}
    if variants is None:
        variants = [prompting.Variant(t.case_id, t.agent, None, 0) for t in tasks]
    for within in range(1, options.repeat + 1):
        for variant in variants:
            task = by_id[variant.case_id]
            attempt = variant.slot * options.repeat + within
            if (task.case_id, attempt) in done:
                continue
            yield AttemptJob(
                case_id=task.case_id,
                case_version=task.case_version,
                agent=variant.view,
                env=task.env,
                adapter=options.agent,
                adapter_options=agent_options,
                seed=seed_for(options.seed, task.case_id, within),
                attempt=attempt,
                timeout_s=options.timeout_s,
                limits=options.limits,
                prompt=variant.prompt,
                user_simulator=options.user_simulator if task.env.user_simulator else {},
            )


def start(
    outputs_dir: Path,
    source: Source,
    tasks: Sequence[RunnableTask],
    options: RunOptions,
    executor: Executor,
    progress: Progress | None = None,
    run_id: str | None = None,
    prompts: Mapping[str, Prompt] | None = None,
    base: Path | None = None,
) -> RunResult:
    """Start a run. ``prompts``: the prompt fixtures of the revision (by ID), for
    ``options.prompts`` and the cases' own ``prompt:``. ``base``: the folder the run
    folder's path is checked from (evalcase.atomic.base_for), else ``outputs_dir``."""
    # Before any folder; each case's rendering bounded like an attempt.
    variants = prompting.plan(tasks, prompts or {}, options.prompts, options.timeout_s)
    run_id = run_id or new_run_id()
    meta = run_meta(run_id, source, tasks, options, variants)
    folder = outputs.create(outputs_dir, source.commit, run_id, meta, base=base)
    with folder.lock():
        return _execute(
            folder, meta, tasks, options, executor, progress or NoProgress(), outputs_dir, variants
        )


def options_of(
    meta: Mapping[str, Any],
    agent_options: Mapping[str, Any],
    simulator: Mapping[str, Any] | None = None,
) -> RunOptions:
    """The options a run was started with (for --resume)."""
    o = meta["options"]
    return RunOptions(
        agent=meta["agent"]["spec"],
        agent_name=meta["agent"].get("name"),
        agent_options=agent_options,
        repeat=int(o["repeat"]),
        concurrency=int(o["concurrency"]),
        timeout_s=float(o["timeout_s"]),
        suites=tuple(o.get("suites", ())),
        select=tuple(o.get("select", ())),
        executor=str(o.get("executor", "local")),
        limits=Limits(
            int(o.get("max_reply_bytes", Limits.max_reply_bytes)),
            int(o.get("max_steps", Limits.max_steps)),
            int(o.get("max_tool_calls", Limits.max_tool_calls)),
            int(o.get("max_state_bytes", Limits.max_state_bytes)),
            int(o.get("max_record_bytes", Limits.max_record_bytes)),
            int(o.get("cel_memory_mb", Limits.cel_memory_mb)),
        ),
        seed=int(o.get("seed", 0)),
        prompts=tuple(o.get("prompts", ())),
        user_simulator=dict(simulator or {}),
    )


def check_unchanged(meta: Mapping[str, Any], source: Source, tasks: Sequence[RunnableTask]) -> None:
    """Refuse to resume when the dataset's content is not the content the run began with."""
    problems = []
    if meta["dataset"]["digest"] != source.dataset_digest:
        problems.append(
            f"dataset digest {meta['dataset']['digest'][:12]} is now {source.dataset_digest[:12]}"
        )
    recorded = meta.get("cases", {})
    now = {t.case_id: t.digest for t in tasks}
    for case_id, info in sorted(recorded.items()):
        if case_id not in now:
            problems.append(f"case {case_id} is gone")
        elif now[case_id] != info.get("digest"):
            problems.append(f"case {case_id} changed")
    if problems:
        raise FatalError(
            f"cannot resume run {meta['run_id']}: the dataset changed since it started ("
            + "; ".join(problems[:5])
            + (" ..." if len(problems) > 5 else "")
            + "). Start a new run instead."
        )


def resume(
    folder: outputs.RunFolder,
    source: Source,
    tasks: Sequence[RunnableTask],
    agent_options: Mapping[str, Any],
    executor: Executor,
    progress: Progress | None = None,
    prompts: Mapping[str, Prompt] | None = None,
    simulator: Mapping[str, Any] | None = None,
) -> RunResult:
    with folder.lock():
        meta = folder.read_meta()
        check_unchanged(meta, source, tasks)
        planned = [t for t in tasks if t.case_id in meta.get("cases", {})]
        options = options_of(meta, agent_options, simulator)
        variants = prompting.plan(planned, prompts or {}, options.prompts, options.timeout_s)
        if prompting.versions(variants) != meta.get("prompts", {}):
            raise FatalError(
                f"cannot resume run {meta['run_id']}: its prompts changed since it started "
                f"({meta.get('prompts', {})} then, {prompting.versions(variants)} now). "
                "Start a new run instead."
            )
        meta["status"] = "running"
        meta.setdefault("resumed_at", []).append(_now())
        return _execute(
            folder,
            meta,
            planned,
            options,
            executor,
            progress or NoProgress(),
            folder.path.parent.parent,
            variants,
        )


def _execute(
    folder: outputs.RunFolder,
    meta: dict[str, Any],
    tasks: Sequence[RunnableTask],
    options: RunOptions,
    executor: Executor,
    progress: Progress,
    outputs_dir: Path,
    variants: Sequence[prompting.Variant] | None = None,
) -> RunResult:
    done: set[tuple[str, int]] = set()
    errors = 0
    versions: set[str] = set()
    damaged: list[records.Damaged] = []
    for raw in folder.attempts(damaged):
        earlier = read_record(raw)
        key = (earlier.case_id, earlier.attempt)
        if key in done:  # a duplicate written by an older runner: counted once
            continue
        done.add(key)
        errors += earlier.errored
        if earlier.agent_version:
            versions.add(earlier.agent_version)
    total = (len(variants) if variants is not None else len(tasks)) * options.repeat
    writer = folder.open_for_append()
    folder.write_meta(meta)
    new = 0
    status = "interrupted"
    progress.start(total, len(done), errors)
    if damaged:
        meta["damaged_lines"] = [str(d) for d in damaged[:100]]
    try:
        with _fewer_collections():
            for record in executor.run(
                jobs_for(tasks, options, done, outputs_dir, variants), options.concurrency
            ):
                key = (record.case_id, record.attempt)
                if key in done:  # an executor retried a job that had already finished
                    continue
                writer.write(record.to_json())  # the one place a new record becomes JSON
                done.add(key)
                new += 1
                errors += record.errored
                if record.agent_version:
                    versions.add(record.agent_version)
                progress.advance(record)
        status = "completed"
    except BaseException:
        from evalcase.run.adapters.cmd import kill_all

        kill_all()  # interrupted: the agents still running end now, with their trees
        raise
    finally:
        writer.close()
        progress.close()
        meta["status"] = status
        meta["ended_at"] = _now()
        meta["counts"] = {"attempts": len(done), "errors": errors}
        meta["agent"]["version"] = ", ".join(sorted(versions)) or None
        folder.write_meta(meta)
    return RunResult(
        meta["run_id"], folder.path, len(done), errors, new, status, tuple(map(str, damaged))
    )
