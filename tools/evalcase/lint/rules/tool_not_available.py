"""An expected call, expected arguments, a side-effect policy or a fault for a tool not offered.

The agent can only call the tools a case makes available (``available_tools`` and
``environment.tools``). Expecting a call to any other tool makes the case impossible to
pass, and a policy or an injected fault (``environment.faults``) for a tool that is not
offered does nothing: each is usually a typo or a tool removed from the list but not from
the expectations.

``forbidden_tools`` is deliberately not checked here: forbidding a tool that is not
offered is legitimate (the case stays meaningful if the tool list grows, and the
no_forbidden_tool check watches every call). Forbidden tools must still exist as tool
definitions (EC301, EC302). Pins in ``tool_schema`` are checked by EC309. An expected
call of the simulated user (``actor: user``) or of one of its tools (``user_simulator.tools``)
is checked by EC618 instead.

Passing::

    available_tools: [order_lookup, refund_submit]
    expected_tool_sequence: [order_lookup, refund_submit]

Failing::

    available_tools: [order_lookup]
    expected_tool_sequence: [order_lookup, refund_submit]
"""

from collections.abc import Iterable

from evalcase.index.facts import expected_call_paths
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, did_you_mean, listing, string_items
from evalcase.loader import Document, Path
from evalcase.model import FileKind, Finding, Severity

CODE = "EC303"
NAME = "tool-not-available"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    offered = {t for _, t, _, _ in string_items(doc, ("available_tools",))}
    offered |= {t for _, t, _, _ in string_items(doc, ("environment", "tools"))}
    shown = listing(offered) if offered else "none"

    def problem(what: str, tool: str) -> str:
        return (
            f"{what} {tool!r}, which is not among the case's available tools ({shown})"
            f"{did_you_mean(tool, offered)}; add it to available_tools or correct the name"
        )

    for _, tool, line, col in string_items(doc, ("expected_tool_sequence",)):
        if tool not in offered:
            yield report(doc.path, line, col, problem("expected_tool_sequence calls", tool))
    simulator = data.get("user_simulator")
    user_tools = simulator.get("tools") if isinstance(simulator, dict) else None
    mine = set(user_tools) if isinstance(user_tools, list) else set()
    for call_path in expected_call_paths(data):
        tool = doc.get((*call_path, "tool"))
        if doc.get((*call_path, "actor")) == "user" or (isinstance(tool, str) and tool in mine):
            continue  # the user's own tools: EC618 checks their actor
        if isinstance(tool, str) and tool not in offered:
            line, col = doc.locate((*call_path, "tool"))
            yield report(doc.path, line, col, problem("expected_calls calls", tool))
    args = data.get("expected_args")
    if isinstance(args, dict):
        for tool in args:
            if isinstance(tool, str) and tool not in offered:
                line, col = doc.locate_key(("expected_args", tool))
                yield report(doc.path, line, col, problem("expected_args are given for", tool))
    policy = data.get("side_effect_policy")
    paths: list[Path]
    if isinstance(policy, dict):
        paths = [("side_effect_policy", "tool")]
    elif isinstance(policy, list):
        paths = [("side_effect_policy", i, "tool") for i in range(len(policy))]
    else:
        paths = []
    for path in paths:
        tool = doc.get(path)
        if isinstance(tool, str) and tool not in offered:
            line, col = doc.locate(path)
            yield report(doc.path, line, col, problem("side_effect_policy governs", tool))
    faults = doc.get(("environment", "faults"))
    for i in range(len(faults) if isinstance(faults, list) else 0):
        tool = doc.get(("environment", "faults", i, "tool"))
        if isinstance(tool, str) and tool not in offered:
            line, col = doc.locate(("environment", "faults", i, "tool"))
            yield report(doc.path, line, col, problem("environment.faults injects into", tool))
