"""`evalcase view` on a synthetic history: the first page and a 10,000-attempt run's page
(docs/performance.md, "The viewer").

    python benchmarks/view_bench.py --runs 1000 --attempts 1000     # the goal's size

It writes the history of ``store_bench.py`` (same layout, same generator), adds one run of
10,000 attempts (2,500 cases x 4), indexes the store once (``evalcase store rebuild``'s
library call), then starts the real ``evalcase view`` process and times whole HTTP
requests from another process's point of view (connect, render, transfer), each the
median of 5 after one warm-up request:

- ``/``: the first page (50 newest runs of the whole history, with the filters' choices);
- ``/runs/RUN``: the large run's page (summary, gates, slices, 200 cases of 2,500);
- ``/runs/RUN?page=13``: its last page of cases;
- ``/attempt?...``: one attempt of the large run (its transcript found in a 10,000-line
  attempts.jsonl);
- ``/flaky`` and ``/case?id=``: the questions across the whole history.

Goals: the first page under 1 s, the 10,000-attempt run's page under 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import store_bench  # noqa: E402  (the same synthetic history)


def timed(url: str, runs: int = 5) -> tuple[float, int]:
    """The median seconds of ``runs`` GETs (after one warm-up) and the page's size."""
    with urllib.request.urlopen(url, timeout=120) as response:
        size = len(response.read())
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=120) as response:
            response.read()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), size


def write_large_run(root: Path, attempts: int) -> str:
    """One run of ``attempts`` attempts (4 per case) graded as evalcase grades: a report
    with every case's row, gates, slices and attempt rows, and five graders' lines per
    attempt in grades.jsonl; the newest run of the history."""
    commit, run_id, gid = "f" * 40, "20261231T235959Z-ffffff", "20261231T235959Z-gfffff"
    cases = [f"case_{i:04d}" for i in range(attempts // store_bench.REPEAT)]
    out = root / "outputs" / commit / run_id
    out.mkdir(parents=True)
    meta = {
        "run_id": run_id, "commit": commit, "dirty": False,
        "dataset": {"id": "synthetic_set", "version": "v1", "digest": "d" * 32},
        "cases": {c: {"version": "v2", "digest": "0" * 8} for c in cases},
        "agent": {"spec": "cmd:agent_a", "name": "agent_a", "version": "1.1", "options": {}},
        "options": {"repeat": store_bench.REPEAT, "seed": 0}, "status": "completed",
        "started_at": "2026-12-31T23:59:59+00:00",
    }  # fmt: skip
    (out / "run.json").write_text(json.dumps(meta), "utf-8")
    rows, lines, grades = [], [], []
    for index, case in enumerate(cases):
        verdicts = []
        for n in range(1, store_bench.REPEAT + 1):
            ok = (index + n) % 5 != 0
            verdict = "pass" if ok else "fail"
            verdicts.append(verdict)
            line = store_bench.attempt_template(case, n, ok)
            lines.append(
                line.replace("@SEED@", "1").replace("@KEY@", f"{index:08x}{n}")
                .replace("@LATENCY@", "812.5")
            )  # fmt: skip
            for grader in (
                "tool_calls",
                "state_match",
                "tool_policy",
                "must_include",
                "trace_rule",
            ):
                grades.append(json.dumps({
                    "case_id": case, "case_version": "v2", "attempt": n, "grader": grader,
                    "verdict": verdict, "score": 1.0 if ok else 0.0, "weight": 0.2,
                    "hard": True, "reason": f"{grader}: checked", "evidence": [],
                    "grader_version": "1", "judge": None, "kind": None, "prompt": None,
                }))  # fmt: skip
        passed = verdicts.count("pass")
        rows.append({
            "case_id": case, "case_version": "v2", "title": f"Synthetic case {index}",
            "risk_level": store_bench.RISKS[index % 4], "case_types": ["agent"],
            "digest": "0" * 32, "observation": False, "prompt": None,
            "attempts": len(verdicts), "passed": passed, "verdicts": verdicts,
            "status": "pass" if passed == len(verdicts) else "fail",
            "pass@1": passed / len(verdicts), "failure_classes": [],
        })  # fmt: skip
    (out / "attempts.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    passing = sum(r["status"] == "pass" for r in rows)
    report = {
        "schema": "evalcase.report/1",
        "run": {"run_id": run_id, "commit": commit, "graded_at": meta["started_at"]},
        "provenance": {"commit": commit, "dataset_id": "synthetic_set", "dataset_version": "v1",
                       "dataset_digest": "d" * 32},
        "summary": {"cases": len(rows), "attempts": attempts, "pass@1": 0.8,
                    "pass@k": 1.0, "pass^k": passing / len(rows), "passed": passing,
                    "failed": len(rows) - passing, "pending": 0, "errors": 0},
        "gates": [{"name": f"gate_{k}", "verdict": "fail", "metric": "pass^k",
                   "min_pass_rate": 0.9, "value": passing / len(rows), "cases": len(rows),
                   "reason": "below the threshold"} for k in range(3)],
        "slices": {"risk_level": {k: {"cases": len(rows) // 4, "pass@1": 0.8, "pass^k": 0.4,
                                      "failed": 1, "pending": 0} for k in store_bench.RISKS}},
        "cases": rows,
        "usage": {"cost": 4.2, "latency_ms_p50": 812.5, "latency_ms_p90": 812.5},
        "grading": {"grading_id": gid, "config_digest": "c0ffee", "earlier": []},
        "attempts": [{"case_id": r["case_id"], "case_version": "v2", "attempt": n + 1,
                      "verdict": v, "score": 1.0 if v == "pass" else 0.0,
                      "failure_class": None, "prompt": None}
                     for r in rows for n, v in enumerate(r["verdicts"])],
    }  # fmt: skip
    rep = root / "reports" / commit / run_id
    folder = rep / "gradings" / gid
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(report), "utf-8")
    (folder / "grades.jsonl").write_text("\n".join(grades) + "\n", "utf-8")
    grading = {"grading_id": gid, "graded_at": meta["started_at"], "config_digest": "c0ffee"}
    (folder / "grading.json").write_text(json.dumps(grading), "utf-8")
    for name in ("report.json", "grades.jsonl"):
        shutil.copy(folder / name, rep / name)
    return run_id


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=1000)
    parser.add_argument("--large", type=int, default=10_000, help="attempts of the large run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="evalcase-view-bench-"))
    try:
        t0 = time.perf_counter()
        store_bench.write_history(work, args.runs, args.attempts)
        big_run = write_large_run(work, args.large)
        written = time.perf_counter() - t0

        from evalcase.config import load_config
        from evalcase.results.store import rebuild

        t0 = time.perf_counter()
        stats = rebuild(load_config(work))
        indexed = time.perf_counter() - t0

        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalcase", "--root", str(work), "view", "--port", "0"],
            env=env,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stderr is not None
        found = re.search(r"(http://127\.0\.0\.1:\d+/)", proc.stderr.readline())
        assert found, "the viewer did not start"
        base = found.group(1)
        case = "case_0001"
        pages = {
            "first page /": base,
            f"large run /runs/{big_run}": f"{base}runs/{big_run}",
            "large run, last page of cases": f"{base}runs/{big_run}?page=13",
            "one attempt of the large run": (
                f"{base}attempt?run={big_run}&case=case_{args.large // 4 - 1:04d}&attempt=4"
            ),
            "/flaky (whole history)": f"{base}flaky",
            f"/case?id={case} (timeline)": f"{base}case?id={case}",
        }
        print(
            f"history: {args.runs} runs x {args.attempts} attempts + one run of {args.large}; "
            f"written in {written:.1f} s, indexed in {indexed:.1f} s ({stats.attempts} attempts)"
        )
        print(f"{'page':<46} {'median':>9} {'size':>10}")
        try:
            for name, url in pages.items():
                seconds, size = timed(url)
                print(f"{name:<46} {seconds:>8.3f}s {size:>9,}B")
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
