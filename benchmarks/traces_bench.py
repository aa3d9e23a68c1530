"""Traces: `evalcase import` of OpenTelemetry traces, timed (issue 46: at least 10,000
spans/s).

Usage, from the repository root::

    python benchmarks/traces_bench.py                    # every row
    python benchmarks/traces_bench.py --only import      # one row
    python benchmarks/traces_bench.py --only import --conversations 500 --tool-calls 4

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
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
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


ROWS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {"import": row_import}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(ROWS), action="append")
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--tool-calls", type=int, default=4)
    parser.add_argument("--other-spans", type=int, default=10)
    args = parser.parse_args()
    for name in args.only or list(ROWS):
        result = ROWS[name](args)
        human = ", ".join(f"{k} {v}" for k, v in result.items() if k != "row")
        print(f"{name}: {human}")
        print(json.dumps(result))


if __name__ == "__main__":
    main()
