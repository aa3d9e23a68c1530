"""The Ray executor against a real Ray cluster on 127.0.0.1 (a head and two worker nodes):
the same attempts as the local pool, a lost worker retried once then recorded, a killed
worker node, a killed driver resumed. And its clear errors, which need no cluster."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract import records
from evalcase.model import FatalError
from evalcase.run import outputs
from evalcase.run.executors import get_executor
from evalcase.run.executors.ray import RayExecutor, RaySettings, import_ray, task_options
from tests.helpers import REPO_ROOT
from tests.run.ray_cluster import LocalCluster, local_cluster
from tests.run.support import job, view

COMMIT = "d" * 40  # tests/run/ray_driver.py's source commit
RUN_TIMEOUT_S = 420  # bound on any one runner process here (the machine is shared)
# One pytest-xdist worker runs this module (--dist loadgroup): the cluster is module
# scoped, and two clusters at once would start twice the raylets on the same cores.
pytestmark = pytest.mark.xdist_group("ray")


# --- without a cluster ---------------------------------------------------------------


def test_settings_take_the_flag_then_the_environment_then_the_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.2:6379")
    section = {"address": "10.0.0.1:6379", "num_cpus": 0.5, "resources": {"sandbox": 1}}
    assert RaySettings.from_config(section, "10.0.0.3:6379").address == "10.0.0.3:6379"
    assert RaySettings.from_config(section).address == "10.0.0.2:6379"
    monkeypatch.delenv("RAY_ADDRESS")
    settings = RaySettings.from_config(section)
    assert settings.address == "10.0.0.1:6379"
    assert settings.num_cpus == 0.5 and dict(settings.resources) == {"sandbox": 1.0}


def test_an_agents_ray_table_adds_to_the_run_wide_resources() -> None:
    settings = RaySettings(num_cpus=1, resources={"sandbox": 1})
    own = {"ray": {"num_gpus": 1, "memory": 2**30, "resources": {"browser": 2}}}
    options = task_options(settings, own)
    assert options["num_cpus"] == 1 and options["num_gpus"] == 1
    assert options["memory"] == 2**30
    assert options["resources"] == {"sandbox": 1.0, "browser": 2.0}
    assert options["max_retries"] == 1 and options["retry_exceptions"] is False
    with pytest.raises(FatalError, match="unknown keys \\['gpus'\\]"):
        task_options(settings, {"ray": {"gpus": 1}})


def test_without_an_address_the_error_says_how_to_give_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(FatalError, match="--ray-address HOST:PORT"):
        get_executor("ray", {}, None)


def test_an_unreachable_address_fails_fast_and_clearly() -> None:
    with socket.socket() as sock:  # a port nobody listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(FatalError, match=f"cannot reach the Ray cluster at 127.0.0.1:{port}"):
            get_executor("ray", {}, f"127.0.0.1:{port}")
    with pytest.raises(FatalError, match="is not HOST:PORT"):
        get_executor("ray", {}, "just-a-host")


def test_without_ray_installed_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees when it is absent
    with pytest.raises(FatalError, match=r"pip install 'evalcase\[ray\]'"):
        import_ray()
    with pytest.raises(FatalError, match=r"evalcase\[ray\]"):
        get_executor("ray", {}, "127.0.0.1:1")


def test_replay_agents_stay_with_the_driver() -> None:
    replay = job(view("q"), agent="replay:20260101T000000Z-abcdef")
    executor = RayExecutor(RaySettings(address="127.0.0.1:1"))
    with pytest.raises(FatalError, match="--executor local"):
        list(executor.run([replay], concurrency=2))


def test_while_connected_python_stdout_is_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ray's driver prints its raylet's errors to sys.stdout from a thread of its own (seen
    on a loaded machine: "(raylet) The node ... marked dead" before `audit --format
    json`'s document). While the executor is connected, anything printed goes to stderr;
    stdout is the command's again once it is done. Ray's connection is replaced here: what
    is tested is the executor's own redirection."""
    import evalcase.run.executors.ray as module

    class Session:
        def shutdown(self) -> None:
            print("(raylet) shutting down")

    def connect(self: RayExecutor, ray: Any) -> None:
        print("(raylet) The node with node id ... has been marked dead")

    def schedule(*args: Any) -> Iterator[dict[str, Any]]:
        print("(raylet) while attempts run")
        yield {"case_id": "q"}

    monkeypatch.setattr(module, "import_ray", Session)
    monkeypatch.setattr(RayExecutor, "_connect", connect)
    monkeypatch.setattr(RayExecutor, "_probe", lambda *args: None)
    monkeypatch.setattr(RayExecutor, "_schedule", schedule)
    executor = RayExecutor(RaySettings(address="127.0.0.1:1", check_resources=False))
    assert list(executor.run([job(view("q"))], concurrency=1)) == [{"case_id": "q"}]
    print("{}")  # the command's document, after the session
    out, err = capsys.readouterr()
    assert out == "{}\n"
    assert err.count("(raylet)") == 3


def test_runs_inside_a_session_share_one_connection(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An audit is eight runs: inside ``session()`` they are one connection, made by the
    first (one Ray job, whose worker processes the later runs reuse), where each run alone
    connects and disconnects. Ray's connection is replaced here, as above; stdout stays
    stderr for the whole session."""
    import evalcase.run.executors.ray as module

    events: list[str] = []

    class Session:
        def shutdown(self) -> None:
            events.append("shutdown")

    def connect(self: RayExecutor, ray: Any) -> None:
        events.append("connect")

    def schedule(self: RayExecutor, ray: Any, first: Any, *args: Any) -> Iterator[str]:
        events.append("run")
        print("(raylet) while attempts run")
        yield first.case_id

    monkeypatch.setattr(module, "import_ray", Session)
    monkeypatch.setattr(RayExecutor, "_connect", connect)
    monkeypatch.setattr(RayExecutor, "_probe", lambda *args: None)
    monkeypatch.setattr(RayExecutor, "_schedule", schedule)
    executor = RayExecutor(RaySettings(address="127.0.0.1:1", check_resources=False))
    with executor.session():
        assert events == []  # the first run connects: a session without runs, never
        assert list(executor.run([job(view("q"), case_id="a")], concurrency=1)) == ["a"]
        print("(raylet) between runs")
        assert list(executor.run([job(view("q"), case_id="b")], concurrency=1)) == ["b"]
    assert events == ["connect", "run", "run", "shutdown"]
    events.clear()
    assert list(executor.run([job(view("q"), case_id="c")], concurrency=1)) == ["c"]
    assert events == ["connect", "run", "shutdown"]  # alone, a run has its own
    out, err = capsys.readouterr()
    assert out == "" and err.count("(raylet)") == 4


@pytest.mark.slow
def test_the_cli_refuses_ray_without_an_address_before_writing_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    proc = _here(
        tmp_path, "run", "crm_safety_set", "--allow-dirty", "--agent", "refund_agent",
        "--executor", "ray",
        env={"RAY_ADDRESS": ""},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "--ray-address" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_ray_address_with_the_local_executor_is_a_usage_error(tmp_path: Path) -> None:
    proc = _here(
        tmp_path, "run", "crm_safety_set", "--executor", "local", "--ray-address", "127.0.0.1:1"
    )
    assert proc.returncode == 2 and "--ray-address goes with --executor ray" in proc.stderr


# --- on a local cluster: a head and two worker nodes on 127.0.0.1 -------------------


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with local_cluster(workers=2, cpus=1) as started:
        yield started


def _cli(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": f"{REPO_ROOT / 'tools'}{os.pathsep}{REPO_ROOT}",
    }
    return subprocess.run(
        [sys.executable, "-m", "evalcase", *args, "--outputs", str(tmp_path / "out")],
        cwd=REPO_ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def _here(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """What :func:`_cli` runs, in this process (tests.helpers.invoke): for the local pool's
    half of a comparison and the usage errors, where the process is not the point."""
    from tests.helpers import invoke

    return invoke(*args, "--outputs", str(tmp_path / "out"), cwd=REPO_ROOT, env=env)


def _only_run(out: Path) -> list[dict[str, Any]]:
    files = list(out.glob("*/*/attempts.jsonl"))
    assert len(files) == 1, files
    return list(outputs.read_attempts(files[0]))


def _facts(record: dict[str, Any]) -> tuple[Any, ...]:
    """What a verdict can depend on (not timings, not where it ran)."""
    calls = [
        (c.get("tool"), json.dumps(c.get("args"), sort_keys=True), c.get("error"))
        for c in record["calls"]
    ]
    return (
        record["case_id"],
        record["attempt"],
        record["seed"],
        record["status"],
        (record["error"] or {}).get("kind"),
        record["output"],
        json.dumps(calls, sort_keys=True, ensure_ascii=False),
        json.dumps(records.final_state(record), sort_keys=True, ensure_ascii=False),
        json.dumps(record["state_diff"], sort_keys=True, ensure_ascii=False),
        record["agent_version"],
    )


@pytest.mark.slow
def test_the_example_agent_gives_the_same_attempts_on_ray_as_on_the_local_pool(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    common = ("run", "refund_regression_set", "--allow-dirty", "--repeat", "2", "--no-grade")
    local = _here(tmp_path / "local", *common, "--progress", "plain")
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = _cli(
        tmp_path / "ray",
        *common,
        "--executor",
        "ray",
        "--ray-address",
        cluster.address,
        "--concurrency",
        "4",
        "--progress",
        "plain",
        env=cluster.env,
    )
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    local_records = _only_run(tmp_path / "local" / "out")
    ray_records = _only_run(tmp_path / "ray" / "out")
    assert len(local_records) == 64  # the whole dataset (32 cases), twice
    assert sorted(map(_facts, ray_records)) == sorted(map(_facts, local_records))
    assert any(r["calls"] for r in ray_records), "the example agent uses tools"
    # Attempts really ran on the cluster's two worker nodes, never in the driver.
    nodes = {r["worker"]["node_id"] for r in ray_records}
    assert nodes == {w.node_id for w in cluster.workers}
    # The same progress lines and summary as the local pool.
    n = len(local_records)
    assert f"{n}/{n} done" in local.stderr and f"{n}/{n} done" in on_ray.stderr
    assert _summary(on_ray) == _summary(local)


def _summary(proc: subprocess.CompletedProcess[str]) -> str:
    """``run ID: N attempts (N new), E errors -> PATH`` without the run's id and path."""
    return proc.stdout.split(":", 1)[1].split("->")[0].strip()


def _start_driver(
    out: Path, cluster: LocalCluster, agent: str, cases: int, env: dict[str, str]
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "tests.run.ray_driver",
            str(out), "start", "ray", cluster.address, agent, str(cases),
        ],
        cwd=REPO_ROOT, env={**os.environ, **cluster.env, **env},
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


def _wait_for_lines(path: Path, n: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= n:
            return
        assert proc.poll() is None, "the runner ended before the kill"
        time.sleep(0.05)
    raise AssertionError(f"fewer than {n} attempts in {RUN_TIMEOUT_S} s")


def _finish(proc: subprocess.Popen[str]) -> int:
    try:
        return proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def _planned(cases: int) -> list[tuple[str, int]]:
    return sorted((f"case_{i:02d}", a) for i in range(cases) for a in (1, 2))


@pytest.mark.slow
def test_a_lost_worker_is_retried_once_then_recorded_and_the_run_goes_on(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    marks = tmp_path / "marks.txt"
    proc = _start_driver(tmp_path, cluster, "kill_worker", 5, {"MARKS": str(marks)})
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    assert _finish(proc) == 0
    records = list(outputs.read_attempts(tmp_path / COMMIT / run_id / "attempts.jsonl"))
    assert sorted((r["case_id"], r["attempt"]) for r in records) == _planned(5)
    by_key = {(r["case_id"], r["attempt"]): r for r in records}
    for attempt in (1, 2):
        lost = by_key[("case_02", attempt)]
        assert lost["status"] == "error" and lost["error"]["kind"] == "worker_lost"
        assert "worker running this attempt was lost" in lost["error"]["message"]
        assert "ran it again once" in lost["error"]["message"]
    # Each of the two attempts of case_02 was tried exactly twice (one Ray retry each).
    assert marks.read_text().count("please crash the worker") == 4
    others = [r for k, r in by_key.items() if k[0] != "case_02"]
    assert all(r["status"] == "completed" for r in others)
    meta = json.loads((tmp_path / COMMIT / run_id / "run.json").read_text("utf-8"))
    assert meta["status"] == "completed" and meta["counts"] == {"attempts": 10, "errors": 2}


@pytest.mark.slow
def test_killing_the_driver_and_resuming_gives_the_same_attempt_set(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    proc = _start_driver(tmp_path, cluster, "slow", 10, {})
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    attempts = tmp_path / COMMIT / run_id / "attempts.jsonl"
    _wait_for_lines(attempts, 4, proc)
    os.killpg(proc.pid, signal.SIGKILL)
    _finish(proc)
    killed = attempts.read_bytes().count(b"\n")
    assert 4 <= killed < 20, "the kill must land mid-run"
    resumed = subprocess.run(
        [
            sys.executable, "-m", "tests.run.ray_driver",
            str(tmp_path), "resume", "ray", cluster.address, "slow", "10", run_id,
        ],
        cwd=REPO_ROOT, env={**os.environ, **cluster.env}, timeout=RUN_TIMEOUT_S, check=False,
        capture_output=True, text=True,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    keys = [(r["case_id"], r["attempt"]) for r in outputs.read_attempts(attempts)]
    assert sorted(keys) == _planned(10)  # nothing missing, nothing twice
    meta = json.loads((attempts.parent / "run.json").read_text("utf-8"))
    assert meta["status"] == "completed" and meta["counts"]["attempts"] == 20


@pytest.mark.slow
def test_killing_a_worker_node_mid_run_loses_no_attempt(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    # Runs last in this module: the cluster has one worker node left afterwards.
    proc = _start_driver(tmp_path, cluster, "slow", 10, {})
    assert proc.stdout is not None
    run_id = proc.stdout.readline().strip()
    attempts = tmp_path / COMMIT / run_id / "attempts.jsonl"
    _wait_for_lines(attempts, 3, proc)
    cluster.kill_worker_node(0)
    assert _finish(proc) == 0
    records = list(outputs.read_attempts(attempts))
    assert sorted((r["case_id"], r["attempt"]) for r in records) == _planned(10)
    for record in records:
        assert record["status"] == "completed" or record["error"]["kind"] == "worker_lost"
    survivor = cluster.workers[1].node_id
    finished_late = records[-3:]  # after the kill only the other node can run attempts
    assert all(r["status"] == "error" or r["worker"]["node_id"] == survivor for r in finished_late)
    meta = json.loads((attempts.parent / "run.json").read_text("utf-8"))
    assert meta["status"] == "completed" and meta["counts"]["attempts"] == 20


@pytest.mark.slow
def test_an_audit_gives_the_same_facts_on_ray_as_on_the_local_pool(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    from tests.helpers import bundled_repo, invoke, run_cli

    repo = bundled_repo(tmp_path / "repo", ignored=("/outputs/", "/reports/", "/.evalcase/"))
    picked = ("--select", "llm_intent_*", "--select", "agent_*", "--format", "json")
    local = invoke("audit", "english_support_set", *picked, "--progress", "none", cwd=repo)
    assert local.returncode == 0, local.stderr[-3000:]
    on_ray = run_cli(
        "audit", "english_support_set", *picked, "--force", "--executor", "ray",
        "--ray-address", cluster.address, "--concurrency", "4", "--progress", "plain",
        cwd=repo, env=cluster.env,
    )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    assert "audit gold:" in on_ray.stderr and "audit flail:" in on_ray.stderr  # progress

    def facts(text: str) -> dict[str, Any]:
        cases = json.loads(text)  # stdout is the document alone, whatever Ray prints
        return {
            case_id: (c["status"], c["outcomes"], c["findings"], c["agents"])
            for case_id, c in cases.items()
        }

    assert len(json.loads(local.stdout)) == 7  # five intents, two agent cases
    assert facts(on_ray.stdout) == facts(local.stdout)


@pytest.mark.slow
def test_a_loop_agent_runs_on_ray_as_on_the_local_pool(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    """loop = "agent" on a Ray worker: the worker serves the attempt's MCP server and
    model proxy itself; the same calls and state as on the local pool."""
    from tests.helpers import bundled_repo, commit_all, invoke, run_cli
    from tests.run.byo_model import ModelServer

    agent = Path(__file__).parent / "cmd_agents" / "loop_agent.py"
    repo = bundled_repo(tmp_path / "repo", ignored=("/outputs/", "/reports/", "/.evalcase/"))
    with ModelServer().running() as server:
        with (repo / "evalcase.toml").open("a", encoding="utf-8") as f:
            f.write(
                f'loop_agent = {{ spec = "cmd:{{python}} {agent} loop", loop = "agent", '
                f'upstream = {{ base_url = "{server.url}", model = "english-1" }} }}\n'
            )
        commit_all(repo, "a loop agent")
        common = ("run", "english_support_set", "--agent", "loop_agent", "--select", "agent_*",
                  "--no-grade")  # fmt: skip
        local = invoke(*common, "--progress", "none", cwd=repo)
        assert local.returncode == 0, local.stderr[-3000:]
        on_ray = run_cli(
            *common, "--executor", "ray", "--ray-address", cluster.address, "--progress", "plain",
            cwd=repo, env=cluster.env,
        )  # fmt: skip
        assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    runs = sorted(repo.glob("outputs/*/*/attempts.jsonl"), key=lambda p: p.parent.name)
    assert len(runs) == 2
    local_records, ray_records = (list(outputs.read_attempts(p)) for p in runs)
    assert all(r["loop"] == "agent" and r["error"] is None for r in ray_records)
    assert all(r["worker"] for r in ray_records)  # they ran on the cluster
    assert sorted(map(_facts, ray_records)) == sorted(map(_facts, local_records))
    assert any(r["model_calls"] for r in ray_records)
