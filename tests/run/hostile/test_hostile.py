"""The runner's hostile corpus: one agent program per misbehaviour (this folder), each
with the record the attempt must produce and what must stay intact.

Every agent here is a real subprocess behind ``cmd:`` (the HTTP one a real server on
127.0.0.1). The assertions are on the recorded outcome and on bounded memory; the
timeouts given to attempts are limits under test, and pytest's own timeout is only a
backstop."""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract import records
from evalcase.run import isolation
from evalcase.run.executors import AttemptJob, Limits, get_executor
from evalcase.run.outputs import AttemptWriter
from tests.helpers import POLL
from tests.run.support import as_json, job, run_attempt, tool, view

HERE = Path(__file__).parent
NOTE_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def cmd(name: str, *args: str) -> str:
    return "cmd:" + shlex.join([sys.executable, str(HERE / f"{name}.py"), *args])


def with_options(j: AttemptJob, **options: Any) -> AttemptJob:
    return dataclasses.replace(j, adapter_options={**j.adapter_options, **options})


def alive(pid: int) -> bool:
    """Running (a zombie, or a pid that is gone, is not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] != b"Z"


def wait_dead(pids: list[int], seconds: float = 10.0) -> list[int]:
    """The pids still alive after waiting up to ``seconds`` (a backstop, not a measure)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


# -- isolation ---------------------------------------------------------------------------


def test_the_agent_sees_a_temporary_cwd_and_no_key_of_the_runner(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-runner-secret")
    monkeypatch.setenv("JUDGE_KEY", "judge-secret")
    monkeypatch.setenv("AGENT_MODE", "strict")
    monkeypatch.setenv("UNLISTED", "runner-only")
    j = with_options(
        job(view("x"), agent=cmd("snoop", "needle")),
        env=["AGENT_MODE", "JUDGE_KEY", "OPENAI_API_KEY"],
        secret_env=["JUDGE_KEY"],
        cwd=str(tmp_path),
    )
    record = run_attempt(j)
    assert record["status"] == "completed", record["error"]
    seen = json.loads(record["output"])
    cwd = Path(seen["cwd"])
    assert cwd.name.startswith("evalcase-agent-") and not cwd.exists()  # removed afterwards
    env = seen["env"]
    assert env["AGENT_MODE"] == "strict"
    assert "OPENAI_API_KEY" not in env and "JUDGE_KEY" not in env and "UNLISTED" not in env
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "AGENT_MODE",
                        "PYTHONDONTWRITEBYTECODE"}  # fmt: skip
    assert env["HOME"].startswith(str(cwd)) and env["TMPDIR"].startswith(str(cwd))
    # Walking up from its working directory finds no case data (walking up from the agent
    # program's own file, inside this repository, does: that is what the sandbox is for).
    repo = str(Path(__file__).resolve().parents[3])
    outside = [up for up in seen["ups"] if not up.startswith(repo + "/")]
    assert not any(up.endswith(("datasets", "fixtures")) for up in outside), outside


def _repo_with_answer_key(tmp_path: Path, needle: str) -> Path:
    root = tmp_path / "repo"
    for folder in ("datasets/ds/cases", "fixtures/tools", "outputs/c/r", "reports"):
        (root / folder).mkdir(parents=True)
    (root / "datasets/ds/cases/case_1.yaml").write_text(f"must_include: [{needle}]\n", "utf-8")
    (root / "fixtures/tools/t.yaml").write_text(f"answer: {needle}\n", "utf-8")
    (root / "outputs/c/r/attempts.jsonl").write_text(f'{{"output": "{needle}"}}\n', "utf-8")
    return root


@pytest.mark.slow
@pytest.mark.skipif(isolation.sandbox_problem() is not None, reason="needs bubblewrap")
def test_in_the_sandbox_a_whole_file_system_walk_finds_no_case_or_fixture(tmp_path: Path) -> None:
    needle = "ANSWER-KEY-" + os.urandom(6).hex()
    root = _repo_with_answer_key(tmp_path, needle)
    # The walk reads no file of the host's system and interpreter trees (snoop.py): the
    # answer key must be outside them for the check to be able to fail.
    for tree in ("/usr", "/etc", "/lib", sys.prefix, sys.base_prefix):
        assert not str(root).startswith(tree.rstrip("/") + "/"), tree
    # The agent's program sits inside the repository, beside datasets/, as
    # examples/refund_agent/ does. It imports a module beside it, so its folder is shown
    # (sandbox_paths; a file named in argv is shown alone), the repository is not.
    (root / "agent").mkdir()
    shutil.copy(HERE / "snoop.py", root / "agent" / "snoop.py")
    shutil.copy(HERE / "_reply.py", root / "agent" / "_reply.py")
    spec = f"cmd:{sys.executable} agent/snoop.py {needle} --walk"
    j = with_options(
        job(view("x"), agent=spec, timeout=120),
        cwd=str(root),
        root=str(root),
        sandbox=True,
        sandbox_paths=[str(root / "agent")],
    )
    record = run_attempt(j)
    assert record["status"] == "completed", record["error"]
    seen = json.loads(record["output"])
    assert seen["visited"] > 1000  # it did walk: system paths are there
    assert seen["read"] > 0  # and read what it could reach outside them (its own folder)
    assert seen["found"] == [] and seen["ups"] == []
    # Without the sandbox the same agent finds the key: the check can fail.
    loose = run_attempt(
        dataclasses.replace(
            j,
            adapter=f"cmd:{sys.executable} agent/snoop.py {needle}",  # no walk of the host
            adapter_options={**j.adapter_options, "sandbox": False},
        )
    )
    assert any(up.endswith("datasets") for up in json.loads(loose["output"])["ups"])


@pytest.mark.skipif(isolation.sandbox_problem() is not None, reason="needs bubblewrap")
def test_the_sandbox_has_no_network_unless_allowed(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    port = server.server_address[1]
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import json, socket, sys\n"
        "for line in sys.stdin:\n"
        "    try:\n"
        f"        socket.create_connection(('127.0.0.1', {port}), timeout=2).close(); r = 'open'\n"
        "    except OSError as exc:\n"
        "        r = 'closed'\n"
        "    print(json.dumps({'role': 'assistant', 'content': r}), flush=True)\n",
        "utf-8",
    )
    threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True).start()
    try:
        base = job(view("x"), agent=f"cmd:{sys.executable} {probe}")
        closed = run_attempt(with_options(base, sandbox=True))
        opened = run_attempt(with_options(base, sandbox=True, network=True))
    finally:
        server.shutdown()
    assert closed["output"] == "closed", closed["error"]
    assert opened["output"] == "open", opened["error"]


@pytest.mark.skipif(isolation.sandbox_problem() is not None, reason="needs bubblewrap")
def test_a_file_named_in_argv_is_shown_alone_never_its_folder(tmp_path: Path) -> None:
    # cmd:{python} agent.py /home/ci/agent.json must not show the agent all of /home/ci.
    home = tmp_path / "home_ci"
    home.mkdir()
    (home / "agent.json").write_text('{"mode": "strict"}', "utf-8")
    (home / ".netrc").write_text("machine api password sk-secret\n", "utf-8")
    probe = tmp_path / "lister.py"
    probe.write_text(
        "import json, os, sys\n"
        "for line in sys.stdin:\n"
        "    seen = {'listing': sorted(os.listdir(os.path.dirname(sys.argv[1]))),\n"
        "            'config': open(sys.argv[1]).read(),\n"
        "            'here': sorted(os.listdir(os.path.dirname(__file__)))}\n"
        "    print(json.dumps({'role': 'assistant', 'content': json.dumps(seen)}), flush=True)\n",
        "utf-8",
    )
    (tmp_path / "neighbour.txt").write_text("beside the program", "utf-8")
    base = job(view("x"), agent=f"cmd:{sys.executable} {probe} {home / 'agent.json'}")
    boxed = run_attempt(with_options(base, sandbox=True))
    assert boxed["status"] == "completed", boxed["error"]
    assert json.loads(boxed["output"]) == {
        "listing": ["agent.json"],
        "config": '{"mode": "strict"}',
        "here": ["home_ci", "lister.py"],  # the path to agent.json, not neighbour.txt
    }
    loose = run_attempt(with_options(base, sandbox=False))  # the check can fail
    assert ".netrc" in json.loads(loose["output"])["listing"]


@pytest.mark.skipif(isolation.sandbox_problem() is not None, reason="needs bubblewrap")
def test_sandbox_paths_that_would_show_case_data_are_refused(tmp_path: Path) -> None:
    root = _repo_with_answer_key(tmp_path, "x")
    for shown in (tmp_path, root, root / "datasets" / "ds", root / "fixtures"):
        decision = isolation.decide({"sandbox_paths": [str(shown)]}, None, False, root)
        assert not decision.sandbox and decision.error and "sandbox_paths" in decision.error
    fine = isolation.decide({"sandbox_paths": [str(root / "reports")]}, None, False, root)
    assert fine.error is not None  # reports/ is case data too
    (root / "agent").mkdir()
    ok = isolation.decide({"sandbox_paths": [str(root / "agent")]}, None, False, root)
    assert ok == isolation.Decision(True)


@pytest.mark.parametrize("hang", [False, True])
def test_a_forking_agent_leaves_no_process_behind(tmp_path: Path, hang: bool) -> None:
    pidfile = tmp_path / "pids"
    args = [str(pidfile)] + (["--hang"] if hang else [])
    record = run_attempt(job(view("x"), agent=cmd("daemon", *args), timeout=3))
    assert record["status"] == "completed", record["error"]
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 3
    assert wait_dead(pids) == []


def test_the_agents_die_with_a_killed_runner(tmp_path: Path) -> None:
    pidfile = tmp_path / "pids"
    script = (
        "import sys\n"
        "from evalcase.run.runner import run_attempt\n"
        "from tests.run.support import job, view\n"
        f"run_attempt(job(view('x', 'y'), agent={cmd('daemon', str(pidfile), '--hang')!r},"
        " timeout=600))\n"
    )
    runner = subprocess.Popen([sys.executable, "-c", script], cwd=HERE.parents[2])
    try:
        end = time.monotonic() + 60
        while not pidfile.exists() and time.monotonic() < end and runner.poll() is None:
            time.sleep(0.05)
        assert pidfile.exists(), "the agent never started"
        pids = [int(p) for p in pidfile.read_text().split()]
        assert all(alive(p) for p in pids)
    finally:
        runner.kill()
        runner.wait()
    assert wait_dead(pids) == []


# -- one deadline ------------------------------------------------------------------------


@pytest.mark.slow
def test_an_agent_that_stops_reading_its_input_is_a_timeout() -> None:
    long_turn = "w" * (4 << 20)  # far more than a pipe holds
    record = run_attempt(job(view(long_turn), agent=cmd("deaf"), timeout=1.5))
    assert record["status"] == "error"
    assert record["error"]["kind"] == "timeout"
    assert "stopped reading" in record["error"]["message"]


class Trickle(http.server.BaseHTTPRequestHandler):
    """Answers 200, then the body one byte at a time, slowly."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"role": "assistant", "content": "slowly " * 20}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for byte in body:
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.mark.slow
def test_an_http_agent_trickling_its_body_is_a_timeout_at_the_deadline() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/agent"
    try:
        start = time.monotonic()
        record = run_attempt(job(view("x"), agent=url, timeout=1.0))
        took = time.monotonic() - start
    finally:
        server.shutdown()
    assert record["status"] == "error" and record["error"]["kind"] == "timeout", record["error"]
    # The body takes 15 s at this pace; a per-chunk timeout would have waited for all of it.
    assert took < 10, "backstop: the attempt outlived its deadline by far"


def test_ten_thousand_tool_calls_in_one_reply_hit_the_budget() -> None:
    lookup = tool("order_lookup", default={"result": {}})
    record = run_attempt(
        job(
            view("x", tools=(lookup,)),
            (lookup,),
            agent=cmd("tool_storm", "10000"),
            timeout=30,
            limits=Limits(max_reply_bytes=10_000_000),
        )
    )
    assert record["error"]["kind"] == "budget", record["error"]
    assert "max_tool_calls (256)" in record["error"]["message"]
    assert len(record["calls"]) == 256


def test_many_tool_calls_within_the_budget_are_all_answered() -> None:
    lookup = tool("order_lookup", default={"result": {}})
    record = run_attempt(
        job(
            view("x", tools=(lookup,)),
            (lookup,),
            agent=cmd("tool_storm", "3000"),
            timeout=60,
            limits=Limits(max_reply_bytes=10_000_000, max_tool_calls=5000),
        )
    )
    assert record["status"] == "completed", record["error"]
    assert len(record["calls"]) == 3000


def _cel_case(when: str, state: dict[str, Any], *, timeout: float, agent: str) -> AttemptJob:
    lookup = tool(
        "order_lookup",
        responses=({"when": when, "result": {"matched": True}},),
        default={"result": {"matched": False}},
    )
    return job(view("x", tools=(lookup,)), (lookup,), agent=agent, state=state, timeout=timeout)


@pytest.mark.slow
def test_an_expensive_cel_when_is_a_timeout_and_does_not_starve_the_others() -> None:
    slow = _cel_case(
        "L.map(a, s.contains(t)).size() > 0",
        {"L": list(range(4000)), "s": "a" * (24 << 20), "t": "b" * 64},
        timeout=2.0,
        agent=cmd("calls_once", "order_lookup", '{"order_id": "ORDER_1"}'),
    )
    quick = dataclasses.replace(
        _cel_case("args.order_id == 'ORDER_1'", {}, timeout=2.0,
                  agent=cmd("calls_once", "order_lookup", '{"order_id": "ORDER_1"}')),
        case_id="quick",
    )  # fmt: skip
    got = {
        r["case_id"]: r for r in as_json(get_executor("local").run([slow, quick], concurrency=2))
    }
    assert got["case_1"]["error"]["kind"] == "timeout", got["case_1"]["error"]
    assert "still running at the deadline" in got["case_1"]["error"]["message"]
    assert got["quick"]["status"] == "completed", got["quick"]["error"]
    assert got["quick"]["calls"][0]["result"] == {"matched": True}


@pytest.mark.slow
def test_tool_work_for_many_calls_stops_at_the_deadline() -> None:
    # Each call costs a fraction of a second of CEL work; 200 of them far exceed 2 s.
    lookup = tool(
        "order_lookup",
        responses=({"when": "L.map(a, s.contains(t)).size() < 0", "result": {}},),
        default={"result": {"matched": False}},
    )
    record = run_attempt(
        job(
            view("x", tools=(lookup,)),
            (lookup,),
            agent=cmd("tool_storm", "200"),
            state={"L": list(range(200)), "s": "a" * (4 << 20), "t": "b" * 64},
            timeout=2.0,
        )
    )
    assert record["error"]["kind"] == "timeout", record["error"]
    assert 0 < len(record["calls"]) < 200


def test_a_memory_hungry_cel_when_is_a_recorded_error_not_a_crash() -> None:
    bomb = _cel_case(
        "L.map(a, L.map(b, s + s)).size() > 0",
        {"L": list(range(100)), "s": "x" * (1 << 20)},
        timeout=30,
        agent=cmd("calls_once", "order_lookup", '{"order_id": "ORDER_1"}'),
    )
    record = run_attempt(dataclasses.replace(bomb, limits=Limits(cel_memory_mb=256)))
    # The `when` could not be evaluated: never "does not match" (the default would have
    # answered); the attempt's recorded error names it (issue 32).
    assert record["status"] == "error"
    assert record["error"]["kind"] == "case_expression"
    assert "L.map(a, L.map(b, s + s)).size() > 0" in record["error"]["message"]


# -- bounded records ---------------------------------------------------------------------


def test_a_stderr_flood_keeps_its_tail_and_size_in_bounded_memory() -> None:
    tracemalloc.start()
    try:
        record = run_attempt(job(view("x"), agent=cmd("stderr_flood", "64"), timeout=60))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert record["status"] == "completed", record["error"]
    stderr = record["agent_stderr"]
    assert stderr["bytes"] == 64 * (1 << 20) + len("\nthe last line of the flood\n")
    assert stderr["truncated"] and len(stderr["tail"]) <= 64 * 1024
    assert stderr["tail"].endswith("the last line of the flood\n")
    assert peak < 8 << 20, f"{peak} bytes held for a 64 MB flood"


def test_a_growing_state_hits_its_budget_and_the_record_holds_diffs() -> None:
    note = tool(
        "note_add",
        side_effect=True,
        schema=NOTE_SCHEMA,
        responses=({"result": {"ok": True},
                    "state_change": [{"append": "notes", "value_from": "args.text"}]},),
    )  # fmt: skip
    big_state = {"orders": {f"O{i}": {"status": "open", "pad": "p" * 100} for i in range(5000)}}
    record = run_attempt(
        job(
            view("x", tools=(note,)),
            (note,),
            agent=cmd("state_bloat"),
            state=big_state,
            timeout=60,
            limits=Limits(max_state_bytes=4 << 20),
        )
    )
    assert record["error"]["kind"] == "budget", record["error"]
    assert "max_state_bytes" in record["error"]["message"]
    size = len(records.dumps(record))
    state_size = len(records.dumps(big_state))
    written = 200_000 * len(record["calls"])
    # Never the initial state (the case's, rebuilt at grading), the values written a
    # bounded number of times (arguments, change, trace, audit), never a state per call.
    assert size < state_size // 4 + 10 * written, size
    assert all("state_before" not in c for c in record["calls"])
    assert len(record["calls"]) >= 4
    rebuilt = records.state_before(record, len(record["calls"]) - 1, big_state)
    assert len(rebuilt["notes"]) == len(record["calls"]) - 1
    assert rebuilt["orders"] == big_state["orders"]


def test_a_record_over_its_cap_becomes_a_clear_error() -> None:
    record = run_attempt(
        job(view("x"), agent=cmd("big_answer", "200"), limits=Limits(max_record_bytes=100_000))
    )
    assert record["status"] == "error" and record["error"]["kind"] == "record_limit"
    assert "max_record_bytes (100000)" in record["error"]["message"]
    assert len(records.dumps(record)) < 2000 and record["case_id"] == "case_1"


# -- files that never break --------------------------------------------------------------


@pytest.mark.parametrize("kind", ["nan", "big"])
def test_an_out_of_range_number_in_a_reply_is_a_protocol_error(kind: str) -> None:
    record = run_attempt(job(view("x"), agent=cmd("out_of_range", kind)))
    assert record["status"] == "error" and record["error"]["kind"] == "protocol"
    assert record["usage"]["prompt_tokens"] == 0 and record["usage"]["cost"] is None
    # The record is strict JSON: no NaN or Infinity constant (the words only in the message).
    json.loads(records.dumps(record), parse_constant=lambda name: pytest.fail(f"{name} written"))


def test_line_separators_in_an_answer_survive_jsonl(tmp_path: Path) -> None:
    record = run_attempt(job(view("x"), agent=cmd("separators")))
    assert record["status"] == "completed", record["error"]
    path = tmp_path / "attempts.jsonl"
    writer = AttemptWriter(path.open("a", encoding="utf-8"))
    writer.write(record)
    writer.write({**record, "attempt": 2})
    writer.close()
    damaged: list[records.Damaged] = []
    back = list(records.read_jsonl(path, damaged))
    assert damaged == [] and [r["attempt"] for r in back] == [1, 2]
    assert back[0]["output"] == "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci"


@pytest.fixture
def sessions_cleanup() -> Iterator[None]:
    yield
    from evalcase.run import celworker

    celworker.shutdown()
