"""A side-effect policy declared in a tool's fixture that cannot govern the tool.

A benchmark states its side-effect rules once per tool (tau2-bench's airline policy:
"obtain explicit user confirmation before booking, modifying or cancelling"), so a tool
fixture may carry the policy itself, in ``data.side_effect_policy`` (the same fields as a
case's ``side_effect_policy``). Every case offering the tool is then graded with it, and
EC305 counts it as the case's policy; a case's own entry for the tool replaces it whole
(``evalcase.contract.build.resolve_policies``: lint and the grader resolve policies
there). The policy must name the fixture's own tool (``tool:``), and the tool must have
side effects (``side_effect: true``): a policy of a read-only tool checks nothing.

Passing::

    # fixtures/tool/cancel_reservation.yaml
    data:
      name: cancel_reservation
      side_effect: true
      side_effect_policy:
        tool: cancel_reservation
        precondition: ['session.user_authenticated']
        confirmation_required: true
        ...

Failing::

    data:
      name: cancel_reservation
      side_effect: false                 # then nothing to govern
      side_effect_policy:
        tool: book_reservation           # another tool's policy
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import tool_definitions
from evalcase.model import Finding, Severity

CODE = "EC326"
NAME = "tool-policy-misuse"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for fixture_id, tool in sorted(tool_definitions(index).items()):
        if tool.policy_at is None:
            continue
        name = str(tool.tool_name[0]) if tool.tool_name else fixture_id
        line, col = tool.policy_at
        if tool.policy_tool is not None and tool.policy_tool != name:
            yield report(
                tool.path,
                line,
                col,
                f"data.side_effect_policy names tool {tool.policy_tool!r}, but this fixture "
                f"defines {name!r}: a tool's own policy governs that tool only; write "
                f"tool: {name}, or move the policy to {tool.policy_tool!r}'s fixture",
            )
        if tool.side_effect is False:
            yield report(
                tool.path,
                line,
                col,
                f"{name!r} declares a side_effect_policy but side_effect: false: a policy "
                "governs calls that change state; set side_effect: true, or remove the policy",
            )
