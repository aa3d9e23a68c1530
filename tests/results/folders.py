"""Run and report folders written as evalcase writes them (outputs/<commit>/<run_id>/,
reports/<commit>/<run_id>/gradings/<grading_id>/), for the store's and references' tests."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any


def write_run(
    root: Path,
    run_id: str,
    verdicts: dict[str, str],
    *,
    commit: str = "a" * 40,
    agent: str = "agent_a",
    started_at: str = "2026-12-01T10:00:00+00:00",
    digests: dict[str, str] | None = None,
    dataset: str = "set_a",
    version: str = "v1",
    agent_version: str = "1",
) -> Path:
    """A run whose case ``c`` has one attempt per letter of ``verdicts[c]`` (p, f, ?, e)."""
    out = root / "outputs" / commit / run_id
    out.mkdir(parents=True)
    meta = {
        "run_id": run_id, "commit": commit, "dirty": False,
        "dataset": {"id": dataset, "version": version, "digest": "d" * 32},
        "cases": {c: {"version": "v1", "digest": (digests or {}).get(c, f"dg-{c}")}
                  for c in verdicts},
        "agent": {"spec": f"cmd:{agent}", "name": agent, "version": agent_version,
                  "options": {}},
        "options": {"repeat": max(len(v) for v in verdicts.values()), "seed": 0},
        "status": "completed", "started_at": started_at,
    }  # fmt: skip
    (out / "run.json").write_text(json.dumps(meta), "utf-8")
    lines = []
    for case, letters in verdicts.items():
        for n, _ in enumerate(letters, 1):
            lines.append({"case_id": case, "case_version": "v1", "attempt": n,
                          "status": "completed", "error": None, "latency_ms": 100.0 * n,
                          "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.001},
                          "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
    (out / "attempts.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    return out


def write_grading(
    root: Path,
    run_id: str,
    grading_id: str,
    verdicts: dict[str, str],
    *,
    commit: str = "a" * 40,
    graded_at: str = "2026-12-01T11:00:00Z",
    config_digest: str = "cfg1",
    prompt: str | None = None,
) -> Path:
    word = {"p": "pass", "f": "fail", "?": "pending", "e": "error"}
    attempts = [
        {"case_id": case, "case_version": "v1", "attempt": n, "verdict": word[letter],
         "score": 1.0 if letter == "p" else 0.0, "failure_class": None, "prompt": prompt}
        for case, letters in verdicts.items()
        for n, letter in enumerate(letters, 1)
    ]  # fmt: skip
    passes = sum(a["verdict"] == "pass" for a in attempts)
    report: dict[str, Any] = {
        "schema": "evalcase.report/1",
        "run": {"run_id": run_id, "commit": commit, "graded_at": graded_at},
        "summary": {"cases": len(verdicts), "attempts": len(attempts),
                    "pass@1": passes / len(attempts), "pass@k": 1.0, "pass^k": 0.5},
        "usage": {"cost": 0.001 * len(attempts), "latency_ms_p50": 100.0},
        "slices": {"risk_level": {"P0": {"pass@1": 0.5}}},
        "grading": {"grading_id": grading_id, "config_digest": config_digest, "earlier": []},
        "attempts": attempts,
    }  # fmt: skip
    run_dir = root / "reports" / commit / run_id
    folder = run_dir / "gradings" / grading_id
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps(report), "utf-8")
    meta = {"grading_id": grading_id, "graded_at": graded_at, "config_digest": config_digest}
    (folder / "grading.json").write_text(json.dumps(meta), "utf-8")
    shutil.copy(folder / "report.json", run_dir / "report.json")
    return folder


def copy_without_store(source: Path, target: Path) -> Path:
    """A copy of the repository at ``source`` (its files, times and git folder) without
    its results store: the store holds its sources' absolute paths, and a viewer serving
    ``source`` may hold its lock, so the copy's first reader builds its own."""
    shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns("results.duckdb*"))
    return target
