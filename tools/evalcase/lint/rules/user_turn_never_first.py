"""A reactive script whose first user turn can never be sent.

The next user turn is the first unused scripted turn whose ``when`` holds. Before the
agent has said anything, ``message`` is ``""``, ``calls`` is empty and ``turn`` is 0: when
no scripted turn's ``when`` holds then, and the case has no ``user_simulator`` to open the
conversation, not a single turn is sent and the attempt measures nothing. The ``when`` of
the first turn is evaluated over those values.

Passing::

    interaction:
      - {role: user, content: "Hi, I want to cancel a reservation."}
      - {role: user, content: "It is EHGLP3.", when: 'message.contains("reservation")'}

Failing::

    interaction:
      - {role: user, content: "It is EHGLP3.", when: 'message.contains("reservation")'}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.lint.user_script import script
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC616"
NAME = "user-turn-never-first"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)
START = {"message": "", "calls": [], "turn": 0}


def _holds_at_start(source: str) -> bool | None:
    """True/False, or None when it cannot be told (a syntax error: EC601's)."""
    from evalcase.contract import cel

    value = cel.evaluate(source, START)
    if isinstance(value, cel.CelError | cel.EvalError):
        return None
    return value is True


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or isinstance(data.get("user_simulator"), dict):
        return
    turns = script(data)
    if not turns:
        return
    for _, turn in turns:
        when = turn.get("when")
        if not isinstance(when, str):
            return  # a turn without when is sent first
        if _holds_at_start(when) is not False:
            return
    index = turns[0][0]
    line, col = doc.locate(("interaction", index, "when"))
    yield report(
        doc.path,
        line,
        col,
        'no scripted user turn\'s when holds before the agent has spoken (message is "", '
        "calls is empty, turn is 0): no turn would ever be sent; drop the first turn's "
        "when, or add a user_simulator to open the conversation",
    )
