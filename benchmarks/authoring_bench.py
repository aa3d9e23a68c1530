"""Authoring commands on the bundled repository: fmt, export per format, coverage, stats.

Measures, in this process (imports done once beforehand):

1. ``fmt``: formatting every bundled case, manifest and fixture (the value check
   included: each file is read by the loader before and after), per file;
2. ``export``: each format of refund_regression_set from the working tree (reading the
   dataset, building its tasks, rendering);
3. ``coverage`` of workout_plan_edit_set and ``stats`` of the whole repository.

Usage (from the repository root)::

    python benchmarks/authoring_bench.py            # median of 5 runs each
    python benchmarks/authoring_bench.py --runs 9
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))


def median_seconds(func: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from evalcase.authoring.coverage import compute
    from evalcase.authoring.exports import FORMATS, export
    from evalcase.authoring.fmt import candidates, format_text
    from evalcase.authoring.stats import collect
    from evalcase.config import load_config

    config = load_config(ROOT)
    files = candidates(ROOT, [])
    texts = [(f.relative_to(ROOT).as_posix(), f.read_text("utf-8")) for f in files]

    def fmt_all() -> None:
        for rel, text in texts:
            format_text(text, rel)

    seconds = median_seconds(fmt_all, args.runs)
    print(f"fmt: {len(texts)} files in {seconds:.3f} s ({seconds / len(texts) * 1000:.1f} ms/file)")
    for fmt in FORMATS:
        seconds = median_seconds(
            lambda fmt=fmt: export(config, "refund_regression_set", fmt, use_cache=True),
            args.runs,
        )
        print(f"export --format {fmt}: refund_regression_set (32 cases) in {seconds:.3f} s")
    seconds = median_seconds(lambda: compute(config, "workout_plan_edit_set"), args.runs)
    print(f"coverage workout_plan_edit_set: {seconds * 1000:.1f} ms")
    seconds = median_seconds(lambda: collect(config), args.runs)
    print(f"stats (all datasets): {seconds * 1000:.1f} ms")


if __name__ == "__main__":
    main()
