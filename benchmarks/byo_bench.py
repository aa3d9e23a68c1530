"""Bring your own agent (loop = "agent"): what the per-attempt servers cost.

Measured, each in this one process after a warm-up (imports and the transport's event
loop started once, as in a run):

1. ``start``: the attempt's servers (MCP endpoint and model proxy, one uvicorn server on
   a loopback port, evalcase.run.attempt_host) started and stopped, per attempt; beside
   it the start of the smallest agent process (``python -I -S -c pass``) for scale.
2. ``tool``: one tool call through MCP (JSON-RPC ``tools/call`` over HTTP keep-alive,
   answered by the attempt's Environment on the attempt's thread) against
   ``Environment.call`` itself; median difference.
3. ``model``: one chat completion through the proxy against the same request sent to
   the upstream directly (benchmarks/openai_stub.py answering at once); median difference.
4. ``concurrent``: N attempts of a loop agent (``sh`` and ``curl``: one model call through
   the proxy, then its reply) at concurrency 200 against the stub answering after 1 s,
   through the whole runner (evalcase.run.driver), unsandboxed; against the ideal
   N x 1 s / 200, with this process's peak resident memory (VmHWM) and the CPU seconds
   the runner, the agents' processes and the stub used (on two cores the sum over two
   is the row's floor, whatever the load), and the runner's part split by thread (its
   event loop: the servers and the proxy; the driver's thread; the attempts' threads);
   then the same agents without evalcase (each process started from a thread pool of the
   same concurrency, sent its turn, calling a second stub directly): the machine's own
   time for the agents' work, the baseline the goal's 1.25x + 1 s is also given against.
   ``--agent bash`` runs the same turn from a cheaper program (bash alone, its model call
   over ``/dev/tcp``: no curl process, no TLS library loaded), so that more of the row
   is evalcase's own cost; ``--agent bash-mcp`` lists its tools over MCP (one
   ``tools/list``) before the model call, as a framework's MCP client does at its start.
   The run's one-time imports (uvicorn, aiohttp; the MCP SDK on the first MCP request,
   about 0.35 s of CPU, so only in ``bash-mcp``) are inside the row's window, as in
   ``evalcase run``.

Usage, from the repository root (the agents extra installed)::

    python benchmarks/byo_bench.py                 # everything (N = 1000)
    python benchmarks/byo_bench.py --quick         # fewer samples, N = 200
    python benchmarks/byo_bench.py --only concurrent -n 100 --concurrency 20
    python benchmarks/byo_bench.py --only concurrent -n 200 --agent bash   # a cheaper agent
    python benchmarks/byo_bench.py --only concurrent -n 200 --agent bash-mcp
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(REPO_ROOT / "tools"), str(BENCH)]

from run_bench import BenchTask, Stub, _rss_mb, _task  # noqa: E402

from evalcase.run.attempt_host import AttemptHost  # noqa: E402
from evalcase.run.environment import Environment, Recorder  # noqa: E402
from evalcase.run.mcp_server import ToolAnswer  # noqa: E402
from evalcase.run.model_proxy import Budget, Upstream  # noqa: E402

CARDS = [
    {
        "name": "order_lookup",
        "description": "the order_lookup tool",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]
AGENT_SH = """#!/bin/sh
# One user turn: one model call through the proxy, then the reply line.
while read -r line; do
  curl -s -o /dev/null -H "Authorization: Bearer $OPENAI_API_KEY" \\
    -H "Content-Type: application/json" \\
    -d '{"model": "stub-1", "messages": [{"role": "user", "content": "hi"}]}' \\
    "$OPENAI_BASE_URL/chat/completions"
  echo '{"role": "assistant", "content": "ok"}'
done
"""
# The same turn from a cheaper program: bash alone, its model call over /dev/tcp (HTTP/1.1,
# one connection per call, as curl makes it): no curl process, no TLS library loaded.
AGENT_BASH = r"""#!/bin/bash
# One user turn: one model call through the proxy (bash's /dev/tcp), then the reply line.
hostport=${OPENAI_BASE_URL#http://}; hostport=${hostport%%/*}
host=${hostport%:*}; port=${hostport##*:}; path=/${OPENAI_BASE_URL#http://*/}
body='{"model": "stub-1", "messages": [{"role": "user", "content": "hi"}]}'
while read -r line; do
  exec 3<>"/dev/tcp/$host/$port"
  head='POST %s/chat/completions HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n'
  head+='Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n'
  printf "$head%s" \
    "$path" "$hostport" "$OPENAI_API_KEY" "${#body}" "$body" >&3
  IFS= read -r status <&3
  length=0
  while IFS= read -r header <&3 && [ "$header" != $'\r' ]; do
    case ${header,,} in content-length:*) length=${header#*:}; length=${length//[!0-9]/} ;; esac
  done
  [ "$length" -gt 0 ] && read -r -N "$length" answer <&3
  exec 3<&-
  case $status in
    "HTTP/1.1 200"*) echo '{"role": "assistant", "content": "ok"}' ;;
    *) echo "model call failed: $status" >&2; exit 1 ;;
  esac
done
"""
# The same, listing its tools over MCP first (one JSON-RPC ``tools/list`` on a connection of
# its own, as a framework's MCP client does at its start): the run pays for the MCP SDK,
# which a run whose agents never ask their MCP endpoint for anything does not import.
AGENT_BASH_MCP = AGENT_BASH.replace(
    "while read -r line; do\n",
    r"""mcp_path=/${EVALCASE_MCP_URL#http://*/}
list='{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
while read -r line; do
  exec 3<>"/dev/tcp/$host/$port"
  head='POST %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json, text/event-stream\r\n'
  head+='Content-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n'
  printf "$head%s" "$mcp_path" "$hostport" "${#list}" "$list" >&3
  IFS= read -r status <&3
  IFS= read -r -d '' tools <&3  # to the end: the server closes (no cat process)
  exec 3<&-
  case $status$tools in
    "HTTP/1.1 200"*order_lookup*) ;;
    *) echo "tools/list failed: $status" >&2; exit 1 ;;
  esac
""",
    1,
)
# kind -> (label, shell, the agent, the same work without evalcase: the baseline's agent)
AGENTS = {
    "curl": ("sh + curl", "/bin/sh", AGENT_SH, AGENT_SH),
    "bash": ("bash, /dev/tcp", "/bin/bash", AGENT_BASH, AGENT_BASH),
    # without evalcase there is no MCP server: the model call alone
    "bash-mcp": ("bash, /dev/tcp, tools/list over MCP first", "/bin/bash", AGENT_BASH_MCP,
                 AGENT_BASH),
}  # fmt: skip


def stop_stub(stub: Stub) -> dict[str, Any]:
    """Stop the stub; what it saw. Its last JSON line: connections the proxy's pool keeps
    alive end with tracebacks before it, which say nothing."""
    stub.proc.terminate()
    _, err = stub.proc.communicate(timeout=10)
    lines = [x for x in err.splitlines() if x.startswith("{")]
    return dict(json.loads(lines[-1])) if lines else {}


def ms(seconds: list[float]) -> str:
    q = statistics.quantiles(seconds, n=10)
    return f"median {statistics.median(seconds) * 1000:.2f} ms, p90 {q[-1] * 1000:.2f} ms"


def host(upstream: str = "http://127.0.0.1:1/v1") -> AttemptHost:
    return AttemptHost(CARDS, Upstream(upstream, None), Budget(), 1_000_000, time.monotonic() + 600)


def start_row(n: int) -> None:
    h = host()
    h.start()
    h.stop()  # warm-up: imports, the event loop
    times = []
    for _ in range(n):
        t = time.perf_counter()
        h = host()
        h.start()
        h.stop()
        times.append(time.perf_counter() - t)
    agent = []
    for _ in range(max(10, n // 5)):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        agent.append(time.perf_counter() - t)
    print(f"start   : servers started and stopped per attempt, {n} times: {ms(times)}")
    print(f"          the smallest Python agent process (-I -S -c pass): {ms(agent)}")


def serve(h: AttemptHost, env: Environment, stop: threading.Event) -> None:
    """What the attempt's thread does while it waits for the agent's reply."""
    while not stop.is_set():
        ready, _, _ = select.select([h.wake_r], [], [], 0.1)
        if ready:
            h.drain_wake()
            for item in h.pending():
                if item.kind == "tool":
                    if len(env.calls) >= 200:  # a fresh attempt's budget of calls
                        env.calls.clear()
                    message = env.call(
                        "c", item.fields["tool"], item.fields["arguments"], user_confirmed=False
                    )
                    item.resolve(ToolAnswer(str(message["content"])))


def tool_row(n: int) -> None:
    task: BenchTask = _task(0)
    env = Environment(task.env, Recorder())
    direct = []
    for _ in range(n):
        t = time.perf_counter()
        env = Environment(task.env, Recorder())  # a fresh attempt: no max_tool_calls
        env.call("c", "order_lookup", '{"order_id": "O1"}', user_confirmed=False)
        direct.append(time.perf_counter() - t)
    h = host()
    h.start()
    stop = threading.Event()
    served = Environment(task.env, Recorder())
    thread = threading.Thread(target=serve, args=(h, served, stop), daemon=True)
    thread.start()
    _, path = h.urls()[1].split(f":{h.port}", 1)
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "order_lookup", "arguments": {"order_id": "O1"}},
        }
    )
    client: dict[str, Any] = {"__name__": "byo_client"}
    exec(CLIENT, client)  # the client below, in this process
    through: list[float] = client["timed"](h.port, path, body, n)
    # The same calls from a process of their own, as an agent makes them: the client's
    # own parsing then shares no interpreter lock with the server's loop.
    apart_run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CLIENT, str(h.port), path, body, str(n)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    apart = json.loads(apart_run.stdout)
    stop.set()
    h.stop()
    diff = statistics.median(through) - statistics.median(direct)
    diff_apart = statistics.median(apart) - statistics.median(direct)
    print(
        f"tool    : Environment.call {ms(direct)}; through MCP {ms(through)}; "
        f"difference of medians {diff * 1000:.2f} ms ({n} calls)\n"
        f"          the client in a process of its own: through MCP {ms(apart)}; "
        f"difference of medians {diff_apart * 1000:.2f} ms"
    )


# The tool row's client: HTTP keep-alive, ``n`` timed calls after 20 untimed ones, the
# latencies in seconds; run in the benchmark's process, and as an agent runs it, in a
# process of its own (``-c``: printed as JSON).
CLIENT = """
import http.client, json, sys, time


def timed(port, path, body, n):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    conn = http.client.HTTPConnection("127.0.0.1", port)
    out = []
    for i in range(n + 20):
        t = time.perf_counter()
        conn.request("POST", path, body, headers)
        answer = conn.getresponse().read()
        if i >= 20:
            out.append(time.perf_counter() - t)
    conn.close()
    assert b"signed" in answer, answer
    return out


if __name__ == "__main__":
    print(json.dumps(timed(int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]))))
"""


def model_row(n: int) -> None:
    stub = Stub(0.0)
    try:
        body = json.dumps({"model": "stub-1", "messages": [{"role": "user", "content": "hi"}]})
        headers = {"Content-Type": "application/json"}

        def timed(port: int, path: str, extra: dict[str, str]) -> list[float]:
            conn = http.client.HTTPConnection("127.0.0.1", port)
            out = []
            for i in range(n + 20):
                t = time.perf_counter()
                conn.request("POST", path, body, {**headers, **extra})
                data = conn.getresponse().read()
                if i >= 20:
                    out.append(time.perf_counter() - t)
            assert b"chat.completion" in data, data
            return out

        direct = timed(stub.port, "/v1/chat/completions", {})
        h = host(f"http://127.0.0.1:{stub.port}/v1")
        h.start()
        assert h.port is not None
        through = timed(h.port, "/v1/chat/completions", {"Authorization": f"Bearer {h.token}"})
        h.stop()
    finally:
        stop_stub(stub)
    diff = statistics.median(through) - statistics.median(direct)
    print(
        f"model   : upstream directly {ms(direct)}; through the proxy {ms(through)}; "
        f"difference of medians {diff * 1000:.2f} ms ({n} calls)"
    )


def loop_cpu() -> float:
    """The CPU seconds the runner's event loop thread (evalcase.transport) has used."""
    import asyncio

    from evalcase import transport

    loop, _ = transport.shared()

    async def used() -> float:
        return time.thread_time()

    return asyncio.run_coroutine_threadsafe(used(), loop).result(timeout=30)


def direct_run(agent: Path, port: int, n: int, concurrency: int, shell: str) -> float:
    """The same agents without evalcase: ``n`` processes of ``agent``, ``concurrency`` at a
    time, each sent one user turn and read to its reply, calling the stub directly (no
    runner, proxy, MCP server or zygote): the machine's own time for this work."""
    from concurrent.futures import ThreadPoolExecutor

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "OPENAI_API_KEY": "direct",
    }

    def one(_: int) -> None:
        proc = subprocess.run(
            [shell, str(agent)], input='{"role": "user", "content": "hi"}\n',
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        if '"ok"' not in proc.stdout:
            raise SystemExit(f"the direct agent did not answer: {proc.stderr[-500:]}")

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t0


def concurrent_row(n: int, concurrency: int, kind: str = "curl") -> None:
    from evalcase.run import driver
    from evalcase.run.executors import get_executor

    stub = Stub(1.0)
    folder = Path(tempfile.mkdtemp(prefix="byo-bench-"))
    agent = folder / "agent.sh"
    label, shell, text, baseline = AGENTS[kind]
    agent.write_text(text, "utf-8")
    agent.chmod(0o755)
    try:
        tasks = [_task(i) for i in range(n)]
        options = driver.RunOptions(
            agent=f"cmd:{shell} {shlex.quote(str(agent))}",
            agent_options={
                "loop": "agent",
                "sandbox": False,
                "cwd": str(folder),
                "upstream": {"base_url": f"http://127.0.0.1:{stub.port}/v1"},
            },
            concurrency=concurrency,
            timeout_s=120,
        )
        source = driver.Source("bench", "v1", "digest", "0" * 40, False, "WORKTREE")
        c0 = os.times()
        t0 = time.perf_counter()
        loop0, main0 = loop_cpu(), time.thread_time()  # the loop's start in the window
        result = driver.start(folder / "out", source, tasks, options, get_executor("local"))
        elapsed = time.perf_counter() - t0
        loop1, main1 = loop_cpu(), time.thread_time()
    finally:
        seen = stop_stub(stub)
    from evalcase.run import spawn

    # The zygote forked the agents' subreapers: its times and theirs reach this process's
    # children's times when it has exited.
    spawn.reset()
    c1 = os.times()
    runner = c1.user + c1.system - c0.user - c0.system
    children = c1.children_user + c1.children_system - c0.children_user - c0.children_system
    stub_cpu = float(seen.get("cpu_s") or 0.0)
    ideal = n * 1.0 / concurrency
    direct_stub = Stub(1.0)
    agent.write_text(baseline, "utf-8")
    try:
        direct = direct_run(agent, direct_stub.port, n, concurrency, shell)
    finally:
        stop_stub(direct_stub)
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"concurrent: {n} attempts of a loop agent ({label}), concurrency {concurrency}, "
        f"1 s upstream: {elapsed:.2f} s (ideal {ideal:.2f} s, goal <= {1.25 * ideal + 1:.2f} s); "
        f"errors {result.errors}; peak memory {_rss_mb():.0f} MB; "
        f"the stub served {seen.get('served')}, at most {seen.get('peak')} at once\n"
        f"          CPU: the runner {runner:.2f} s, the agents' processes "
        f"(zygote or reaper, sh, curl) {children - stub_cpu:.2f} s, the stub {stub_cpu:.2f} s "
        f"({(runner + children - stub_cpu) / n * 1000:.1f} ms an attempt, the stub left out)\n"
        f"          the runner's threads, ms an attempt: the event loop (servers, proxy) "
        f"{(loop1 - loop0) / n * 1000:.2f}, the driver {(main1 - main0) / n * 1000:.2f}, "
        f"the attempts' threads {(runner - (loop1 - loop0) - (main1 - main0)) / n * 1000:.2f}\n"
        f"          the same agents without evalcase (each process sent its turn, calling the "
        f"stub directly, {concurrency} at a time): {direct:.2f} s; evalcase against that: "
        f"goal <= {1.25 * direct + 1:.2f} s, {'met' if elapsed <= 1.25 * direct + 1 else 'missed'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", choices=["start", "tool", "model", "concurrent"])
    parser.add_argument("-n", type=int, help="attempts of the concurrent row")
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument(
        "--agent", choices=sorted(AGENTS), default="curl",
        help="the concurrent row's agent: sh + curl (default), or bash alone (/dev/tcp)",
    )  # fmt: skip
    args = parser.parse_args()
    with open("/proc/loadavg") as f:
        print(f"host: {os.cpu_count()} cores, load average {f.read().split()[0]} at the start")
    samples = 100 if args.quick else 400
    if args.only in (None, "start"):
        start_row(50 if args.quick else 200)
    if args.only in (None, "tool"):
        tool_row(samples)
    if args.only in (None, "model"):
        model_row(samples)
    if args.only in (None, "concurrent"):
        concurrent_row(args.n or (200 if args.quick else 1000), args.concurrency, args.agent)


if __name__ == "__main__":
    main()
