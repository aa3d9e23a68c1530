"""Grading and report throughput on a recorded run of the example agent.

    python benchmarks/bench_grade.py [--copies 100]

Runs the example agent once on refund_regression_set (evalcase run --no-grade), makes a run
of COPIES x 32 attempts from its records (attempt numbers 1..COPIES), then times grading
(no judge: llm_rubric pending), the four report files, and a re-grade. Prints the figures;
it asserts nothing (times depend on the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=100)
    args = parser.parse_args()
    from evalcase.config import load_config
    from evalcase.report.pipeline import grade_and_report

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        for name in ("datasets", "fixtures", "examples"):
            shutil.copytree(ROOT / name, repo / name)
        shutil.copy(ROOT / "pyproject.toml", repo / "pyproject.toml")
        env = {
            **os.environ,
            "GIT_AUTHOR_NAME": "b",
            "GIT_AUTHOR_EMAIL": "b@example.invalid",
            "GIT_COMMITTER_NAME": "b",
            "GIT_COMMITTER_EMAIL": "b@example.invalid",
            "PYTHONPATH": str(ROOT / "tools"),
        }
        for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "x"]):
            subprocess.run(cmd, cwd=repo, env=env, check=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "evalcase",
                "run",
                "refund_regression_set",
                "--no-grade",
                "--progress",
                "none",
            ],
            cwd=repo,
            env=env,
            check=True,
        )
        (run_dir,) = [p for p in (repo / "outputs").glob("*/*") if p.is_dir()]
        records = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
        with (run_dir / "attempts.jsonl").open("w", encoding="utf-8") as f:
            for n in range(1, args.copies + 1):
                for r in records:
                    f.write(json.dumps({**r, "attempt": n}, ensure_ascii=False) + "\n")
        total = len(records) * args.copies
        config = load_config(repo)
        t0 = time.perf_counter()
        outcome = grade_and_report(config, run_dir, environ={})
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        grade_and_report(config, run_dir, environ={})
        again = time.perf_counter() - t0
        size = sum(p.stat().st_size for p in outcome.report_dir.iterdir())
        print(f"attempts graded:          {total}")
        print(f"grade lines:              {len(outcome.graded.lines)}")
        print(f"grade + 4 report files:   {first:.2f} s ({total / first:.0f} attempts/s)")
        print(f"re-grade:                 {again:.2f} s")
        print(f"report folder:            {size / 1e6:.1f} MB")
        print(f"load average (1 min):     {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
