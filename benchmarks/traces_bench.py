"""Traces: `evalcase import` of OpenTelemetry traces and `evalcase collect`, timed (issue
46: import at least 10,000 spans/s; collect holds 1,000 spans/s with bounded memory).

Usage, from the repository root::

    python benchmarks/traces_bench.py                    # every row
    python benchmarks/traces_bench.py --only import      # one row
    python benchmarks/traces_bench.py --only import --conversations 500 --tool-calls 4
    python benchmarks/traces_bench.py --only collect --rate 1000 --seconds 30

Rows are functions (``ROWS``); each prints one human line and one JSON line.

``import``: an inbox folder of OTLP/JSON files (one ``ExportTraceServiceRequest`` a line,
as the collector's file exporter writes them) holding ``--conversations`` GenAI
conversations (semconv 1.37+: an ``invoke_agent`` span, ``--tool-calls`` rounds of a
``chat`` span and an ``execute_tool`` span, a last ``chat`` span, and ``--other-spans``
spans of no GenAI convention, such as an instrumented HTTP client writes), each with a
personal e-mail address to redact, 100 conversations a file. It is imported into a copy
of the rule tests' base repository by ``python -m evalcase import INBOX --dataset
sample_set`` as a whole process (interpreter start included); the row reports the spans,
the cases and fixtures written, the wall and CPU time and spans per second of wall time,
and, in this process, the time to read and assemble the same spans without writing
(``evalcase.authoring.traces.conversations``).

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
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
BATCH = 512  # collect: spans a request, as the SDK's BatchSpanProcessor exports them
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tools"))

from tests.authoring import otlp_samples as otlp  # noqa: E402


def conversation(n: int, tool_calls: int, other: int) -> list[dict[str, Any]]:
    trace = f"{n + 1:032x}"
    order = f"ORDER_{100000 + n}"
    user = {"role": "user", "parts": [{"type": "text",
            "content": f"订单 {order} 的耳机能退吗？联系我 user{n}@corp.cn"}]}  # fmt: skip
    spans = [otlp.span(f"{1:016x}", "invoke_agent", {"gen_ai.operation.name": "invoke_agent"},
                       trace=trace)]  # fmt: skip
    history: list[dict[str, Any]] = [user]
    sid = 2
    for k in range(tool_calls):
        args = {"order_id": order, "step": k}
        call = {"type": "tool_call", "id": f"call_{k}", "name": "order_lookup", "arguments": args}
        spans.append(otlp.span(f"{sid:016x}", "chat", {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(history, ensure_ascii=False),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
        }, trace=trace, parent=f"{1:016x}", start=sid))  # fmt: skip
        result = {"order_id": order, "status": "signed", "step": k}
        spans.append(otlp.span(f"{sid + 1:016x}", "execute_tool order_lookup", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "order_lookup",
            "gen_ai.tool.call.id": f"call_{k}", "gen_ai.tool.call.arguments": json.dumps(args),
            "gen_ai.tool.call.result": json.dumps(result),
        }, trace=trace, parent=f"{1:016x}", start=sid + 1))  # fmt: skip
        history += [{"role": "assistant", "parts": [call]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"call_{k}",
                                                "response": result}]}]  # fmt: skip
        sid += 2
    spans.append(otlp.span(f"{sid:016x}", "chat", {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(history, ensure_ascii=False),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": "可以退。"}]}], ensure_ascii=False),
    }, trace=trace, parent=f"{1:016x}", start=sid))  # fmt: skip
    for j in range(other):
        spans.append(otlp.span(f"{sid + 1 + j:016x}", "POST", {
            "http.request.method": "POST", "url.full": "http://127.0.0.1:9/v1/chat/completions",
            "http.response.status_code": 200}, trace=trace, parent=f"{1:016x}",
            start=sid + 1 + j))  # fmt: skip
    return spans


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def row_import(args: argparse.Namespace) -> dict[str, Any]:
    from evalcase.authoring.traces import conversations

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        repo = root / "repo"
        shutil.copytree(REPO_ROOT / "tests" / "rules" / "base_repo", repo)
        inbox = root / "inbox"
        inbox.mkdir()
        spans = 0
        for start in range(0, args.conversations, 100):
            lines = []
            for n in range(start, min(start + 100, args.conversations)):
                group = conversation(n, args.tool_calls, args.other_spans)
                spans += len(group)
                lines.append(otlp.request(group))
            (inbox / f"{start // 100:06d}.jsonl").write_text(otlp.jsonl(*lines), "utf-8")
        began = time.perf_counter()
        found = conversations(inbox)
        read_s = time.perf_counter() - began
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}
        cpu0, began = _cpu(), time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "evalcase", "import", str(inbox), "--dataset", "sample_set"],
            cwd=repo, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall, cpu = time.perf_counter() - began, _cpu() - cpu0
        if proc.returncode != 0:
            raise SystemExit(f"import failed ({proc.returncode}): {proc.stderr[-2000:]}")
        cases = len(list((repo / "datasets" / "sample_set" / "cases").glob("*bad_case_*.yaml")))
    return {
        "row": "import",
        "spans": spans,
        "conversations": len(found[0]),
        "cases": cases,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "spans_per_s": round(spans / wall),
        "read_and_assemble_s": round(read_s, 3),
        "read_spans_per_s": round(spans / read_s),
        "load": os.getloadavg()[0],
    }


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
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}
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


ROWS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "import": row_import,
    "collect": collect,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(ROWS), action="append")
    parser.add_argument("--conversations", type=int, default=1000, help="import: conversations")
    parser.add_argument("--tool-calls", type=int, default=4, help="import: tool calls each")
    parser.add_argument("--other-spans", type=int, default=10, help="import: non-GenAI spans each")
    parser.add_argument("--rate", type=int, default=1000, help="collect: spans/s offered")
    parser.add_argument("--seconds", type=float, default=30.0, help="collect: how long")
    args = parser.parse_args()
    for name in args.only or list(ROWS):
        result = ROWS[name](args)
        human = ", ".join(f"{k} {v}" for k, v in result.items() if k != "row")
        print(f"{name}: {human}")
        print(json.dumps(result))


if __name__ == "__main__":
    main()
