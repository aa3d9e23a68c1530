"""Keys read once: the runner holds the model keys in memory, not in its environment.

``evalcase run`` reads the variables that hold the keys it and the judge use (every
``api_key_env`` of the configuration, ``OPENAI_API_KEY`` and the other default names: the
list :func:`evalcase.run.isolation.key_variables` gives) once, when the run starts, and
takes them out of its own environment for as long as the run lasts. So no process the
runner starts meanwhile (a git reader, a CEL worker, an agent's reaper) inherits a key in
its environment, where any other process of the same user could read it in
``/proc/<pid>/environ``. The runner's own ``/proc`` entry is closed by making it
non-dumpable (:func:`evalcase.run.isolation.protect_runner`).

Readers of a key (the ``openai:`` adapter, the user simulator, the scrubber of records)
ask :func:`get` or :func:`environ`, which see the held keys and the environment alike.
At the end of the run the keys go back into the environment (grading in the same
command, and code calling the runner in-process, find them where they were).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Iterator

_HELD: dict[str, str] = {}
_LOCK = threading.Lock()


def get(name: str) -> str | None:
    """The value of variable ``name``: the environment's, else the one held."""
    value = os.environ.get(name)
    if value is not None:
        return value
    with _LOCK:
        return _HELD.get(name)


def environ() -> dict[str, str]:
    """The environment as it was before keys were held: ``os.environ`` plus the keys."""
    with _LOCK:
        return {**_HELD, **os.environ}


@contextlib.contextmanager
def held(names: Iterable[str]) -> Iterator[list[str]]:
    """Take the variables ``names`` out of the environment into memory while the block
    runs (yields the names taken), and put them back afterwards."""
    taken: list[str] = []
    with _LOCK:
        for name in names:
            value = os.environ.pop(name, None)
            if value is not None:
                _HELD[name] = value
                taken.append(name)
    try:
        yield taken
    finally:
        with _LOCK:
            for name in taken:
                value = _HELD.pop(name, None)
                if value is not None:
                    os.environ.setdefault(name, value)
