"""The cmd: adapter against real subprocess agents that behave and misbehave."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from evalcase.run.executors import Limits, get_executor
from tests.run.support import as_json, job, run_attempt, tool, view

AGENTS = Path(__file__).parent / "cmd_agents"


def cmd(name: str) -> str:
    return f"cmd:{sys.executable} {AGENTS / name}.py"


def test_a_well_behaved_agent_completes_and_reports_its_version() -> None:
    record = run_attempt(job(view("first", "second"), agent=cmd("echo")))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "echo: second"
    assert record["agent_version"] == "echo-1"
    assert [m["role"] for m in record["messages"]] == ["user", "assistant", "user", "assistant"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("agent", "kind", "words"),
    [
        ("crash", "agent_exit", "status 3"),
        ("hang", "timeout", "deadline"),
        ("garbage", "bad_json", "not JSON"),
        ("huge", "oversized", "limit"),
        ("unknown_tool", "unknown_tool", "drop_database"),
        ("protocol", "protocol", "role"),
    ],
)
def test_a_misbehaving_agent_is_a_recorded_error(agent: str, kind: str, words: str) -> None:
    lookup = tool("order_lookup", responses=({"result": {}},))
    record = run_attempt(
        job(
            view("x", tools=(lookup,)),
            (lookup,),
            agent=cmd(agent),
            timeout=1.5,
            limits=Limits(max_reply_bytes=100_000),
        )
    )
    assert record["status"] == "error"
    assert record["error"]["kind"] == kind, record["error"]
    assert words in record["error"]["message"]
    assert record["trace"][-1]["type"] == "error"


def test_the_crash_message_carries_the_agents_stderr() -> None:
    record = run_attempt(job(view("x"), agent=cmd("crash")))
    assert "something broke inside the agent" in record["error"]["message"]


def test_a_missing_program_is_an_error_record() -> None:
    record = run_attempt(job(view("x"), agent="cmd:/nonexistent/agent --flag"))
    assert record["error"]["kind"] == "agent_exit" and "cannot start" in record["error"]["message"]


@pytest.mark.slow
def test_a_batch_of_bad_agents_yields_one_record_each_and_finishes() -> None:
    names = ["echo", "crash", "hang", "garbage", "huge", "unknown_tool"]
    jobs = [job(view("x"), agent=cmd(n), case_id=n, timeout=1.5) for n in names]
    records = {r["case_id"]: r for r in as_json(get_executor("local").run(jobs, concurrency=3))}
    assert set(records) == set(names)
    assert records["echo"]["status"] == "completed"
    assert all(records[n]["status"] == "error" for n in names[1:])


def _sh(script: str) -> str:
    """A ``cmd:`` agent in ``sh`` (no interpreter start): ``script`` runs per request line
    and prints the reply line."""
    return "cmd:/bin/sh -c " + shlex.quote(f"while read -r line; do {script}; done")


PWD_REPLY = """printf '{"role": "assistant", "content": "%s"}\\n' "$PWD\""""


def test_an_agents_folder_left_as_made_is_removed_without_walking_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The folder, its ``home`` and its ``tmp``, empty at the end: three ``rmdir`` calls
    (shutil.rmtree's walk, a descriptor, a listing and a stat per folder, cost the attempt's
    thread about 0.3 ms an attempt at concurrency 200)."""
    walked: list[Any] = []
    real = shutil.rmtree
    monkeypatch.setattr(shutil, "rmtree", lambda p, *a, **k: (walked.append(p), real(p, *a, **k)))
    record = run_attempt(job(view("hi"), agent=_sh(PWD_REPLY)))
    assert record["status"] == "completed", record["error"]
    folder = Path(record["output"])
    assert folder.name.startswith("evalcase-agent-")
    assert not folder.exists()
    assert walked == []


def test_a_folder_the_agent_filled_is_removed_whole_and_a_link_out_is_not_followed(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine", "utf-8")
    fill = (
        "mkdir -p work/deep && echo x > work/deep/f && echo y > home/.rc && echo z > tmp/t"
        f" && ln -s {shlex.quote(str(outside))} out"
        f" && rm -rf tmp && ln -s {shlex.quote(str(outside))} tmp"
    )
    record = run_attempt(job(view("hi"), agent=_sh(f"{fill}; {PWD_REPLY}")))
    assert record["status"] == "completed", record["error"]
    assert not Path(record["output"]).exists()
    assert (outside / "keep.txt").read_text("utf-8") == "mine"
