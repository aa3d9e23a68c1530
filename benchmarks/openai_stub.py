"""A local OpenAI-compatible endpoint that answers every chat completion after a fixed
delay, like a hosted model: for benchmarks/run_bench.py's concurrency rows.

One asyncio process, HTTP/1.1 keep-alive, no framework: it must not be what limits the
rate (it serves thousands of requests a second on one core). ``POST .../chat/completions``
answers after ``--delay`` seconds with a fixed reply (or, for a judge, the JSON verdict
``--content`` gives); ``GET .../models`` answers at once. It prints ``PORT`` on its first
line, then runs until SIGTERM, when it prints one JSON line of what it saw: requests
served, the peak number in flight at once, the first and last arrival (monotonic
seconds) and the CPU seconds it used, so a benchmark can show the stub was not its limit.

    python benchmarks/openai_stub.py --delay 1.0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import signal
import sys
import time

REPLY = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 1,
    "model": "stub-1",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
}
MODELS = {"object": "list", "data": [{"id": "stub-1", "object": "model"}]}


def _response(body: bytes) -> bytes:
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


async def serve(delay: float, content: str) -> None:
    reply = dict(REPLY)
    reply["choices"] = [
        {**REPLY["choices"][0], "message": {"role": "assistant", "content": content}}
    ]  # type: ignore[index]
    completion = _response(json.dumps(reply).encode())
    models = _response(json.dumps(MODELS).encode())
    stats = {"served": 0, "in_flight": 0, "peak": 0, "first": 0.0, "last": 0.0}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                if length:
                    await reader.readexactly(length)
                if head.startswith(b"GET"):
                    writer.write(models)
                else:
                    now = time.monotonic()
                    stats["first"] = stats["first"] or now
                    stats["last"] = now
                    stats["in_flight"] += 1
                    stats["peak"] = max(stats["peak"], stats["in_flight"])
                    await asyncio.sleep(delay)
                    stats["in_flight"] -= 1
                    writer.write(completion)
                    stats["served"] += 1
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    report = {k: stats[k] for k in ("served", "peak", "first", "last")}
    report["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)
    print(json.dumps(report), file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--content", default="ok", help="the reply's text (a judge's JSON)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.delay, args.content))


if __name__ == "__main__":
    main()
