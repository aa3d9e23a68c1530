"""Lint at scale: evalcase against check-jsonschema on generated repositories.

Generates a repository of N cases derived from the refund dataset's example cases (new
valid IDs, varied inputs, the same fixtures) in a temporary git repository, commits and
packs it (``git gc``, as a clone is), then measures whole processes and prints, per size:

1. ``evalcase lint`` cold: no store, all rules on (peak memory of the process tree);
2. ``evalcase lint`` warm: store present, nothing changed;
3. the commit hook, per commit: change one case's title, ``git add`` it, run
   ``evalcase lint --staged FILE`` (what pre-commit runs), commit; repeated for
   ``--commits`` commits (median; peak memory), each run on an index it has never seen;
3b. the commit hook on a staged fixture, per commit: change the description of a tool
   fixture that a third of the cases use (``order_lookup``: a description is no content,
   so lint asks for no bump and no case breaks), ``git add`` the fixture alone, run
   ``evalcase lint --staged FIXTURE``, commit; median of ``--commits``; every case that
   references the fixture is re-checked. Then, once, the breaking change: its parameter
   renamed and its version bumped (as lint asks), staged alone; the hook reports every
   dependent case (EC304, EC309), quoting each finding's line; not committed;
4. ``evalcase lint --base REF`` where REF differs from the working tree in 1,000 case
   files (store warm from a run at REF, as on a developer machine or a CI cache);
5. the commit hook again once the dataset is released (``evalcase tag``): every run
   then compares the dataset with its release;
6. ``check-jsonschema`` with the same case schema on the same case files (schema
   validation only; about 50 ms a file here, so skipped above ``--cjs-max`` cases).

The machine line ends with the host reference: the CPU time of a fixed pure-Python
workload (:func:`host_reference`), taken before and after each cold run. The hosts of
this project's machines are shared, and their speed changes by up to twice from one hour,
even one minute, to the next (the same commit's cold lint took 2.1 times the CPU on one
day's host as on another's); read a figure beside the references taken around it, and
compare two runs after scaling by them.

Usage (from the repository root, with evalcase and check-jsonschema installed)::

    python benchmarks/lint_bench.py                       # N = 1,000 and 10,000
    python benchmarks/lint_bench.py --sizes 1000 10000 100000 --runs 1
    python benchmarks/lint_bench.py --sizes 100000 --hook-only --keep /var/tmp/bench

``--keep DIR`` generates each size's repository in ``DIR/N`` and keeps it; a later run
with the same ``--keep`` resets that repository to its generated commit (no tags, no
later commits) instead of generating it again (minutes at 100,000 cases). The cold run
still starts without a store.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
# Measured processes may write bytecode caches, as any installed Python package does: a
# shell with PYTHONDONTWRITEBYTECODE set would otherwise recompile evalcase's modules on
# every run (about 0.4 s here) and measure that instead of lint.
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
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


def generate(dest: Path, n: int, dataset: str = "*") -> list[str]:
    """A repository of ``n`` cases derived from the example cases of ``dataset`` (a glob).
    Returns case paths."""
    templates = sorted(REPO_ROOT.glob(f"datasets/{dataset}/cases/*.yaml"))
    shutil.copytree(REPO_ROOT / "fixtures", dest / "fixtures")
    for manifest in REPO_ROOT.glob(f"datasets/{dataset}/dataset.yaml"):
        target = dest / manifest.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(manifest, target)
    texts = [(t, t.read_text("utf-8")) for t in templates]
    reviewed = [_review_digests(text) for _, text in texts]
    paths = []
    for i in range(n):
        template, text = texts[i % len(texts)]
        old_digest, new_digest = reviewed[i % len(texts)]
        # The variant's input is another content: its approval names that content's
        # digest (EC419), as `evalcase review-case` would have written it.
        # Quoted: a hex digest such as 4888987062180e1912433450 is a YAML number otherwise
        # (as `evalcase review-case` writes it).
        if old_digest:
            new = new_digest(i)
            text = text.replace(f'"{old_digest}"', f'"{new}"').replace(old_digest, f'"{new}"')
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


def _review_digests(text: str) -> tuple[str, Any]:
    """The reviewed-content digest of a template (as its current approval records it) and
    a function giving that of its variant ``i`` (the input changed as ``generate`` does)."""
    from evalcase.config import DEFAULT_GOVERNANCE_FIELDS
    from evalcase.index.digest import reviewed_content_digest
    from evalcase.loader import load

    data = load("template.yaml", text.encode("utf-8")).data
    if not isinstance(data, dict):
        return "", None
    original = data.get("input")

    def variant(i: int) -> str:
        if isinstance(original, str):
            changed: Any = f"{original}（第 {i} 号变体）"
        elif isinstance(original, dict):
            changed = {"variant_no": i, **original}
        else:
            changed = original
        return reviewed_content_digest({**data, "input": changed}, DEFAULT_GOVERNANCE_FIELDS)

    return reviewed_content_digest(data, DEFAULT_GOVERNANCE_FIELDS), variant


# --- measurement ------------------------------------------------------------------------


@dataclass
class Sample:
    seconds: float
    peak_mb: float
    returncode: int
    output: str
    cpu: float = 0.0  # user + system seconds of the process and the workers it waited for


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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = 0
    stop = threading.Event()

    def poll() -> None:
        # Reading /proc costs CPU, which a busy poller would take from the two cores the
        # measured run needs: often at first (short runs), then every half second.
        nonlocal peak
        interval = 0.01
        while not stop.is_set():
            peak = max(peak, _tree_memory_kb(proc.pid))
            stop.wait(interval)
            interval = min(interval * 1.5, 0.5)

    poller = threading.Thread(target=poll, daemon=True) if track_memory else None
    if poller:
        poller.start()
    output, _ = proc.communicate()
    seconds = time.perf_counter() - start
    stop.set()
    if poller:
        poller.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Sample(seconds, peak / 1024, proc.returncode, output, cpu)


def median(samples: list[Sample]) -> float:
    return statistics.median(s.seconds for s in samples)


def median_cpu(samples: list[Sample]) -> float:
    return statistics.median(s.cpu for s in samples)


def check(sample: Sample, what: str, allowed: tuple[int, ...] = (0,)) -> None:
    if sample.returncode not in allowed:
        raise SystemExit(f"{what} failed ({sample.returncode}):\n{sample.output[-3000:]}")


def bump_title(path: Path, k: int) -> None:
    text = path.read_text("utf-8")
    new = re.sub(r"^title: (.*)$", lambda m: f"title: {m.group(1)} (rev {k})", text,
                 count=1, flags=re.M)  # fmt: skip
    if new == text:
        raise SystemExit(f"{path} has no title to change")
    path.write_text(new, "utf-8")


def hook_commits(
    repo: Path, paths: list[str], commits: int, stride: int, start: int
) -> list[Sample]:
    """``commits`` commits, each retitling one case (spread over the repository), running
    the hook on it (what pre-commit runs), then committing."""
    samples = []
    for k in range(commits):
        rel = paths[(k * stride + start) % len(paths)]
        bump_title(repo / rel, k)
        git(repo, "add", rel)
        sample = measure([*EVALCASE, "lint", "--staged", rel], repo, track_memory=True)
        check(sample, "staged lint", (0, 1))
        samples.append(sample)
        git(repo, "commit", "-q", "-m", f"retitle {rel}")
    return samples


# The tool fixture the fixture hook changes: referenced by a third of the generated cases.
FIXTURE = "fixtures/tool/order_lookup.yaml"


def describe_fixture(path: Path, k: int) -> None:
    """A new description for the fixture: not its content, so no version bump is due
    (EC504 compares every field but ID, version, description, source, desensitized) and
    no case's pin goes stale."""
    text = path.read_text("utf-8")
    new = re.sub(r"^description: (.*)$", lambda m: f"description: {m.group(1)}（修订 {k}）",
                 text, count=1, flags=re.M)  # fmt: skip
    if new == text:
        raise SystemExit(f"{path} has no description to change")
    path.write_text(new, "utf-8")


def rename_parameter(path: Path) -> None:
    """order_lookup's ``order_id`` becomes ``order_no``, its version bumped v2 -> v3 as
    lint asks: every case calling it with ``order_id`` (EC304) or pinning v2 (EC309)
    breaks."""
    text = path.read_text("utf-8")
    new = (
        text.replace("fixture_version: v2", "fixture_version: v3", 1)
        .replace("      order_id:\n", "      order_no:\n", 1)
        .replace("required: [order_id]", "required: [order_no]", 1)
    )
    if new.count("order_no") != 2 or "fixture_version: v3" not in new:
        raise SystemExit(f"{path} is not the order_lookup fixture this benchmark renames")
    path.write_text(new, "utf-8")


def fixture_commits(repo: Path, commits: int) -> list[Sample]:
    """``commits`` commits, each changing the fixture's description, staging the fixture
    alone and running the hook on it (what pre-commit runs), then committing."""
    samples = []
    for k in range(commits):
        describe_fixture(repo / FIXTURE, k)
        git(repo, "add", FIXTURE)
        sample = measure([*EVALCASE, "lint", "--staged", FIXTURE], repo, track_memory=True)
        # Nothing breaks: a finding here would be a hook reporting what it should not.
        check(sample, "staged lint of a fixture")
        samples.append(sample)
        git(repo, "commit", "-q", "-m", f"describe {FIXTURE} ({k})")
    return samples


_SUMMARY = re.compile(r"^Found (\d+) errors? and (\d+) warnings? in (\d+) files?", re.M)


def breaking_fixture(repo: Path) -> tuple[Sample, int, int]:
    """The hook on a staged breaking fixture change, once: the sample, the findings it
    reports and the files they are in. The change is then undone (never committed)."""
    rename_parameter(repo / FIXTURE)
    git(repo, "add", FIXTURE)
    try:
        sample = measure([*EVALCASE, "lint", "--staged", FIXTURE], repo, track_memory=True)
    finally:
        git(repo, "reset", "-q", "--", FIXTURE)
        git(repo, "checkout", "-q", "--", FIXTURE)
    check(sample, "staged lint of a breaking fixture change", (1,))
    m = _SUMMARY.search(sample.output)
    if m is None:
        raise SystemExit(f"no summary in the hook's output:\n{sample.output[-3000:]}")
    return sample, int(m.group(1)) + int(m.group(2)), int(m.group(3))


def prepare(repo: Path, n: int) -> list[str]:
    """A repository of ``n`` generated cases, committed and packed; one kept by an earlier
    run (``--keep``) is reset to its generated commit instead. Returns case paths."""
    if (repo / ".git").is_dir():
        root = git(repo, "rev-list", "--max-parents=0", "HEAD").split()
        if len(root) != 1 or git(repo, "log", "-1", "--format=%s", root[0]).strip() != (
            "generated"
        ):
            raise SystemExit(f"{repo} is not a repository this benchmark generated")
        git(repo, "reset", "-q", "--hard", root[0])
        tags = git(repo, "tag", "--list").split()
        if tags:
            git(repo, "tag", "-d", *tags)
        paths = sorted(p for p in git(repo, "ls-files", "datasets").splitlines() if "/cases/" in p)
        if len(paths) != n:
            raise SystemExit(f"{repo} holds {len(paths)} cases, not {n}")
        return paths
    shutil.rmtree(repo, ignore_errors=True)  # a generation that did not finish
    paths = generate(repo, n, "refund_regression_set")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    # Pack the objects, as in any repository people lint: a clone or fetch brings a
    # pack, and git's automatic gc packs once there are more than 6,700 loose objects.
    # Reading 100,000 freshly written loose objects would measure the file system.
    # (No automatic gc in the background of the commit: it would hold gc's lock.)
    git(repo, "-c", "gc.auto=0", "commit", "-q", "-m", "generated")
    git(repo, "gc", "--quiet")
    return paths


def bench_size(
    n: int, runs: int, commits: int, cjs_max: int, hook_only: bool = False,
    keep: Path | None = None,
) -> dict[str, float]:  # fmt: skip
    work = keep / str(n) if keep else Path(tempfile.mkdtemp(prefix=f"evalcase-bench-{n}-"))
    try:
        repo = work / "repo"
        paths = prepare(repo, n)
        # Write the generated files and objects out now: the kernel flushing a gigabyte
        # of new files during the first measurement would be the generator's cost.
        os.sync()
        cache = repo / ".evalcase_cache"
        row: dict[str, float] = {"n": n}

        # 1. cold: no store at all.
        cold = []
        REFERENCE.append(host_reference())
        for _ in range(runs):
            shutil.rmtree(cache, ignore_errors=True)
            sample = measure([*EVALCASE, "lint"], repo, track_memory=True)
            check(sample, "cold lint")
            cold.append(sample)
            REFERENCE.append(host_reference())
        row["cold"] = median(cold)
        row["cold_cpu"] = median_cpu(cold)
        row["cold_mb"] = max(s.peak_mb for s in cold)

        # 2. warm: nothing changed since the last run.
        warm = [measure([*EVALCASE, "lint"], repo) for _ in range(max(runs, 3))]
        for s in warm:
            check(s, "warm lint")
        row["warm"] = median(warm)
        row["warm_cpu"] = median_cpu(warm)

        # 3. the commit hook: each run sees an index (and a HEAD) it has never seen.
        hook = hook_commits(repo, paths, commits, 7919, len(paths) // 2)
        row["hook"] = median(hook)
        row["hook_cpu"] = median_cpu(hook)
        row["hook_max"] = max(s.seconds for s in hook)
        row["hook_mb"] = max(s.peak_mb for s in hook)

        # 3b. the hook on a staged fixture: harmless per commit, then breaking once.
        fixture = fixture_commits(repo, commits)
        row["fix"] = median(fixture)
        row["fix_cpu"] = median_cpu(fixture)
        row["fix_max"] = max(s.seconds for s in fixture)
        row["fix_mb"] = max(s.peak_mb for s in fixture)
        broken, found, files = breaking_fixture(repo)
        row["brk"] = broken.seconds
        row["brk_cpu"] = broken.cpu
        row["brk_mb"] = broken.peak_mb
        row["brk_findings"] = found
        row["brk_files"] = files
        if hook_only:
            return row

        # 4. --base where the working tree differs in 1,000 case files.
        changed = paths[: min(1000, len(paths))]
        measure([*EVALCASE, "lint"], repo)  # store warm at the base state
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

        # 5. the hook once the dataset is released: each commit compares it with the tag.
        check(measure([*EVALCASE, "tag", "refund_regression_set"], repo), "evalcase tag")
        released = hook_commits(repo, paths, commits, 6271, len(paths) // 3)
        row["rel"] = median(released)
        row["rel_cpu"] = median_cpu(released)
        row["rel_mb"] = max(s.peak_mb for s in released)

        # 6. check-jsonschema on the same case files.
        if n <= cjs_max:
            cmd = [
                sys.executable, "-m", "check_jsonschema",
                "--schemafile", str(REPO_ROOT / "schemas" / "case.schema.json"),
                *[str(repo / p) for p in paths],
            ]  # fmt: skip
            sample = measure(cmd, repo)
            check(sample, "check-jsonschema")
            row["cjs"] = sample.seconds
        return row
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def host_reference() -> float:
    """CPU seconds of a fixed pure-Python workload (dicts, strings, a regex, json; no
    evalcase code), best of three: a yardstick of the host, not of evalcase. Hosts of the
    same kind differ: the same commit's cold lint at 100,000 cases took 208.9 s [379 s of
    CPU] one day and 96.1 s [177 s] another, on quiet machines; figures from two hosts
    compare after scaling by this."""
    import json
    import math

    pattern = re.compile(r"case_(\d+)")
    best = math.inf
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(40_000):
            record = {"case_id": f"case_{i}", "tags": [str(i % 7), "x" * (i % 5)], "n": i}
            text = json.dumps(record, sort_keys=True)
            found = pattern.search(text)
            total += len(json.loads(text)["tags"]) + (int(found.group(1)) if found else 0)
            total += sum(len(key) for key in sorted(record))
        best = min(best, time.process_time() - start)
    return best


# The host reference before each size and after each cold run: the same host's speed
# changes from minute to minute (another machine on the same cores), so a cold run is
# read beside the references taken around it.
REFERENCE: list[float] = []


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.+)$", f.read(), re.M)
            cpu = m.group(1).strip() if m else cpu
    except OSError:
        pass
    reference = ""
    if REFERENCE:
        low, high = min(REFERENCE), max(REFERENCE)
        spread = f"{low:.2f} s" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f} s"
        reference = f", host reference {spread} of CPU (around each cold run)"
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.system()}{reference}"
    )


def table(rows: list[dict[str, float]], runs: int, commits: int) -> str:
    lines = [
        f"machine: {machine()}; load average at the end: {os.getloadavg()[0]:.1f}; "
        f"cold and --base: median of {runs} run(s); warm: median of {max(runs, 3)}; hook: "
        f"median of {commits} commits; whole processes, start-up included",
        "",
        "Times are wall clock, with the CPU time (user + system, workers included) in "
        "brackets: on a shared machine the wall clock grows with the load, the CPU time "
        "much less.",
        "",
        "| cases | hook per commit [CPU] (slowest) | hook memory "
        "| hook on a staged fixture [CPU] (slowest) (memory) "
        "| breaking fixture: findings in files, hook [CPU] (memory) "
        "| warm full lint [CPU] "
        "| cold full lint [CPU] | cold peak memory | --base, 1,000 changed "
        "| hook once released [CPU] (memory) | check-jsonschema |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cjs = f"{r['cjs']:.1f} s" if "cjs" in r else "skipped"
        base = f"{r['base']:.2f} s ({r['base_mb']:.0f} MB)" if "base" in r else "skipped"
        rel = (
            f"{r['rel']:.2f} s [{r['rel_cpu']:.2f} s] ({r['rel_mb']:.0f} MB)"
            if "rel" in r
            else "skipped"
        )
        fix = (
            f"{r['fix']:.2f} s [{r['fix_cpu']:.2f} s] ({r['fix_max']:.2f} s) ({r['fix_mb']:.0f} MB)"
        )
        brk = (
            f"{int(r['brk_findings']):,} in {int(r['brk_files']):,}, "
            f"{r['brk']:.2f} s [{r['brk_cpu']:.2f} s] ({r['brk_mb']:.0f} MB)"
        )
        lines.append(
            f"| {int(r['n']):,} | {r['hook']:.2f} s [{r['hook_cpu']:.2f} s] "
            f"({r['hook_max']:.2f} s) "
            f"| {r['hook_mb']:.0f} MB | {fix} | {brk} | {r['warm']:.2f} s [{r['warm_cpu']:.2f} s] "
            f"| {r['cold']:.1f} s [{r['cold_cpu']:.0f} s] "
            f"| {r['cold_mb']:.0f} MB | {base} | {rel} | {cjs} |"
        )
    targets: list[tuple[str, str, bool]] = []
    for r in rows:
        n = int(r["n"])
        found: list[tuple[str, str, bool]] = []
        if n >= 100_000:
            found = [
                ("hook per commit < 1 s", f"{r['hook']:.3f} s", r["hook"] < 1.0),
                ("hook memory < 200 MB", f"{r['hook_mb']:.0f} MB", r["hook_mb"] < 200),
                ("hook on a staged fixture < 1 s", f"{r['fix']:.3f} s", r["fix"] < 1.0),
                (
                    "hook memory on a breaking fixture < 200 MB",
                    f"{r['brk_mb']:.0f} MB ({int(r['brk_findings']):,} findings)",
                    r["brk_mb"] < 200,
                ),
                ("warm full lint < 2 s", f"{r['warm']:.3f} s", r["warm"] < 2.0),
                (
                    "cold full lint < 150 s",
                    f"{r['cold']:.1f} s ({r['cold_cpu'] / n * 1000:.2f} ms of CPU per case)",
                    r["cold"] < 150,
                ),
                ("cold peak memory < 1 GB", f"{r['cold_mb']:.0f} MB", r["cold_mb"] < 1024),
            ]
        elif n >= 10_000:
            found = [("hook per commit < 0.5 s", f"{r['hook']:.3f} s", r["hook"] < 0.5)]
        targets += [(f"{name} at {n:,} cases", value, ok) for name, value, ok in found]
    lines.append("")
    lines += [f"- [{'x' if ok else ' '}] {name}: {value}" for name, value, ok in targets]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--runs", type=int, default=1, help="cold and --base runs per size")
    parser.add_argument("--commits", type=int, default=5, help="hook runs (commits) per size")
    parser.add_argument(
        "--cjs-max",
        type=int,
        default=10_000,
        help="run check-jsonschema up to this many cases (about 50 ms a file here)",
    )
    parser.add_argument(
        "--hook-only",
        action="store_true",
        help="stop after the commit hooks (steps 1-3b: the cold run warms its store)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="generate into DIR/N and keep it; reuse (reset to its generated commit) if there",
    )
    args = parser.parse_args()
    rows = []
    for n in args.sizes:
        print(f"benchmarking {n:,} cases ...", file=sys.stderr, flush=True)
        rows.append(bench_size(n, args.runs, args.commits, args.cjs_max, args.hook_only, args.keep))
        print(table(rows, args.runs, args.commits), file=sys.stderr, flush=True)
    print(table(rows, args.runs, args.commits))


if __name__ == "__main__":
    main()
