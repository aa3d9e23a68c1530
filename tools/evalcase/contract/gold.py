"""The gold end state of a case: what replaying its expected calls produces.

``final_state_check: {from_expected_calls: true}`` compares an attempt's final state with
the state that the case's ``expected_calls``, replayed in order on a fresh environment of
the case, leave behind. The replay itself is the runner's (``evalcase.run.gold_replay``: the
real :class:`~evalcase.run.environment.Environment`); graders receive it as a
:data:`Replayer` through their ``GradeContext`` (the grading layer never imports the
runner), so this module only names the value both sides exchange.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evalcase.contract.task import CallPlan, EnvSpec


@dataclass(frozen=True)
class GoldState:
    """The state one plan of expected calls produces, or why it could not be produced
    (``error``; ``call``: the 0-based index of the expected call that failed, if one did)."""

    state: Mapping[str, Any] | None
    error: str | None = None
    call: int | None = None


Replayer = Callable[[EnvSpec, CallPlan], GoldState]
