"""Lint at scale: evalcase against check-jsonschema on generated repositories.

Generates a repository of N cases derived from the bundled example cases (new valid IDs,
varied inputs, the same fixtures) in a temporary git repository, then measures whole
processes, several runs each, and prints medians:

1. ``evalcase lint`` cold: no cache, all rules on;
2. ``evalcase lint`` warm: cache present, nothing changed;
3. one changed case through the pre-commit hook path (``evalcase lint --staged FILE``,
   the change staged, whole-repository context, cache warm from the previous commit);
4. ``evalcase lint --base REF`` where REF differs from the working tree in 1,000 case
   files (cache warm from a run at REF, as on a developer machine or a CI cache);
5. ``check-jsonschema`` with the same case schema on the same case files (the reference:
   schema validation only);
6. peak memory (the whole process tree, proportional set size) of 1 and 4.

Usage (from the repository root, with evalcase and check-jsonschema installed)::

    python benchmarks/lint_bench.py                # N = 1,000 and 10,000, 3 runs each
    python benchmarks/lint_bench.py --sizes 2000 --runs 5
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "PYTHONPATH": os.pathsep.join(
        [str(REPO_ROOT / "tools"), *filter(None, [os.environ.get("PYTHONPATH")])]
    ),
}
EVALCASE = [sys.executable, "-m", "evalcase"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env=ENV, check=True, capture_output=True, text=True
    ).stdout


# --- generation -------------------------------------------------------------------------


def generate(dest: Path, n: int) -> list[str]:
    """A repository of ``n`` cases derived from the example cases. Returns case paths."""
    templates = sorted(REPO_ROOT.glob("datasets/*/cases/*.yaml"))
    shutil.copytree(REPO_ROOT / "fixtures", dest / "fixtures")
    for manifest in REPO_ROOT.glob("datasets/*/dataset.yaml"):
        target = dest / manifest.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(manifest, target)
    texts = [(t, t.read_text("utf-8")) for t in templates]
    paths = []
    for i in range(n):
        template, text = texts[i % len(texts)]
        old_id = template.stem
        prefix = re.sub(r"_[0-9]+$", "", old_id)
        new_id = f"{prefix}_{i:05d}"
        text = re.sub(rf"\b{re.escape(old_id)}\b", new_id, text)
        # Vary the input so that cases are not near-duplicates of each other.
        text = re.sub(
            r'^input: "(.*)"$',
            lambda m, i=i: f'input: "{m.group(1)}（第 {i} 号变体）"',
            text,
            count=1,
            flags=re.M,
        )
        text = re.sub(r"^input:\n", f"input:\n  variant_no: {i}\n", text, count=1, flags=re.M)
        rel = f"datasets/{template.parent.parent.name}/cases/{new_id}.yaml"
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
        paths.append(rel)
    (dest / ".gitignore").write_text(".evalcase_cache/\n")
    return paths


# --- measurement ------------------------------------------------------------------------


@dataclass
class Sample:
    seconds: float
    peak_mb: float
    returncode: int
    output: str


def _tree_memory_kb(root_pid: int) -> int:
    """Proportional memory (PSS) of a process and all its descendants, from /proc.

    PSS splits pages shared between processes (a forked worker shares its parent's) among
    them, so the sum is what the tree really holds; summing RSS would count shared pages
    once per process.
    """
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                m = re.search(r"^Pss:\s+(\d+)", f.read(), re.M)
                total += int(m.group(1)) if m else 0
        except OSError:
            pass
        stack.extend(children.get(pid, []))
    return total


def measure(cmd: list[str], cwd: Path, track_memory: bool = False) -> Sample:
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_memory_kb(proc.pid))
            stop.wait(0.02)

    poller = threading.Thread(target=poll, daemon=True) if track_memory else None
    if poller:
        poller.start()
    output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    stop.set()
    if poller:
        poller.join()
    return Sample(seconds, peak / 1024, proc.returncode, output)


def median(samples: list[Sample]) -> float:
    return statistics.median(s.seconds for s in samples)


def check(sample: Sample, what: str, allowed: tuple[int, ...] = (0,)) -> None:
    if sample.returncode not in allowed:
        raise SystemExit(f"{what} failed ({sample.returncode}):\n{sample.output[-3000:]}")


def bench_size(n: int, runs: int, reference_runs: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp(prefix=f"evalcase-bench-{n}-"))
    try:
        repo = work / "repo"
        paths = generate(repo, n)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "generated")
        cache = repo / ".evalcase_cache"
        row: dict[str, float] = {"n": n}

        cold = []
        for _ in range(runs):
            shutil.rmtree(cache, ignore_errors=True)
            sample = measure([*EVALCASE, "lint"], repo, track_memory=True)
            check(sample, "cold lint")
            cold.append(sample)
        row["cold"] = median(cold)
        row["cold_mb"] = max(s.peak_mb for s in cold)

        warm = [measure([*EVALCASE, "lint"], repo) for _ in range(runs)]
        for s in warm:
            check(s, "warm lint")
        row["warm"] = median(warm)

        # 3. one changed file through the hook path.
        hook = []
        target = repo / paths[len(paths) // 2]
        original = target.read_text("utf-8")
        for k in range(runs):
            text = re.sub(r"^case_version: v(\d+)$",
                          lambda m: f"case_version: v{int(m.group(1)) + 1}", original,
                          count=1, flags=re.M)  # fmt: skip
            text = text.replace("（第", f"（改 {k} 第", 1)
            target.write_text(text, "utf-8")
            git(repo, "add", str(target.relative_to(repo)))
            sample = measure([*EVALCASE, "lint", "--staged", str(target.relative_to(repo))], repo)
            check(sample, "staged lint", (0, 1))
            hook.append(sample)
            git(repo, "reset", "-q", "--hard", "HEAD")
        row["hook"] = median(hook)

        # 4. --base where the working tree differs in 1,000 case files.
        changed = paths[: min(1000, len(paths))]
        measure([*EVALCASE, "lint"], repo)  # cache warm at the base state
        base_runs = []
        for k in range(runs):
            for rel in changed:
                f = repo / rel
                t = f.read_text("utf-8")
                t = re.sub(r"^case_version: v(\d+)$",
                           lambda m: f"case_version: v{int(m.group(1)) + 1}", t,
                           count=1, flags=re.M)  # fmt: skip
                f.write_text(t.replace("（第", f"（再改 {k} 第", 1), "utf-8")
            sample = measure([*EVALCASE, "lint", "--base", "HEAD"], repo, track_memory=True)
            check(sample, "lint --base", (0, 1))
            base_runs.append(sample)
            git(repo, "checkout", "-q", "--", "datasets")
        row["base"] = median(base_runs)
        row["base_mb"] = max(s.peak_mb for s in base_runs)
        row["base_files"] = len(changed)

        # 5. check-jsonschema on the same case files.
        reference = []
        cmd = [
            sys.executable, "-m", "check_jsonschema",
            "--schemafile", str(REPO_ROOT / "schemas" / "case.schema.json"),
            *[str(repo / p) for p in paths],
        ]  # fmt: skip
        for _ in range(reference_runs):
            sample = measure(cmd, repo)
            check(sample, "check-jsonschema")
            reference.append(sample)
        row["cjs"] = median(reference)
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def table(rows: list[dict[str, float]], runs: int, reference_runs: int) -> str:
    lines = [
        f"machine: {machine()}; median of {runs} runs (check-jsonschema: {reference_runs}); "
        "whole processes, start-up included",
        "",
        "| cases | cold, all rules | warm, unchanged | 1 file, --staged | --base, 1,000 changed "
        "| check-jsonschema | cold vs check-jsonschema | peak MB cold / --base |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {int(r['n']):,} | {r['cold']:.2f} s | {r['warm']:.2f} s | {r['hook']:.2f} s "
            f"| {r['base']:.2f} s ({int(r['base_files']):,} files) | {r['cjs']:.2f} s "
            f"| {r['cjs'] / r['cold']:.1f}x faster | {r['cold_mb']:.0f} / {r['base_mb']:.0f} |"
        )
    if len(rows) >= 2:
        small, big = rows[0], rows[-1]
        growth = big["n"] / small["n"]
        lines.append("")
        lines.append(
            f"growth {small['n']:,.0f} -> {big['n']:,.0f} cases (x{growth:.0f}): cold "
            f"x{big['cold'] / small['cold']:.1f}, check-jsonschema "
            f"x{big['cjs'] / small['cjs']:.1f}"
        )
    big = rows[-1]
    peak = max(big["cold_mb"], big["base_mb"])
    targets = [
        ("cold >= 3x faster than check-jsonschema", f"{big['cjs'] / big['cold']:.1f}x",
         big["cjs"] / big["cold"] >= 3),
        ("warm < 1 s", f"{big['warm']:.3f} s", big["warm"] < 1.0),
        ("one file under pre-commit < 0.6 s", f"{big['hook']:.3f} s", big["hook"] < 0.6),
        ("--base over 1,000 changed files < 3 s", f"{big['base']:.3f} s", big["base"] < 3.0),
        ("peak memory < 400 MB", f"{peak:.0f} MB", peak < 400),
    ]  # fmt: skip
    lines.append("")
    lines += [
        f"- [{'x' if ok else ' '}] {name}: {value} at {big['n']:,.0f} cases"
        for name, value, ok in targets
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--reference-runs",
        type=int,
        default=1,
        help="runs of check-jsonschema (slow: about a minute per 1,000 cases here)",
    )
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        print(f"benchmarking {n:,} cases ...", file=sys.stderr, flush=True)
        rows.append(bench_size(n, args.runs, args.reference_runs))
    print(table(rows, args.runs, args.reference_runs))


if __name__ == "__main__":
    main()
