"""Getting a run ready: what ``evalcase run`` decides before the first attempt starts.

A new run reads the dataset (:mod:`evalcase.run.source`), selects its cases
(``--suite``, ``--select``), chooses the agent (:mod:`evalcase.run.agents`), checks what
would fail every attempt alike (:mod:`evalcase.run.preflight`), chooses the prompts and
settles the options (command line over ``[run]``). A resumed run (``--resume RUN_ID``)
reads the dataset where the run read it and takes the agent and options ``run.json``
recorded. Either way the answer is a :class:`Launch`: the label, the run ID and what to
call to run it, so that the command draws the progress, turns a signal into an
interrupted run and maps the result to an exit status (docs/running.md).

The library never prints: what the user should hear before the run (a case left out by
``--skip-invalid``, agents that are not isolated) goes to the ``warn`` callback, in the
order it happens, as the line the command shows after ``evalcase: ``; a sandbox that
``[run] require_sandbox`` wants and cannot have refuses the run (``FatalError``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.atomic import base_for
from evalcase.config import Config
from evalcase.model import FatalError
from evalcase.run import driver

Warn = Callable[[str], None]


@dataclass(frozen=True)
class RunRequest:
    """The options of ``evalcase run``, as given (None: not given, ``[run]`` decides)."""

    dataset: str | None = None
    agent: str | None = None
    base_url: str | None = None
    repeat: int | None = None
    concurrency: int | None = None
    timeout_s: float | None = None
    suites: tuple[str, ...] = ()
    selects: tuple[str, ...] = ()
    prompt_ids: tuple[str, ...] = ()
    allow_dirty: bool = False
    skip_invalid: bool = False
    resume_id: str | None = None
    executor: str | None = None
    ray_address: str | None = None
    seed: int = 0
    outputs_dir: str | None = None
    skip_without_agent: bool = False

    def problem(self) -> str | None:
        """A usage mistake in the options themselves (the command exits 2 on it)."""
        if self.ray_address and self.executor not in (None, "ray"):
            return "--ray-address goes with --executor ray"
        if not self.resume_id and not self.dataset:
            return "name a DATASET[@vN], or --resume RUN_ID"
        return None


@dataclass(frozen=True)
class Launch:
    """A run ready to start: ``execute(progress)`` runs it to its end."""

    run_id: str
    label: str
    execute: Callable[[driver.Progress], driver.RunResult]
    executor: str = "local"


@dataclass(frozen=True)
class NoAgent:
    """``--skip-without-agent`` and no agent configured: nothing to run (exit 0)."""

    message: str


def outputs_root(config: Config, outputs_dir: str | None) -> Path:
    """The folder of runs: ``--outputs``, else ``[run] outputs_dir``, under the repository."""
    out = Path(outputs_dir or config.run.outputs_dir)
    return out if out.is_absolute() else config.root / out


def prepare(config: Config, request: RunRequest, warn: Warn) -> Launch | NoAgent:
    """A new run, or the resumption of ``request.resume_id``."""
    if request.ray_address:
        from dataclasses import replace

        request = replace(request, executor="ray")
    if request.resume_id:
        return _prepare_resume(config, request, request.resume_id, warn)
    return _prepare_new(config, request, warn)


def key_variables(config: Config) -> list[str]:
    """The variables holding the keys of the runner, the judge and the user simulator
    (:func:`evalcase.run.isolation.key_variables`): never passed to an agent, and held
    out of the environment while a local run lasts (:mod:`evalcase.keys`)."""
    from evalcase.run import isolation

    return isolation.key_variables(config.raw.get("run", {}), config.grade)


def _isolated(
    config: Config, spec: str, agent_options: Mapping[str, Any], warn: Warn
) -> dict[str, Any]:
    """The agent's options with what its isolation needs (evalcase.run.isolation): the
    sandbox decision, whose warning (agents not isolated) goes to ``warn`` and whose
    error (``require_sandbox``) refuses the run."""
    from evalcase.run import isolation

    rc = config.run
    out, decision = isolation.configure(
        spec, agent_options, config.root, rc.sandbox, key_variables(config), rc.require_sandbox
    )
    if decision is not None and decision.error:
        raise FatalError(decision.error)
    if decision is not None and decision.warning:
        warn(f"warning: {decision.warning}")
    return out


def _prepare_new(config: Config, request: RunRequest, warn: Warn) -> Launch | NoAgent:
    from evalcase.run import preflight, source
    from evalcase.run.agents import resolve, with_base_url
    from evalcase.run.executors import get_executor
    from evalcase.run.select import SelectionError, select

    rc = config.run
    dataset = str(request.dataset)
    loaded = source.load(
        config, dataset, allow_dirty=request.allow_dirty, skip_invalid=request.skip_invalid
    )
    for path, whys in loaded.skipped.items():
        warn(f"skipping {path}: {'; '.join(whys)}")
    try:
        tasks = select(loaded.tasks, loaded.suites, request.suites, request.selects)
    except SelectionError as exc:
        raise FatalError(str(exc)) from None
    if request.skip_without_agent and not (
        request.agent or loaded.manifest_agent or rc.default_agent
    ):
        return NoAgent(
            f"no agent configured for {dataset} (--agent, the manifest's agent:, or [run] "
            "default_agent in evalcase.toml): the run is skipped; lint still checks every case"
        )
    choice = with_base_url(
        resolve(rc, config.root, request.agent, loaded.manifest_agent), request.base_url
    )
    out_root = outputs_root(config, request.outputs_dir)
    executor = request.executor or rc.executor
    # Before the executor starts and the run folder exists: one message, exit 2.
    preflight.check(choice, out_root, local=executor == "local")
    preflight.check_simulator(choice, rc.user_simulator, tasks)
    agent_options = _isolated(config, choice.spec, choice.options, warn)
    options = _options(config, request, loaded, choice.spec, choice.name, agent_options, executor)
    src = loaded.source
    executor_ = get_executor(executor, rc.ray, request.ray_address)
    run_id = driver.new_run_id()
    return Launch(
        run_id,
        f"{src.dataset_id}@{src.dataset_version}",
        lambda progress: driver.start(
            out_root,
            src,
            tasks,
            options,
            executor_,
            progress,
            run_id,
            prompts=loaded.dataset.prompts,
            base=base_for(config.root, out_root),
        ),
        executor,
    )


def _options(
    config: Config,
    request: RunRequest,
    loaded: Any,
    spec: str,
    name: str | None,
    agent_options: dict[str, Any],
    executor: str,
) -> driver.RunOptions:
    """The new run's options: the command line's, else ``[run]``'s; the prompts given,
    else the manifest's."""
    from evalcase.run.executors import Limits
    from evalcase.run.prompts import split

    rc = config.run
    manifest_prompts = loaded.dataset.manifest.get("prompts")
    chosen = split(request.prompt_ids) or split(
        [str(p) for p in manifest_prompts] if isinstance(manifest_prompts, list) else []
    )
    return driver.RunOptions(
        agent=spec,
        agent_name=name,
        agent_options=agent_options,
        repeat=request.repeat or rc.repeat,
        concurrency=request.concurrency or rc.concurrency,
        timeout_s=request.timeout_s or rc.timeout_s,
        suites=request.suites,
        select=request.selects,
        executor=executor,
        limits=Limits(
            rc.max_reply_bytes,
            rc.max_steps,
            rc.max_tool_calls,
            rc.max_state_bytes,
            rc.max_record_bytes,
            rc.cel_memory_mb,
        ),
        seed=request.seed,
        skipped=loaded.skipped,
        prompts=chosen,
        user_simulator=rc.user_simulator,
    )


# The options a resumed run takes from its run.json, not from the command line.
_RUN_OWN = ("agent", "base_url", "repeat", "concurrency", "timeout_s")
_RUN_OWN_MANY = ("suites", "selects", "prompt_ids")


def _prepare_resume(config: Config, request: RunRequest, run_id: str, warn: Warn) -> Launch:
    from evalcase.run import outputs, preflight, source
    from evalcase.run.agents import AgentChoice, resolve
    from evalcase.run.executors import get_executor

    if any(getattr(request, k) is not None for k in _RUN_OWN) or any(
        getattr(request, k) for k in _RUN_OWN_MANY
    ):
        raise FatalError(
            "--resume takes the run's own options; "
            "drop --agent/--base-url/--repeat/--concurrency/--timeout/--suite/--select/--prompt"
        )
    rc = config.run
    out_root = outputs_root(config, request.outputs_dir)
    folder = outputs.find(out_root, run_id, base=base_for(config.root, out_root))
    source.check_not_committed(config, folder.path)
    meta = folder.read_meta()
    loaded = source.reload(config, meta)
    spec = meta["agent"]["spec"]
    choice = resolve(rc, config.root, meta["agent"].get("name") or spec, None)
    agent_options = dict(choice.options) if choice.spec == spec else {}
    recorded_url = (meta["agent"].get("options") or {}).get("base_url")
    if recorded_url and "base_url" not in agent_options:  # an ad hoc --base-url
        agent_options["base_url"] = recorded_url
    executor = request.executor or meta["options"].get("executor", "local")
    agent = AgentChoice(spec, choice.name, agent_options)
    preflight.check(agent, out_root, local=executor == "local")
    preflight.check_simulator(agent, rc.user_simulator, _planned(loaded.tasks, meta))
    isolated = _isolated(config, spec, agent_options, warn)
    executor_ = get_executor(executor, rc.ray, request.ray_address)
    return Launch(
        run_id,
        f"{run_id} (resume)",
        lambda progress: driver.resume(
            folder,
            loaded.source,
            loaded.tasks,
            isolated,
            executor_,
            progress,
            loaded.dataset.prompts,
            rc.user_simulator,
        ),
        executor,
    )


def _planned(tasks: Sequence[Any], meta: Mapping[str, Any]) -> list[Any]:
    return [t for t in tasks if t.case_id in meta.get("cases", {})]
