"""The results store: every run and every grading, indexed into one embedded DuckDB file.

The store is derived. The run folders are the facts (``outputs/<commit>/<run_id>/``:
``run.json``, ``attempts.jsonl``; ``reports/<commit>/<run_id>/gradings/<grading_id>/``:
``grading.json``, ``report.json``); the store is an index over them at
``<[lint] cache_dir>/results.duckdb`` (``.evalcase_cache/results.duckdb``, git-ignored),
never the only copy. ``evalcase store rebuild`` deletes and recreates it; every
``evalcase run``, ``grade`` and ``review`` updates it, and every question across runs
(``history``, ``flaky``, ``trend``) brings it up to date first: a folder whose files'
sizes or modification times changed is indexed again, a folder that is gone is dropped.

Why DuckDB: ``benchmarks/store_bench.py`` measured it against SQLite and Parquet files on
a synthetic history (figures in docs/performance.md). DuckDB reads the JSONL and the
reports with its own JSON reader (in C++, on every core), which Python's ``json`` cannot
match on transcript-sized attempt lines, answers the grouping queries ``flaky`` asks over
a million attempts in milliseconds, and compresses repeated IDs by column. It is a
base dependency, imported only by the store's commands (never by the commit hook); were
it missing, those commands say so and every other command works (run references, compare
and gates need no store).

Tables (all keyed by ``run_id``; a grading by ``run_id`` and ``grading_id``)::

    runs          run_id, commit, dirty, dataset_id, dataset_version, dataset_digest,
                  agent, agent_version, agent_config, started_at, ended_at, status,
                  repeat, run_dir
    case_digests  run_id, case_id, case_version, digest          (the run's cases)
    attempts      run_id, case_id, case_version, attempt, prompt, status, error_kind,
                  latency_ms, tokens, cost                        (outputs, one per attempt)
    gradings      run_id, grading_id, graded_at, config_digest, judges, newest,
                  report_path, pass_at_1, pass_at_k, pass_hat_k, cases, attempts, cost,
                  latency_ms_p50, latency_ms_p90, slices (JSON)
    verdicts      run_id, grading_id, case_id, case_version, attempt, prompt, verdict,
                  score, failure_class                            (reports, per attempt)
    case_verdicts run_id, grading_id, case_id, case_version, prompt, digest, passes,
                  fails, n, verdicts (in attempt order), and the run's and grading's
                  dataset_id, agent, agent_version, agent_config, config_digest, newest;
                  flaky_key: a hash of what must be equal for a verdict change to be
                  chance (case, digest, agent, version, prompt, both configurations)
                                                  (per case and grading: what history
                                                  and flaky read, computed when indexed)
    sources       path, run_id, stamp, problem                    (what was indexed, as of
                                                  when; why a file could not be read)

``agent_config`` is a digest of what the run's configuration says about the agent and
the attempts (the agent's spec, version and options, the run options but its seed,
concurrency and executor, the user simulator): runs with the same ``agent_config`` ran
the same agent the same way. A grading's ``newest`` marks the run's default grading.

Library use (what ``evalcase view`` and a remote build on)::

    from evalcase.results.store import open_store
    with open_store(config) as store:      # brought up to date first
        rows = store.con.execute("SELECT ... FROM verdicts ...").fetchall()

The commit hook (``evalcase lint --staged``) never imports this module.
"""

# The check before every question stats thousands of files: os.path and os.stat on
# strings, measured 2x cheaper than pathlib (docs/performance.md, the results store).
# ruff: noqa: PTH116, PTH118, PTH119, PTH120, PTH202

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from evalcase.model import FatalError
from evalcase.report.gradings import GRADING_FILE, GRADINGS_DIR, UNVERSIONED
from evalcase.results.refs import folders

if TYPE_CHECKING:
    from evalcase.config import Config

STORE_FILE = "results.duckdb"
SCHEMA_VERSION = "4"
INSTALL_HINT = "a dependency of evalcase, missing here: reinstall evalcase (pip install evalcase)"

# Keys of run.json that do not change what the agent does (or which attempts there are).
_NOT_CONFIG = ("seed", "concurrency", "executor")
_NOT_AGENT_CONFIG = ("cwd", "root", "secret_env")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR, value VARCHAR);
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR, commit VARCHAR, dirty BOOLEAN, dataset_id VARCHAR,
    dataset_version VARCHAR, dataset_digest VARCHAR, agent VARCHAR, agent_version VARCHAR,
    agent_config VARCHAR, started_at VARCHAR, ended_at VARCHAR, status VARCHAR,
    repeat INTEGER, run_dir VARCHAR);
CREATE TABLE IF NOT EXISTS case_digests (
    run_id VARCHAR, case_id VARCHAR, case_version VARCHAR, digest VARCHAR);
CREATE TABLE IF NOT EXISTS attempts (
    run_id VARCHAR, case_id VARCHAR, case_version VARCHAR, attempt INTEGER, prompt VARCHAR,
    status VARCHAR, error_kind VARCHAR, latency_ms DOUBLE, tokens BIGINT, cost DOUBLE);
CREATE TABLE IF NOT EXISTS gradings (
    run_id VARCHAR, grading_id VARCHAR, graded_at VARCHAR, config_digest VARCHAR,
    judges VARCHAR, newest BOOLEAN, report_path VARCHAR, pass_at_1 DOUBLE,
    pass_at_k DOUBLE, pass_hat_k DOUBLE, cases INTEGER, attempts INTEGER, cost DOUBLE,
    latency_ms_p50 DOUBLE, latency_ms_p90 DOUBLE, slices JSON);
CREATE TABLE IF NOT EXISTS verdicts (
    run_id VARCHAR, grading_id VARCHAR, case_id VARCHAR, case_version VARCHAR,
    attempt INTEGER, prompt VARCHAR, verdict VARCHAR, score DOUBLE, failure_class VARCHAR);
CREATE TABLE IF NOT EXISTS case_verdicts (
    run_id VARCHAR, grading_id VARCHAR, case_id VARCHAR, case_version VARCHAR,
    prompt VARCHAR, digest VARCHAR, passes INTEGER, fails INTEGER, n INTEGER,
    verdicts VARCHAR[], dataset_id VARCHAR, agent VARCHAR, agent_version VARCHAR,
    agent_config VARCHAR, config_digest VARCHAR, newest BOOLEAN, flaky_key UBIGINT);
CREATE TABLE IF NOT EXISTS sources (
    path VARCHAR, run_id VARCHAR, stamp VARCHAR, problem VARCHAR);
"""

_ATTEMPT_COLUMNS = (
    "{case_id: 'VARCHAR', case_version: 'VARCHAR', attempt: 'BIGINT', prompt: 'VARCHAR', "
    "status: 'VARCHAR', error: 'STRUCT(kind VARCHAR)', latency_ms: 'DOUBLE', "
    "usage: 'STRUCT(prompt_tokens BIGINT, completion_tokens BIGINT, cost DOUBLE)'}"
)
_STAGED_REPORTS = (
    "filename VARCHAR, attempts STRUCT(case_id VARCHAR, case_version VARCHAR, attempt BIGINT, "
    "verdict VARCHAR, score DOUBLE, failure_class VARCHAR, prompt VARCHAR)[], summary JSON, "
    "usage JSON, slices JSON, run JSON"
)
_REPORT_COLUMNS = (
    "{attempts: 'STRUCT(case_id VARCHAR, case_version VARCHAR, attempt BIGINT, "
    "verdict VARCHAR, score DOUBLE, failure_class VARCHAR, prompt VARCHAR)[]', "
    "summary: 'JSON', usage: 'JSON', slices: 'JSON', run: 'JSON'}"
)


_ATTEMPTS_SQL = (
    "SELECT t.run_id, case_id, case_version, attempt, prompt, status, error.kind, "
    "latency_ms, coalesce(usage.prompt_tokens, 0) + coalesce(usage.completion_tokens, 0), "
    "usage.cost FROM read_json(?, filename = true, format = 'newline_delimited', "
    "ignore_errors = true, maximum_object_size = 268435456, "
    f"columns = {_ATTEMPT_COLUMNS}) JOIN todo t ON t.attempts = filename "
    "WHERE case_id IS NOT NULL"
)
_REPORTS_SQL = (
    "SELECT filename, attempts, summary, usage, slices, run FROM read_json(?, "
    "filename = true, format = 'auto', maximum_object_size = {largest}, "
    f"columns = {_REPORT_COLUMNS.replace('{', '{{').replace('}', '}}')})"
)


@dataclass(frozen=True)
class IndexStats:
    """What an update did: runs and gradings (re)indexed, attempts read, runs dropped."""

    runs: int
    gradings: int
    attempts: int
    verdicts: int
    dropped: int
    seconds: float
    problems: tuple[tuple[str, str], ...] = ()  # files that could not be read: path, why

    def to_dict(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "gradings": self.gradings,
            "attempts": self.attempts,
            "verdicts": self.verdicts,
            "dropped": self.dropped,
            "seconds": round(self.seconds, 3),
            "problems": [{"path": p, "why": w} for p, w in self.problems],
        }


def duckdb_module() -> Any:
    """DuckDB, or a FatalError saying how to install it."""
    try:
        import duckdb
    except ImportError:
        raise FatalError(f"the results store cannot import DuckDB, {INSTALL_HINT}") from None
    return duckdb


def store_path(config: Config) -> Path:
    cache = Path(config.cache_dir)
    return (cache if cache.is_absolute() else config.root / cache) / STORE_FILE


def _stamp_str(*paths: str) -> str | None:
    """Sizes and modification times of the files a source is read from; None when the
    first is missing. Strings, not Path objects: this runs before every question."""
    parts: list[str] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            if not parts:
                return None
            parts.append("-")
            continue
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
    return "/".join(parts)


def _runs_in(top: Path) -> Iterator[tuple[str, str, str]]:
    """(commit, run_id, folder) of every <commit>/<run_id>/ folder under ``top``."""
    try:
        commits = [e for e in os.scandir(top) if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return
    for commit in commits:
        try:
            runs = [e for e in os.scandir(commit.path) if not e.name.startswith(".")]
        except OSError:
            continue
        for run in runs:
            if run.is_dir() and not run.name.endswith(".writing"):
                yield commit.name, run.name, run.path


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


def agent_config(meta: Mapping[str, Any]) -> str:
    """The digest of how a run ran its agent (see the module documentation)."""
    agent = meta.get("agent") if isinstance(meta.get("agent"), Mapping) else {}
    options = meta.get("options") if isinstance(meta.get("options"), Mapping) else {}
    agent_options = (agent or {}).get("options")
    return _digest(
        {
            "spec": (agent or {}).get("spec"),
            "version": (agent or {}).get("version"),
            "options": {
                k: v
                for k, v in (agent_options.items() if isinstance(agent_options, Mapping) else ())
                if k not in _NOT_AGENT_CONFIG
            },
            "run": {k: v for k, v in (options or {}).items() if k not in _NOT_CONFIG},
            "user_simulator": meta.get("user_simulator"),
        }
    )


def _run_row(meta: Mapping[str, Any], run_dir: Path, root: Path) -> tuple[Any, ...]:
    dataset = meta.get("dataset") if isinstance(meta.get("dataset"), Mapping) else {}
    agent = meta.get("agent") if isinstance(meta.get("agent"), Mapping) else {}
    options = meta.get("options") if isinstance(meta.get("options"), Mapping) else {}
    try:
        repeat = int((options or {}).get("repeat") or 1)
    except (TypeError, ValueError):
        repeat = 1
    try:
        where = run_dir.relative_to(root).as_posix()
    except ValueError:
        where = str(run_dir)
    return (
        str(meta.get("run_id") or run_dir.name),
        str(meta.get("commit") or run_dir.parent.name),
        bool(meta.get("dirty", False)),
        str((dataset or {}).get("id") or ""),
        str((dataset or {}).get("version") or ""),
        str((dataset or {}).get("digest") or ""),
        str((agent or {}).get("name") or (agent or {}).get("spec") or ""),
        str((agent or {}).get("version") or ""),
        agent_config(meta),
        str(meta.get("started_at") or ""),
        str(meta.get("ended_at") or ""),
        str(meta.get("status") or ""),
        repeat,
        where,
    )


@dataclass(frozen=True)
class _Source:
    """One folder to index: a run's outputs, or one grading of it."""

    path: str  # the file the row set is read from: attempts.jsonl or report.json
    run_id: str
    stamp: str
    grading_id: str | None = None  # None: the run's outputs
    listing: bool = False  # a gradings/ folder itself: its stamp says whether to list it


class Store:
    """An open results store (a DuckDB connection) over a repository's folders."""

    def __init__(self, con: Any, root: Path, outputs: Path, reports: Path) -> None:
        self.con = con
        self.root = root
        self.outputs = outputs
        self.reports = reports

    # --- what there is to index ----------------------------------------------------------
    def _scan(self, known: Mapping[str, str], troubled: set[str]) -> list[_Source]:
        """Every run's outputs and every grading, with their files' stamps (os.scandir
        and a stat per file: this runs before every question, over every run).

        A grading is never rewritten once its folder is renamed into ``gradings/`` (a new
        grading is a new folder), so a ``gradings/`` folder whose own modification time
        is unchanged holds the gradings indexed last time: they are not listed or stat'ed
        again, but for those that could not be read (``troubled``). A hand-edited report
        inside one is seen by ``evalcase store rebuild``."""
        found = []
        for _, run_id, folder in _runs_in(self.outputs):
            # The source is named by the attempts file, which may be absent: a run that
            # has not finished an attempt, or a remote's index that fetched only run.json
            # (evalcase.results.remote_index).
            attempts = os.path.join(folder, "attempts.jsonl")
            meta = os.path.join(folder, "run.json")
            stamp = _stamp_str(attempts, meta) or _stamp_str(meta, attempts)
            if stamp is not None:
                found.append(_Source(attempts, run_id, stamp))
        under: dict[str, list[tuple[str, str]]] = {}
        for path, stamp in known.items():
            if path.endswith("report.json"):
                under.setdefault(os.path.dirname(os.path.dirname(path)), []).append((path, stamp))
        for _, run_id, folder in _runs_in(self.reports):
            versioned = os.path.join(folder, GRADINGS_DIR)
            try:
                listing_stamp = f"dir:{os.stat(versioned).st_mtime_ns}"
            except OSError:
                listing_stamp = None
            if listing_stamp is not None and known.get(versioned) == listing_stamp:
                found.append(_Source(versioned, run_id, listing_stamp, listing=True))
                for path, stamp in under.get(versioned, ()):
                    if path in troubled:
                        stamp = (
                            _stamp_str(path, os.path.join(os.path.dirname(path), GRADING_FILE))
                            or ""
                        )
                    found.append(
                        _Source(path, run_id, stamp, os.path.basename(os.path.dirname(path)))
                    )
                continue
            graded: list[tuple[str, str]] = []
            if listing_stamp is not None:
                found.append(_Source(versioned, run_id, listing_stamp, listing=True))
                try:
                    graded = [
                        (e.name, e.path)
                        for e in os.scandir(versioned)
                        if "." not in e.name and e.is_dir()
                    ]
                except OSError:
                    graded = []
            if not graded:  # a report from before gradings were versioned
                graded = [(UNVERSIONED, folder)]
            for grading_id, where in graded:
                stamp = _stamp_str(
                    os.path.join(where, "report.json"), os.path.join(where, GRADING_FILE)
                )
                if stamp is not None:
                    found.append(
                        _Source(os.path.join(where, "report.json"), run_id, stamp, grading_id)
                    )
        return found

    # --- indexing -------------------------------------------------------------------------
    def update(self) -> IndexStats:
        """Index what changed since the last update; drop what is gone."""
        t0 = time.perf_counter()
        con = self.con
        rows = con.execute("SELECT path, stamp, problem IS NOT NULL FROM sources").fetchall()
        known = {path: stamp for path, stamp, _ in rows}
        scanned = self._scan(known, {path for path, _, troubled in rows if troubled})
        here = {s.path: s for s in scanned}
        gone = [p for p in known if p not in here]
        changed = [s for s in scanned if known.get(s.path) != s.stamp]
        if not gone and not changed:
            return IndexStats(0, 0, 0, 0, 0, time.perf_counter() - t0)
        runs = [s for s in changed if s.grading_id is None and not s.listing]
        grads = [s for s in changed if s.grading_id is not None]
        # The files are read before the transaction: DuckDB ends a transaction at the
        # first error, and a file anyone could have written must cost only itself.
        problems: dict[str, str] = {}
        run_rows, digests = self._read_runs(runs)
        if runs:
            # Straight into the table, outside the transaction: a copy through a temporary
            # table cost a seventh of indexing. Safe, since the store is derived: until
            # the sources below are committed, these runs count as changed, and the next
            # update deletes their attempts again before reading them.
            con.execute("DELETE FROM attempts WHERE run_id IN (SELECT run_id FROM todo)")
            self._stage(
                "attempts",
                None,
                _ATTEMPTS_SQL,
                [s.path for s in runs if _nonempty(s.path)],
                problems,
            )
        report_files = [s.path for s in grads]
        self._stage(
            "rep",
            _STAGED_REPORTS,
            _REPORTS_SQL.format(largest=_largest(report_files)),
            report_files,
            problems,
        )
        con.execute("BEGIN TRANSACTION")
        try:
            dropped_runs = self._drop(gone)
            dropped = len(dropped_runs)
            attempts = self._index_runs(run_rows, digests)
            verdicts = self._index_gradings(grads)
            if grads or gone:
                self._mark_newest()
            self._summarise({s.run_id for s in changed} | dropped_runs)
            paths = [s.path for s in changed]
            con.execute("DELETE FROM sources WHERE path IN (SELECT unnest(?))", [paths])
            _insert(
                con,
                "sources",
                [
                    paths,
                    [s.run_id for s in changed],
                    [s.stamp for s in changed],
                    [problems.get(p) for p in paths],
                ],
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return IndexStats(
            len(runs),
            len(grads),
            attempts,
            verdicts,
            dropped,
            time.perf_counter() - t0,
            tuple(sorted(problems.items())),
        )

    def _stage(
        self,
        table: str,
        ddl: str | None,
        select: str,
        files: Sequence[str],
        problems: dict[str, str],
    ) -> None:
        """Read ``files`` into ``table`` (a new temporary table of columns ``ddl``, or an
        existing one): all at once, or, when one of them cannot be read, one by one,
        each unreadable file's reason kept in ``problems`` (read again when it changes)."""
        duckdb = duckdb_module()
        con = self.con
        if ddl is not None:
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} ({ddl})")
        if not files:
            return
        try:
            con.execute(f"INSERT INTO {table} {select}", [list(files)])
            return
        except duckdb.Error:
            pass
        for path in files:
            try:
                con.execute(f"INSERT INTO {table} {select}", [[path]])
            except duckdb.Error as exc:
                problems[path] = str(exc).strip().splitlines()[0][:300]

    def problems(self) -> list[tuple[str, str]]:
        """The files the store could not read (path, why), as of the last update."""
        return [
            (str(p), str(w))
            for p, w in self.con.execute(
                "SELECT path, problem FROM sources WHERE problem IS NOT NULL ORDER BY path"
            ).fetchall()
        ]

    def _drop(self, paths: Sequence[str]) -> set[str]:
        """Forget the sources at ``paths``; the runs they belonged to."""
        if not paths:
            return set()
        con = self.con
        con.execute("CREATE OR REPLACE TEMP TABLE gone (path VARCHAR)")
        _insert(con, "gone", [list(paths)])
        rows = con.execute(
            "SELECT s.path, s.run_id FROM sources s JOIN gone USING (path)"
        ).fetchall()
        runs = {run for path, run in rows if path.endswith("attempts.jsonl")}
        grads = [(run, Path(path).parent.name) for path, run in rows if path.endswith(".json")]
        for run in runs:
            for table in ("runs", "case_digests", "attempts"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run])
        for run, folder in grads:
            gid = folder if Path(folder).name != run else UNVERSIONED
            for table in ("gradings", "verdicts"):
                con.execute(f"DELETE FROM {table} WHERE run_id = ? AND grading_id = ?", [run, gid])
        con.execute("DELETE FROM sources WHERE path IN (SELECT path FROM gone)")
        return runs | {run for run, _ in grads}

    def _read_runs(self, sources: Sequence[_Source]) -> tuple[list[Any], list[list[Any]]]:
        """The runs' rows and case digests from their run.json (Python: small files), and
        the temporary table ``todo`` of their run IDs and attempts files."""
        con = self.con
        rows = []
        digests: list[list[Any]] = [[], [], [], []]
        for s in sources:
            folder = Path(s.path).parent
            meta = _json(folder / "run.json")
            row = _run_row(meta, folder, self.root)
            rows.append(row)
            cases = meta.get("cases")
            for case_id, info in cases.items() if isinstance(cases, Mapping) else ():
                info = info if isinstance(info, Mapping) else {}
                for column, value in zip(
                    digests,
                    (row[0], str(case_id), info.get("version"), info.get("digest")),
                    strict=True,
                ):
                    column.append(None if value is None else str(value))
        ids = [(r[0], s.path) for r, s in zip(rows, sources, strict=True)]
        con.execute("CREATE OR REPLACE TEMP TABLE todo (run_id VARCHAR, attempts VARCHAR)")
        _insert(con, "todo", [[i[0] for i in ids], [i[1] for i in ids]])
        return rows, digests

    def _index_runs(self, rows: Sequence[Any], digests: list[list[Any]]) -> int:
        """The runs' rows (their attempts are in already: see update)."""
        if not rows:
            return 0
        con = self.con
        for table in ("runs", "case_digests"):
            con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM todo)")
        _insert(con, "runs", [list(column) for column in zip(*rows, strict=True)])
        _insert(con, "case_digests", digests)
        self._dedup_attempts()
        return int(
            con.execute(
                "SELECT count(*) FROM attempts WHERE run_id IN (SELECT run_id FROM todo)"
            ).fetchone()[0]
        )

    def _dedup_attempts(self) -> None:
        """A record written twice for one attempt (a second runner's copy): read that run
        again as grading reads it, the first record winning (evalcase.contract.records)."""
        con = self.con
        twice = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT run_id FROM attempts WHERE run_id IN (SELECT run_id FROM todo) "
                "GROUP BY run_id, case_id, case_version, attempt HAVING count(*) > 1"
            ).fetchall()
        ]
        if not twice:
            return
        from evalcase.contract import records
        from evalcase.contract.attempt import key_of

        for run_id in twice:
            path = con.execute("SELECT attempts FROM todo WHERE run_id = ?", [run_id]).fetchone()[0]
            rows = []
            for a in records.dedup(list(records.read_jsonl(Path(path)))):
                usage = a.get("usage") if isinstance(a.get("usage"), Mapping) else {}
                error = a.get("error") if isinstance(a.get("error"), Mapping) else {}
                cost = (usage or {}).get("cost")
                latency = a.get("latency_ms")
                rows.append((
                    run_id, str(a.get("case_id")), str(a.get("case_version")),
                    key_of(a)[2], a.get("prompt"), a.get("status"),
                    (error or {}).get("kind"),
                    float(latency) if isinstance(latency, int | float) else None,
                    int((usage or {}).get("prompt_tokens") or 0)
                    + int((usage or {}).get("completion_tokens") or 0),
                    float(cost) if isinstance(cost, int | float) else None,
                ))  # fmt: skip
            con.execute("DELETE FROM attempts WHERE run_id = ?", [run_id])
            _insert(con, "attempts", [list(column) for column in zip(*rows, strict=True)])

    def _index_gradings(self, sources: Sequence[_Source]) -> int:
        if not sources:
            return 0
        con = self.con
        rows = []
        for s in sources:
            meta = _json(Path(s.path).parent / GRADING_FILE)
            judges = meta.get("judges") if isinstance(meta.get("judges"), list) else []
            rows.append(
                (
                    s.run_id,
                    str(s.grading_id),
                    s.path,
                    str(meta.get("graded_at") or ""),
                    str(meta.get("config_digest") or ""),
                    json.dumps(judges, sort_keys=True),
                )
            )
        con.execute(
            "CREATE OR REPLACE TEMP TABLE gtodo (run_id VARCHAR, grading_id VARCHAR, "
            "path VARCHAR, graded_at VARCHAR, config_digest VARCHAR, judges VARCHAR)"
        )
        _insert(con, "gtodo", [list(column) for column in zip(*rows, strict=True)])
        for table in ("gradings", "verdicts"):
            con.execute(
                f"DELETE FROM {table} WHERE (run_id, grading_id) IN "
                "(SELECT (run_id, grading_id) FROM gtodo)"
            )
        con.execute(
            "INSERT INTO gradings SELECT g.run_id, g.grading_id, "
            "coalesce(nullif(g.graded_at, ''), rep.run->>'$.graded_at', ''), "
            "g.config_digest, g.judges, false, g.path, "
            "CAST(rep.summary->>'$.\"pass@1\"' AS DOUBLE), "
            "CAST(rep.summary->>'$.\"pass@k\"' AS DOUBLE), "
            "CAST(rep.summary->>'$.\"pass^k\"' AS DOUBLE), "
            "CAST(rep.summary->>'$.cases' AS INTEGER), "
            "CAST(rep.summary->>'$.attempts' AS INTEGER), "
            "CAST(rep.usage->>'$.cost' AS DOUBLE), CAST(rep.usage->>'$.latency_ms_p50' AS DOUBLE), "
            "CAST(rep.usage->>'$.latency_ms_p90' AS DOUBLE), rep.slices "
            "FROM rep JOIN gtodo g ON g.path = rep.filename"
        )
        con.execute(
            "INSERT INTO verdicts SELECT g.run_id, g.grading_id, a.case_id, a.case_version, "
            "a.attempt, a.prompt, a.verdict, a.score, a.failure_class FROM "
            "(SELECT filename, unnest(attempts) AS a FROM rep) JOIN gtodo g ON g.path = filename"
        )
        return int(
            con.execute(
                "SELECT count(*) FROM verdicts WHERE (run_id, grading_id) IN "
                "(SELECT (run_id, grading_id) FROM gtodo)"
            ).fetchone()[0]
        )

    def _summarise(self, run_ids: set[str]) -> None:
        """case_verdicts of these runs again, from their verdicts and case digests."""
        if not run_ids:
            return
        con = self.con
        con.execute("CREATE OR REPLACE TEMP TABLE touched (run_id VARCHAR)")
        _insert(con, "touched", [sorted(run_ids)])
        con.execute("DELETE FROM case_verdicts WHERE run_id IN (SELECT run_id FROM touched)")
        con.execute(
            """
            INSERT INTO case_verdicts
            SELECT c.*, r.dataset_id, r.agent, r.agent_version, r.agent_config,
                   g.config_digest, g.newest,
                   hash(c.case_id, c.digest, r.agent, r.agent_version, c.prompt,
                        r.agent_config, g.config_digest)
            FROM (
                SELECT v.run_id, v.grading_id, v.case_id,
                       any_value(v.case_version) AS case_version,
                       coalesce(v.prompt, '') AS prompt,
                       coalesce(any_value(d.digest), '') AS digest,
                       count(*) FILTER (WHERE v.verdict = 'pass'),
                       count(*) FILTER (WHERE v.verdict = 'fail'), count(*),
                       list(v.verdict ORDER BY v.attempt)
                FROM verdicts v
                LEFT JOIN case_digests d ON d.run_id = v.run_id AND d.case_id = v.case_id
                WHERE v.run_id IN (SELECT run_id FROM touched)
                GROUP BY v.run_id, v.grading_id, v.case_id, coalesce(v.prompt, '')
            ) c
            LEFT JOIN runs r ON r.run_id = c.run_id
            JOIN gradings g ON g.run_id = c.run_id AND g.grading_id = c.grading_id
            """
        )

    def _mark_newest(self) -> None:
        self.con.execute(
            "UPDATE gradings SET newest = (grading_id = (SELECT max_by(g2.grading_id, "
            "(g2.graded_at, g2.grading_id)) FROM gradings g2 WHERE g2.run_id = gradings.run_id))"
        )

    def counts(self) -> dict[str, int]:
        return {
            table: int(self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("runs", "attempts", "gradings", "verdicts", "case_verdicts")
        }


def _insert(con: Any, table: str, columns: Sequence[Sequence[Any]]) -> None:
    """Rows given column by column, in one statement: DuckDB takes each column as one list
    parameter (row-by-row executemany costs a round trip per row)."""
    if not columns or not columns[0]:
        return
    picks = ", ".join(f"unnest(${i + 1})" for i in range(len(columns)))
    con.execute(f"INSERT INTO {table} SELECT {picks}", [list(c) for c in columns])


def _nonempty(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


def _largest(files: Sequence[str]) -> int:
    """DuckDB's limit on one JSON document: the largest file's size, and some room."""
    return max((os.path.getsize(f) for f in files), default=0) + (1 << 20)


Warn = Callable[[str], None]

# What DuckDB says when the file itself is damaged (a truncated file, a file that is not
# a database, a block whose checksum fails, a log that cannot be replayed). Nothing else
# sets the store aside: a store another process holds ("Could not set lock") is waited
# for, then a clear error, never rebuilt under it.
_DAMAGED = (
    "could not read enough bytes",
    "not a valid duckdb database file",
    "corrupt database file",
    "does not match stored checksum",
    "failure while replaying wal",
)
# What it says when another process holds the file ("block" holds "lock": whole words).
_HELD = ("could not set lock", "conflicting lock")


class StoreDamaged(FatalError):
    """The store file turned out damaged while in use; it was set aside (``set_aside``),
    and the next opening builds a new one from outputs/ and reports/."""

    def __init__(self, path: Path, set_aside: Path, why: str) -> None:
        super().__init__(
            f"{path}: the results store is damaged ({why}); it was set aside as "
            f"{set_aside.name} and is rebuilt from outputs/ and reports/ on the next command"
        )
        self.set_aside = set_aside


def damage_of(exc: BaseException) -> str | None:
    """The first line of a DuckDB error that says the store file is damaged; None for any
    other error (a lock held by another process included)."""
    duckdb = duckdb_module()
    if not isinstance(exc, duckdb.Error):
        return None
    text = str(exc).strip()
    low = text.lower()
    if any(held in low for held in _HELD) or not any(marker in low for marker in _DAMAGED):
        return None
    return (text.splitlines() or [""])[0][:300]


def set_aside(path: Path, now: float | None = None) -> Path:
    """Rename a damaged store (and its ``.wal``) to ``<name>.damaged-<UTC time>`` beside
    it, kept for a report, never read again; returns the new name of the store file."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    target = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    wal = path.with_name(path.name + ".wal")
    if path.exists():
        os.replace(path, target)
    if wal.exists():
        os.replace(wal, target.with_name(target.name + ".wal"))
    return target


def _warn_set_aside(warn: Warn | None, path: Path, aside: Path, why: str) -> None:
    if warn is not None:
        warn(
            f"{path}: the results store was damaged ({why}); set aside as {aside.name} and "
            "rebuilt from outputs/ and reports/ (it is derived: nothing is lost)"
        )


def _connect(path: Path, warn: Warn | None = None, *, fresh: bool = False) -> Any:
    """A connection to the store at ``path``, its tables made when new. A file DuckDB
    calls damaged is set aside (:func:`set_aside`, ``warn`` told) and a new one made."""
    duckdb = duckdb_module()
    path.parent.mkdir(parents=True, exist_ok=True)
    for wait in (0.05, 0.2, 0.5, 1.0, 2.0, 0.0):
        try:
            con = duckdb.connect(str(path))
            break
        except duckdb.Error as exc:
            why = damage_of(exc)
            if why is not None and not fresh:
                _warn_set_aside(warn, path, set_aside(path), why)
                return _connect(path, warn, fresh=True)
            if not isinstance(exc, duckdb.IOException):
                raise
            if "lock" not in str(exc).lower() or not wait:
                raise FatalError(
                    f"{path}: the results store cannot be opened ({exc}); it is derived: "
                    "delete it, or run `evalcase store rebuild`"
                ) from None
            time.sleep(wait)  # another evalcase is updating it
    try:
        version = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    except duckdb.Error as exc:
        why = damage_of(exc)
        if why is not None and not fresh:
            con.close()
            _warn_set_aside(warn, path, set_aside(path), why)
            return _connect(path, warn, fresh=True)
        version = None
    if version is not None and version[0] != SCHEMA_VERSION:
        con.close()
        path.unlink()
        return _connect(path, warn)
    if version is None:  # a new file: the tables (an existing one has them)
        con.execute(SCHEMA)
        con.execute("INSERT INTO meta VALUES ('schema', ?)", [SCHEMA_VERSION])
    return con


@contextmanager
def open_store(config: Config, *, update: bool = True, warn: Warn | None = None) -> Iterator[Store]:
    """The repository's store, brought up to date with its folders first (``update``);
    ``warn``: told when a damaged store was set aside and rebuilt (see open_store_at)."""
    outputs, reports = folders(config)
    with open_store_at(
        store_path(config), config.root, outputs, reports, update=update, warn=warn
    ) as s:
        yield s


@contextmanager
def open_store_at(
    path: Path,
    root: Path,
    outputs: Path,
    reports: Path,
    *,
    update: bool = True,
    warn: Warn | None = None,
) -> Iterator[Store]:
    """A store file at ``path`` over any ``outputs``/``reports`` pair (a remote's index
    uses its own: evalcase.results.remote_index).

    The store is derived, so a damaged one is never an internal error: a file DuckDB
    cannot open, or whose first update reads a damaged block, is set aside
    (:func:`set_aside`) and rebuilt, ``warn`` told. Damage found later, by a question
    asked inside the block, sets the file aside too and raises :class:`StoreDamaged`
    (a FatalError): the caller may ask again (:func:`asking` does), and gets a new
    store."""
    con = _connect(path, warn)
    store = Store(con, root, outputs, reports)
    try:
        if update:
            try:
                store.update()
            except Exception as exc:
                why = damage_of(exc)
                if why is None:
                    raise
                con.close()
                _warn_set_aside(warn, path, set_aside(path), why)
                con = _connect(path, warn)
                store = Store(con, root, outputs, reports)
                store.update()
        try:
            yield store
        except Exception as exc:
            why = damage_of(exc)
            if why is None:
                raise
            con.close()
            aside = set_aside(path)
            _warn_set_aside(warn, path, aside, why)
            raise StoreDamaged(path, aside, why) from None
    finally:
        con.close()


T = TypeVar("T")


def asking(opener: Callable[[], AbstractContextManager[Store]], ask: Callable[[Store], T]) -> T:
    """``ask`` a store that ``opener`` opens; asked once more, of the rebuilt store, when
    the first turned out damaged (:class:`StoreDamaged`: set aside by then)."""
    try:
        with opener() as store:
            return ask(store)
    except StoreDamaged:
        with opener() as store:
            return ask(store)


def rebuild(config: Config) -> IndexStats:
    """Delete the store and index every folder again."""
    path = store_path(config)
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
    with open_store(config, update=False) as store:
        return store.update()


def update_quietly(config: Config, warn: Warn | None = None) -> IndexStats | None:
    """Update the store after a run or a grading when DuckDB is installed; nothing (None)
    when it is not or the store is busy: it is derived, the next question updates it. A
    damaged store is set aside and rebuilt, ``warn`` told (open_store_at)."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        return None
    try:
        return asking(lambda: open_store(config, update=False, warn=warn), Store.update)
    except FatalError:
        return None
