"""``evalcase view``: a local, read-only web viewer over the results store.

Pages (every one a plain GET; nothing on the page runs a script):

``/``                      runs, newest first, filtered by dataset, agent, prompt, commit or
                           release (``DATASET@vN``), 50 a page
``/runs/RUN``              a run's provenance, summary, gates, slices and cases (200 a
                           page, failures first on request), any of its gradings
``/attempt?run=&case=&attempt=&prompt=``
                           one attempt: the conversation, each tool call with its arguments
                           and result (faults and denials), the state diff, every grader's
                           verdict and reason, the judge's prompt and answer
``/compare?base=&new=``    two runs side by side, differences first (regressed, changed
                           within noise, fixed, case changed ...), any run reference
                           (``latest``, ``latest~1``, ``main``, a run ID)
``/case?id=``              one case's timeline over commits, agents, prompts and gradings
``/flaky``                 cases whose verdict changes at the same content and configuration
``/grid?run=A&run=B``      prompt × case (one run with several prompts) or agent × case
                           (several runs)

How it is built, and why: Starlette (routing, responses) served by uvicorn, pages
rendered on the server from Jinja2 templates with autoescaping. No JavaScript at all: the
pages show data written by anyone with a pull request and by agents, so the
Content-Security-Policy forbids every script, and text from data is escaped, never
marked safe. A static site generated from the store was the other choice; it would have
to be regenerated after every run and cannot page a 10,000-attempt run on request.

The store stays open while requests come and is closed after two idle seconds, so that
``evalcase run`` and the other commands can update it; the viewer brings it up to date
with the folders when it opens it and at most every five seconds while open.

Trust: it binds 127.0.0.1 by default and answers only requests whose Host header names a
loopback address or ``localhost`` (parsed: ``127.attacker.example`` is a name, not an
address; a web page the user visits cannot reach it by DNS rebinding). Bound
anywhere else it requires a token (``--token``, else one is generated and printed):
``?token=`` once (it sets an HttpOnly, SameSite=Strict cookie) or ``Authorization:
Bearer``. It never writes to the repository (only the derived store, as every question across
runs does).
"""

from __future__ import annotations

import ipaddress
import json
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from evalcase.model import FatalError

if TYPE_CHECKING:
    from evalcase.config import Config
    from evalcase.results.remote_index import Mirror

RUNS_PER_PAGE = 50
# The store is closed after this many seconds without a request (other commands update it
# meanwhile) and brought up to date at most this often while open.
IDLE_S = 2.0
REFRESH_S = 5.0
# Over a remote (--from-remote), its listing is asked again at most this often.
REMOTE_REFRESH_S = 60.0
CASES_PER_PAGE = 200
# Nothing on these pages runs a script; styles are inline in the page.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
# The largest JSON value shown whole on a page; longer ones are cut with a note.
MAX_SHOWN_CHARS = 20_000


def starlette_parts() -> Any:
    """Starlette, or a FatalError saying how to install the viewer's extra."""
    try:
        import starlette
        import uvicorn  # noqa: F401
    except ImportError:
        raise FatalError(
            "evalcase view cannot import Starlette and uvicorn, dependencies of evalcase "
            "missing here: reinstall evalcase (pip install evalcase)"
        ) from None
    import starlette.applications

    return starlette.applications


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, no port; an IPv6 address with or without
    its brackets) is this machine's loopback: ``localhost`` (any case, with or without the
    trailing dot of its absolute form) or a loopback IP address (127.0.0.0/8, ::1). Any
    other name is refused, however it starts (``127.attacker.example`` is a name anyone's
    DNS answers for)."""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_of(header: str) -> str | None:
    """The host part of an HTTP Host header (``name``, ``name:port``, ``[v6]``,
    ``[v6]:port``); None when the header is not of that shape."""
    if header.startswith("["):
        host, bracket, port = header[1:].partition("]")
        if not bracket:
            return None
    else:
        host, port = header, ""
        if ":" in header:
            host, _, digits = header.partition(":")
            port = ":" + digits
    if port and not (port[:1] == ":" and port[1:].isascii() and port[1:].isdigit()):
        return None
    return host or None


def host_header_is_loopback(header: str) -> bool:
    """Whether a request's Host header names a loopback host (no DNS rebinding)."""
    host = host_of(header)
    return host is not None and is_loopback(host)


def pretty(value: Any) -> str:
    """A JSON value as indented text, cut at MAX_SHOWN_CHARS."""
    if isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True, default=str)
    if len(text) > MAX_SHOWN_CHARS:
        return text[:MAX_SHOWN_CHARS] + f"\n… ({len(text) - MAX_SHOWN_CHARS} more characters)"
    return text


def percent(value: Any) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:.1%}"
    return "–"


@dataclass(frozen=True)
class Page:
    """One page of rows and the links to its neighbours."""

    rows: Sequence[Any]
    number: int
    pages: int
    total: int


def paged(rows: Sequence[Any], number: int, size: int) -> Page:
    pages = max(1, math.ceil(len(rows) / size))
    number = min(max(1, number), pages)
    return Page(rows[(number - 1) * size : number * size], number, pages, len(rows))


class Viewer:
    """What the pages ask: the store (through :mod:`evalcase.results.store`) for lists
    across runs, the run folders for a run's report and transcripts."""

    def __init__(
        self,
        config: Config,
        mirror: Mirror | None = None,
        warn: Callable[[str], None] | None = None,
    ) -> None:
        from evalcase.results.refs import folders
        from evalcase.results.store import duckdb_module

        duckdb_module()  # the clear error now, not at the first request
        self.config = config
        self.warn = warn  # told when a damaged store was set aside and rebuilt
        # ``mirror``: the team's runs (evalcase.results.remote_index), not the local ones;
        # a transcript's files are fetched when its page is first opened.
        self.mirror = mirror
        if mirror is None:
            self.root = config.root
            self.outputs, self.reports = folders(config)
        else:
            self.root = mirror.root
            self.outputs, self.reports = mirror.outputs, mirror.reports
        self._lock = threading.Lock()
        self._local = threading.local()
        self._open: tuple[ExitStack, Any] | None = None
        self._refreshed = self._used = 0.0
        self._synced = time.monotonic()  # the command synced the mirror before serving
        self._closing: threading.Thread | None = None

    # --- the store ------------------------------------------------------------------------
    @contextmanager
    def session(self) -> Iterator[None]:
        """One request's use of the store. The store stays open while requests keep
        coming and is closed once idle for IDLE_S (so that `evalcase run` and the other
        commands can update it); it is brought up to date with the folders when opened
        and at most every REFRESH_S while open (a run that finishes shows within that)."""
        from evalcase.results.store import open_store

        with self._lock:
            now = time.monotonic()
            if self._open is None:
                stack = ExitStack()
                opened = (
                    open_store(self.config, update=False, warn=self.warn)
                    if self.mirror is None
                    else self.mirror.open_store(update=False)
                )
                self._open = (stack, stack.enter_context(opened))
                self._refreshed = 0.0
            store = self._open[1]
            if self.mirror is not None and now - self._synced >= REMOTE_REFRESH_S:
                self._synced = now
                with suppress(FatalError):  # unreachable for now: the mirror as it was
                    self.mirror.sync()
                self._refreshed = 0.0
            if now - self._refreshed >= REFRESH_S:
                store.update()
                self._refreshed = time.monotonic()
            self._local.store = store
            try:
                yield
            finally:
                self._local.store = None
                self._used = time.monotonic()
                self._closer()

    def set_aside_if_damaged(self, exc: BaseException) -> bool:
        """Whether ``exc`` (raised while answering a request) says the store file is
        damaged; then it is closed and set aside (evalcase.results.store.set_aside,
        ``warn`` told), and the next session opens a new one, rebuilt from the folders."""
        from evalcase.results.store import damage_of, set_aside, store_path

        why = damage_of(exc)
        if why is None:
            return False
        path = (
            store_path(self.config) if self.mirror is None else self.mirror.root / "results.duckdb"
        )
        with self._lock:
            if self._open is not None:
                self._open[0].close()
                self._open = None
            aside = set_aside(path)
        if self.warn is not None:
            self.warn(
                f"{path}: the results store was damaged ({why}); set aside as {aside.name} "
                "and rebuilt from the run folders (it is derived: nothing is lost)"
            )
        return True

    def _closer(self) -> None:
        """Start the thread that closes the store when the viewer is idle (once)."""
        if self._closing is not None:
            return

        def close_when_idle() -> None:
            while True:
                time.sleep(IDLE_S / 2)
                with self._lock:
                    if self._open is not None and time.monotonic() - self._used >= IDLE_S:
                        self._open[0].close()
                        self._open = None

        self._closing = threading.Thread(target=close_when_idle, daemon=True, name="view-idle")
        self._closing.start()

    def _store(self) -> Any:
        store = getattr(self._local, "store", None)
        if store is None:
            raise RuntimeError("the store is used outside a request's session")
        return store

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return list(self._store().con.execute(sql, list(params)).fetchall())

    def with_store(self, ask: Callable[[Any], Any]) -> Any:
        return ask(self._store())

    def runs(self, filters: Mapping[str, str]) -> list[dict[str, Any]]:
        where, params = ["TRUE"], []
        if filters.get("dataset"):
            where.append("r.dataset_id = ?")
            params.append(filters["dataset"])
        if filters.get("agent"):
            where.append("r.agent = ?")
            params.append(filters["agent"])
        if filters.get("commit"):
            where.append("starts_with(r.commit, ?)")
            params.append(filters["commit"])
        if filters.get("release"):
            name, _, version = filters["release"].partition("@")
            where.append("r.dataset_id = ? AND r.dataset_version = ?")
            params.extend([name, version])
        if filters.get("prompt"):
            where.append("r.run_id IN (SELECT run_id FROM attempts WHERE coalesce(prompt, '') = ?)")
            params.append(filters["prompt"])
        rows = self.query(
            f"""
            SELECT r.run_id, r.commit, r.dataset_id, r.dataset_version, r.agent,
                   r.started_at, r.status, g.pass_at_1, g.pass_hat_k, g.attempts, g.cases,
                   coalesce(n.gradings, 0), coalesce(a.attempts, 0), r.dirty,
                   coalesce(a.prompts, '')
            FROM runs r
            LEFT JOIN gradings g ON g.run_id = r.run_id AND g.newest
            LEFT JOIN (SELECT run_id, count(*) AS gradings FROM gradings GROUP BY run_id) n
                   ON n.run_id = r.run_id
            LEFT JOIN (SELECT run_id, count(*) AS attempts,
                              string_agg(DISTINCT coalesce(prompt, ''), ',' ORDER BY
                                         coalesce(prompt, '')) AS prompts
                       FROM attempts GROUP BY run_id) a
                   ON a.run_id = r.run_id
            WHERE {" AND ".join(where)}
            ORDER BY r.started_at DESC, r.run_id DESC
            """,
            params,
        )
        keys = (
            "run_id", "commit", "dataset_id", "dataset_version", "agent", "started_at",
            "status", "pass_at_1", "pass_hat_k", "graded_attempts", "cases", "gradings",
            "attempts", "dirty", "prompts",
        )  # fmt: skip
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def choices(self) -> dict[str, list[str]]:
        def values(sql: str) -> list[str]:
            return [str(r[0]) for r in self.query(sql) if r[0] not in (None, "")]

        return {
            "dataset": values("SELECT DISTINCT dataset_id FROM runs ORDER BY 1"),
            "agent": values("SELECT DISTINCT agent FROM runs ORDER BY 1"),
            "prompt": values("SELECT DISTINCT prompt FROM attempts ORDER BY 1"),
            "release": values(
                "SELECT DISTINCT dataset_id || '@' || dataset_version FROM runs ORDER BY 1"
            ),
        }

    # --- one run's folders ----------------------------------------------------------------
    def run_meta(self, run_id: str) -> dict[str, Any]:
        rows = self.query("SELECT run_dir, commit FROM runs WHERE run_id = ?", [run_id])
        if not rows:
            raise LookupError(f"no run {run_id!r} in the store")
        run_dir = Path(str(rows[0][0]))
        if not run_dir.is_absolute():
            run_dir = self.root / run_dir
        try:
            meta = json.loads((run_dir / "run.json").read_text("utf-8"))
        except (OSError, ValueError):
            meta = {}
        return {"run_dir": run_dir, "commit": str(rows[0][1]), "meta": meta}

    def gradings(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.query(
            "SELECT grading_id, graded_at, config_digest, judges, newest, report_path "
            "FROM gradings WHERE run_id = ? ORDER BY graded_at DESC, grading_id DESC",
            [run_id],
        )
        keys = ("grading_id", "graded_at", "config_digest", "judges", "newest", "report_path")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def report(self, run_id: str, grading_id: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        """(the grading's row, its report.json); the newest grading by default."""
        gradings = self.gradings(run_id)
        if not gradings:
            raise LookupError(f"run {run_id!r} has no grading (`evalcase grade {run_id}`)")
        chosen = next((g for g in gradings if g["grading_id"] == grading_id), None)
        if chosen is None:
            chosen = next((g for g in gradings if g["newest"]), gradings[0])
        path = self.report_file(chosen)
        try:
            report = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise LookupError(f"{path}: cannot be read ({exc})") from exc
        return chosen, report if isinstance(report, dict) else {}

    def report_file(self, grading: Mapping[str, Any]) -> Path:
        """Where a grading's report.json is (the store keeps it relative to the root of the
        folders it indexed: the repository, or the remote's mirror)."""
        path = Path(str(grading["report_path"]))
        return path if path.is_absolute() else self.root / path

    def attempt(
        self, run_id: str, case_id: str, attempt: int, prompt: str
    ) -> dict[str, Any] | None:
        """The attempt's record, read from attempts.jsonl (the last one wins, as grading
        reads a resumed run)."""
        run_dir = self.run_meta(run_id)["run_dir"]
        self.fetch(run_dir / "attempts.jsonl")
        found = None
        for record in _records(run_dir / "attempts.jsonl", case_id):
            if (
                record.get("case_id") == case_id
                and record.get("attempt") == attempt
                and str(record.get("prompt") or "") == prompt
            ):
                found = record
        return found

    def grades(
        self, report_path: Path, case_id: str, attempt: int, prompt: str
    ) -> list[dict[str, Any]]:
        """The graders' lines for one attempt, from the grading's grades.jsonl."""
        self.fetch(report_path.parent / "grades.jsonl")
        out = []
        for line in _records(report_path.parent / "grades.jsonl", case_id):
            if (
                line.get("case_id") == case_id
                and line.get("attempt") == attempt
                and str(line.get("prompt") or "") == prompt
            ):
                out.append(line)
        return out

    def fetch(self, path: Path) -> None:
        """Over a remote, make a published run's file present before it is read (a
        FatalError, shown as the page's error, when it cannot be); locally, nothing."""
        if self.mirror is not None:
            self.mirror.fetch(path)


def _records(path: Path, needle: str) -> Iterator[dict[str, Any]]:
    """The JSON lines of ``path`` that mention ``needle`` (cheap test before parsing)."""
    quoted = json.dumps(needle, ensure_ascii=False)[1:-1].encode("utf-8")
    try:
        handle = path.open("rb")
    except OSError:
        return
    with handle:
        for raw in handle:
            if quoted not in raw:
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield record


def url(path: str, **params: Any) -> str:
    """A link with its query string; values from data are encoded, never pasted."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return path + ("?" + urlencode(kept, doseq=True) if kept else "")


def new_token() -> str:
    return secrets.token_urlsafe(24)
