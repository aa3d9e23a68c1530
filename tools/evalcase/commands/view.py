"""``evalcase view``: the local, read-only web viewer over the results store
(:mod:`evalcase.results.view`). Exit status: 0 when stopped (Ctrl-C), 2 usage or fatal
error (no viewer extra, the port taken)."""

from __future__ import annotations

import contextlib

import click

from evalcase.commands.common import config_for, fatal_errors, root_option
from evalcase.model import FatalError


@click.command("view")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8765, show_default=True, type=int, help="0: any free port.")
@click.option(
    "--token",
    default=None,
    envvar="EVALCASE_VIEW_TOKEN",
    help="Required of every request when bound to a non-loopback address (default: a new "
    "random one, printed). Also from EVALCASE_VIEW_TOKEN.",
)
@root_option
@fatal_errors
def view_command(host: str, port: int, token: str | None, root: str | None) -> None:
    """Browse runs across commits, agents and prompts: summaries, gates, transcripts,
    comparisons, case timelines, flaky cases and prompt × case grids.

    Read-only, on 127.0.0.1 by default (then only loopback Host headers are answered).
    Bound elsewhere, every request needs the token: open the printed address once, it sets
    a cookie."""
    import socket

    from evalcase.results.view import is_loopback, new_token, starlette_parts

    starlette_parts()  # the install hint, before Starlette is imported
    from evalcase.results.view_pages import make_app

    config = config_for(root)
    if not is_loopback(host) and not token:
        token = new_token()
    app = make_app(config, token=token if not is_loopback(host) or token else None, host=host)
    import uvicorn

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        raise FatalError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    sock.listen(128)  # connections wait in the backlog until uvicorn serves them
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    click.echo(f"evalcase view: {address} (Ctrl-C stops it)", err=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a user stops it
        server.run(sockets=[sock])


COMMANDS = (view_command,)
