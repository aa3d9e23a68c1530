"""The viewer's routes and pages (:mod:`evalcase.results.view` says what each shows):
Starlette request handling, Jinja2 templates under ``templates/view/`` with
autoescaping, and the two guards (the Host header, the token)."""

from __future__ import annotations

import hmac
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from evalcase.config import Config
from evalcase.model import FatalError
from evalcase.results.view import (
    CASES_PER_PAGE,
    CSP,
    RUNS_PER_PAGE,
    Viewer,
    host_header_is_loopback,
    is_loopback,
    paged,
    percent,
    pretty,
    url,
)

if TYPE_CHECKING:
    from evalcase.results.remote_index import Mirror

TEMPLATES = Path(__file__).parent / "templates" / "view"
COOKIE = "evalcase_view_token"

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_env.globals.update(url=url, percent=percent, pretty=pretty)
# One character per attempt in the cases table and the grids (the class gives its colour;
# the title, its word).
MARKS = {"pass": "✓", "fail": "✗", "pending": "?", "error": "!", "skipped": "–"}
_env.filters["mark"] = lambda verdict: MARKS.get(str(verdict), "·")


def render(template: str, http_status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_env.get_template(template).render(**context), status_code=http_status)


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


class Guard(BaseHTTPMiddleware):  # type: ignore[misc]  # Starlette is Any to mypy here
    """Loopback Host header (no DNS rebinding) or the token; security headers on every
    response."""

    def __init__(self, app: Any, token: str | None, loopback_only: bool) -> None:
        super().__init__(app)
        self.token = token
        self.loopback_only = loopback_only

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.method not in ("GET", "HEAD"):
            return self._secure(Response("read-only viewer", status_code=405))
        if self.loopback_only and not host_header_is_loopback(request.headers.get("host", "")):
            return self._secure(Response("unknown Host", status_code=421))
        if self.token is not None:
            given = request.query_params.get("token")
            header = request.headers.get("authorization", "")
            cookie = request.cookies.get(COOKIE, "")
            if given is not None and _same(given, self.token):
                target = url(
                    request.url.path,
                    **{k: v for k, v in request.query_params.items() if k != "token"},
                )
                response = RedirectResponse(target, status_code=303)
                response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
                return self._secure(response)
            bearer = header.removeprefix("Bearer ").strip() if header.startswith("Bearer ") else ""
            if not any(_same(v, self.token) for v in (bearer, cookie) if v):
                return self._secure(
                    Response("a token is required (evalcase view printed it)", status_code=401)
                )
        return self._secure(await call_next(request))

    @staticmethod
    def _secure(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response


def _same(given: str, token: str) -> bool:
    """Whether a token from a request is the viewer's, in constant time. Bytes, not str:
    ``hmac.compare_digest`` refuses str holding non-ASCII characters, and a request's
    query, header or cookie may hold any (surrogates included: nothing here can fail)."""
    return hmac.compare_digest(
        given.encode("utf-8", "surrogatepass"), token.encode("utf-8", "surrogatepass")
    )


def application(viewer: Viewer, *, token: str | None, loopback_only: bool) -> Starlette:
    def guarded(handler: Any) -> Any:
        def answer(request: Request) -> Response:
            # A damaged store (truncated, overwritten) is set aside and the page asked
            # again of a rebuilt one: the store is derived, never a 500.
            for last in (False, True):
                try:
                    with viewer.session():
                        response: Response = handler(request)
                    return response
                except Exception as exc:
                    if last or not viewer.set_aside_if_damaged(exc):
                        raise
            raise AssertionError("unreachable")

        def endpoint(request: Request) -> Response:
            try:
                return answer(request)
            except LookupError as exc:
                return render("error.html.j2", 404, title="Not found", message=str(exc.args[0]))
            except FatalError as exc:
                return render("error.html.j2", 400, title="Cannot show this", message=str(exc))

        return endpoint

    def runs_page(request: Request) -> Response:
        q = request.query_params
        filters = {k: q.get(k, "") for k in ("dataset", "agent", "prompt", "commit", "release")}
        rows = viewer.runs(filters)
        page = paged(rows, _int(q.get("page"), 1), RUNS_PER_PAGE)
        # "previous run of the same dataset": the link to compare a run with its baseline
        previous: dict[str, str] = {}
        # under the same prompts (runs under other prompts grade other rows: nothing in common)
        last_of: dict[tuple[str, str], str] = {}
        for row in reversed(rows):
            key = (str(row["dataset_id"]), str(row["prompts"]))
            if key in last_of:
                previous[row["run_id"]] = last_of[key]
            if row["pass_at_1"] is not None:
                last_of[key] = row["run_id"]
        return render(
            "runs.html.j2",
            title="Runs",
            page=page,
            filters=filters,
            choices=viewer.choices(),
            previous=previous,
        )

    def run_page(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        q = request.query_params
        grading, report = viewer.report(run_id, q.get("grading"))
        meta = viewer.run_meta(run_id)["meta"]
        cases = list(report.get("cases") or [])
        status = q.get("status", "")
        if status:
            cases = [c for c in cases if c.get("status") == status]
        order = {"error": 0, "fail": 1, "pending": 2, "pass": 3}
        if q.get("sort") == "status":
            cases.sort(key=lambda c: (order.get(str(c.get("status")), 4), str(c.get("case_id"))))
        page = paged(cases, _int(q.get("page"), 1), CASES_PER_PAGE)
        prompts = sorted(
            {str(c.get("prompt")) for c in report.get("cases") or [] if c.get("prompt")}
        )
        return render(
            "run.html.j2",
            title=f"Run {run_id}",
            run_id=run_id,
            meta=meta,
            report=report,
            grading=grading,
            gradings=viewer.gradings(run_id),
            page=page,
            status=status,
            sort=q.get("sort", ""),
            prompts=prompts,
            attempts=attempts_of(report),
        )

    def attempt_page(request: Request) -> Response:
        q = request.query_params
        run_id, case_id = q.get("run", ""), q.get("case", "")
        number, prompt = _int(q.get("attempt"), 1), q.get("prompt", "")
        grading, _ = viewer.report(run_id, q.get("grading"))
        record = viewer.attempt(run_id, case_id, number, prompt)
        if record is None:
            raise LookupError(f"run {run_id} has no attempt {number} of {case_id}")
        lines = viewer.grades(viewer.report_file(grading), case_id, number, prompt)
        return render(
            "attempt.html.j2",
            title=f"{case_id} #{number}",
            run_id=run_id,
            case_id=case_id,
            number=number,
            prompt=prompt,
            record=record,
            grades=lines,
            grading=grading,
        )

    def compare_page(request: Request) -> Response:
        from evalcase.report.compare import compare, describe_side, grader_verdicts
        from evalcase.results.refs import Usable, find_pair

        q = request.query_params
        base_ref, new_ref = q.get("base", ""), q.get("new", "")
        if not base_ref or not new_ref:
            return render("compare_form.html.j2", title="Compare", runs=viewer.runs({})[:200])
        usable = Usable(allow_dirty=bool(q.get("allow_dirty")), agent=q.get("agent") or None)
        base, new = find_pair(viewer.config, base_ref, new_ref, usable=usable)
        _, base_report = viewer.report(base.run_id, None)
        _, new_report = viewer.report(new.run_id, None)
        base_grades = _grades_file(viewer, base.run_id)
        new_grades = _grades_file(viewer, new.run_id)
        result = compare(
            base_report,
            new_report,
            base_grades=grader_verdicts(base_grades),
            new_grades=grader_verdicts(new_grades),
            common=bool(q.get("common")),
            sides=(base.describe(), new.describe()),
        )
        statuses = {
            side: {_case_key(c): c for c in report.get("cases") or []}
            for side, report in (("base", base_report), ("new", new_report))
        }
        return render(
            "compare.html.j2",
            title=f"{base.run_id} → {new.run_id}",
            base=base,
            new=new,
            result=result,
            sides=(describe_side(result.base), describe_side(result.new)),
            statuses=statuses,
            attempts={"base": attempts_of(base_report), "new": attempts_of(new_report)},
        )

    def case_page(request: Request) -> Response:
        from evalcase.results.queries import history

        case_id = request.query_params.get("id", "")
        if not case_id:
            raise LookupError("which case? /case?id=CASE_ID")
        rows = viewer.with_store(lambda store: history(store, case_id))
        if not rows:
            raise LookupError(f"no graded attempt of {case_id!r} in the store")
        numbers = {
            (str(run), str(grading), str(prompt)): [int(n) for n in found]
            for run, grading, prompt, found in viewer.query(
                "SELECT run_id, grading_id, coalesce(prompt, ''), list(attempt ORDER BY attempt) "
                "FROM verdicts WHERE case_id = ? GROUP BY ALL",
                [case_id],
            )
        }
        # Newest first, 200 a page: a case run on every commit for a year has many rows.
        page = paged(rows[::-1], _int(request.query_params.get("page"), 1), CASES_PER_PAGE)
        return render(
            "case.html.j2",
            title=case_id,
            case_id=case_id,
            rows=page.rows,
            page=page,
            numbers=numbers,
        )

    def flaky_page(request: Request) -> Response:
        from evalcase.results.queries import flaky

        dataset = request.query_params.get("dataset") or None
        rows = viewer.with_store(lambda store: flaky(store, dataset=dataset))
        page = paged(rows, _int(request.query_params.get("page"), 1), CASES_PER_PAGE)
        return render(
            "flaky.html.j2", title="Flaky cases", page=page, rows=page.rows, dataset=dataset or ""
        )

    def grid_page(request: Request) -> Response:
        runs = request.query_params.getlist("run")
        if not runs:
            raise LookupError("which runs? /grid?run=RUN (prompts × cases) or several run=")
        placeholders = ", ".join("?" for _ in runs)
        rows = viewer.query(
            f"""
            SELECT v.run_id, r.agent, coalesce(v.prompt, ''), v.case_id,
                   list((v.attempt, v.verdict) ORDER BY v.attempt)
            FROM verdicts v
            JOIN gradings g ON g.run_id = v.run_id AND g.grading_id = v.grading_id AND g.newest
            JOIN runs r ON r.run_id = v.run_id
            WHERE v.run_id IN ({placeholders})
            GROUP BY ALL ORDER BY v.case_id
            """,
            runs,
        )
        columns: dict[tuple[str, str], str] = {}
        cells: dict[str, dict[tuple[str, str], list[tuple[int, str]]]] = defaultdict(dict)
        for run_id, agent, prompt, case_id, verdicts in rows:
            column = (str(run_id), str(prompt))
            label = " · ".join(x for x in (str(agent or run_id), str(prompt)) if x)
            if len(runs) > 1:
                label = f"{label} ({run_id})"
            columns[column] = label
            cells[str(case_id)][column] = [_pair(v) for v in verdicts]
        ordered = sorted(columns, key=lambda c: (runs.index(c[0]) if c[0] in runs else 0, c[1]))
        return render(
            "grid.html.j2",
            title="Grid",
            columns=[(c, columns[c]) for c in ordered],
            cells=dict(sorted(cells.items())),
            kind="agent × case" if len(runs) > 1 else "prompt × case",
        )

    routes = [
        Route("/", guarded(runs_page)),
        Route("/runs/{run_id}", guarded(run_page)),
        Route("/attempt", guarded(attempt_page)),
        Route("/compare", guarded(compare_page)),
        Route("/case", guarded(case_page)),
        Route("/flaky", guarded(flaky_page)),
        Route("/grid", guarded(grid_page)),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, token=token, loopback_only=loopback_only)],
    )


def _pair(value: Any) -> tuple[int, str]:
    """A DuckDB (attempt, verdict) struct, as a dict or a tuple."""
    if isinstance(value, dict):
        number, verdict = list(value.values())[:2]
    else:
        number, verdict = value
    return int(number), str(verdict)


def attempts_of(report: dict[str, Any]) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(case, prompt) -> [(attempt number, verdict)] from a report's attempt rows: the
    numbers links must carry (a case's attempts count on across prompts)."""
    out: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for row in report.get("attempts") or []:
        if isinstance(row, dict):
            key = (str(row.get("case_id")), str(row.get("prompt") or ""))
            out[key].append((_int(str(row.get("attempt")), 1), str(row.get("verdict"))))
    for items in out.values():
        items.sort()
    return dict(out)


def _case_key(case: dict[str, Any]) -> str:
    prompt = case.get("prompt")
    return f"{case.get('case_id')} [{prompt}]" if prompt else str(case.get("case_id"))


def _grades_file(viewer: Viewer, run_id: str) -> list[dict[str, Any]]:
    import json

    grading, _ = viewer.report(run_id, None)
    path = viewer.report_file(grading)
    viewer.fetch(path.parent / "grades.jsonl")
    out = []
    try:
        with (path.parent / "grades.jsonl").open("rb") as handle:
            for raw in handle:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(line, dict):
                    out.append(line)
    except OSError:
        return []
    return out


def make_app(
    config: Config,
    *,
    token: str | None = None,
    host: str = "127.0.0.1",
    mirror: Mirror | None = None,
    warn: Callable[[str], None] | None = None,
) -> Starlette:
    """The viewer's ASGI application: its pages over ``config``'s store and folders (or a
    remote's ``mirror``, synced by the caller), with the token required off loopback
    (:mod:`evalcase.results.view`, "Trust")."""
    return application(Viewer(config, mirror, warn), token=token, loopback_only=is_loopback(host))


__all__ = ["RUNS_PER_PAGE", "application", "make_app"]
