"""Time and memory of `evalcase lint` on each file of the hostile corpus (issue 6).

Each corpus file (tests/hostile/corpus.py) is placed alone in a copy of the base
repository and linted twice, each time in a process of its own:

1. ``python -m evalcase lint --no-cache --format json``, the command users run: its wall
   time (interpreter start and imports included) and peak resident memory (from wait4);
2. the same lint called as a library in a child forked from a warmed-up process
   (imports and compiled schemas loaded once), timing the linting alone.

The first row is the base repository without a hostile file (the fixed cost of a run);
the last is every hostile file in one repository. The table ends with the worst file's
time and memory.

Usage, from the repository root (evalcase installed, or PYTHONPATH=tools)::

    python benchmarks/hostile_bench.py
    python benchmarks/hostile_bench.py --only billion_laughs many_keys
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.hostile.corpus import (  # noqa: E402
    ENTRIES,
    Entry,
    build_repo,
    lint_in_subprocess,
    run_cli,
)

LIMIT_SECONDS = 2.0
LIMIT_MB = 200.0


def measure(name: str, entries: list[Entry], path: str | None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="hostile-bench-") as tmp:
        repo = build_repo(Path(tmp) / "repo", entries)
        cli = run_cli(repo, "lint", "--no-cache", "--format", "json")
        lint = lint_in_subprocess(repo)
    findings = json.loads(cli.stdout) if cli.stdout.strip().startswith("[") else []
    mine = [f for f in findings if path is None or f["path"] == path]
    counts: dict[str, int] = {}
    for f in mine:
        counts[f["code"]] = counts.get(f["code"], 0) + 1
    codes = " ".join(f"{c}x{n}" if n > 1 else c for c, n in sorted(counts.items())) or "-"
    status = "ok"
    if "Traceback" in cli.stdout + cli.stderr or cli.exit_code not in (0, 1):
        status = f"CRASH (exit {cli.exit_code})"
    elif len(entries) == 1 and lint.on(entries[0].path) != entries[0].expect:
        status = "UNEXPECTED FINDINGS"
    return {
        "name": name,
        "codes": codes,
        "exit": cli.exit_code,
        "cli_seconds": cli.seconds,
        "lint_seconds": lint.seconds,
        "peak_mb": max(cli.peak_mb, lint.peak_mb),
        "status": status,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="corpus entries to run (default: all)")
    args = parser.parse_args()
    entries = [e for e in ENTRIES if not args.only or e.name in args.only]

    print(f"# hostile corpus benchmark: python {platform.python_version()}, {platform.machine()}")
    header = f"{'file':<26} {'findings':<34} {'exit':>4} {'cli s':>6} {'lint s':>7} {'peak MB':>8}"
    print(header)
    print("-" * len(header))
    rows = []

    def show(row: dict[str, object]) -> None:
        print(
            f"{row['name']:<26} {str(row['codes'])[:34]:<34} {row['exit']:>4} "
            f"{row['cli_seconds']:>6.2f} {row['lint_seconds']:>7.2f} {row['peak_mb']:>8.1f}"
            + ("" if row["status"] == "ok" else f"  {row['status']}"),
            flush=True,
        )

    show(measure("(base repository alone)", [], None))
    for entry in entries:
        row = measure(entry.name, [entry], entry.path)
        rows.append(row)
        show(row)
    if not args.only:
        show(measure("(all files together)", entries, None))

    worst_time = max(rows, key=lambda r: float(r["lint_seconds"]))  # type: ignore[arg-type]
    worst_cli = max(rows, key=lambda r: float(r["cli_seconds"]))  # type: ignore[arg-type]
    worst_mem = max(rows, key=lambda r: float(r["peak_mb"]))  # type: ignore[arg-type]
    print()
    print(
        f"worst lint time:  {worst_time['lint_seconds']:.2f} s ({worst_time['name']}); "
        f"whole process: {worst_cli['cli_seconds']:.2f} s ({worst_cli['name']})"
    )
    print(f"worst peak memory: {worst_mem['peak_mb']:.1f} MB ({worst_mem['name']})")
    failed = [r["name"] for r in rows if r["status"] != "ok"]
    over = [
        r["name"]
        for r in rows
        if float(r["lint_seconds"]) >= LIMIT_SECONDS or float(r["peak_mb"]) >= LIMIT_MB  # type: ignore[arg-type]
    ]
    if failed:
        print(f"unexpected results: {', '.join(map(str, failed))}")
    if over:
        print(f"over {LIMIT_SECONDS} s or {LIMIT_MB} MB: {', '.join(map(str, over))}")
    return 1 if failed or over else 0


if __name__ == "__main__":
    sys.exit(main())
