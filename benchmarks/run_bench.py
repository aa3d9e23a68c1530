"""Runner overhead, beside Inspect AI: how much time and memory does an attempt cost?

Every figure comes from a fresh process (interpreter start and imports included), as a
user runs it. Measured:

1. ``null``: 100 and 1,000 attempts of an in-process agent that answers at once
   (``py:``, inline), through the whole runner: job building, the environment (fresh
   state, tool catalogue), the protocol, the record, the append-only ``attempts.jsonl``.
   Per attempt = slope between the two; start-up = intercept.
2. ``inspect``: Inspect AI (``pip install inspect-ai``) running 100 and 1,000 samples with
   a solver that answers at once (no model call) and the ``match`` scorer, no display.
3. ``cmd``: 1,000 attempts of a ``cmd:`` agent (one Python process per attempt, as the
   protocol prescribes), concurrency 2 (this machine's cores).
4. ``slow50``: an agent taking 50 ms per reply, 1,000 attempts at concurrency 16, against
   the ideal wall time 1,000 x 50 ms / 16.
5. peak resident memory (the child's VmHWM) of the null run at 1,000 and
   10,000 attempts: flat means the runner keeps no per-attempt state.
6. ``openai``: 1,000 attempts of ``openai:stub`` against a local OpenAI-compatible server
   that answers every request after 1 s (``benchmarks/openai_stub.py``, its own process),
   at ``--concurrency 200``, preflight included, against the ideal 1,000 x 1 s / 200 = 5 s,
   with the child's peak memory (goal: within 25 % of ideal, under 300 MB).
7. ``judge``: grading a run of 1,000 attempts whose cases have an ``llm_rubric``, the
   judge being the same 1 s server, ``[grade.judge] concurrency = 200`` (same goal).
8. ``sandbox``: the ``cmd:`` agent of row 3 at concurrency 1, without and with the
   bubblewrap sandbox `evalcase run` puts it in by default: the sandbox's cost per attempt.

Usage, from the repository root (evalcase installed; inspect-ai for row 2)::

    python benchmarks/run_bench.py            # everything
    python benchmarks/run_bench.py --quick    # smaller counts, no Inspect
    python benchmarks/run_bench.py --only openai judge   # just the concurrency rows
    python benchmarks/run_bench.py --only cmd            # just the cmd: agent row
    python benchmarks/run_bench.py --only openai judge --repeat 5   # min/median/max
    python benchmarks/run_bench.py --only sandbox --quick --repeat 3  # the sandbox's cost
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent


@dataclass(frozen=True)
class BenchTask:
    case_id: str
    case_version: str
    agent: Any
    env: Any
    meta: dict[str, Any] = field(default_factory=dict)
    digest: str = "d"
    fixture_versions: dict[str, str] = field(default_factory=dict)


def _task(i: int) -> BenchTask:
    """A realistic case: a system prompt, two tools, a small state."""
    from evalcase.contract.build import response
    from evalcase.run.spec import AgentView, EnvSpec, ToolBehaviour, ToolCard

    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    found = response({"when": {"order_id": "O1"}, "result": {"status": "signed"}})
    done = response({"result": {"ok": True}, "state_change": {"o.O1.r": "done"}})
    lookup = ToolBehaviour("order_lookup", False, schema, (found,), None, None, None)
    submit = ToolBehaviour("refund_submit", True, schema, (done,), None, None, None)
    view = AgentView(
        attempt_key=f"key{i}",
        system="You are a customer-service agent.",
        history=(),
        user_turns=(f"Where is my refund for order {i}?",),
        context={"channel": "app"},
        tools=tuple(ToolCard(t.name, f"the {t.name} tool", t.parameters) for t in (lookup, submit)),
        params={"temperature": 0},
    )
    env = EnvSpec(
        initial_state={"o": {"O1": {"r": "none", "items": [{"id": "I1", "price": 99}]}}},
        tools={"order_lookup": lookup, "refund_submit": submit},
        faults=(),
        permissions=(),
        corpora=(),
        confirmations=(),
        effective_at=None,
    )
    return BenchTask(f"case_{i:05d}", "v1", view, env, digest=f"d{i}")


def child_ours(
    n: int, agent: str, concurrency: int, out: str, sandbox: bool = False
) -> dict[str, Any]:
    """Run n attempts (n cases x 1) in this process; report what it cost. ``sandbox``:
    a cmd: agent under bubblewrap, as `evalcase run` starts it by default."""
    from evalcase.run import driver
    from evalcase.run.executors import get_executor

    cases = min(n, 1000)
    tasks = [_task(i) for i in range(cases)]
    repeat = max(1, n // cases)
    options = driver.RunOptions(
        agent=agent,
        agent_options={
            "inline": True,
            "path": str(BENCH),
            "cwd": str(REPO_ROOT),
            "sandbox": sandbox,
            "root": str(REPO_ROOT),
        },
        repeat=repeat,
        concurrency=concurrency,
        timeout_s=60,
    )
    source = driver.Source("bench", "v1", "digest", "0" * 40, False, "WORKTREE")
    t0 = time.perf_counter()
    result = driver.start(Path(out), source, tasks, options, get_executor("local"))
    elapsed = time.perf_counter() - t0
    assert result.attempts == cases * repeat and result.errors == 0, result
    return {
        "attempts": result.attempts,
        "run_s": elapsed,
        "maxrss_mb": _rss_mb(),
    }


def child_openai(n: int, concurrency: int, port: int, out: str) -> dict[str, Any]:
    """n attempts of the openai: adapter against the 1 s stub, preflight included (as the
    CLI runs it: the import of the client and its pool happen there)."""
    from evalcase.run import driver, preflight
    from evalcase.run.agents import AgentChoice
    from evalcase.run.executors import get_executor

    os.environ["BENCH_STUB_KEY"] = "unused"
    tasks = [_task(i) for i in range(n)]
    agent_options = {"base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": "BENCH_STUB_KEY"}
    options = driver.RunOptions(
        agent="openai:stub", agent_options=agent_options, concurrency=concurrency, timeout_s=120
    )
    source = driver.Source("bench", "v1", "digest", "0" * 40, False, "WORKTREE")
    t0, t0_mono = time.perf_counter(), time.monotonic()
    preflight.check(AgentChoice(options.agent, None, agent_options), Path(out))
    result = driver.start(Path(out), source, tasks, options, get_executor("local"))
    elapsed = time.perf_counter() - t0
    assert result.attempts == n and result.errors == 0, result
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "attempts": n,
        "run_s": elapsed,
        "t0": t0_mono,
        "cpu_s": cpu.ru_utime + cpu.ru_stime,
        "maxrss_mb": _rss_mb(),
    }


def child_judge(n: int, concurrency: int, port: int, out: str) -> dict[str, Any]:
    """Grade n attempts of cases with an llm_rubric against the 1 s stub as the judge."""
    from evalcase.contract import attempt
    from evalcase.grade.aggregate import CaseMeta
    from evalcase.grade.context import GradeContext, JudgeConfig
    from evalcase.grade.recorded_run import RunRecord, grade_run
    from evalcase.grade.spec import judge_spec_from_case
    from evalcase.grade.tasks import GradingCase, GradingDataset

    rubric = {"dimensions": [{"name": "helpful", "scale": {"min": 1, "max": 5}}]}
    cases = {}
    attempts = []
    for i in range(n):
        case_id = f"case_{i:05d}"
        case = {
            "case_id": case_id,
            "rubric": rubric,
            "evaluator_config": {"graders": [{"type": "llm_rubric"}]},
        }
        cases[case_id] = GradingCase(judge_spec_from_case(case), CaseMeta(case_id, "v1"))
        attempts.append(
            {
                "case_id": case_id, "case_version": "v1", "attempt": 1, "status": "completed",
                "error": None, "output": f"Your refund for order {i} is on its way.",
                "messages": [
                    {"role": "user", "content": f"Where is my refund for order {i}?"},
                    {"role": "assistant", "content": f"Your refund for order {i} is on its way."},
                ],
                "trace": [], "calls": [], "usage": {}, "latency_ms": 1,
            }
        )  # fmt: skip
    dataset = GradingDataset("bench", "v1", "digest", {}, cases)
    os.environ["BENCH_STUB_KEY"] = "unused"
    judge = JudgeConfig(
        base_url=f"http://127.0.0.1:{port}/v1",
        model="stub",
        api_key_env="BENCH_STUB_KEY",
        concurrency=concurrency,
        cache_dir=None,
    )
    record = RunRecord(Path(out), {"run_id": "bench"}, tuple(attempt.read(a) for a in attempts))
    t0, t0_mono = time.perf_counter(), time.monotonic()
    graded = grade_run(record, dataset, GradeContext(judge, {}, dict(os.environ)))
    elapsed = time.perf_counter() - t0
    verdicts = {r.verdict for r in graded.results}
    assert verdicts == {"pass"}, [r.results[0].grade.reason for r in graded.results[:3]]
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "attempts": n,
        "run_s": elapsed,
        "t0": t0_mono,
        "cpu_s": cpu.ru_utime + cpu.ru_stime,
        "maxrss_mb": _rss_mb(),
    }


class Stub:
    """benchmarks/openai_stub.py in its own process, answering after ``delay`` seconds."""

    def __init__(self, delay: float, content: str = "ok") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(BENCH / "openai_stub.py"), "--delay", str(delay),
             "--content", content],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def close(self) -> dict[str, Any]:
        """Stop it; what it saw (requests, peak in flight, arrivals, its CPU seconds)."""
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=10)
        lines = err.strip().splitlines()
        return json.loads(lines[-1]) if lines else {}


def concurrency_row(kind: str, n: int, concurrency: int) -> dict[str, Any]:
    """One measurement of row 6 (``openai``) or 7 (``judge``), with the stub's view."""
    content = "ok"
    if kind == "judge":
        content = json.dumps({"dimensions": [{"name": "helpful", "score": 5, "reason": "ok"}]})
    stub = Stub(1.0, content)
    load = os.getloadavg()[0]
    try:
        r = spawn(kind, str(n), str(concurrency), str(stub.port))
    finally:
        seen = stub.close()
    r["load"] = (load + os.getloadavg()[0]) / 2
    r["stub"] = seen
    return r


def concurrency_rows(n: int, concurrency: int, only: set[str], repeats: int = 1) -> None:
    """Rows 6 and 7: the openai: adapter and the judge against a 1 s server, ``repeats``
    times each (the machine is shared: min/median/max, and the CPU the run used, which
    does not depend on the load)."""
    ideal = n * 1.0 / concurrency
    labels = {
        "openai": f"openai:, 1 s server : {n} attempts at concurrency {concurrency}",
        "judge": f"judge, 1 s server   : {n} attempts graded at concurrency {concurrency}",
    }
    for kind in ("openai", "judge"):
        if kind not in only:
            continue
        rows = []
        for _ in range(repeats):
            r = concurrency_row(kind, n, concurrency)
            rows.append(r)
            stub = r["stub"]
            spread = stub.get("last", 0) - stub.get("first", 0)
            first = stub.get("first", 0) - r["t0"]  # both CLOCK_MONOTONIC, one machine
            print(
                f"{labels[kind]}: {r['run_s']:.2f} s ({100 * (r['run_s'] / ideal - 1):+.1f}% "
                f"over the ideal {ideal:.2f} s; goal <= +25%), CPU {r['cpu_s']:.2f} s, peak "
                f"{r['maxrss_mb']:.0f} MB (goal < 300), load {r['load']:.1f} | stub: "
                f"{stub.get('served')} served, peak {stub.get('peak')} in flight, first request "
                f"at {first:.2f} s, requests arrived over {spread:.2f} s (ideal "
                f"{ideal - 1:.2f}), stub CPU {stub.get('cpu_s')} s"
            )
        if repeats > 1:
            walls = sorted(r["run_s"] for r in rows)
            cpus = sorted(r["cpu_s"] for r in rows)
            loads = sorted(r["load"] for r in rows)
            mid = len(rows) // 2
            print(
                f"  {kind} over {repeats} runs: wall min/median/max {walls[0]:.2f} / "
                f"{walls[mid]:.2f} / {walls[-1]:.2f} s ({100 * (walls[mid] / ideal - 1):+.1f}% "
                f"at the median), CPU {cpus[0]:.2f} / {cpus[mid]:.2f} / {cpus[-1]:.2f} s, "
                f"peak memory max {max(r['maxrss_mb'] for r in rows):.0f} MB, load "
                f"{loads[0]:.1f}-{loads[-1]:.1f}"
            )


def child_inspect(n: int, out: str) -> dict[str, Any]:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import Generate, TaskState, solver

    @solver
    def instant() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.output.completion = "ok"
            return state

        return solve

    task = Task(
        dataset=[Sample(input=f"Where is my refund for order {i}?", target="ok") for i in range(n)],
        solver=instant(),
        scorer=match(),
    )
    t0 = time.perf_counter()
    logs = eval(task, model="mockllm/model", log_dir=out, display="none")
    elapsed = time.perf_counter() - t0
    assert logs[0].status == "success", logs[0].status
    return {
        "attempts": n,
        "run_s": elapsed,
        "maxrss_mb": _rss_mb(),
    }


def _rss_mb() -> float:
    """Peak resident memory of this process image. VmHWM, not getrusage's ru_maxrss: Linux
    carries ru_maxrss across exec, so a child forked from a big parent (this script after
    importing Inspect AI) would report the parent's size."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def sandbox_row(n: int, repeats: int) -> None:
    """The sandbox's cost per attempt: the cmd: null agent without and with bubblewrap,
    concurrency 1, alternated ``repeats`` times (the machine's load moves both alike)."""
    from evalcase.run import isolation

    problem = isolation.sandbox_problem()
    if problem is not None:
        print(f"sandbox             : not measured ({problem})")
        return
    cmd = f"cmd:{sys.executable} {BENCH / 'bench_agents.py'}"
    off: list[float] = []
    on: list[float] = []
    for _ in range(max(1, repeats)):
        off.append(spawn("ours", str(n), cmd, "1")["run_s"] / n)
        on.append(spawn("ours_sandbox", str(n), cmd, "1")["run_s"] / n)
    a, b = statistics.median(off), statistics.median(on)
    print(
        f"sandbox, cmd: agent : {n} attempts, concurrency 1, median of {len(off)}: "
        f"{a * 1000:.1f} ms per attempt without, {b * 1000:.1f} ms with bubblewrap "
        f"(+{(b - a) * 1000:.1f} ms, +{100 * (b / a - 1):.0f} %)"
    )


def spawn(*args: str) -> dict[str, Any]:
    """Run this script as a child; its wall time includes interpreter start and imports."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "tools"), str(BENCH)])}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", *args, tmp],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO_ROOT,
        )
        wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{proc.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    data["wall_s"] = wall
    return data


def cmd_row(big: int) -> None:
    """``big`` attempts of a ``cmd:`` agent (a Python process each) at concurrency 2."""
    cmd = f"cmd:{sys.executable} {BENCH / 'bench_agents.py'}"
    c = spawn("ours", str(big), cmd, "2")
    print(
        f"cmd: agent, conc. 2 : {big} attempts {c['wall_s']:.2f} s | "
        f"{c['run_s'] / big * 1000:.2f} ms per attempt (agent process start included)"
    )


def line_fit(small: dict[str, Any], large: dict[str, Any]) -> tuple[float, float]:
    per = (large["wall_s"] - small["wall_s"]) / (large["attempts"] - small["attempts"])
    return per, small["wall_s"] - per * small["attempts"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs="+")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--only",
        nargs="+",
        choices=["null", "cmd", "openai", "judge", "sandbox"],
        help="run only these rows",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="measure the openai and judge rows this often"
    )
    args = parser.parse_args()
    if args.child:
        kind, *rest = args.child
        if kind in ("ours", "ours_sandbox"):
            n, agent, conc, out = rest
            print(json.dumps(child_ours(int(n), agent, int(conc), out, kind == "ours_sandbox")))
        elif kind in ("openai", "judge"):
            n, conc, port, out = rest
            child = child_openai if kind == "openai" else child_judge
            print(json.dumps(child(int(n), int(conc), int(port), out)))
        else:
            n, out = rest
            print(json.dumps(child_inspect(int(n), out)))
        return

    big = 200 if args.quick else 1000
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    only = set(args.only or ("null", "openai", "judge", "sandbox"))
    if "sandbox" in only:
        sandbox_row(big, args.repeat)
    if "null" not in only:
        if "cmd" in only:
            cmd_row(big)
        concurrency_rows(big, 200, only, args.repeat)
        return
    null = "py:bench_agents:null"
    ours_small, ours_big = spawn("ours", "100", null, "1"), spawn("ours", str(big), null, "1")
    per, start = line_fit(ours_small, ours_big)
    show = f"100 -> {ours_small['wall_s']:.2f} s, {big} -> {ours_big['wall_s']:.2f} s"
    print(f"evalcase null agent : {show} | per attempt {per * 1000:.2f} ms, start-up {start:.2f} s")
    if not args.quick:
        try:
            import inspect_ai  # noqa: F401

            ins_small, ins_big = spawn("inspect", "100"), spawn("inspect", str(big))
            iper, istart = line_fit(ins_small, ins_big)
            show = f"100 -> {ins_small['wall_s']:.2f} s, {big} -> {ins_big['wall_s']:.2f} s"
            print(
                f"Inspect AI instant  : {show} | per sample {iper * 1000:.2f} ms, "
                f"start-up {istart:.2f} s"
            )
            print(f"  ratio per attempt : evalcase/Inspect = {per / iper:.3f} (goal < 0.1)")
        except ImportError:
            print("Inspect AI          : not installed (pip install inspect-ai)")
    cmd_row(big)
    s = spawn("ours", str(big), "py:bench_agents:slow50", "16")
    ideal = big * 0.05 / 16
    over = 100 * (s["run_s"] / ideal - 1)
    print(
        f"50 ms agent, conc 16: {big} attempts in {s['run_s']:.2f} s, ideal {ideal:.2f} s "
        f"-> {over:.1f}% over (goal <= 25%)"
    )
    m1 = ours_big if big == 1000 else spawn("ours", "1000", null, "1")
    m10 = spawn("ours", "10000" if not args.quick else "2000", null, "1")
    print(
        f"peak memory (RSS)   : {m1['attempts']:,} attempts {m1['maxrss_mb']:.0f} MB, "
        f"{m10['attempts']:,} attempts {m10['maxrss_mb']:.0f} MB"
    )
    concurrency_rows(big, 200, only, args.repeat)


if __name__ == "__main__":
    main()
