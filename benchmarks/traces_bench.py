"""Trace benchmarks: rows as functions, ``--only NAME`` runs one.

``collect``: a real ``evalcase collect`` process fed by a load generator that posts
realistic GenAI spans (a chat span with input and output messages, two execute_tool spans
with arguments and results, an invoke_agent parent: 4 spans per conversation, about 1 KB
each) in protobuf batches of 512, as the SDK's BatchSpanProcessor exports them, at a
target rate (``--rate``, spans/s) for ``--seconds``. It reports the spans the receiver
accepted per second, the slowest answers, the inbox's size and the receiver's peak RSS
(VmHWM from /proc), which must stay bounded however long it runs.

    python benchmarks/traces_bench.py --only collect --rate 1000 --seconds 30
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BATCH = 512


def _conversation_spans(request: object, n: int) -> None:
    """Four GenAI spans of one conversation added to ``request``'s scope spans."""
    scope = request  # an ExportTraceServiceRequest's ScopeSpans
    trace = secrets.token_bytes(16)
    root = secrets.token_bytes(8)
    now = time.time_ns()

    def span(name: str, span_id: bytes, parent: bytes | None, attrs: dict[str, str]) -> None:
        s = scope.spans.add()  # type: ignore[attr-defined]
        s.trace_id, s.span_id, s.name, s.kind = trace, span_id, name, 3
        if parent:
            s.parent_span_id = parent
        s.start_time_unix_nano, s.end_time_unix_nano = now, now + 1_000_000
        for key, value in attrs.items():
            a = s.attributes.add()
            a.key, a.value.string_value = key, value

    messages = json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": f"Where is my order A-{n:04d}? "
                                     "It was due last week and I need it for a trip."}]}]
    )  # fmt: skip
    span("invoke_agent shop", root, None, {"gen_ai.operation.name": "invoke_agent",
                                           "gen_ai.agent.name": "shop"})  # fmt: skip
    span("chat gpt-4o", secrets.token_bytes(8), root, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": messages,
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": "order_lookup",
             "arguments": {"order_id": f"A-{n:04d}"}}]}]),
    })  # fmt: skip
    for tool, args, result in (
        ("order_lookup", {"order_id": f"A-{n:04d}"}, {"status": "delayed", "eta": "2026-12-12"}),
        ("refund_policy", {"reason": "delayed"}, {"refundable": True}),
    ):
        span(f"execute_tool {tool}", secrets.token_bytes(8), root, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps(result),
        })  # fmt: skip


def _batch(start: int) -> bytes:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    request = trace_service_pb2.ExportTraceServiceRequest()
    rs = request.resource_spans.add()
    a = rs.resource.attributes.add()
    a.key, a.value.string_value = "service.name", "shop-assistant"
    scope = rs.scope_spans.add()
    scope.scope.name = "bench"
    for n in range(start, start + BATCH // 4):
        _conversation_spans(scope, n)
    data: bytes = request.SerializeToString()
    return data


def _peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    return int(found.group(1)) if found else 0


def collect(args: argparse.Namespace) -> dict[str, object]:
    import httpx

    with tempfile.TemporaryDirectory() as tmp:
        inbox = Path(tmp) / "inbox"
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalcase", "collect", "--port", "0", "--inbox", str(inbox)],
            env=env, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        url = re.search(r"(http://\S+/v1/traces)", proc.stderr.readline()).group(1)  # type: ignore[union-attr]
        bodies = [_batch(i * BATCH) for i in range(8)]  # built before the clock starts
        interval = BATCH / args.rate
        sent = accepted = 0
        waits: list[float] = []
        rss: list[int] = []
        start = time.monotonic()
        with httpx.Client(timeout=30) as client:
            while time.monotonic() - start < args.seconds:
                due = start + (sent // BATCH) * interval
                if (pause := due - time.monotonic()) > 0:
                    time.sleep(pause)
                t0 = time.monotonic()
                r = client.post(url, content=bodies[(sent // BATCH) % len(bodies)],
                                headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
                waits.append(time.monotonic() - t0)
                sent += BATCH
                accepted += BATCH if r.status_code == 200 else 0
                rss.append(_peak_rss_kib(proc.pid))
        elapsed = time.monotonic() - start
        behind = max(0.0, elapsed - args.seconds)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
        size = sum(p.stat().st_size for p in inbox.glob("*.jsonl"))
    waits.sort()
    return {
        "row": "collect",
        "target_spans_per_s": args.rate,
        "seconds": round(elapsed, 1),
        "spans_accepted": accepted,
        "accepted_spans_per_s": round(accepted / elapsed),
        "answer_p50_ms": round(waits[len(waits) // 2] * 1000, 1),
        "answer_max_ms": round(waits[-1] * 1000, 1),
        "behind_schedule_s": round(behind, 2),
        "peak_rss_mib_first_tenth": round(rss[len(rss) // 10] / 1024, 1),
        "peak_rss_mib_end": round(rss[-1] / 1024, 1),
        "inbox_mib": round(size / 2**20, 1),
    }


ROWS: dict[str, Callable[[argparse.Namespace], dict[str, object]]] = {"collect": collect}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(ROWS), action="append")
    parser.add_argument("--rate", type=int, default=1000, help="collect: spans/s offered")
    parser.add_argument("--seconds", type=float, default=30.0, help="collect: how long")
    args = parser.parse_args()
    for name in args.only or sorted(ROWS):
        print(json.dumps(ROWS[name](args)))


if __name__ == "__main__":
    main()
