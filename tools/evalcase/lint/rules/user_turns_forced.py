"""A simulated conversation with scripted user turns that do not react.

In a case with a ``user_simulator`` the next user turn is the first unused scripted turn
whose ``when`` holds, and only when none holds does the simulated user speak. A scripted
turn after the first without ``when`` always holds: it is sent at that point whatever the
agent said, before the simulator has a say, which makes the conversation ambiguous (is it
the script or the simulated user who answers the agent's question?). Give such a turn a
``when``, or leave the rest of the conversation to the simulator.

Passing::

    user_simulator: {instructions: {reason_for_call: Cancel EHGLP3.}}
    interaction:
      - {role: user, content: "Hi, I want to cancel a reservation."}
      - {role: user, content: "It is EHGLP3.", when: 'message.contains("reservation")'}

Failing::

    user_simulator: {instructions: {reason_for_call: Cancel EHGLP3.}}
    interaction:
      - {role: user, content: "Hi, I want to cancel a reservation."}
      - {role: user, content: "It is EHGLP3."}        # sent whatever the agent asked
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.lint.user_script import script
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC614"
NAME = "user-turns-forced"
SEVERITY = Severity.WARNING
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or not isinstance(data.get("user_simulator"), dict):
        return
    for index, turn in script(data)[1:]:
        if isinstance(turn.get("when"), str):
            continue
        line, col = doc.locate(("interaction", index))
        yield report(
            doc.path,
            line,
            col,
            "this scripted user turn has no when: in a simulated conversation it is sent "
            "whatever the agent said, before the simulated user speaks; add a when, or "
            "leave the turn to the simulator",
        )
