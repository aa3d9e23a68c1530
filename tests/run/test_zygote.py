"""The zygote (evalcase.run.zygote, started by evalcase.run.spawn): one long-lived
process that forks each attempt's subreaper. Every guarantee of the per-attempt reaper
(tests/run/test_reaper.py) holds through it, plus its own boundary: it holds no key, no
agent can reach its socket, its death fails the running attempts (and a new one is
started), and a killed run leaves none behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalcase.run import spawn
from tests.run.support import job, run_attempt, view

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")
AGENTS = Path(__file__).parent / "cmd_agents"
MARK = "sk-ZYGOTE-MARK-"


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    spawn.reset()
    yield
    spawn.reset()


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether ``pid`` has ended (or is a zombie), polled until ``within`` seconds."""
    end = time.monotonic() + within
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return True
        if state in (b"Z", b"X"):
            return True
        time.sleep(0.02)
    return False


def started(argv: list[str], tmp_path: Path, **env: str) -> spawn.ZygoteProcess:
    proc = spawn.start(argv, tmp_path, {"PATH": os.environ["PATH"], **env})
    assert isinstance(proc, spawn.ZygoteProcess)  # not the per-attempt reaper
    return proc


def test_the_zygote_holds_no_key_or_token_in_its_environ_or_cmdline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "UPSTREAM_KEY", "EVALCASE_JUDGE_API_KEY"):
        monkeypatch.setenv(name, MARK + name)
    token = "evalcase-TOKEN-of-this-attempt"
    proc = started(["/bin/sh", "-c", "cat > /dev/null"], tmp_path, OPENAI_API_KEY=token)
    zygote = spawn.current()
    assert zygote is not None
    # The zygote, and the attempt's subreaper it forked (which holds the request).
    for pid in (zygote.proc.pid, proc.pid):
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        assert MARK.encode() not in environ + cmdline
        assert token.encode() not in environ + cmdline
        names = {entry.split(b"=", 1)[0] for entry in environ.split(b"\0") if entry}
        assert names <= {b"PATH", b"LANG"}, names
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0


def test_the_agent_holds_no_socket_of_the_zygote(tmp_path: Path) -> None:
    """Its descriptors are its stdin, stdout and stderr: the zygote's socket pair has no
    path, and neither its end nor the attempt's is passed on."""
    proc = started(["/bin/sh", "-c", "ls -l /proc/$$/fd; exit 0"], tmp_path)
    assert proc.stdout is not None
    listing = proc.stdout.read().decode()
    assert proc.wait(timeout=10) == 0
    fds = {line.split(" -> ")[0].split()[-1] for line in listing.splitlines() if " -> " in line}
    assert "socket:" not in listing, listing
    assert fds == {"0", "1", "2"}, listing


def test_a_setsid_orphan_is_killed_when_the_agent_exits(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = (
        f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 60' & "
        f"while [ ! -s {pidfile} ]; do :; done; exit 3"
    )
    proc = started(["/bin/sh", "-c", script], tmp_path)
    assert proc.wait(timeout=30) == 3  # the agent's status
    with pytest.raises(ProcessLookupError):  # killed and reaped before the report
        os.kill(int(pidfile.read_text()), 0)


def test_a_hanging_agent_is_ended_with_its_tree_when_the_runner_says_so(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = f"sleep 60 & echo $! > {pidfile}; exec sleep 60"
    proc = started(["/bin/sh", "-c", script], tmp_path)
    while not pidfile.exists() or not pidfile.read_text().strip():
        time.sleep(0.01)
    for timeout in (0, 0.05):  # still running: 0 is a look, not an end
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
    proc.send_signal(15)
    assert proc.wait(timeout=10) == -9  # the agent was killed
    with pytest.raises(ProcessLookupError):
        os.kill(int(pidfile.read_text()), 0)


def test_the_requests_timeout_bounds_an_agent(tmp_path: Path) -> None:
    zygote = spawn.current()
    assert zygote is not None
    proc = zygote.spawn(["/bin/sleep", "60"], tmp_path, {"PATH": os.environ["PATH"]}, 0.2)
    assert proc.wait(timeout=10) == -9


def test_the_zygote_killed_mid_attempt_fails_it_and_the_next_attempt_gets_a_new_one(
    tmp_path: Path,
) -> None:
    record_file = tmp_path / "pids"
    agent = f"cmd:{sys.executable} {AGENTS / 'kill_zygote.py'} {record_file}"
    record = run_attempt(job(view("x"), agent=agent, timeout=30))
    assert record["status"] == "error"
    assert record["error"]["kind"] == "agent_exit", record["error"]
    assert "zygote" in record["error"]["message"]
    agent_pid, grandchild, first = (int(x) for x in record_file.read_text().split())
    assert gone(first) and gone(agent_pid) and gone(grandchild)  # the tree went with it
    again = run_attempt(job(view("y"), agent=f"cmd:{sys.executable} {AGENTS / 'echo.py'}"))
    assert again["status"] == "completed", again["error"]
    zygote = spawn.current()
    assert zygote is not None and zygote.proc.pid != first


def test_without_a_zygote_agents_start_under_the_per_attempt_reaper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cannot(*args: object) -> None:
        raise OSError("no zygote here")

    monkeypatch.setattr(spawn, "Zygote", cannot)
    proc = spawn.start(["/bin/sh", "-c", "exit 4"], tmp_path, {"PATH": os.environ["PATH"]})
    assert isinstance(proc, subprocess.Popen)
    assert proc.wait(timeout=10) == 4
    record = run_attempt(job(view("y"), agent=f"cmd:{sys.executable} {AGENTS / 'echo.py'}"))
    assert record["status"] == "completed", record["error"]


def test_a_killed_run_leaves_no_zygote_and_no_agent_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "agent"
    program = (
        "import os, sys, time\n"
        "from pathlib import Path\n"
        "from evalcase.run import spawn\n"
        f"proc = spawn.start(['/bin/sh', '-c', 'echo $$ > {pidfile}; exec sleep 60'], "
        f"Path({str(tmp_path)!r}), {{'PATH': os.environ['PATH']}})\n"
        "assert isinstance(proc, spawn.ZygoteProcess)\n"
        "print(spawn.current().proc.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(spawn.__file__).parents[2])}
    runner = subprocess.Popen(
        [sys.executable, "-c", program], stdout=subprocess.PIPE, env=env, text=True
    )
    assert runner.stdout is not None
    zygote = int(runner.stdout.readline())
    while not pidfile.exists() or not pidfile.read_text().strip():
        time.sleep(0.01)
    runner.kill()  # SIGKILL: no clean-up of its own
    runner.wait(timeout=10)
    assert gone(zygote), "the zygote outlived the run"
    assert gone(int(pidfile.read_text())), "the agent outlived the run"


def test_the_zygote_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    """Started from an attempt's thread, it serves the attempts after that thread ended
    (a parent-death signal would have come with the thread's end, not the runner's)."""
    first: list[spawn.Zygote | None] = []

    def attempt() -> None:
        first.append(spawn.current())
        assert started(["/bin/true"], tmp_path).wait(timeout=10) == 0  # it is up and serving

    thread = threading.Thread(target=attempt)
    thread.start()
    thread.join()
    (zygote,) = first
    assert zygote is not None
    assert not gone(zygote.proc.pid, within=0.5)
    proc = started(["/bin/sh", "-c", "exit 5"], tmp_path)
    assert proc.wait(timeout=10) == 5
    assert spawn.current() is zygote


def test_the_agent_is_spawned_not_forked_by_its_subreaper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One fork of Python an attempt (the zygote's, for the subreaper); the subreaper
    starts the agent with posix_spawn (a vfork: no copy of its pages, no copy-on-write
    faults, no Python code before the exec). Counted by a zygote whose os.fork logs."""
    log = tmp_path / "forks"
    wrapper = tmp_path / "zygote.py"
    wrapper.write_text(
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(spawn.__file__).parents[2])!r})\n"
        "from evalcase.run import zygote\n"
        "real = os.fork\n"
        "def fork():\n"
        "    pid = real()\n"
        "    if pid:\n"
        f"        fd = os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)\n"
        "        os.write(fd, b'fork\\n')\n"
        "        os.close(fd)\n"
        "    return pid\n"
        "os.fork = fork\n"
        "os._exit(zygote.main(int(sys.argv[1])))\n",
        "utf-8",
    )
    monkeypatch.setattr(spawn, "ZYGOTE", wrapper)
    spawn.reset()
    proc = started(["/bin/sh", "-c", "echo $PPID; exit 6"], tmp_path)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.close()
    assert int(proc.stdout.read()) == proc.pid  # the subreaper is the agent's parent
    assert proc.wait(timeout=10) == 6
    assert log.read_text().split() == ["fork"]  # the subreaper's; the agent was spawned


def test_a_program_without_a_slash_is_looked_up_on_the_agents_path(tmp_path: Path) -> None:
    proc = started(["sh", "-c", "exit 7"], tmp_path)
    assert proc.wait(timeout=10) == 7
    missing = started(["no-such-agent-program"], tmp_path)
    assert missing.wait(timeout=10) == 127
    assert missing.stderr is not None
    assert b"cannot start 'no-such-agent-program'" in missing.stderr.read()


def test_the_agent_starts_with_the_signals_the_zygote_ignores_at_their_defaults(
    tmp_path: Path,
) -> None:
    # SigIgn in /proc: the zygote ignores SIGINT, Python SIGPIPE and SIGXFSZ.
    grep = shutil.which("grep")
    assert grep is not None
    proc = started([grep, "-E", "^Sig(Ign|Blk)", "/proc/self/status"], tmp_path)  # the agent
    assert proc.stdout is not None
    lines = dict(line.split(":") for line in proc.stdout.read().decode().split("\n") if line)
    assert proc.wait(timeout=10) == 0
    assert int(lines["SigBlk"], 16) == 0
    ignored = int(lines["SigIgn"], 16)
    for signum in (2, 13, 25):  # SIGINT, SIGPIPE, SIGXFSZ
        assert not ignored & (1 << (signum - 1)), hex(ignored)


def test_a_killed_subreaper_leaves_no_process_behind(tmp_path: Path) -> None:
    """A subreaper killed outright (SIGKILL: no clean-up of its own) orphans its agent's
    tree; the zygote, a subreaper too, adopts it and kills all of it (the agent's own
    death signal used to end the agent alone: a child in its own session lived on)."""
    agent_file, child_file = tmp_path / "agent", tmp_path / "child"
    script = (
        f"echo $$ > {agent_file}; "
        f"setsid sh -c 'echo $$ > {child_file}; exec sleep 60' & "
        f"while [ ! -s {child_file} ]; do :; done; exec sleep 60"
    )
    proc = started(["/bin/sh", "-c", script], tmp_path)
    while not child_file.exists() or not child_file.read_text().strip():
        time.sleep(0.01)
    os.kill(proc.pid, 9)  # the subreaper
    assert proc.wait(timeout=10) == -9
    assert proc.lost is not None
    assert gone(int(agent_file.read_text())), "the agent outlived its subreaper"
    assert gone(int(child_file.read_text())), "the agent's child outlived its subreaper"
    assert started(["/bin/true"], tmp_path).wait(timeout=10) == 0  # the zygote serves on


def test_an_environment_the_agent_cannot_be_given_is_a_failed_start_not_a_lost_zygote(
    tmp_path: Path,
) -> None:
    """A NUL in a value (posix_spawn's ValueError) is the agent's start failing (127, the
    reason on its stderr), not the subreaper's end nor a fall back to the reaper."""
    proc = started(["/bin/true"], tmp_path, BROKEN="a\0b")
    assert proc.wait(timeout=10) == 127
    assert proc.lost is None
    assert proc.stderr is not None
    assert b"cannot start '/bin/true'" in proc.stderr.read()
    assert spawn.current() is not None and started(["/bin/true"], tmp_path).wait(10) == 0
