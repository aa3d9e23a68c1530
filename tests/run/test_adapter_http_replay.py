"""The http: adapter against a real served agent, and replay: of a recorded run."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evalcase.run import driver
from evalcase.run.executors import get_executor
from tests.helpers import POLL
from tests.run.support import job, run_attempt, task_of, tool, view

LOOKUP = tool(
    "order_lookup", responses=({"when": {"order_id": "ORDER_1"}, "result": {"status": "signed"}},)
)


class Agent(BaseHTTPRequestHandler):
    """A served agent: looks the order up once, then answers with what the tool said."""

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = request["messages"][-1]
        if self.path == "/slow":
            time.sleep(2)
        if self.path == "/broken":
            self.send_response(500)
            self.end_headers()
            return
        if last["role"] == "user":
            args = json.dumps({"order_id": "ORDER_1"})
            reply: Any = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "h1",
                        "type": "function",
                        "function": {"name": "order_lookup", "arguments": args},
                    }
                ],
            }
        else:
            reply = {
                "role": "assistant",
                "content": "status: " + json.loads(last["content"])["status"],
            }
        body = ("not json" if self.path == "/garbage" else json.dumps(reply)).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the runner gave up
            self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def served() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    thread = threading.Thread(target=httpd.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_served_agent_completes(served: str) -> None:
    record = run_attempt(job(view("x", tools=(LOOKUP,)), (LOOKUP,), agent=f"{served}/agent"))
    assert record["status"] == "completed", record["error"]
    assert record["output"] == "status: signed"
    assert record["calls"][0]["tool"] == "order_lookup"


@pytest.mark.parametrize(
    ("path", "kind"), [("/broken", "agent_exit"), ("/garbage", "bad_json"), ("/slow", "timeout")]
)
def test_a_failing_served_agent_is_a_recorded_error(served: str, path: str, kind: str) -> None:
    record = run_attempt(
        job(view("x", tools=(LOOKUP,)), (LOOKUP,), agent=f"{served}{path}", timeout=1)
    )
    assert record["error"]["kind"] == kind, record["error"]


def test_an_unreachable_agent_is_a_recorded_error() -> None:
    record = run_attempt(job(view("x"), agent="http://127.0.0.1:9/agent", timeout=2))
    assert record["error"]["kind"] == "adapter"


def test_replay_reproduces_a_recorded_run_without_calling_the_agent(
    served: str, tmp_path: Path
) -> None:
    j = job(view("x", tools=(LOOKUP,)), (LOOKUP,), agent=f"{served}/agent")
    source = driver.Source("ds", "v1", "dd", "a" * 40, False, "WORKTREE")
    first = driver.start(
        tmp_path,
        source,
        [task_of(j)],
        driver.RunOptions(agent=j.adapter, repeat=2),
        get_executor("local"),
    )
    again = driver.start(
        tmp_path,
        source,
        [task_of(j)],
        driver.RunOptions(agent=f"replay:{first.run_id}", repeat=2),
        get_executor("local"),
    )
    assert again.errors == 0

    def strip(path: Path) -> list[dict[str, Any]]:
        records = [json.loads(line) for line in (path / "attempts.jsonl").read_text().splitlines()]
        volatile = ("latency_ms", "started_at", "ended_at", "trace")
        return sorted(
            ({k: v for k, v in r.items() if k not in volatile} for r in records),
            key=lambda r: r["attempt"],
        )

    assert strip(first.path) == strip(again.path)
    missing = driver.start(
        tmp_path,
        source,
        [task_of(j)],
        driver.RunOptions(agent=f"replay:{first.run_id}", repeat=3),
        get_executor("local"),
    )
    assert missing.errors == 1  # attempt 3 was never recorded
