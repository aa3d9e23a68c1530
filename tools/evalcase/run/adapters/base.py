"""What an adapter is: a way to reach an agent for one attempt.

``open(target, options, job)`` returns a :class:`Session`; the runner calls
``session.reply(request, deadline)`` with the whole conversation so far (see
:mod:`evalcase.run.protocol`) and gets one assistant :class:`~evalcase.run.protocol.Reply`,
or an :class:`~evalcase.run.protocol.AgentFault` that becomes the attempt's error.
``deadline`` is a ``time.monotonic()`` value: a reply later than that is a ``timeout``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from evalcase.run.protocol import Reply

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob


class Session(Protocol):
    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply: ...

    def close(self) -> None: ...


class Opener(Protocol):
    def __call__(self, target: str, options: Mapping[str, Any], job: AttemptJob) -> Session: ...
