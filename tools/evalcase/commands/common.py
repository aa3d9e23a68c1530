"""What every command shares: exit codes, the ``--root`` option, the configuration it
names, and :func:`fatal_errors` (a fatal problem is one message and exit 2, never a
traceback). Public on purpose: a command module imports these, never another command
module's private helpers (``tests/test_layers.py`` checks)."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Collection, Sequence
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from evalcase.atomic import UnsafePath
from evalcase.model import FatalError

if TYPE_CHECKING:
    from evalcase.config import Config
    from evalcase.results.remote_index import MirrorStats

F = TypeVar("F", bound=Callable[..., Any])

# Exit status: 0 no errors (warnings allowed), 1 at least one error (findings, a gate
# that did not pass, an attempt in error), 2 usage or fatal error.
EXIT_OK, EXIT_FINDINGS, EXIT_FATAL = 0, 1, 2


def quiet_broken_pipe(status: int = EXIT_OK) -> None:
    """The reader closed the pipe early (``evalcase rules | head -1``): normal use, so
    leave without a message. Standard output is pointed at /dev/null so that the
    interpreter's final flush does not complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(status)


def fatal_errors(func: F) -> F:
    """Turn FatalError into a message and exit 2; anything unexpected too, without a
    traceback unless EVALCASE_DEBUG is set. A closed output pipe ends the command quietly."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:
            quiet_broken_pipe()
        except (FatalError, UnsafePath) as exc:  # UnsafePath: a link under outputs/
            click.echo(f"evalcase: error: {exc}", err=True)
            sys.exit(EXIT_FATAL)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except ModuleNotFoundError as exc:
            click.echo(
                f"evalcase: error: the module '{exc.name}' is not installed; install evalcase "
                "with its dependencies (pip install evalcase, or pip install -e . here)",
                err=True,
            )
            sys.exit(EXIT_FATAL)
        except Exception as exc:
            if os.environ.get("EVALCASE_DEBUG"):
                raise
            click.echo(
                f"evalcase: internal error: {type(exc).__name__}: {exc}\n"
                "Run again with EVALCASE_DEBUG=1 for details, and please report it.",
                err=True,
            )
            sys.exit(EXIT_FATAL)

    return wrapper  # type: ignore[return-value]


def given_root(root: str | None) -> str | None:
    """``--root`` after the subcommand wins; otherwise the one given before it."""
    if root:
        return root
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if isinstance(ctx.obj, dict) and ctx.obj.get("root"):
            return str(ctx.obj["root"])
        ctx = ctx.parent
    return None


def root_dir(root: str | None) -> Path:
    """The case repository: ``--root`` (before or after the command), else found from
    the current folder."""
    from evalcase.config import find_root

    given = given_root(root)
    return Path(given).resolve() if given else find_root(Path.cwd())


def config_for(root: str | None) -> Config:
    """The configuration of the case repository ``--root`` names (or the one found)."""
    from evalcase.config import load_config

    given = given_root(root)
    if given:
        return load_config(Path(given).resolve())
    return load_config(root_dir(None))


ROOT_HELP = (
    "The case repository (the folder holding datasets/ and fixtures/), or a folder whose "
    "evalcase.toml names it. Default: found from the current folder (see docs/configuration.md)."
)

root_option: Callable[[F], F] = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    metavar="DIR",
    help=ROOT_HELP,
)


def split_words(values: tuple[str, ...], upper: bool = False) -> tuple[str, ...]:
    """Repeatable, comma-separated option values as one tuple (``--select A,B --select C``)."""
    words = (w.strip() for v in values for w in v.split(","))
    return tuple(w.upper() if upper else w for w in words if w)


# --- a command's output file (-o): one clear error line, never a traceback -------------
# A full disk (-o /dev/full), a missing folder, a path without write permission or a full
# standard output become a FatalError naming the path and the reason (exit status 2).


def write_output(output: str, text: str) -> None:
    """Write ``text`` to the file ``output`` (UTF-8)."""
    path = Path(output)
    try:
        with path.open("w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise FatalError(f"cannot write {output}: {_reason(exc, path)}") from None


def echo_output(text: str) -> None:
    """Write ``text`` to standard output (a closed pipe is the caller's wrapper's)."""
    try:
        click.echo(text, nl=False)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise FatalError(f"cannot write to standard output: {_reason(exc, None)}") from None


def _reason(exc: OSError, path: Path | None) -> str:
    if exc.errno == errno.ENOENT and path is not None and not path.parent.is_dir():
        return f"its folder {path.parent} does not exist; create it first"
    return exc.strerror or str(exc)


# --- text tables (history, flaky, trend, runs) ------------------------------------------
# A column is as wide as its widest value: no value is cut, so two rows that differ only
# at the end of a long agent, prompt or case name (``bank_agent openai:bank-v1`` and
# ``bank_agent_v2 openai:bank-v1``) still read apart. Widths count terminal columns (a
# Chinese character takes two).


def text_width(text: str) -> int:
    """How many terminal columns ``text`` takes (wide East Asian characters: two)."""
    from unicodedata import combining, east_asian_width

    return sum(0 if combining(c) else 2 if east_asian_width(c) in "WF" else 1 for c in text)


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = ()
) -> list[str]:
    """The lines of a text table: ``header``, then ``rows``; each column as wide as its
    widest cell, the columns in ``right`` aligned right, the last one not padded."""
    widths = [text_width(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], text_width(cell))
    lines = []
    for row in (header, *rows):
        cells = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - text_width(cell))
            last = i == len(row) - 1
            cells.append(pad + cell if i in right else cell + ("" if last else pad))
        lines.append("  ".join(cells).rstrip())
    return lines


# --- options the commands that run agents share (run, audit) ---------------------------
executor_option = click.option("--executor", default=None, help="Where attempts run: local or ray.")
ray_address_option = click.option(
    "--ray-address",
    default=None,
    help="With --executor ray: the cluster's HOST:PORT (else RAY_ADDRESS, [run.ray] address).",
)
concurrency_option = click.option(
    "--concurrency", type=click.IntRange(1, 1024), default=None, help="Attempts running at once."
)
progress_option = click.option(
    "--progress",
    type=click.Choice(["auto", "bar", "plain", "none"]),
    default="auto",
    show_default=True,
    help="Progress display: bar (on standard error), plain (a line at the start, at the "
    "end, at most one every 5 s between, and one per error), none; auto is bar on a "
    "terminal, plain elsewhere.",
)
timeout_option = click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds per attempt.",
)


# --- the team's object storage (push, pull, and the questions across runs) ------------
remote_option = click.option(
    "--remote",
    "url",
    default=None,
    metavar="URL",
    help="s3://bucket/prefix or file:///folder (default: [results] remote).",
)
from_remote_option = click.option(
    "--from-remote",
    is_flag=True,
    help="Ask the runs published to the team's remote ([results] remote, or --remote URL) "
    "instead of local ones; only their index files are fetched, never attempt records.",
)


def echo_mirror_stats(stats: MirrorStats) -> None:
    """What bringing a remote's index up to date did (evalcase.results.remote_index), on
    stderr: what was left out, fetched and left on the remote."""
    for problem in stats.problems:
        click.echo(f"evalcase: warning: {stats.url}: left out {problem}", err=True)
    click.echo(
        f"evalcase: {stats.url}: {stats.runs} published run(s); fetched "
        f"{stats.manifests_read} manifest(s) and {stats.files_fetched} index file(s) "
        f"({stats.bytes_fetched:,} bytes); {stats.bytes_skipped:,} bytes of attempts "
        "and reports left on the remote",
        err=True,
    )
