"""The peer-tool cache: a concurrent or interrupted install never leaves a half cache."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.helpers import REPO_ROOT
from tests.peer_tools import MARKER, cached_install

# A child that installs "tool 1.0" into CACHE: it logs each install, writes a first
# file, waits for GO (when given) and writes the second.
CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tests.peer_tools import cached_install

    cache, log, go = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]

    def install(tmp):
        with log.open("a") as f:
            f.write("install\\n")
        (tmp / "part1").write_text("1")
        started = cache / "started"
        started.write_text("1")
        for _ in range(600):
            if go == "-" or Path(go).exists():
                break
            time.sleep(0.05)
        (tmp / "part2").write_text("2")

    print(cached_install("tool", "1.0", install, cache))
    """
)


def child(cache: Path, log: Path, go: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, str(cache), str(log), go],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def wait_for(path: Path) -> None:
    import time

    for _ in range(1200):
        if path.exists():
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared")


def test_two_concurrent_installs_install_once_and_both_get_the_whole_cache(
    tmp_path: Path,
) -> None:
    cache, log, go = tmp_path / "cache", tmp_path / "log", tmp_path / "go"
    first = child(cache, log, str(go))
    wait_for(cache / "started")  # the first holds the lock, mid-install
    second = child(cache, log, str(go))
    assert not (cache / "tool-1.0").exists()
    go.write_text("go")
    outs = [p.communicate(timeout=120)[0].strip() for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0]
    assert outs == [str(cache / "tool-1.0")] * 2
    assert log.read_text().splitlines() == ["install"]
    final = cache / "tool-1.0"
    assert sorted(p.name for p in final.iterdir()) == sorted([MARKER, "part1", "part2"])


def test_an_interrupted_install_leaves_no_cache_and_the_next_one_completes(
    tmp_path: Path,
) -> None:
    cache, log, go = tmp_path / "cache", tmp_path / "log", tmp_path / "never"
    killed = child(cache, log, str(go))
    wait_for(cache / "started")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert not (cache / "tool-1.0").exists()  # only a temporary directory is left
    assert list(cache.glob(".tool-1.0.*"))
    again = child(cache, log, "-")
    assert again.communicate(timeout=120)[0].strip() == str(cache / "tool-1.0")
    assert log.read_text().splitlines() == ["install", "install"]
    assert (cache / "tool-1.0" / "part2").is_file()
    assert not list(cache.glob(".tool-1.0.*"))


def test_a_failed_install_is_not_cached_and_an_old_half_cache_is_replaced(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    (cache / "tool-1.0").mkdir(parents=True)  # as the old unlocked install left it
    (cache / "tool-1.0" / "package.json").write_text("{}")

    def broken(tmp: Path) -> None:
        (tmp / "half").write_text("x")
        raise RuntimeError("network down")

    try:
        cached_install("tool", "1.0", broken, cache)
    except RuntimeError:
        pass
    else:
        raise AssertionError("the failure was swallowed")
    assert not (cache / "tool-1.0").exists() and not list(cache.glob(".tool-1.0.*"))
    done = cached_install("tool", "1.0", lambda tmp: (tmp / "ok").write_text("1"), cache)
    assert (done / "ok").is_file() and (done / MARKER).is_file()
    # Complete now: no further install.
    assert cached_install("tool", "1.0", broken, cache) == done
