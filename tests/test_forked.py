"""evalcase.forked: work split with one forked child gives the same results, in order,
as running every job here; a failing or killed child costs time, never a result; errors
come in job order. Each case runs in a fresh interpreter (one thread, as a command's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

SCRIPT = """
import json, os, signal, sys, threading
from evalcase import forked

parent = os.getpid()
mode = sys.argv[1]

def job(n):
    def run():
        if mode == "child-raises" and n == 0:
            raise ValueError(f"job {n} in {'child' if os.getpid() != parent else 'parent'}")
        if mode == "both-raise" and n in (0, 3):
            raise ValueError(f"job {n}")
        if mode == "child-killed" and os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        return [n, os.getpid() == parent]
    return run

if mode == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
try:
    print(json.dumps(forked.run([job(n) for n in range(4)], [100.0] * 4)))
except ValueError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def run(mode: str, **env: str) -> object:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT), mode],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools"), **env},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.skipif(sys.platform != "linux" or (os.cpu_count() or 1) < 2, reason="fork, 2 cores")
def test_the_first_half_runs_in_a_child_and_the_results_come_in_order() -> None:
    assert run("plain") == [[0, False], [1, False], [2, True], [3, True]]


def test_with_evalcase_fork_0_or_another_thread_everything_runs_here() -> None:
    here = [[0, True], [1, True], [2, True], [3, True]]
    assert run("plain", EVALCASE_FORK="0") == here
    assert run("thread") == here


def test_a_childs_error_is_raised_here_and_errors_come_in_job_order() -> None:
    assert run("child-raises") == {"error": "job 0 in parent"}  # redone here, raised here
    assert run("both-raise") == {"error": "job 0"}  # job 3's (this process's) comes second


def test_a_killed_child_costs_time_not_results() -> None:
    assert run("child-killed") == [[0, True], [1, True], [2, True], [3, True]]


def test_an_import_writes_the_same_files_with_and_without_the_child(tmp_path: Path) -> None:
    import shutil

    from tests.authoring import otlp_samples as otlp

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for f in range(3):  # enough drafts and bytes for the split (forked.MIN_WEIGHT)
        lines = []
        for n in range(f * 100, f * 100 + 100):
            trace = f"{n + 1:032x}"
            question = f"订单 ORDER_{n} 能退吗？联系 u{n}@corp.cn"
            spans = otlp.genai_refund(trace=trace, question=question, order=f"ORDER_{n}")
            lines.append(otlp.request(spans))
        (inbox / f"{f:03d}.jsonl").write_text(otlp.jsonl(*lines), "utf-8")
    written = []
    for fork in ("1", "0"):
        repo = tmp_path / f"repo{fork}"
        shutil.copytree(REPO_ROOT / "tests" / "rules" / "base_repo", repo)
        proc = subprocess.run(
            [sys.executable, "-m", "evalcase", "import", str(inbox), "--dataset", "sample_set"],
            cwd=repo, capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools"), "EVALCASE_FORK": fork},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        texts = {str(p.relative_to(repo)): p.read_bytes() for p in sorted(repo.rglob("*.yaml"))}
        written.append((proc.stdout, texts))
    assert written[0] == written[1]
    assert sum("bad_case" in name for name in written[0][1]) == 300
