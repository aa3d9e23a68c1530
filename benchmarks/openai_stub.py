"""A local OpenAI-compatible endpoint that answers every chat completion after a fixed
delay, like a hosted model: for benchmarks/run_bench.py's concurrency rows.

One asyncio process, HTTP/1.1 keep-alive, no framework: it must not be what limits the
rate (it serves thousands of requests a second on one core). ``POST .../chat/completions``
answers after ``--delay`` seconds with a fixed reply (or, for a judge, the JSON verdict
``--verdict`` gives); ``GET .../models`` answers at once. It prints ``PORT`` on its first
line, then runs until killed.

    python benchmarks/openai_stub.py --delay 1.0
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json

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
    served = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
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
                    await asyncio.sleep(delay)
                    writer.write(completion)
                    served += 1
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=2048)
    port = server.sockets[0].getsockname()[1]
    print(port, flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--content", default="ok", help="the reply's text (a judge's JSON)")
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.delay, args.content))


if __name__ == "__main__":
    main()
