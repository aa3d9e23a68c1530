"""A conversation turn with ``role: tool`` in a case's ``interaction`` or a conversation
fixture's ``turns``.

The contract gives an agent system, user and assistant turns only (``AgentView.history``
and ``user_turns``): a tool turn written into a conversation would reach no agent, no
runner adapter and no export (Inspect, OpenAI evals and promptfoo samples are chat
messages without tool-call IDs to pair a result with). So it is refused, not dropped
silently. A tool result belongs where the agent receives it: a tool fixture whose
response the runner returns when the agent calls the tool (``environment.tools``), and,
if the history must show an earlier result, an assistant turn that states it.

Passing::

    interaction:
      - {role: user, content: 我的退款到哪一步了？}

Failing::

    interaction:
      - {role: user, content: 我的退款到哪一步了？}
      - {role: tool, content: '{"status": "processing"}'}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC350"
NAME = "tool-turn-not-carried"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

WHERE = {FileKind.CASE: ("interaction",), FileKind.FIXTURE: ("data", "turns")}


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    path = WHERE.get(ctx.source.kind)
    if not doc.ok or path is None or not isinstance(doc.data, dict):
        return
    if ctx.source.kind is FileKind.FIXTURE and doc.data.get("kind") != "conversation":
        return
    turns = doc.get(path)
    if not isinstance(turns, list):
        return
    for i, turn in enumerate(turns):
        if isinstance(turn, dict) and turn.get("role") == "tool":
            line, col = doc.locate((*path, i, "role"))
            yield report(
                doc.path,
                line,
                col,
                f"{'.'.join(path)}[{i}] has role: tool, which no agent, runner or export "
                "receives (agents get system, user and assistant turns); give the result "
                "through a tool fixture the agent calls, or state it in an assistant turn",
            )
