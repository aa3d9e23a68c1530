"""Run an audit: each agent of the audit is one run through the normal driver, executor,
runner and environment; each run is graded by the cases' own graders without a judge.

``audit(config, spec, options, progress)``:

1. reads the dataset (a release ``DATASET@vN``, a revision, or the work tree: an audit is
   keyed by content, so uncommitted cases may be audited) and its counted cases (not
   ``observation``);
2. keeps the stored audit of every case whose key (content digest) was audited at this
   audit version (``--force`` audits them again);
3. for the others, runs each agent of :data:`~evalcase.audit.AGENTS` as one run under
   ``.git/evalcase/audit/work/<session>/runs/`` (the local pool or Ray, with progress; the
   ``parrot`` only on cases with tools, where reciting the answer without acting means
   something). The session is named by the cases' keys: an interrupted audit, started
   again, resumes its runs (finished attempts are not run again) instead of starting
   over;
4. grades each run with the cases' graders (no judge: ``llm_rubric`` stays pending; gold
   end states replayed as ``evalcase grade`` does) and writes each case's audit
   (:mod:`evalcase.audit.verdicts`) to the store; the session's runs are then removed
   unless ``keep_runs``: the facts keep what the audit needs, bounded in size.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalcase import __version__
from evalcase.audit import AGENTS, AUDIT_VERSION, GOLD, MUTANTS
from evalcase.audit.agents import SPECS
from evalcase.audit.keys import keys_for, plan_turns, staged
from evalcase.audit.mutants import Mutant, mutants_for, origin_id
from evalcase.audit.verdicts import case_audit
from evalcase.audit_facts import store
from evalcase.config import Config
from evalcase.contract.task import Task
from evalcase.model import FatalError

SESSION = "session.json"


@dataclass(frozen=True)
class AuditOptions:
    executor: str = "local"
    concurrency: int = 4
    timeout_s: float = 60.0
    ray_address: str | None = None
    agents: tuple[str, ...] = AGENTS
    force: bool = False
    keep_runs: bool = False
    seed: int = 0
    select: tuple[str, ...] = ()  # --select patterns (evalcase.run.select); () = every case


@dataclass(frozen=True)
class AuditResult:
    dataset_id: str
    dataset_version: str
    cases: Mapping[str, Mapping[str, Any]]  # case ID -> stored facts
    audited: tuple[str, ...]  # case IDs audited by this call (the others were stored)
    unbuilt: Mapping[str, str] = field(default_factory=dict)  # case path -> why not audited
    runs: Mapping[str, str] = field(default_factory=dict)  # agent -> run ID of this call

    def count(self, status: str) -> int:
        return sum(1 for c in self.cases.values() if c.get("status") == status)

    @property
    def ok(self) -> bool:
        """No finding and every counted case audited (unproven cases are warnings)."""
        return not self.unbuilt and not any(
            c.get("status") == store.FINDINGS for c in self.cases.values()
        )


def counted(tasks: Sequence[Task]) -> list[Task]:
    def roles(task: Task) -> set[str]:
        raw = task.meta.get("dataset_role")
        return {str(r) for r in (raw if isinstance(raw, list) else [raw])}

    return [t for t in tasks if "observation" not in roles(t)]


def needs_parrot(task: Task) -> bool:
    """Reciting the answer key means something only where acting is part of the task."""
    return bool(task.agent.tools) or bool(
        task.judge.expected_calls and any(p.calls for p in task.judge.expected_calls.any_of)
    )


def tasks_for(agent: str, tasks: Sequence[Task]) -> list[Task]:
    """The tasks an agent of the audit runs: the gold's and the mutants' with their user
    side staged (two actors: the user's gold calls scripted, keys.staged)."""
    if agent == MUTANTS:
        return [m.task for t in tasks for m in mutants_for(t)]
    if agent == GOLD:
        return [staged(t, plan_turns(t)) for t in tasks]
    return [t for t in tasks if agent != "parrot" or needs_parrot(t)]


ProgressFor = Callable[[str], Any]
MutantRun = tuple[Mutant, Any, Any]  # the mutant, its AttemptResult, its AttemptRecord


def audit(
    config: Config, spec: str, options: AuditOptions, progress_for: ProgressFor | None = None
) -> AuditResult:
    from evalcase.run import source

    loaded = source.load(config, spec, allow_dirty=True, skip_invalid=True)
    tasks = counted(loaded.tasks)
    if options.select:
        from evalcase.run.select import SelectionError, select

        try:
            tasks = select(tasks, loaded.suites, (), options.select)
        except SelectionError as exc:
            raise FatalError(str(exc)) from None
    if not tasks:
        raise FatalError(f"{loaded.source.dataset_id} has no counted case to audit")
    dataset_dir = _dataset_dir(tasks[0])
    # Keys from the facts the dataset was read from (lint computes the same): no second
    # analysis of the revision.
    governance = tuple(sorted(config.governance_fields))
    keys = store.case_keys(loaded.dataset.index, governance, dataset_dir)
    missing = [t.case_id for t in tasks if t.case_id not in keys]
    if missing:
        raise FatalError(f"no content digest for {', '.join(missing[:5])}: lint the dataset")
    root = config.root
    todo = [t for t in tasks if options.force or store.read_case(root, keys[t.case_id]) is None]
    runs: dict[str, str] = {}
    if todo:
        runs = _run_session(config, loaded, todo, keys, options, progress_for)
    # Each case's status by the lookup lint, tag and reports make (store.status_of).
    cases = {
        t.case_id: {
            **(store.read_case(root, keys[t.case_id]) or {}),
            "status": store.status_of(root, t.case_id, keys[t.case_id]).status,
        }
        for t in tasks
    }
    last = store.read_dataset(root, loaded.source.dataset_id) or {}
    earlier = _dict(last.get("cases"))
    store.write_dataset(
        root,
        loaded.source.dataset_id,
        {
            "dataset_id": loaded.source.dataset_id,
            "dataset_version": loaded.source.dataset_version,
            "revision": loaded.source.revision,
            "audit_version": AUDIT_VERSION,
            "audited_at": _now(),
            # a --select audit adds to what the dataset's earlier audits recorded
            "cases": {**earlier, **{t.case_id: keys[t.case_id] for t in tasks}},
        },
    )
    return AuditResult(
        loaded.source.dataset_id,
        loaded.source.dataset_version,
        cases,
        tuple(t.case_id for t in todo),
        {path: "; ".join(whys) for path, whys in loaded.skipped.items()},
        runs,
    )


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _dataset_dir(task: Task) -> str:
    parts = Path(task.path).parts
    return parts[1] if len(parts) > 2 and parts[0] == "datasets" else ""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _run_session(
    config: Config,
    loaded: Any,
    todo: Sequence[Task],
    keys: Mapping[str, str],
    options: AuditOptions,
    progress_for: ProgressFor | None,
) -> dict[str, str]:
    from evalcase.run import driver, outputs
    from evalcase.run.executors import Limits, get_executor

    name = hashlib.blake2b(
        json.dumps(
            [sorted(keys[t.case_id] for t in todo), list(options.agents), AUDIT_VERSION]
        ).encode(),
        digest_size=8,
    ).hexdigest()
    work = store.root_of(config.root) / "work" / name
    runs_dir = work / "runs"
    work.mkdir(parents=True, exist_ok=True)
    key_file = work / "keys.json"
    answer_keys = keys_for(todo)
    if MUTANTS in options.agents:
        for task in todo:
            answer_keys.update({m.task.agent.attempt_key: m.key() for m in mutants_for(task)})
    key_file.write_text(json.dumps(answer_keys, ensure_ascii=False), "utf-8")
    session_path = work / SESSION
    session: dict[str, str] = {}
    if session_path.is_file():
        try:
            loaded_session = json.loads(session_path.read_text("utf-8"))
            session = {str(k): str(v) for k, v in loaded_session.items()}
        except (ValueError, AttributeError):
            session = {}
    rc = config.run
    executor = get_executor(options.executor, rc.ray, options.ray_address)
    agent_options = {"key_file": str(key_file), "inline": True}
    limits = Limits(
        rc.max_reply_bytes, rc.max_steps, rc.max_tool_calls, rc.max_state_bytes,
        rc.max_record_bytes, rc.cel_memory_mb,
    )  # fmt: skip
    folders: dict[str, Path] = {}
    # One session for every agent's run: on Ray, one connection and one job whose
    # workers the later runs reuse (each run alone would connect and start its own).
    with executor.session():
        for agent in options.agents:
            tasks = tasks_for(agent, todo)
            if not tasks:
                continue
            progress = progress_for(f"audit {agent}") if progress_for else None
            run_id = session.get(agent)
            folder = None
            if run_id is not None:
                try:
                    folder = outputs.find(runs_dir, run_id)
                except FatalError:
                    folder = None
            if folder is not None:
                if folder.read_meta().get("status") != "completed":
                    driver.resume(
                        folder, loaded.source, tasks, agent_options, executor, progress,
                        loaded.dataset.prompts, rc.user_simulator,
                    )  # fmt: skip
                folders[agent] = folder.path
                continue
            run_id = driver.new_run_id()
            session[agent] = run_id
            session_path.write_text(json.dumps(session), "utf-8")
            run_options = driver.RunOptions(
                agent=SPECS[agent],
                agent_name=f"audit:{agent}",
                agent_options=agent_options,
                concurrency=options.concurrency,
                timeout_s=options.timeout_s,
                executor=options.executor,
                limits=limits,
                seed=options.seed,
                user_simulator=rc.user_simulator,
            )
            result = driver.start(
                runs_dir, loaded.source, tasks, run_options, executor, progress, run_id,
                prompts=loaded.dataset.prompts,
            )  # fmt: skip
            folders[agent] = result.path
    _grade_and_store(config, todo, keys, folders, MUTANTS in options.agents)
    if not options.keep_runs:
        shutil.rmtree(work, ignore_errors=True)
    return session


def _grade_and_store(
    config: Config,
    todo: Sequence[Task],
    keys: Mapping[str, str],
    folders: Mapping[str, Path],
    with_mutants: bool = True,
) -> None:
    from evalcase.contract import records
    from evalcase.grade.context import GradeContext
    from evalcase.grade.engine import AttemptResult, grade_attempt
    from evalcase.grade.gold import GoldStates
    from evalcase.grade.recorded_run import read_run
    from evalcase.run.gold_replay import configured

    ctx = GradeContext(gold=GoldStates(configured(config.raw.get("run") or {})))
    by_id = {t.case_id: t for t in todo}
    results: dict[str, dict[str, AttemptResult | None]] = {t.case_id: {} for t in todo}
    attempts: dict[str, dict[str, Mapping[str, Any] | None]] = {t.case_id: {} for t in todo}
    mutants: dict[str, dict[str, Mutant]] = {
        t.case_id: {m.task.case_id: m for m in mutants_for(t)} if with_mutants else {} for t in todo
    }
    graded: dict[str, dict[str, MutantRun]] = {t.case_id: {} for t in todo}
    for agent, folder in folders.items():
        for record in read_run(folder).attempts:
            task = by_id.get(origin_id(record.case_id))
            if task is None:
                continue
            trusted = records.observe(record, task.env.initial_state)
            result = grade_attempt(task.judge, trusted, ctx)
            if agent == MUTANTS:
                mutant = mutants[task.case_id].get(record.case_id)
                if mutant is not None:
                    graded[task.case_id][record.case_id] = (mutant, result, record)
                continue
            results[task.case_id][agent] = result
            attempts[task.case_id][agent] = record.to_json()
    stamp = _now()
    for task in todo:
        ran = [graded[task.case_id].get(m) for m in mutants[task.case_id]]
        audited = case_audit(
            task,
            results[task.case_id],
            attempts[task.case_id],
            mutants=[r for r in ran if r is not None] if with_mutants else None,
        )
        facts = {
            **audited.to_dict(),
            "audited_at": stamp,
            "evalcase_version": __version__,
            "agents_run": sorted(
                {*results[task.case_id], *([MUTANTS] if graded[task.case_id] else [])}
            ),
        }
        if GOLD not in results[task.case_id]:
            facts["warnings"] = [*facts["warnings"], "the gold oracle was not run"]
        store.write_case(config.root, keys[task.case_id], facts)
