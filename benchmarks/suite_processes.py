"""Where the test suite's CPU goes, by process: the pytest workers' own, and each process
tree a test started (an `evalcase` CLI, the agents' zygote, a peer tool's engine, git),
summed from the kernel's process accounting, so that nothing a test starts is missed:
the agents the zygote starts are not the workers' children, and Ray's daemons are not
anybody's in the test process.

Needs root and the `acct` package (`apt-get install acct`: `accton`, `dump-acct`).
Process accounting is machine-wide: run it when nothing else runs, or read the "not the
suite's" line as what else ran. Every `subprocess.Popen` of the test processes is logged
with its pid, its command line and the test that ran (a `sitecustomize` put first on
``PYTHONPATH``), and joined with the accounting records by pid; a tree's CPU is its
processes' user + system time, each counted once.

Usage, from the repository root::

    python benchmarks/suite_processes.py                   # pytest --full, two workers
    python benchmarks/suite_processes.py -- tests/run -q   # pytest ARGS instead
    python benchmarks/suite_processes.py --read DIR        # the tables of an earlier run

It prints the run's wall time, the machine's busy and idle core-seconds from
``/proc/stat``, the host reference (``lint_bench.host_reference``, taken after the run),
the workers' own CPU, then the process trees by kind of command and by
test file. The figures of 2026-12-08 are in benchmarks/notes/2026-12-suite-time.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lint_bench  # beside this file: the host's own speed

ROOT = Path(__file__).resolve().parents[1]

SITECUSTOMIZE = """
import json, os, subprocess, time
_log = os.environ.get("SUITE_PROCESSES_LOG")
_orig = subprocess.Popen._execute_child
def _execute_child(self, args, *a, **k):
    _orig(self, args, *a, **k)
    if _log:
        try:
            argv = [str(x) for x in (args if isinstance(args, (list, tuple)) else [args])]
            with open(_log, "a") as out:
                out.write(json.dumps({"pid": self.pid, "ppid": os.getpid(), "argv": argv[:8],
                                      "test": os.environ.get("PYTEST_CURRENT_TEST", "")}) + "\\n")
        except Exception:
            pass
subprocess.Popen._execute_child = _execute_child
"""


def cpu_ticks() -> tuple[int, int]:
    """(busy, idle) ticks of the whole machine, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    user, nice, system, idle, iowait = fields[:5]
    return user + nice + system, idle + iowait


def record(folder: Path, pytest_args: list[str]) -> None:
    if shutil.which("accton") is None or shutil.which("dump-acct") is None:
        raise SystemExit("needs the acct package (apt-get install acct) and root")
    site = folder / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE, "utf-8")
    pacct = folder / "pacct"
    pacct.touch()
    subprocess.run(["accton", str(pacct)], check=True, capture_output=True)
    env = {**os.environ, "SUITE_PROCESSES_LOG": str(folder / "popen.jsonl")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    busy0, idle0 = cpu_ticks()
    t0 = time.perf_counter()
    try:
        with open(folder / "pytest.log", "w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env,
                stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            (folder / "pid").write_text(str(proc.pid))
            code = proc.wait()
    finally:
        wall = time.perf_counter() - t0
        busy1, idle1 = cpu_ticks()
        subprocess.run(["accton", "off"], check=False, capture_output=True)
    hz = os.sysconf("SC_CLK_TCK")
    summary = {
        "exit": code, "wall_s": round(wall, 1), "busy_core_s": round((busy1 - busy0) / hz),
        "idle_core_s": round((idle1 - idle0) / hz), "load": os.getloadavg()[0],
        "host_reference_s": round(lint_bench.host_reference(), 3),
        "last_line": (folder / "pytest.log").read_text("utf-8").strip().splitlines()[-1:],
    }  # fmt: skip
    (folder / "summary.json").write_text(json.dumps(summary), "utf-8")


def kind(argv: list[str]) -> str:
    """A command line's kind: ``python -m evalcase run``, ``git commit``, ``node cli.js``."""
    exe = argv[0].rsplit("/", 1)[-1]
    if exe.startswith("python"):
        if "-m" in argv:
            i = argv.index("-m")
            return "python -m " + " ".join(x for x in argv[i + 1 : i + 3] if not x.startswith("/"))
        if "-c" in argv:
            return "python -c CODE"
        rest = [x for x in argv[1:] if not x.startswith("-")]
        return "python " + (rest[0].rsplit("/", 1)[-1] if rest else "")
    if exe == "git":
        return "git " + next((x for x in argv[1:] if not x.startswith("-") and "/" not in x), "")
    return exe + (" " + argv[1].rsplit("/", 1)[-1] if len(argv) > 1 else "")


def read(folder: Path, top: int) -> None:
    summary = json.loads((folder / "summary.json").read_text("utf-8"))
    root = int((folder / "pid").read_text())
    dump = subprocess.run(["dump-acct", str(folder / "pacct")], capture_output=True, text=True)
    cpu: dict[int, float] = {}
    parent: dict[int, int] = {}
    children: dict[int, list[int]] = collections.defaultdict(list)
    for line in dump.stdout.splitlines():
        f = [x.strip() for x in line.split("|")]
        if len(f) < 12:
            continue
        pid, ppid = int(f[9]), int(f[10])
        cpu[pid] = (float(f[2]) + float(f[3])) / 100.0  # acct v3 counts in 1/100 s
        parent[pid] = ppid
        children[ppid].append(pid)

    def tree(pid: int) -> float:
        seen, todo, total = set(), [pid], 0.0
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            total += cpu.get(p, 0.0)
            todo += children.get(p, ())
        return total

    workers = {p for p, pp in parent.items() if pp == root}
    mine = tree(root)
    everything = sum(cpu.values())
    own = cpu.get(root, 0.0) + sum(cpu[p] for p in workers)
    log = folder / "popen.jsonl"
    started = [json.loads(x) for x in log.read_text("utf-8").splitlines()] if log.exists() else []
    # Started by a worker, or by the root when it runs the tests itself (-n 0); not the
    # workers themselves (xdist's controller starts them with ``python -c``).
    direct = [s for s in started if s["ppid"] in workers | {root} and s["pid"] not in workers]
    by_kind: dict[str, list[float]] = collections.defaultdict(lambda: [0, 0.0])
    by_file: dict[tuple[str, str], float] = collections.defaultdict(float)
    for s in direct:
        c = tree(s["pid"])
        k = kind(s["argv"])
        by_kind[k][0] += 1
        by_kind[k][1] += c
        test = re.sub(r"@\S*", "", s["test"]).split("::")[0] or "(between tests)"
        by_file[(test, k)] += c
    print(f"pytest: exit {summary['exit']}, {summary['wall_s']} s wall, {summary['last_line']}")
    print(
        f"machine: {summary['busy_core_s']} busy and {summary['idle_core_s']} idle core-seconds; "
        f"host reference {summary.get('host_reference_s', '?')} s (benchmarks/lint_bench.py)"
    )
    others = everything - mine  # daemons that left the tree, other work on the machine
    print(
        f"accounted CPU: {everything:.1f} s in all; the suite's process tree {mine:.1f} s "
        f"(the controller and workers themselves {own:.1f} s); not the suite's {others:.1f} s"
    )
    print(f"process trees the workers started: {sum(v[1] for v in by_kind.values()):.1f} s")
    for k, (n, c) in sorted(by_kind.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {c:7.1f} s  {int(n):5d}  {k}")
    print("by test file (the tree is counted where it started: the agents' zygote, one per")
    print("worker, carries every agent it starts later, in any test):")
    for (test, k), c in sorted(by_file.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {c:7.1f} s  {test}  {k}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--read", type=Path, help="print the tables of an earlier run")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "pytest_args", nargs="*", default=["--full", "-q", "-p", "no:cacheprovider"]
    )
    args = parser.parse_args()
    folder = args.read
    if folder is None:
        folder = Path(tempfile.mkdtemp(prefix="suite-processes-"))
        print(f"recording in {folder} (load average {os.getloadavg()[0]:.2f} at the start)")
        record(folder, args.pytest_args)
    read(folder, args.top)


if __name__ == "__main__":
    main()
