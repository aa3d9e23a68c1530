"""The results store on a synthetic history: DuckDB (what evalcase uses) against SQLite and
Parquet files, and the store's goals (docs/performance.md, "The results store").

    python benchmarks/store_bench.py --runs 1000 --attempts 1000      # the goal's size
    python benchmarks/store_bench.py --runs 100 --attempts 1000 --compare

It writes a history in a temporary folder, laid out exactly as runs and gradings are
(``outputs/<commit>/<run_id>/{run.json, attempts.jsonl}``,
``reports/<commit>/<run_id>/gradings/<grading_id>/{grading.json, report.json}`` and the
default copy): 250 cases x 4 repeats per run (1,000 attempts), attempt lines of about
1.6 KB (a short conversation, one tool call, a trace, usage), three agents, a commit per
ten runs, some flaky cases. Then it measures, each in a fresh process state:

- indexing: ``evalcase.results.store.rebuild`` over the whole history (attempts/s);
- the store's size against the attempts JSONL it indexes;
- ``history CASE`` and ``flaky`` warm (the store open and up to date: the incremental
  check of every folder's stamps is included), the median of 5, in process and as a
  whole ``evalcase`` command;
- with ``--remote-runs N``: N runs published to a real S3 server on 127.0.0.1 (moto),
  and ``history`` asked over the remote's index on an empty clone (first and next);
- with ``--compare``: the same tables in SQLite (Python's json reading the same files,
  rows through executemany, indexes on the queried columns) and as Parquet files (one
  per run, written by DuckDB from the JSON, queried by DuckDB over the glob).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

CASES = 250
REPEAT = 4
AGENTS = ("agent_a", "agent_b", "agent_c")
RISKS = ("P0", "P1", "P2", "P3")


def attempt_template(case: str, n: int, ok: bool) -> str:
    """An attempt line with ``@SEED@``, ``@KEY@`` and ``@LATENCY@`` to fill in (json.dumps
    of every record made writing the history slower than indexing it)."""
    text = "Your order ORDER_1234 has shipped and should arrive on Friday. " * 2
    args = json.dumps({"order_id": "ORDER_1234"})
    latency = 123456.789
    record = {
        "case_id": case, "case_version": "v2", "attempt": n, "seed": 987654321,
        "attempt_key": "@KEY@", "status": "completed", "error": None,
        "output": text if ok else "I cannot help with that.", "truncated": False,
        "messages": [
            {"role": "user", "content": "Where is my order ORDER_1234? It was due yesterday."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1",
             "type": "function", "function": {"name": "order_status", "arguments": args}}]},
            {"role": "tool", "tool_call_id": "call_1",
             "content": json.dumps({"order_id": "ORDER_1234", "status": "shipped"})},
            {"role": "assistant", "content": text},
        ],
        "trace": [
            {"step": 0, "t_ms": 12.5, "type": "user", "content": "Where is my order?"},
            {"step": 1, "t_ms": 410.2, "type": "tool_call", "tool": "order_status"},
            {"step": 2, "t_ms": 415.9, "type": "tool_result", "tool": "order_status"},
            {"step": 3, "t_ms": latency, "type": "final"},
        ],
        "calls": [{"step": 1, "id": "call_1", "tool": "order_status",
                   "args": {"order_id": "ORDER_1234"}, "valid": True,
                   "result": {"order_id": "ORDER_1234", "status": "shipped"}, "error": None,
                   "fault": None, "denied_by": None, "side_effect": False, "changes": []}],
        "state_diff": [], "retrieved": [],
        "usage": {"prompt_tokens": 812, "completion_tokens": 64, "cost": 0.00042},
        "latency_ms": latency, "agent_version": "1.0", "agent_stderr": "",
        "started_at": "2026-12-01T10:00:00.000+00:00", "ended_at": "2026-12-01T10:00:01.000+00:00",
        "initial_state_digest": "4f0c2a9e1b7d3c5a", "record_version": 1,
    }  # fmt: skip
    line = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    return line.replace("987654321", "@SEED@").replace("123456.789", "@LATENCY@")


def write_history(root: Path, runs: int, attempts: int) -> tuple[int, int]:
    """The synthetic history; returns (attempts written, bytes of attempts JSONL)."""
    rng = random.Random(7)
    cases = [f"case_{i:04d}" for i in range(max(1, attempts // REPEAT))]
    # Per agent and case: the pass probability (most cases decided, some flaky).
    chance = {
        (agent, case): rng.choice((1.0, 1.0, 1.0, 0.0, 0.5, 0.8))
        for agent in AGENTS
        for case in cases
    }
    templates = {
        (case, n, ok): attempt_template(case, n, ok)
        for case in cases
        for n in range(1, REPEAT + 1)
        for ok in (True, False)
    }
    total = size = 0
    for r in range(runs):
        commit = f"{r // 10:040x}"
        run_id = f"20261201T{r // 3600:02d}{r // 60 % 60:02d}{r % 60:02d}Z-{r:06x}"
        agent = AGENTS[r % len(AGENTS)]
        out = root / "outputs" / commit / run_id
        out.mkdir(parents=True)
        meta = {
            "run_id": run_id, "commit": commit, "dirty": False,
            "dataset": {"id": "synthetic_set", "version": "v1", "digest": "d" * 32},
            "cases": {c: {"version": "v2", "digest": f"{hash(c) & 0xFFFFFFFF:08x}"} for c in cases},
            "agent": {"spec": f"cmd:{agent}", "name": agent, "version": "1.0", "options": {}},
            "options": {"repeat": REPEAT, "seed": 0}, "status": "completed",
            "started_at": f"2026-12-01T{r // 3600:02d}:{r // 60 % 60:02d}:{r % 60:02d}+00:00",
        }  # fmt: skip
        (out / "run.json").write_text(json.dumps(meta), "utf-8")
        verdicts = []
        with (out / "attempts.jsonl").open("w", encoding="utf-8") as handle:
            for i in range(attempts):
                case, n = cases[i // REPEAT % len(cases)], i % REPEAT + 1
                ok = rng.random() < chance[(agent, case)]
                line = (
                    templates[(case, n, ok)]
                    .replace("@SEED@", str(rng.randrange(1 << 31)), 1)
                    .replace("@KEY@", f"{rng.randrange(1 << 63):016x}", 1)
                    .replace("@LATENCY@", f"{rng.uniform(200, 3000):.3f}", 2)
                    + "\n"
                )
                handle.write(line)
                size += len(line.encode())
                verdicts.append((case, n, "pass" if ok else "fail"))
        total += attempts
        passes = sum(v == "pass" for _, _, v in verdicts)
        gid = f"20261201T{r // 3600:02d}{r // 60 % 60:02d}{r % 60:02d}Z-g{r:05x}"
        report = {
            "schema": "evalcase.report/1",
            "run": {"run_id": run_id, "commit": commit, "graded_at": meta["started_at"]},
            "summary": {"cases": len(cases), "attempts": attempts,
                        "pass@1": round(passes / attempts, 6), "pass@k": 0.9, "pass^k": 0.6},
            "usage": {"cost": round(0.00042 * attempts, 6), "latency_ms_p50": 1500.0,
                      "latency_ms_p90": 2700.0},
            "slices": {"risk_level": {k: {"pass@1": round(rng.random(), 3)} for k in RISKS}},
            "grading": {"grading_id": gid, "config_digest": "c0ffee", "earlier": []},
            "attempts": [{"case_id": c, "case_version": "v2", "attempt": n, "verdict": v,
                          "score": 1.0 if v == "pass" else 0.0, "failure_class": None,
                          "prompt": None} for c, n, v in verdicts],
        }  # fmt: skip
        rep = root / "reports" / commit / run_id
        folder = rep / "gradings" / gid
        folder.mkdir(parents=True)
        text = json.dumps(report)
        (folder / "report.json").write_text(text, "utf-8")
        grading = {"grading_id": gid, "graded_at": meta["started_at"], "config_digest": "c0ffee"}
        (folder / "grading.json").write_text(json.dumps(grading), "utf-8")
        shutil.copy(folder / "report.json", rep / "report.json")
    (root / "evalcase.toml").write_text("[lint]\n", "utf-8")
    (root / "datasets").mkdir()
    return total, size


def median_time(fn: Any, times: int = 5) -> tuple[float, float]:
    """Median wall and CPU seconds (all of the process's threads) of ``times`` calls."""
    walls, cpus = [], []
    for _ in range(times):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return round(statistics.median(walls), 3), round(statistics.median(cpus), 3)


def bench_duckdb(root: Path, total: int, size: int) -> dict[str, Any]:
    from evalcase.config import load_config
    from evalcase.results.queries import flaky, history
    from evalcase.results.store import open_store, rebuild, store_path

    config = load_config(root)
    t0, c0 = time.perf_counter(), time.process_time()
    stats = rebuild(config)
    index_s, index_cpu = time.perf_counter() - t0, time.process_time() - c0
    path = store_path(config)
    store_bytes = path.stat().st_size

    def one_history() -> None:
        with open_store(config) as store:
            history(store, "case_0007")

    def one_flaky() -> None:
        with open_store(config) as store:
            flaky(store)

    with open_store(config) as store:
        n_flaky = len(flaky(store))
        n_hist = len(history(store, "case_0007"))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}

    def cli(*args: str) -> tuple[float, float]:
        import resource

        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "evalcase", *args, "--format", "json"], cwd=root,
                       env=env, check=True, capture_output=True)  # fmt: skip
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        return round(time.perf_counter() - t0, 3), round(cpu, 3)

    def cli3(*args: str) -> tuple[float, float]:
        runs = sorted(cli(*args) for _ in range(3))
        return runs[1]

    return {
        "store": "duckdb",
        "attempts": stats.attempts,
        "index_s": round(index_s, 2),
        "index_cpu_s": round(index_cpu, 2),
        "attempts_per_s": round(total / index_s),
        "attempts_per_cpu_s": round(total / index_cpu),
        "store_mb": round(store_bytes / 1e6, 1),
        "jsonl_mb": round(size / 1e6, 1),
        "store_vs_jsonl": round(store_bytes / size, 4),
        "history_rows": n_hist,
        "history_warm_s_cpu_s": median_time(one_history),
        "flaky_groups": n_flaky,
        "flaky_warm_s_cpu_s": median_time(one_flaky),
        "history_cli_s_cpu_s": cli3("history", "case_0007"),
        "flaky_cli_s_cpu_s": cli3("flaky"),
    }


SQLITE_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, commit_ TEXT, agent TEXT, agent_config TEXT,
                   started_at TEXT);
CREATE TABLE case_digests (run_id TEXT, case_id TEXT, case_version TEXT, digest TEXT);
CREATE TABLE attempts (run_id TEXT, case_id TEXT, case_version TEXT, attempt INTEGER,
                       prompt TEXT, status TEXT, error_kind TEXT, latency_ms REAL,
                       tokens INTEGER, cost REAL);
CREATE TABLE verdicts (run_id TEXT, grading_id TEXT, case_id TEXT, case_version TEXT,
                       attempt INTEGER, prompt TEXT, verdict TEXT, score REAL);
"""
SQLITE_FLAKY = """
SELECT v.case_id, d.digest, r.agent, r.agent_config, sum(v.verdict = 'pass') AS p, count(*) AS n
FROM verdicts v JOIN runs r USING (run_id)
JOIN case_digests d ON d.run_id = v.run_id AND d.case_id = v.case_id
GROUP BY 1, 2, 3, 4 HAVING p > 0 AND p < n
"""
SQLITE_HISTORY = """
SELECT r.started_at, v.run_id, v.grading_id, group_concat(v.verdict) FROM verdicts v
JOIN runs r USING (run_id) WHERE v.case_id = ? GROUP BY 1, 2, 3 ORDER BY 1
"""


def bench_sqlite(root: Path, total: int, size: int) -> dict[str, Any]:
    path = root / "results.sqlite"
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.executescript(SQLITE_SCHEMA)
    t0, c0 = time.perf_counter(), time.process_time()
    for run_json in sorted(root.glob("outputs/*/*/run.json")):
        meta = json.loads(run_json.read_text("utf-8"))
        run_id = meta["run_id"]
        con.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?)", (run_id, meta["commit"],
                    meta["agent"]["name"], "x", meta["started_at"]))  # fmt: skip
        con.executemany(
            "INSERT INTO case_digests VALUES (?, ?, ?, ?)",
            [(run_id, c, v["version"], v["digest"]) for c, v in meta["cases"].items()],
        )
        rows = []
        with (run_json.parent / "attempts.jsonl").open("rb") as handle:
            for line in handle:
                a = json.loads(line)
                u = a.get("usage") or {}
                rows.append((run_id, a["case_id"], a["case_version"], a["attempt"],
                             a.get("prompt"), a["status"], None, a.get("latency_ms"),
                             u.get("prompt_tokens", 0) + u.get("completion_tokens", 0),
                             u.get("cost")))  # fmt: skip
        con.executemany("INSERT INTO attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        report = json.loads(
            next(
                (root / "reports" / meta["commit"] / run_id / "gradings").glob("*/report.json")
            ).read_text("utf-8")
        )
        gid = report["grading"]["grading_id"]
        con.executemany(
            "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, gid, a["case_id"], a["case_version"], a["attempt"], a["prompt"],
              a["verdict"], a["score"]) for a in report["attempts"]],
        )  # fmt: skip
    con.execute("CREATE INDEX v_case ON verdicts (case_id)")
    con.execute("CREATE INDEX d_run ON case_digests (run_id, case_id)")
    con.commit()
    index_s, index_cpu = time.perf_counter() - t0, time.process_time() - c0
    con.close()
    store_bytes = path.stat().st_size

    def query(sql: str, *args: Any) -> None:
        c = sqlite3.connect(path)
        c.execute(sql, args).fetchall()
        c.close()

    return {
        "store": "sqlite",
        "index_s": round(index_s, 2),
        "index_cpu_s": round(index_cpu, 2),
        "attempts_per_cpu_s": round(total / index_cpu),
        "store_mb": round(store_bytes / 1e6, 1),
        "store_vs_jsonl": round(store_bytes / size, 4),
        "history_warm_s_cpu_s": median_time(lambda: query(SQLITE_HISTORY, "case_0007")),
        "flaky_warm_s_cpu_s": median_time(lambda: query(SQLITE_FLAKY)),
    }


def bench_parquet(root: Path, total: int, size: int) -> dict[str, Any]:
    import duckdb

    from evalcase.results.store import _ATTEMPT_COLUMNS, _REPORT_COLUMNS

    folder = root / "parquet"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    con = duckdb.connect()
    t0, c0 = time.perf_counter(), time.process_time()
    for run_json in sorted(root.glob("outputs/*/*/run.json")):
        run_id = run_json.parent.name
        src = str(run_json.parent / "attempts.jsonl")
        con.execute(
            f"COPY (SELECT '{run_id}' AS run_id, case_id, case_version, attempt, prompt, "
            f"status, latency_ms, usage.cost AS cost FROM read_json('{src}', "
            f"format='newline_delimited', columns={_ATTEMPT_COLUMNS})) "
            f"TO '{folder / f'a_{run_id}.parquet'}' (FORMAT parquet)"
        )
        rep = next((run_json.parent.parent.parent.parent / "reports" / run_json.parent.parent.name
                    / run_id / "gradings").glob("*/report.json"))  # fmt: skip
        con.execute(
            f"COPY (SELECT '{run_id}' AS run_id, a.case_id, a.attempt, a.verdict FROM "
            f"(SELECT unnest(attempts) AS a FROM read_json('{rep}', maximum_object_size="
            f"{rep.stat().st_size + 1024}, columns={_REPORT_COLUMNS}))) "
            f"TO '{folder / f'v_{run_id}.parquet'}' (FORMAT parquet)"
        )
    index_s, index_cpu = time.perf_counter() - t0, time.process_time() - c0
    store_bytes = sum(p.stat().st_size for p in folder.iterdir())
    verdicts = f"read_parquet('{folder}/v_*.parquet')"

    def hist() -> None:
        duckdb.connect().execute(
            f"SELECT run_id, list(verdict) FROM {verdicts} WHERE case_id = 'case_0007' "
            "GROUP BY run_id"
        ).fetchall()

    def flak() -> None:
        duckdb.connect().execute(
            f"SELECT case_id, count(*) FILTER (verdict = 'pass') p, count(*) n FROM {verdicts} "
            "GROUP BY case_id HAVING p > 0 AND p < n"
        ).fetchall()

    return {
        "store": "parquet",
        "index_s": round(index_s, 2),
        "index_cpu_s": round(index_cpu, 2),
        "attempts_per_cpu_s": round(total / index_cpu),
        "store_mb": round(store_bytes / 1e6, 1),
        "store_vs_jsonl": round(store_bytes / size, 4),
        "history_warm_s_cpu_s": median_time(hist),
        "flaky_warm_s_cpu_s": median_time(flak),
    }


def bench_remote(root: Path, runs: int) -> dict[str, Any]:
    """``history --from-remote`` over ``runs`` runs published to a real S3 server (moto's
    server mode on 127.0.0.1): the first question (every manifest and index file
    fetched) and the next (nothing new), in process, and the bytes fetched against what
    pulling every run would fetch."""
    from moto.server import ThreadedMotoServer

    from evalcase.config import load_config
    from evalcase.results.queries import history
    from evalcase.results.remote import Folders, Remote, publish, summarize
    from evalcase.results.remote_index import open_remote_store

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench",
                      AWS_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://{host}:{port}",
                      AWS_ALLOW_HTTP="true")  # fmt: skip
    try:
        import boto3

        boto3.client("s3", endpoint_url=f"http://{host}:{port}").create_bucket(Bucket="bench")
        remote = Remote("s3://bench/team")
        folders = Folders(root / "outputs", root / "reports")
        published = sorted(root.glob("outputs/*/*/run.json"))[:runs]
        t0 = time.perf_counter()
        for run_json in published:
            commit, run_id = run_json.parent.parent.name, run_json.parent.name
            publish(remote, folders, commit, run_id, summarize(folders, commit, run_id))
        publish_s = time.perf_counter() - t0
        clone = root / "clone"
        clone.mkdir(exist_ok=True)
        (clone / "evalcase.toml").write_text('[results]\nremote = "s3://bench/team"\n', "utf-8")
        config = load_config(clone)

        def ask() -> Any:
            with open_remote_store(config, remote) as (store, stats):
                history(store, "case_0007")
            return stats

        t0, c0 = time.perf_counter(), time.process_time()
        first = ask()
        first_s, first_cpu = time.perf_counter() - t0, time.process_time() - c0
        return {
            "store": "remote (moto S3 on 127.0.0.1)",
            "runs_published": len(published),
            "publish_s": round(publish_s, 1),
            "history_first_s_cpu_s": (round(first_s, 3), round(first_cpu, 3)),
            "fetched_mb": round(first.bytes_fetched / 1e6, 2),
            "files_fetched": first.files_fetched,
            "left_on_remote_mb": round(first.bytes_skipped / 1e6, 1),
            "history_next_s_cpu_s": median_time(ask),
        }
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--attempts", type=int, default=1000, help="per run")
    parser.add_argument("--compare", action="store_true", help="SQLite and Parquet too")
    parser.add_argument(
        "--remote-runs",
        type=int,
        default=0,
        help="also publish this many runs to a local S3 server and ask history --from-remote",
    )
    parser.add_argument("--keep", type=Path, default=None, help="write the history here")
    parser.add_argument(
        "--reuse", type=Path, default=None, help="measure a history --keep wrote before"
    )
    args = parser.parse_args()
    where = args.reuse or args.keep or Path(tempfile.mkdtemp(prefix="store-bench-"))
    try:
        t0 = time.perf_counter()
        if args.reuse:
            files = list(where.glob("outputs/*/*/attempts.jsonl"))
            size = sum(f.stat().st_size for f in files)
            total = len(files) * args.attempts
        else:
            total, size = write_history(where, args.runs, args.attempts)
        print(json.dumps({"runs": args.runs, "attempts": total, "jsonl_mb": round(size / 1e6, 1),
                          "write_s": round(time.perf_counter() - t0, 1)}), flush=True)  # fmt: skip
        print(json.dumps(bench_duckdb(where, total, size)), flush=True)
        if args.compare:
            print(json.dumps(bench_sqlite(where, total, size)), flush=True)
            print(json.dumps(bench_parquet(where, total, size)), flush=True)
        if args.remote_runs:
            print(json.dumps(bench_remote(where, args.remote_runs)), flush=True)
    finally:
        if args.keep is None and args.reuse is None:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
