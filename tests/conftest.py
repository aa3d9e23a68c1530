from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import xdist_groups
from tests.helpers import BASE_REPO, REPO_ROOT, collector_as_found
from tests.published_hook import PublishedHook, publish

# The suite starts a thousand Python processes (evalcase commands, agents, hooks). With
# PYTHONDONTWRITEBYTECODE set (some shells and coding tools set it) none of them writes
# a bytecode cache, so each one compiles evalcase's modules again: about 0.3 s of CPU a
# process here, and pytest rewrites every test module's asserts again on every run. The
# caches land in the gitignored __pycache__ folders; importlib writes them atomically,
# so parallel workers share them safely.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False


@pytest.fixture(scope="session", autouse=True)
def _session_judge_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Judge answers of module fixtures, which run before any function fixture (see
    _judge_cache), go to this run's own folder: they went to the user's cache, where a
    second test run on the machine (two `.ci/run` at once) found them and never asked
    its judge."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EVALCASE_JUDGE_CACHE_DIR", str(tmp_path_factory.mktemp("judge-cache")))
        yield


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    """A test that runs the evalcase group in this process leaves the cyclic collector
    as it found it (tests.helpers.collector_as_found)."""
    with collector_as_found():
        yield


@pytest.fixture(autouse=True)
def _judge_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Judge answers are cached in the user cache directory by default: tests keep theirs
    in a temporary folder (and never reuse another test's)."""
    # tempfile, not tmp_path_factory.mktemp: that lists the whole base folder to number
    # each new folder, and every test of the worker adds one or two there.
    folder = tempfile.mkdtemp(prefix="judge-cache-", dir=tmp_path_factory.getbasetemp())
    monkeypatch.setenv("EVALCASE_JUDGE_CACHE_DIR", folder)


@pytest.fixture
def base_repo(tmp_path: Path) -> Path:
    """A copy of the small, consistent sample repository (not a git repository)."""
    dest = tmp_path / "repo"
    shutil.copytree(BASE_REPO, dest)
    return dest


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    """A copy of this repository's example datasets and fixtures (not a git repository)."""
    dest = tmp_path / "examples"
    for part in ("datasets", "fixtures"):
        shutil.copytree(REPO_ROOT / part, dest / part)
    return dest


def run_temp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder this test run's processes share: with pytest-xdist every worker has its
    own base temporary folder, and their parent belongs to this run alone."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def published_hook(tmp_path_factory: pytest.TempPathFactory) -> PublishedHook:
    """This project's hook, published once per run (tests/published_hook.py)."""
    return publish(run_temp(tmp_path_factory) / "published-hook")


def _hypothesis_profiles() -> None:
    """Property tests draw the same examples on every run (a fixed seed per test, no
    example database), so CI is repeatable and a failure is reproduced by running the
    test again; ``HYPOTHESIS_PROFILE=explore`` draws fresh examples to look for more."""
    from hypothesis import settings

    settings.register_profile("repeatable", derandomize=True, database=None)
    settings.register_profile("explore", derandomize=False, database=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_configure(config: pytest.Config) -> None:
    _hypothesis_profiles()
    # A plugin, not hooks here: it wraps every other collection hook (xdist's included).
    config.pluginmanager.register(xdist_groups, "evalcase-xdist-groups")
    _start_record_checks(config)


# --- every attempt record the suite's runs write is checked against its schema ------------
# evalcase.contract.attempt.check_written logs each record written (by this process, the
# xdist workers and every evalcase process the tests start, which inherit the variable)
# into one folder; the process that made the folder reads it at the end and fails the run
# when a record broke schemas/attempt.schema.json.


def _start_record_checks(config: pytest.Config) -> None:
    from evalcase.attempt_check import CHECK_VARIABLE

    if os.environ.get(CHECK_VARIABLE):
        return  # an xdist worker: the controller's folder, inherited
    folder = tempfile.mkdtemp(prefix="evalcase-record-checks-")
    os.environ[CHECK_VARIABLE] = folder
    config.stash[_RECORD_CHECKS] = Path(folder)


_RECORD_CHECKS = pytest.StashKey[Path]()


def record_check_results(folder: Path) -> tuple[int, list[str], int]:
    """(records of the current version checked, each one's problems, records of earlier
    versions rewritten as they were) from the check folder's logs."""
    checked, bad, earlier = 0, [], 0
    for log in sorted(folder.glob("records-*.log")):
        for line in log.read_text("utf-8").splitlines():
            if line == "earlier":
                earlier += 1
                continue
            checked += 1
            if line != "ok":
                bad.append(line)
    return checked, bad, earlier


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    folder = session.config.stash.get(_RECORD_CHECKS, None)
    if folder is None:
        return
    checked, bad, earlier = record_check_results(folder)
    shutil.rmtree(folder, ignore_errors=True)
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if bad:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if reporter is not None and (checked or bad):
        reporter.write_line(
            f"attempt records checked against schemas/attempt.schema.json: {checked}, "
            f"{len(bad)} invalid ({earlier} of earlier versions, rewritten as they were, not "
            "checked)" + "".join(f"\n  {b}" for b in bad[:20])
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    """What every test of the worker shares from now on (the modules, the collected
    items) is frozen: the cyclic collector's full collections leave it alone. They
    scanned over a million objects each, 17 s of the workers' CPU in a full run."""
    gc.collect()
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a module's last test (its module fixtures torn down), what survives the
    collection is frozen too: what later modules share (imports, caches). Garbage is
    still freed when its last reference goes; frozen objects are only never scanned."""
    yield
    if nextitem is None or getattr(nextitem, "module", None) is not getattr(item, "module", None):
        gc.collect()
        gc.freeze()


# --- slow tests: deselected by default, run by `pytest --full` (what .ci/run runs) ---------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="Also run the tests marked slow (real pre-commit installs, fuzzing, the whole "
        "hostile tree). CI runs them; a developer's default run leaves them out.",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # An explicit -m expression (e.g. -m slow) chooses for itself.
    if config.getoption("--full") or config.getoption("-m"):
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if not slow:
        return
    config.hook.pytest_deselected(items=slow)
    items[:] = [item for item in items if item.get_closest_marker("slow") is None]


def pytest_report_header(config: pytest.Config) -> str:
    if config.getoption("--full") or config.getoption("-m"):
        return "evalcase: running every test, slow ones included"
    return "evalcase: slow tests left out (run `pytest --full` for everything, as .ci/run does)"
