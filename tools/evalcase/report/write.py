"""Write reports/<commit>/<run_id>/: grades.jsonl, report.json, report.md, report.html.

The Markdown fits a pull-request comment; the HTML is one self-contained file (inline CSS,
inline SVG, a few lines of inline script for sorting) that opens from disk with no network.
Both are Jinja2 templates. Every file is scrubbed of secrets (evalcase.scrub: key
variables' values, configured header values, URL userinfo) before it is written, and with
``redact`` personal data is masked too.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from evalcase import pii, scrub
from evalcase.atomic import make_folders, open_file, read_bytes, write_atomic
from evalcase.contract import records
from evalcase.grade.recorded_run import GradedRun
from evalcase.model import FatalError
from evalcase.report import gradings
from evalcase.report.build import build_report

FILES = ("grades.jsonl", "report.json", "report.md", "report.html")
MD_CASE_LIMIT = 25
# Non-passing attempts shown in full per failing case in report.html.
DETAIL_ATTEMPTS = 3


def _pct(value: Any) -> str:
    return "–" if value is None else f"{float(value) * 100:.1f}%"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value):.0f} ms"


def _badge(verdict: str) -> str:
    return {"pass": "✅ pass", "fail": "❌ fail", "error": "⚠️ error", "pending": "⏳ pending"}.get(
        verdict, verdict
    )


# What Markdown (GitHub's, where report.md is often pasted) reads as markup inside a
# table cell: emphasis (``*``, and ``_`` at a word's edge: ``llm_rubric`` stays),
# code, links and images (``[``), HTML and entities, strikethrough, the cell separator,
# and the autolinks ``http://...`` and ``www.``.
_MD_SPECIAL = re.compile(
    r"([\\`*\[\]<>|~&])|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|(?<=www)\.|:(?=//)",
    re.IGNORECASE,
)


def _md(text: Any) -> str:
    """A name or message from data as plain text in a table cell: every character
    Markdown would read as markup escaped, line breaks as spaces."""
    flat = " ".join(str(text).split("\n")).replace("\r", " ")
    return _MD_SPECIAL.sub(lambda m: "\\" + m[0], flat)


def _code(text: Any) -> str:
    """A name from data as a code span: a fence longer than any run of backticks in it
    (a backslash does not escape inside one), ``|`` escaped (GitHub splits table cells
    on it even inside code)."""
    flat = " ".join(str(text).split("\n")).replace("\r", " ").replace("|", "\\|")
    run = max((len(m) for m in re.findall(r"`+", flat)), default=0)
    fence = "`" * (run + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


@functools.cache
def environment() -> Any:
    """The report templates' Jinja2 environment, one per process: it keeps the compiled
    templates (66 ms of CPU to compile the two again), so a process that grades many
    times (the test suite, a library caller) compiles them once."""
    try:
        import jinja2
    except ImportError as exc:
        raise FatalError("reports need Jinja2: pip install jinja2 (or reinstall evalcase)") from exc
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("evalcase.report", "templates"),
        autoescape=jinja2.select_autoescape(["html.j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=_pct, ms=_ms, badge=_badge, md=_md, code=_code)
    return env


def details(graded: GradedRun, report: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """What the HTML shows for each failing case: conversation, calls, state diff, grades."""
    failing = {c["case_id"] for c in report["failing_cases"]}
    lines: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for line in graded.lines:
        lines.setdefault((line["case_id"], int(line["attempt"])), []).append(line)
    verdicts = {(r.case_id, r.attempt): r.verdict for r in graded.results}
    out: dict[str, list[dict[str, Any]]] = {}
    for attempt in graded.record.attempts:
        case_id, number = attempt.case_id, attempt.attempt or 1
        verdict = verdicts.get((case_id, number), "error")
        if case_id not in failing or verdict == "pass":
            continue
        shown = out.setdefault(case_id, [])
        if len(shown) >= DETAIL_ATTEMPTS:  # the rest are in grades.jsonl and attempts.jsonl
            continue
        shown.append(
            {
                "attempt": number,
                "prompt": attempt.prompt,
                "verdict": verdict,
                "error": attempt.error.to_json() if attempt.error else None,
                "grades": lines.get((case_id, number), []),
                "messages": list(attempt.messages),
                "calls": list(attempt.calls),
                "loop": attempt.loop,
                # An agent-owned loop's proposals (executed or not: never calls).
                "proposals": None if attempt.proposals is None else list(attempt.proposals),
                "state_diff": list(attempt.state_diff),
            }
        )
    return out


def grading_meta(
    graded: GradedRun, report: Mapping[str, Any], grade_section: Any, grading_id: str
) -> dict[str, Any]:
    """The grading.json of a new grading (evalcase.report.gradings)."""
    judges = [
        {"model": str(j["model"]), "prompt_version": str(j["prompt_version"])}
        for j in report["provenance"]["judges"]
    ]
    judges = [dict(t) for t in sorted({tuple(sorted(j.items())) for j in judges})]
    return {
        "grading_id": grading_id,
        "run_id": graded.record.run_id,
        "commit": graded.record.commit,
        "graded_at": report["run"]["graded_at"],
        "config_digest": gradings.config_digest(graded.grader_versions, judges, grade_section),
        "graders": dict(graded.grader_versions),
        "judges": judges,
    }


def write_report(
    graded: GradedRun,
    reports_root: Path,
    *,
    redact: bool = False,
    environ: Mapping[str, str] | None = None,
    grade_section: Any = None,
    audit: Mapping[str, str] | None = None,
    clock: Callable[[], datetime] | None = None,
    base: Path | None = None,
) -> Path:
    """Render and write the four files as a new grading beside the earlier ones, and as
    the run's default report (evalcase.report.gradings); returns the report directory.
    ``audit``: each case's audit status, when its dataset was audited (see build_report);
    ``clock``: the time a grading ID is made from (evalcase.report.gradings), else now.
    ``base``: the folder every path below is checked from (evalcase.atomic.base_for: the
    repository root when ``reports_root`` is inside it), else ``reports_root`` itself:
    reports/ is data, and a committed link anywhere below is refused
    (evalcase.atomic.UnsafePath), never written through."""
    base = reports_root if base is None else base
    target = reports_root / graded.record.commit / graded.record.run_id
    make_folders(target, base=base)
    # The whole grading under the run's lock, its ID first: chosen after every earlier
    # grading's, so the newest grading is the one made last (evalcase.report.gradings).
    with _default_copy_lock(target, base):
        earlier = gradings.list_gradings(target)
        grading_id = gradings.new_grading_id(
            [g.grading_id for g in earlier], clock() if clock is not None else None
        )
        _write_grading(
            graded, target, earlier, grading_id, base,
            redact=redact, environ=environ, grade_section=grade_section, audit=audit,
        )  # fmt: skip
    return target


def _write_grading(
    graded: GradedRun,
    target: Path,
    earlier: list[gradings.Grading],
    grading_id: str,
    base: Path,
    *,
    redact: bool,
    environ: Mapping[str, str] | None,
    grade_section: Any,
    audit: Mapping[str, str] | None,
) -> None:
    scrubber = scrub.active(os.environ if environ is None else environ)
    built = build_report(
        graded, redacted=redact, audit=audit, graded_at=gradings.graded_at_of(grading_id)
    )
    meta = grading_meta(graded, built, grade_section, grading_id)
    built["grading"] = {
        "grading_id": meta["grading_id"],
        "config_digest": meta["config_digest"],
        "earlier": [g.grading_id for g in earlier],
    }
    report = scrubber.data(built)
    view = scrubber.data(details(graded, report))
    lines: list[Any] = scrubber.data(list(graded.lines))
    if redact:
        report, view, lines = pii.redact(report), pii.redact(view), pii.redact(lines)
    env = environment()
    texts = {
        "grades.jsonl": "".join(records.dumps(x) + "\n" for x in lines),
        "report.json": records.dumps(report, indent=1) + "\n",
        "report.md": env.get_template("report.md.j2").render(report=report, limit=MD_CASE_LIMIT),
        "report.html": env.get_template("report.html.j2").render(report=report, details=view),
    }
    texts[gradings.GRADING_FILE] = records.dumps(meta, indent=1) + "\n"
    versions = target / gradings.GRADINGS_DIR
    if not versions.is_dir() and not versions.is_symlink() and earlier:
        _keep_unversioned(target, base)
    # The grading's own folder first (staged, then renamed: never half written) ...
    folder = versions / meta["grading_id"]
    staging = folder.with_name(folder.name + ".writing")
    make_folders(versions, base=base)  # refused when gradings/ is a link
    if staging.is_symlink():
        staging.unlink()
    shutil.rmtree(staging, ignore_errors=True)
    make_folders(staging, base=base, exist_ok=False)
    for name, text in texts.items():
        # The data was scrubbed; the rendered Markdown and HTML once more, as text.
        texts[name] = (
            text if name.endswith("json") or name.endswith("jsonl") else scrubber.text(text)
        )
        write_atomic(staging / name, texts[name], base=base)
    staging.rename(folder)
    # ... then the default copy at the run's report paths, each file replaced atomically,
    # still under the lock and only while this grading is the newest: two `grade` of one
    # run at once must not leave one's report.json beside the other's report.html, nor the
    # older grading as the default (a grading pulled from a remote may be newer).
    newest = gradings.list_gradings(target)
    if not newest or newest[-1].grading_id == meta["grading_id"]:
        for name, text in texts.items():
            write_atomic(target / name, text, base=base)


@contextlib.contextmanager
def _default_copy_lock(target: Path, base: Path) -> Iterator[None]:
    """An exclusive lock on the run's report folder (a dot file: never published)."""
    import fcntl

    with open_file(target / ".default.lock", "a", base=base) as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _keep_unversioned(target: Path, base: Path) -> None:
    """A report written before gradings were versioned becomes the grading
    ``unversioned``, so the new grading does not replace it. Each file is read without
    following a link (a committed ``report.md -> ~/.aws/credentials`` is refused, never
    copied into a published report) and written under ``base`` the same way."""
    folder = target / gradings.GRADINGS_DIR / gradings.UNVERSIONED
    make_folders(folder, base=base)
    copied: dict[str, bytes] = {}
    for name in FILES:
        if (target / name).is_file() or (target / name).is_symlink():
            copied[name] = read_bytes(target / name, base=base)
            write_atomic(folder / name, copied[name], base=base)
    report: Any = {}
    with contextlib.suppress(ValueError):
        report = json.loads(copied.get("report.json", b"{}").decode("utf-8"))
    run = report.get("run") if isinstance(report, dict) else None
    meta = {
        "grading_id": gradings.UNVERSIONED,
        "graded_at": (run or {}).get("graded_at", "") if isinstance(run, dict) else "",
        "config_digest": "",
    }
    write_atomic(folder / gradings.GRADING_FILE, records.dumps(meta, indent=1) + "\n", base=base)
