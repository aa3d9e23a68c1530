"""``evalcase view``: the local, read-only web viewer over the results store
(:mod:`evalcase.results.view`). Exit status: 0 when stopped (Ctrl-C), 2 usage or fatal
error (no viewer extra, the port taken)."""

from __future__ import annotations

import contextlib

import click

from evalcase.commands.common import (
    config_for,
    echo_mirror_stats,
    fatal_errors,
    remote_option,
    root_option,
)
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
@click.option(
    "--from-remote",
    is_flag=True,
    help="Browse the runs published to the team's remote ([results] remote, or --remote "
    "URL) instead of local ones: their index files are fetched first, a transcript's "
    "files when its page is opened.",
)
@remote_option
@root_option
@fatal_errors
def view_command(
    host: str, port: int, token: str | None, from_remote: bool, url: str | None, root: str | None
) -> None:
    """Browse runs across commits, agents and prompts: summaries, gates, transcripts,
    comparisons, case timelines, flaky cases and prompt × case grids.

    Read-only, on 127.0.0.1 by default (then only loopback Host headers are answered).
    Bound elsewhere, every request needs the token: open the printed address once, it sets
    a cookie. With --from-remote it shows the team's published runs without pulling them:
    the listing is asked again at most once a minute, and a run's attempt records are
    fetched (checked against their digests) the first time one of its transcripts is
    opened."""
    import socket

    from evalcase.results.view import is_loopback, new_token, starlette_parts

    starlette_parts()  # the install hint, before Starlette is imported
    from evalcase.results.view_pages import make_app

    config = config_for(root)
    if not is_loopback(host) and not token:
        token = new_token()
    mirror = None
    if from_remote or url is not None:
        from evalcase.results.remote import remote_of
        from evalcase.results.remote_index import Mirror

        mirror = Mirror(config, remote_of(config, url))
        echo_mirror_stats(mirror.sync())
    app = make_app(
        config,
        token=token if not is_loopback(host) or token else None,
        host=host,
        mirror=mirror,
        warn=lambda m: click.echo(f"evalcase: warning: {m}", err=True),
    )
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
