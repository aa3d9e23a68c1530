"""``evalcase collect``: the OTLP/HTTP trace receiver (:mod:`evalcase.collect`). Exit
status: 0 when stopped (Ctrl-C, SIGTERM), 2 usage or fatal error (the port taken, the
inbox in use, a non-loopback address without --allow-remote)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from evalcase.commands.common import fatal_errors, given_root, root_option
from evalcase.model import FatalError


def _size(_ctx: click.Context, _param: click.Parameter, value: str) -> int:
    from evalcase.collect.inbox import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("collect")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=4318, show_default=True, type=int, help="0: any free port.")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Let --host be an address other than loopback (anyone who reaches it can fill "
    "the inbox; there is no authentication).",
)
@click.option(
    "--inbox",
    "inbox_dir",
    default=None,
    type=click.Path(file_okay=False, path_type=Path),
    help="The folder to append to. Default: .git/evalcase/inbox of the git repository "
    "holding the current folder (or --root).",
)
@click.option(
    "--only-marked",
    "marked",
    default=None,
    metavar="KEY[=VALUE]",
    help="Keep only traces with a span (or resource) carrying attribute KEY (equal to "
    "VALUE when given); spans of a trace not yet marked are held in memory until it is.",
)
@click.option("--max-body", default="8M", show_default=True, callback=_size,
              help="Largest request body, compressed or not (413 above).")  # fmt: skip
@click.option("--max-inbox", default="1G", show_default=True, callback=_size,
              help="Largest inbox, all files together (507 above, nothing written).")  # fmt: skip
@click.option("--max-file", default="64M", show_default=True, callback=_size,
              help="Size at which the next line starts a new inbox file.")  # fmt: skip
@click.option("--max-pending", default="32M", show_default=True, callback=_size,
              help="Memory for spans of traces not yet marked (--only-marked).")  # fmt: skip
@root_option
@fatal_errors
def collect_command(
    host: str,
    port: int,
    allow_remote: bool,
    inbox_dir: Path | None,
    marked: str | None,
    max_body: int,
    max_inbox: int,
    max_file: int,
    max_pending: int,
    root: str | None,
) -> None:
    """Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces, JSON or protobuf,
    gzip or not) and append them to an inbox folder for `evalcase import`.

    Point an app at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318. Each
    request becomes one line of OTLP/JSON, fsynced before the 200; the inbox is
    append-only, rotated by size and bounded (507 when full)."""
    import signal
    import socket

    from evalcase.collect.inbox import Inbox, default_inbox
    from evalcase.collect.otlp import Marking
    from evalcase.collect.server import Receiver, make_app
    from evalcase.results.view import host_header_is_loopback, is_loopback, starlette_parts

    if not is_loopback(host) and not allow_remote:
        raise FatalError(
            f"--host {host} is not a loopback address: the receiver has no authentication; "
            "add --allow-remote to bind it anyway"
        )
    try:
        marking = Marking.parse(marked) if marked is not None else None
    except ValueError as exc:
        raise FatalError(str(exc)) from None
    if inbox_dir is None:
        start = Path(given_root(root) or ".")
        inbox_dir = default_inbox(start)
        if inbox_dir is None:
            raise FatalError(f"{start.resolve()} is not in a git repository: give --inbox DIR")
    starlette_parts()
    inbox = Inbox(inbox_dir, max_inbox, max_file)
    receiver = Receiver(
        inbox, max_body, marking, max_pending,
        log=lambda m: click.echo(f"evalcase collect: {m}", err=True),
    )  # fmt: skip
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        inbox.close()
        raise FatalError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(128)
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"evalcase collect: http://{shown}:{sock.getsockname()[1]}/v1/traces -> {inbox_dir} "
        "(Ctrl-C stops it)",
        err=True,
    )
    server = uvicorn.Server(
        uvicorn.Config(
            make_app(receiver, None if allow_remote else host_header_is_loopback),
            log_level="warning",
            access_log=False,
        )
    )

    def _stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt  # uvicorn re-raises the signal after its clean shutdown

    signal.signal(signal.SIGTERM, _stop)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            server.run(sockets=[sock])
    finally:
        inbox.close()
    s = receiver.stats
    click.echo(
        f"evalcase collect: stopped: {s.requests} requests, {s.spans_written} spans written, "
        f"{s.spans_held} held unmarked and dropped, {s.spans_dropped} dropped by bounds, "
        f"{s.refused} refused (inbox full)",
        err=True,
    )


COMMANDS = (collect_command,)
