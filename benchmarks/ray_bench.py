"""The local pool against a local Ray cluster, for a CPU-bound agent (issue 16).

A run of ``--attempts`` attempts (default 200) of an agent doing ``--work-ms`` of
computation per reply (default 200 ms, measured in CPU time; benchmarks/ray_bench_agent.py),
through the real driver, with ``--concurrency`` attempts in flight (default 2, the cores of
the cluster), on:

1. the local pool, ``cmd:`` agent (a process per attempt);
2. the local pool, ``py:`` agent (threads of one process: they share one interpreter lock);
3. a Ray cluster on 127.0.0.1 (a head and two worker nodes with 1 CPU each, all on this
   machine: Ray adds no cores here, only its costs), ``cmd:`` agent;
4. the same Ray cluster, ``py:`` agent (computing in the Ray worker processes);
5. runs with no computation, of N and N/10 attempts, on each: the slope between the two
   is the per-attempt overhead of the executor (seconds of a slot), the intercept its
   fixed cost per run (for Ray: connecting, the probe, starting worker processes).

It prints each wall time with the load average around it (figures from a shared, loaded
machine are comparable only within one invocation) and where Ray starts to pay off: the
number of cluster cores above which a run of these attempts finishes sooner on the
cluster than on this machine's pool.

Usage (from the repository root, with the ``ray`` extra installed)::

    python benchmarks/ray_bench.py
    python benchmarks/ray_bench.py --attempts 100 --work-ms 500 --only cmd
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tools"))

from tests.run.ray_cluster import CLIENT_ENV, local_cluster  # noqa: E402

# Before Ray is imported: this driver talks to the cluster over loopback.
os.environ.update(CLIENT_ENV)

from tests.run.support import job, task_of, view  # noqa: E402

from evalcase.run import driver  # noqa: E402
from evalcase.run.executors import Executor, get_executor  # noqa: E402

SOURCE = driver.Source("bench", "v1", "digest-bench", "e" * 40, False, "WORKTREE")
SLOTS = 2  # worker nodes x CPUs each, and the pool's concurrency


def tasks(n: int, work_ms: float) -> list[driver.RunnableTask]:
    return [
        task_of(job(view(f"task {i}", context={"work_ms": work_ms}, key=f"k{i}"), case_id=f"c{i}"))
        for i in range(n)
    ]


def agent(kind: str) -> tuple[str, dict[str, object]]:
    if kind == "cmd":
        return f"cmd:{sys.executable} {REPO_ROOT / 'benchmarks' / 'ray_bench_agent.py'}", {}
    return "py:benchmarks.ray_bench_agent:reply", {"path": str(REPO_ROOT)}


def timed(executor: Executor, kind: str, n: int, work_ms: float, concurrency: int) -> float:
    spec, options = agent(kind)
    run = driver.RunOptions(
        agent=spec, agent_options=options, concurrency=concurrency, timeout_s=600
    )
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        result = driver.start(Path(out), SOURCE, tasks(n, work_ms), run, executor)
        wall = time.perf_counter() - start
    if result.attempts != n or result.errors:
        raise SystemExit(f"{kind}: {result.attempts} attempts, {result.errors} errors")
    return wall


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attempts", type=int, default=200)
    parser.add_argument("--work-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=SLOTS)
    parser.add_argument("--only", choices=["cmd", "py"], default=None)
    args = parser.parse_args()
    kinds = [args.only] if args.only else ["cmd", "py"]
    n, w, c = args.attempts, args.work_ms, args.concurrency
    print(
        f"# {n} attempts x {w:g} ms CPU, concurrency {c}; {os.cpu_count()} cores, "
        f"{platform.python_version()}, load {load()} at start"
    )
    small = max(2, n // 10)
    plan = (("work", n, w), ("no-op", n, 0.0), ("no-op small", small, 0.0))
    rows: dict[tuple[str, str, str], float] = {}

    def measure(where: str, executor: Executor) -> None:
        for kind in kinds:
            for label, count, work in plan:
                before = load()
                rows[(where, kind, label)] = wall = timed(executor, kind, count, work, c)
                print(
                    f"{where:<6} {kind:<3} {label:<11} {count:>4} attempts {wall:8.2f} s"
                    f"   load {before} -> {load()}"
                )

    measure("pool", get_executor("local"))
    started = time.perf_counter()
    with local_cluster(workers=SLOTS, cpus=1) as cluster:
        print(f"# local Ray cluster up in {time.perf_counter() - started:.1f} s")
        measure("ray", get_executor("ray", {}, cluster.address))
    print()
    print(
        "| agent | pool | Ray (2 local 1-CPU workers) "
        "| overhead per attempt, pool / Ray | fixed cost per run, pool / Ray |"
    )
    print("|---|---|---|---|---|")
    cost: dict[tuple[str, str], tuple[float, float]] = {}
    for kind in kinds:
        for where in ("pool", "ray"):
            # Two no-op runs of different sizes: the slope is the per-attempt overhead
            # (seconds of a slot), the intercept the fixed cost of a run.
            big, little = rows[(where, kind, "no-op")], rows[(where, kind, "no-op small")]
            per = max(0.0, (big - little) * c / (n - small))
            cost[(where, kind)] = (per, max(0.0, little - small * per / c))
        (op, fp), (orr, fr) = cost[("pool", kind)], cost[("ray", kind)]
        print(
            f"| {kind}: | {rows[('pool', kind, 'work')]:.1f} s "
            f"| {rows[('ray', kind, 'work')]:.1f} s "
            f"| {op * 1000:.0f} ms / {orr * 1000:.0f} ms | {fp:.2f} s / {fr:.2f} s |"
        )
    print()
    for kind in kinds:
        pool_wall = rows[("pool", kind, "work")]
        fixed = cost[("ray", kind)][1]
        per_ray = max(1e-9, rows[("ray", kind, "work")] - fixed) * c / n  # s of a slot
        # On W cores: fixed + n * per_ray / W < pool_wall <=> W > n * per_ray / (pool_wall - fixed)
        if pool_wall <= fixed:
            verdict = "no cluster size: the pool finishes before Ray has started"
        else:
            cores = n * per_ray / (pool_wall - fixed)
            verdict = f"a cluster of more than {cores:.1f} worker cores"
        print(
            f"{kind}: an attempt holds a slot {pool_wall * c / n:.3f} s on the pool and "
            f"{per_ray:.3f} s on Ray; to beat this machine's pool of {c} on {n} attempts "
            f"takes {verdict}."
        )


if __name__ == "__main__":
    main()
