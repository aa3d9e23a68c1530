"""Human-readable findings: location, code, message, and the offending line with a caret."""

from __future__ import annotations

from collections.abc import Sequence

from evalcase.lint.reporters import ReportContext
from evalcase.model import Finding, Severity


def _source_line(
    ctx: ReportContext, path: str, line: int, cache: dict[str, list[str] | None]
) -> str | None:
    """Line ``line`` of the text the finding's position was computed on: the staged blob
    under --staged (``ctx.sources``), else the file in the work tree."""
    if path not in cache:
        # One file's lines at a time (findings come sorted by path): a hook reporting on
        # 30,000 cases must not hold every one of them split into lines.
        cache.clear()
        cache[path] = None
        data: bytes | None = None
        if ctx.sources is not None:
            data = ctx.sources.get(path)
        else:
            full = ctx.root / path
            try:
                if not full.is_symlink() and full.is_file() and full.stat().st_size <= 2_000_000:
                    data = full.read_bytes()
            except OSError:
                data = None
        if data is not None and len(data) <= 2_000_000:
            # Lines as git counts them: splitlines() would also break at U+2028 & co.
            text = data.decode("utf-8", "replace")
            # (A line's "\r" is dropped when it is shown, not from every line of the file.)
            cache[path] = text.split("\n")
    lines = cache[path]
    if lines is None or not 0 < line <= len(lines):
        return None
    return lines[line - 1].removesuffix("\r")


def render(findings: Sequence[Finding], ctx: ReportContext) -> str:
    out: list[str] = []
    cache: dict[str, list[str] | None] = {}
    for f in findings:
        out.append(f"{f.path}:{f.line}:{f.column}: {f.code} [{f.severity}] {f.message} ({f.name})")
        if f.line > 0:
            source = _source_line(ctx, f.path, f.line, cache)
            if source is not None and len(source) <= 400 and source.isprintable():
                gutter = f"{f.line:>5} | "
                out.append(gutter + source)
                before = source[: f.column - 1]
                width = (
                    len(before)
                    if before.isascii()
                    else sum(2 if ord(ch) > 0x2E7F else 1 for ch in before)
                )
                out.append(" " * (len(gutter) - 2) + "| " + " " * width + "^")
    out.append(summary(findings, ctx))
    return "\n".join(out) + "\n"


def summary(findings: Sequence[Finding], ctx: ReportContext) -> str:
    errors = sum(1 for f in findings if f.severity is Severity.ERROR)
    warnings = sum(1 for f in findings if f.severity is Severity.WARNING)
    files = len({f.path for f in findings})
    if not findings:
        return f"All checks passed ({ctx.files_checked} files)."
    first = min(f.code for f in findings)
    # Every message says what to do; the rule's page says why, with a passing and a
    # failing example (never a section number of the design documents).
    return (
        f"Found {errors} error{'s' * (errors != 1)} and {warnings} "
        f"warning{'s' * (warnings != 1)} in {files} file{'s' * (files != 1)} "
        f"({ctx.files_checked} files checked). Each code is explained by "
        f"`evalcase rule CODE` (e.g. `evalcase rule {first}`) and in docs/rules.md."
    )


def statistics(findings: Sequence[Finding]) -> str:
    counts: dict[tuple[str, str], int] = {}
    for f in findings:
        counts[(f.code, f.name)] = counts.get((f.code, f.name), 0) + 1
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return "\n".join(f"{n:>6}  {code}  {name}" for (code, name), n in rows) + ("\n" if rows else "")
