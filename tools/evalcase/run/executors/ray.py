"""The Ray executor: each attempt is a Ray task on an existing cluster.

For runs that outgrow one machine: thousands of cases, ``--repeat 10``, agents that need
their own CPU, GPU or sandbox. ``evalcase run DATASET --executor ray --ray-address
HOST:PORT`` (or ``RAY_ADDRESS``, or ``[run.ray] address``) connects to the cluster and
submits one task per attempt. A task receives the :class:`AttemptJob` (the agent's view,
the environment spec, the adapter spec, the seed, the attempt number, the timeout) and
returns the attempt record: fixtures and the case repository are never read on a worker.
The driver keeps at most ``--concurrency`` tasks in flight and appends each record the
moment its task finishes, so ``--resume`` works exactly as with the local pool.

A worker or node that dies mid-attempt: Ray runs the task once more on another worker
(``max_retries``, default 1); if that dies too the attempt is recorded with
``error.kind: worker_lost`` naming the failure, and the run goes on.

Per-attempt resources come from ``[run.ray]`` (``num_cpus``, ``num_gpus``, ``memory``,
``resources`` for custom ones such as ``{sandbox = 1}``), and an agent may ask for more
in its own ``[run.agents.NAME] ray`` table.

Passing: ``evalcase run refund_regression_set --executor ray --ray-address 10.0.0.5:6379``
on a cluster whose workers have evalcase (same version) and the agent installed.
Failing (a clear error, nothing run): Ray not installed (``pip install 'evalcase[ray]'``),
no address, an unreachable address, workers without evalcase or with another version,
a resource no node of the cluster offers.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from evalcase import __version__
from evalcase.contract.attempt import AttemptRecord
from evalcase.model import FatalError
from evalcase.run.adapters import split_spec
from evalcase.run.executors.base import AttemptJob
from evalcase.run.runner import lost_record, run_attempt

EXTRA_HINT = "pip install 'evalcase[ray]'"
ADDRESS_ENV = "RAY_ADDRESS"
# How long the driver waits for the first answer from a worker before giving up: long
# enough for a cold worker process on a busy node, short enough to fail a broken setup.
PROBE_TIMEOUT_S = 180.0
CONNECT_TIMEOUT_S = 10.0
# Ray settings an agent may override in its [run.agents.NAME] ray table.
TASK_KEYS = ("num_cpus", "num_gpus", "memory", "resources")


@dataclass(frozen=True)
class RaySettings:
    """``[run.ray]``, with ``--ray-address`` and ``RAY_ADDRESS`` applied on top."""

    address: str | None = None
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    memory: int | None = None  # bytes reserved per attempt (Ray's scheduling resource)
    resources: Mapping[str, float] = field(default_factory=dict)
    max_retries: int = 1
    runtime_env: Mapping[str, Any] | None = None
    namespace: str | None = None
    # Refuse resources no live node offers (an autoscaling cluster may turn this off).
    check_resources: bool = True

    @classmethod
    def from_config(cls, section: Mapping[str, Any], address: str | None = None) -> RaySettings:
        address = address or os.environ.get(ADDRESS_ENV) or section.get("address")
        return cls(
            address=str(address) if address else None,
            num_cpus=float(section.get("num_cpus", 1.0)),
            num_gpus=float(section.get("num_gpus", 0.0)),
            memory=int(section["memory"]) if section.get("memory") is not None else None,
            resources={str(k): float(v) for k, v in dict(section.get("resources", {})).items()},
            max_retries=int(section.get("max_retries", 1)),
            runtime_env=dict(section["runtime_env"]) if section.get("runtime_env") else None,
            namespace=section.get("namespace"),
            check_resources=bool(section.get("check_resources", True)),
        )


def import_ray() -> Any:
    """The ``ray`` module, or a fatal error naming the extra that installs it."""
    try:
        import ray
    except ImportError as exc:
        raise FatalError(
            f"--executor ray needs Ray, which is not installed here ({exc}); install it with "
            f"{EXTRA_HINT}"
        ) from None
    return ray


def task_options(settings: RaySettings, agent_options: Mapping[str, Any]) -> dict[str, Any]:
    """Ray's per-task options for one attempt: ``[run.ray]``, then the agent's ``ray`` table."""
    out: dict[str, Any] = {
        "num_cpus": settings.num_cpus,
        "num_gpus": settings.num_gpus,
        "max_retries": settings.max_retries,
        # An exception inside run_attempt is a bug, not a lost worker: never re-run it.
        "retry_exceptions": False,
    }
    if settings.memory is not None:
        out["memory"] = settings.memory
    resources = dict(settings.resources)
    own = agent_options.get("ray")
    if isinstance(own, Mapping):
        unknown = sorted(set(own) - set(TASK_KEYS))
        if unknown:
            raise FatalError(
                f"the agent's ray table has unknown keys {unknown}; known: {', '.join(TASK_KEYS)}"
            )
        for key in ("num_cpus", "num_gpus"):
            if key in own:
                out[key] = float(own[key])
        if own.get("memory") is not None:
            out["memory"] = int(own["memory"])
        resources.update({str(k): float(v) for k, v in dict(own.get("resources", {})).items()})
    if resources:
        out["resources"] = resources
    return out


def _attempt_on_worker(job: AttemptJob, driver_version: str) -> AttemptRecord:
    """What a Ray task runs: one attempt, plus where it ran (for debugging a cluster)."""
    if __version__ != driver_version:
        return lost_record(
            job,
            f"the Ray worker runs evalcase {__version__}, the driver {driver_version}: "
            "install the same version on the workers",
        )
    return replace(run_attempt(job), worker=_where())


def _where() -> dict[str, Any]:
    import ray

    context = ray.get_runtime_context()
    return {
        "executor": "ray",
        "node_id": context.get_node_id(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


def _probe() -> dict[str, Any]:
    """Run on a worker before any attempt: can it import evalcase, and which version?"""
    return {"evalcase": __version__, **_where()}


def _check_reachable(address: str) -> None:
    """Fail in seconds, with a clear message, where ``ray.init`` would retry for minutes."""
    if address in {"auto", "local"} or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise FatalError(f"Ray address {address!r} is not HOST:PORT (nor auto, nor ray://...)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise FatalError(
            f"cannot reach the Ray cluster at {address}: {exc}. Start one (ray start --head) "
            "or pass the head's GCS address (--ray-address, RAY_ADDRESS, [run.ray] address)"
        ) from None


def _check_resources(ray: Any, options: Mapping[str, Any]) -> None:
    """A task asking for what no node has would wait forever: say so instead."""
    total = ray.cluster_resources()
    wanted: dict[str, float] = {"CPU": options["num_cpus"], "GPU": options["num_gpus"]}
    if "memory" in options:
        wanted["memory"] = float(options["memory"])
    wanted.update(options.get("resources", {}))
    missing = [
        f"{name} {amount:g} (cluster has {total.get(name, 0):g})"
        for name, amount in sorted(wanted.items())
        if amount > 0 and total.get(name, 0) < amount
    ]
    if missing:
        have = ", ".join(f"{k} {v:g}" for k, v in sorted(total.items()) if "node:" not in k)
        raise FatalError(
            "no node of the Ray cluster can run an attempt: it asks for "
            + "; ".join(missing)
            + f". The cluster offers: {have}. Lower the request ([run.ray] or the agent's "
            "ray table), add such nodes, or set [run.ray] check_resources = false on an "
            "autoscaling cluster"
        )


def _failure(ray: Any, exc: BaseException, retries: int) -> str:
    if retries == 0:
        again = "it was not retried ([run.ray] max_retries = 0)"
    else:
        again = "Ray ran it again " + ("once" if retries == 1 else f"{retries} times")
        again += " and lost that worker too"
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    name = type(exc).__name__
    if isinstance(exc, ray.exceptions.RayTaskError):
        # run_attempt records every agent fault itself; an exception here is a bug.
        return f"the attempt crashed on its Ray worker: {name}: {first}"[:2000]
    return (f"the Ray worker running this attempt was lost ({name}: {first}); {again}")[:2000]


class RayExecutor:
    """Attempts as Ray tasks; the driver (this process) writes every record."""

    name = "ray"

    def __init__(self, settings: RaySettings | None = None) -> None:
        self.settings = settings or RaySettings.from_config({})
        # Inside session(): where the first run's connection is kept until the session ends.
        self._kept: contextlib.ExitStack | None = None
        self._connected = False

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        """The runs made inside (an audit's eight) share one connection, made by the first
        of them: one Ray job, whose worker processes the later runs reuse. Outside a
        session each run connects and disconnects by itself; a connection costs 4-6 s of
        wall time (connecting, then the job's worker processes starting: docs/ray.md)."""
        if self._kept is not None:
            yield
            return
        self._kept = contextlib.ExitStack()
        try:
            yield
        finally:
            kept, self._kept = self._kept, None
            kept.close()

    @contextlib.contextmanager
    def _connection(self, ray: Any) -> Iterator[None]:
        # Ray's driver prints its raylet's error messages ("(raylet) The node ... marked
        # dead") to sys.stdout from a thread of its own, even with log_to_driver off
        # (ray._private.worker.listen_error_messages). evalcase's standard output is the
        # command's document (`--format json`): while connected, Python's stdout is stderr.
        with contextlib.redirect_stdout(sys.stderr):
            self._connect(ray)
            self._connected = True
            try:
                yield
            finally:
                self._connected = False
                ray.shutdown()

    def preflight(self) -> str:
        """Fail before anything is written: Ray missing, no address, address unreachable."""
        import_ray()
        address = self.settings.address
        if not address:
            raise FatalError(
                "--executor ray needs a cluster to connect to: pass --ray-address HOST:PORT "
                f"(the head's GCS address), set {ADDRESS_ENV}, or set [run.ray] address. "
                "On one machine the default local pool is faster"
            )
        _check_reachable(address)
        return address

    def _connect(self, ray: Any) -> None:
        address = self.preflight()
        kwargs: dict[str, Any] = {
            "address": address,
            "include_dashboard": False,
            "log_to_driver": False,
            "logging_level": logging.WARNING,
            "configure_logging": False,
        }
        if self.settings.runtime_env:
            kwargs["runtime_env"] = dict(self.settings.runtime_env)
        if self.settings.namespace:
            kwargs["namespace"] = self.settings.namespace
        try:
            ray.init(**kwargs)
        except Exception as exc:
            raise FatalError(f"cannot connect to the Ray cluster at {address}: {exc}") from None

    def _probe(self, ray: Any, options: Mapping[str, Any]) -> None:
        # With the attempts' own resources, so it lands where attempts will run.
        ref = ray.remote(_probe).options(**options).remote()
        ready, _ = ray.wait([ref], timeout=PROBE_TIMEOUT_S)
        if not ready:
            ray.cancel(ref, force=True)
            raise FatalError(
                f"no Ray worker answered within {PROBE_TIMEOUT_S:g} s; is the cluster overloaded?"
            )
        try:
            info = ray.get(ref)
        except Exception as exc:
            raise FatalError(
                f"the Ray workers cannot run evalcase ({type(exc).__name__}: "
                f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}); install "
                f"evalcase {__version__} with its ray extra on the workers (the image), or set "
                "[run.ray] runtime_env"
            ) from None
        if info.get("evalcase") != __version__:
            raise FatalError(
                f"the Ray workers run evalcase {info.get('evalcase')}, this driver "
                f"{__version__}: install the same version on both"
            )

    def run(self, jobs: Iterable[AttemptJob], concurrency: int) -> Iterator[AttemptRecord]:
        ray = import_ray()
        source = iter(jobs)
        first = next(source, None)
        if first is None:
            return
        if split_spec(first.adapter)[0] == "replay":
            raise FatalError(
                "replay: agents read the outputs folder, which lives with the driver: "
                "run them with --executor local"
            )
        options = task_options(self.settings, first.adapter_options)
        with contextlib.ExitStack() as own:
            if not self._connected:
                (self._kept if self._kept is not None else own).enter_context(self._connection(ray))
            if self.settings.check_resources:
                _check_resources(ray, options)
            self._probe(ray, options)
            yield from self._schedule(ray, first, source, max(1, concurrency), options)

    def _schedule(
        self,
        ray: Any,
        first: AttemptJob,
        source: Iterator[AttemptJob],
        concurrency: int,
        options: Mapping[str, Any],
    ) -> Iterator[AttemptRecord]:
        remote = ray.remote(_attempt_on_worker).options(**options)
        retries = int(options["max_retries"])
        # Each attempt ends by its own deadline on the worker, so while this run holds any
        # worker a record arrives at least this often; longer means no worker is ours.
        stall_s = first.timeout_s * (retries + 1) + PROBE_TIMEOUT_S
        pending: dict[Any, AttemptJob] = {}
        upcoming: AttemptJob | None = first
        try:
            while True:
                while upcoming is not None and len(pending) < concurrency:
                    pending[remote.remote(upcoming, __version__)] = upcoming
                    upcoming = next(source, None)
                if not pending:
                    return
                refs = list(pending)
                ready, _ = ray.wait(refs, num_returns=1, timeout=stall_s)
                if ready and len(refs) > 1:  # take every finished one in one round
                    more, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
                    ready = more or ready
                if not ready:
                    raise FatalError(
                        f"no attempt finished on the Ray cluster for {stall_s:g} s (no free "
                        "worker for this run, or the workers hang); the run stops here and "
                        "--resume RUN_ID finishes it"
                    )
                for ref in ready:
                    job = pending.pop(ref)
                    try:
                        record: AttemptRecord = ray.get(ref)
                    except ray.exceptions.RayError as exc:
                        record = lost_record(job, _failure(ray, exc, retries))
                    yield record
        finally:
            # The driver stopped (done, interrupted, or a fatal error): stop its attempts.
            for ref in pending:
                # a task that ended meanwhile cannot be cancelled: nothing to do then
                with contextlib.suppress(Exception):
                    ray.cancel(ref, force=True)
