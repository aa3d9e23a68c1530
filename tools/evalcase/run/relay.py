"""The relay inside an agent-owned loop's sandbox (standard library only, run as
``python -I -S relay.py SOCKET PORT -- AGENT ARGV...``).

A sandboxed agent has no network (its own network namespace: only its own loopback), so
it cannot reach the runner's servers on the host's ``127.0.0.1``. The runner serves them
on a unix socket in the attempt's folder, which the sandbox shows; this relay, evalcase's
own trusted code started inside the sandbox before the agent, listens on the sandbox's
``127.0.0.1:PORT`` and forwards every connection to that socket, byte for byte, so that
unmodified HTTP clients use ``http://127.0.0.1:PORT``. It then starts the agent (stdin,
stdout and stderr its own) and exits with the agent's status when the agent exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            chunk = await reader.read(1 << 16)
            if not chunk:
                break
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


async def main(socket_path: str, port: int, argv: list[str]) -> int:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:  # a reply's head and body written apart: no delayed-ACK wait
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            up_reader, up_writer = await asyncio.open_unix_connection(socket_path)
        except OSError:
            writer.close()  # the attempt has ended: the socket is gone
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    async with server:
        agent = await asyncio.create_subprocess_exec(*argv)
        return await agent.wait()


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.stderr.write("usage: relay.py SOCKET PORT -- AGENT ARGV...\n")
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[4:])))
