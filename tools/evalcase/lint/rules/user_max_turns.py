"""``user_simulator.max_turns`` out of range.

``max_turns`` bounds the user turns of a simulated conversation, scripted and simulated
together: it must be a whole number from 1 to 1000, and not below the number of scripted
user turns (those beyond it would never be sent). A case out of range cannot run.

Passing::

    user_simulator: {instructions: {reason_for_call: Cancel EHGLP3.}, max_turns: 30}

Failing::

    user_simulator: {instructions: {reason_for_call: Cancel EHGLP3.}, max_turns: 0}
"""

from collections.abc import Iterable

from evalcase.contract.task import MAX_TURNS_LIMIT
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.lint.user_script import script
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC615"
NAME = "user-max-turns"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    simulator = data.get("user_simulator") if data is not None else None
    if data is None or not isinstance(simulator, dict) or "max_turns" not in simulator:
        return
    value = simulator["max_turns"]
    line, col = doc.locate(("user_simulator", "max_turns"))
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TURNS_LIMIT:
        yield report(
            doc.path, line, col, f"max_turns must be a whole number from 1 to {MAX_TURNS_LIMIT}"
        )
        return
    scripted = len(script(data))
    if value < scripted:
        yield report(
            doc.path,
            line,
            col,
            f"max_turns is {value}, below the {scripted} scripted user turns: the last "
            f"{scripted - value} would never be sent; raise max_turns",
        )
