"""The commit hook's git questions, asked through GitPython and through gitio's own
plumbing, on a generated repository: what decides which of the two answers them.

``evalcase.gitio`` stands on GitPython except on the commit hook's path (see its
docstring); this benchmark is the measurement behind that split. Per question it times
both ways in one process (median of ``--repeat`` runs, after a warm-up) and counts the
git processes each started:

- ``import git``: in a fresh interpreter each time (GitPython runs ``git version`` twice
  as it is imported: once to check the executable, once for its fetch parser);
- HEAD's commit: ``Repo.head.commit`` (GitPython reads the ref files itself) against
  ``git rev-parse``;
- release tags with the commit and tag object each names: ``Repo.tags`` (peeled through
  the cat-file object database) against one ``git for-each-ref``;
- the staged changes: ``Commit.diff(INDEX)`` against ``git diff-index --cached``;
- whether git tracks anything under the cache folder: ``Repo.git.ls_files`` against the
  same command run directly;
- a staged case's blob, then every case's blob: GitPython's persistent ``cat-file``
  object database (one request and answer per object) against gitio's pipelined reads.

Usage (from the repository root, with evalcase installed)::

    python benchmarks/git_bench.py --cases 10000           # generate, then measure
    python benchmarks/git_bench.py --repo PATH              # an existing case repository
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import lint_bench

ROOTS = ["datasets", "fixtures"]


class Counter:
    """Counts the processes started through subprocess.Popen and through GitPython's
    own reference to it (git.cmd.safer_popen)."""

    def __init__(self) -> None:
        import git.cmd

        self.started = 0
        self._real = subprocess.Popen
        self._gitpython = git.cmd.safer_popen

    def __enter__(self) -> Counter:
        import git.cmd

        def counting(real: Callable[..., object]) -> Callable[..., object]:
            def started(*args: object, **kwargs: object) -> object:
                self.started += 1
                return real(*args, **kwargs)

            return started

        subprocess.Popen = counting(self._real)  # type: ignore[assignment, misc]
        git.cmd.safer_popen = counting(self._gitpython)  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        import git.cmd

        subprocess.Popen = self._real  # type: ignore[misc]
        git.cmd.safer_popen = self._gitpython


def timed(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[float, int, float, int]:
    """Median milliseconds of each of two ways and the processes one call of each starts,
    run in turn (A B A B ...) so that a machine's drift falls on both."""
    counts = []
    for fn in (first, second):
        fn()
        with Counter() as counter:
            fn()
        counts.append(counter.started)
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in zip((first, second), times, strict=True):
            start = time.perf_counter()
            fn()
            out.append((time.perf_counter() - start) * 1000)
    return statistics.median(times[0]), counts[0], statistics.median(times[1]), counts[1]


def import_cost(repeat: int) -> tuple[float, float]:
    """Median milliseconds of a fresh interpreter that imports git, and one that does not."""
    runs: dict[str, list[float]] = {"import git": [], "pass": []}
    for _ in range(repeat + 1):
        for code in runs:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            runs[code].append((time.perf_counter() - start) * 1000)
    return statistics.median(runs["import git"][1:]), statistics.median(runs["pass"][1:])


def measure(repo_root: Path, repeat: int) -> list[tuple[str, float, int, float, int]]:
    import git

    from evalcase import gitio

    paths = sorted(
        str(p.relative_to(repo_root)) for p in (repo_root / "datasets").glob("*/cases/*.yaml")
    )
    staged = paths[len(paths) // 2]
    lint_bench.bump_title(repo_root / staged, 0)
    lint_bench.git(repo_root, "add", staged)
    try:
        ours = gitio.Repo(repo_root)
        theirs = git.Repo(repo_root)
        head = ours.rev_parse("HEAD")
        changes = ours.diff_index(head, cached=True, paths=ROOTS)
        one = [changes[0].new_blob]
        every = [blob for _p, _m, blob, _s in ours.tree_entries(head, ROOTS)]

        def gp_tags() -> object:
            return [(t.name, t.commit.hexsha, t.object.hexsha) for t in theirs.tags]

        def gp_blobs(blobs: list[str]) -> dict[str, bytes]:
            return {b: theirs.odb.stream(bytes.fromhex(b)).read() for b in blobs}

        questions: list[tuple[str, Callable[[], object], Callable[[], object]]] = [
            ("HEAD's commit", lambda: theirs.head.commit.hexsha, lambda: ours.rev_parse("HEAD")),
            ("release tags", gp_tags, lambda: ours.tags(messages=False)),
            (
                "staged changes",
                lambda: theirs.head.commit.diff(git.INDEX, ROOTS, no_renames=True),
                lambda: ours.diff_index(head, cached=True, paths=ROOTS),
            ),
            (
                "cache folder tracked",
                lambda: theirs.git.ls_files("-z", "--", ".evalcase_cache"),
                lambda: ours.tracks_any(".evalcase_cache"),
            ),
            ("1 blob", lambda: gp_blobs(one), lambda: ours.read_blobs(one)),
            (
                f"{len(every):,} blobs",
                lambda: gp_blobs(every),
                lambda: ours.read_blobs(every),
            ),
        ]
        rows = []
        for name, gp, own in questions:
            many = name.endswith(" blobs")
            rows.append((name, *timed(gp, own, 3 if many else repeat)))
        ours.close()
        theirs.close()
        return rows
    finally:
        lint_bench.git(repo_root, "reset", "-q", "--", staged)
        lint_bench.git(repo_root, "checkout", "-q", "--", staged)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10000, help="cases to generate")
    parser.add_argument("--repo", type=Path, help="measure this repository instead")
    parser.add_argument("--repeat", type=int, default=41)
    args = parser.parse_args()
    work = None
    if args.repo is None:
        work = Path(tempfile.mkdtemp(prefix="evalcase-git-bench-"))
        repo = work / "repo"
        lint_bench.generate(repo, args.cases, "refund_regression_set")
        lint_bench.git(repo, "init", "-q", "-b", "main")
        lint_bench.git(repo, "add", "-A")
        lint_bench.git(repo, "-c", "gc.auto=0", "commit", "-q", "-m", "generated")
        lint_bench.git(repo, "gc", "--quiet")
        subprocess.run([*lint_bench.EVALCASE, "tag", "refund_regression_set"],
                       cwd=repo, env=lint_bench.ENV, check=True, capture_output=True)  # fmt: skip
    else:
        repo = args.repo.resolve()
    try:
        os.chdir(repo)
        with_git, without = import_cost(args.repeat // 2 or 1)
        print(lint_bench.machine(), "load average", " ".join(map(str, os.getloadavg())))
        print(f"import git: {with_git - without:.1f} ms over a bare interpreter "
              f"({with_git:.1f} against {without:.1f} ms), 2 git processes")  # fmt: skip
        print("\n| question | GitPython ms (git processes) | gitio ms (git processes) |")
        print("|---|---:|---:|")
        for name, gp_ms, gp_procs, own_ms, own_procs in measure(repo, args.repeat):
            print(f"| {name} | {gp_ms:.2f} ({gp_procs}) | {own_ms:.2f} ({own_procs}) |")
    finally:
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
