"""A side-effect policy declared in a tool's fixture that cannot govern the tool.

A benchmark states its side-effect rules once per tool (tau2-bench's airline policy:
"obtain explicit user confirmation before booking, modifying or cancelling"), so a tool
fixture may carry the policy itself, in ``data.side_effect_policy`` (the same fields as a
case's ``side_effect_policy``). Every case offering the tool is then graded with it, and
EC305 counts it as the case's policy; a case's own entry for the tool replaces it whole
(``evalcase.contract.build.resolve_policies``: lint and the grader resolve policies
there). The policy must name the fixture's own tool (``tool:``), and the tool must have
side effects (``side_effect: true``): a policy of a read-only tool checks nothing. A case
configuring the ``side_effect_policy`` grader with no policy of its own, none of whose
offered tools declares one, is reported here with the grader's own reason (EC320 cannot
see the tools' fixtures from one file).

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


_OFFERED = frozenset({"available_tools", "environment.tools"})


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    tools = tool_definitions(index)
    for case in index.checked_cases():
        if case.policy_grader_at is None:
            continue
        offered = {r[2] for r in case.refs if r[0] in _OFFERED}
        if any(t in tools and tools[t].policy_at for t in offered):
            continue
        from evalcase.grade.graders.side_effect_policy import NO_POLICY

        yield report(
            case.path,
            *case.policy_grader_at,
            f"grader 'side_effect_policy' cannot grade this case: {NO_POLICY}; every "
            "attempt would end in grader_error: configure it, or remove the grader",
        )
    for fixture_id, tool in sorted(tools.items()):
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
