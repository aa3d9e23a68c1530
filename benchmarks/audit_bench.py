"""`evalcase audit` on tau2-bench's domains: seven agents over every task, timed.

The audit runs, for every case, the gold oracle, the six panel agents and the gold's
mutants (issue 45: the gold without each expected call, the gold plus one foreign write),
each as one run through the normal runner, then grades them (docs/audit.md). The goal
(issue 35): airline and retail, 164 tasks x 7 agents, under 5 minutes on the 2-core
machine; with the mutants (issue 45), airline, retail and telecom under 10 minutes.

Usage, from the repository root::

    python examples/tau2_airline/build.py /tmp/tau2_airline_port
    python benchmarks/audit_bench.py --repo /tmp/tau2_airline_port --dataset tau2_airline

    # several ports, one after the other (their times are added up):
    python benchmarks/audit_bench.py --repo /tmp/airline --dataset tau2_airline \\
        --repo /tmp/retail --dataset tau2_retail

Each repository is copied to a temporary folder and committed; its cases' simulated user
is the port's oracle user (``stop_user``: it ends the conversation after the scripted
opening turn, so no model is needed, as in check.py). ``evalcase audit DATASET --force``
then runs from scratch (``--repeat`` times) with ``PYTHONPATH`` holding the repository (its
tool handlers) and this checkout's ``tools``. Prints the wall time (interpreter start
included), the CPU time of the audit process and its children, the statuses and the
outcomes per agent, and one JSON line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "examples" / "tau2_common"))
from stop_user import stop_user  # noqa: E402  (the ports' oracle user)

USER_KEY = "AUDIT_BENCH_USER_KEY"


def prepare(source: Path, into: Path, url: str) -> Path:
    repo = into / source.name
    shutil.copytree(source, repo, ignore=shutil.ignore_patterns("outputs", "reports", ".evalcase*"))
    with (repo / "evalcase.toml").open("a", encoding="utf-8") as handle:
        handle.write(
            f'\n[run.user_simulator]\nbase_url = "{url}"\nmodel = "stop-user"\n'
            f'api_key_env = "{USER_KEY}"\n'
        )
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit",
         "-qm", "workload", "--allow-empty"],
        cwd=repo, check=True,
    )  # fmt: skip
    return repo


def audit(repo: Path, dataset: str, extra: list[str]) -> dict[str, Any]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(repo), str(REPO_ROOT / "tools")]),
        USER_KEY: "unused",
    }
    cmd = [sys.executable, "-m", "evalcase", "audit", dataset, "--force", "--progress",
           "none", "--format", "json", *extra]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode not in (0, 1):
        raise SystemExit(f"evalcase audit failed ({done.returncode}):\n{done.stderr[-3000:]}")
    cases = json.loads(done.stdout)
    outcomes: dict[str, Counter[str]] = {}
    for facts in cases.values():
        for agent, outcome in (facts.get("outcomes") or {}).items():
            outcomes.setdefault(agent, Counter())[outcome] += 1
    return {
        "dataset": dataset,
        "cases": len(cases),
        "attempts": sum(len(f.get("agents_run") or ()) for f in cases.values()),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "exit": done.returncode,
        "statuses": dict(Counter(str(f.get("status")) for f in cases.values())),
        "outcomes": {a: dict(c) for a, c in sorted(outcomes.items())},
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, action="append", required=True)
    parser.add_argument("--dataset", action="append", required=True)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--executor", default=None)
    args = parser.parse_args()
    if len(args.repo) != len(args.dataset):
        parser.error("give one --dataset per --repo")
    extra = []
    if args.concurrency:
        extra += ["--concurrency", str(args.concurrency)]
    if args.executor:
        extra += ["--executor", args.executor]
    totals: list[float] = []
    with ExitStack() as stack:
        url = stack.enter_context(stop_user())
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="auditbench-")))
        repos = [prepare(r.resolve(), tmp, url) for r in args.repo]
        for _ in range(args.repeat):
            total = 0.0
            for repo, dataset in zip(repos, args.dataset, strict=True):
                result = audit(repo, dataset, extra)
                total += result["wall_s"]
                print(json.dumps(result), flush=True)
            totals.append(total)
    shown = " / ".join(f"{t:.1f}" for t in sorted(totals))
    print(f"total wall (min / ... / max over {len(totals)}): {shown} s; "
          f"median {statistics.median(totals):.1f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
