"""A side-effect tool offered without a policy, or a policy for a tool without side effects.

Tools that change business state (submit a refund, change an account, delete a record)
need stricter cases (docs/fields.md): a ``side_effect_policy`` with the preconditions,
the confirmation, the idempotency key, the allowed and forbidden state transitions and
the audit record. A case that makes such a tool available (``available_tools`` or
``environment.tools``) must carry a policy for it, even when the tool is forbidden: the
policy says what a wrong call would break. Whether a tool has side effects is what its
definition says (``side_effect: true`` in ``fixtures/tool/<tool>.yaml``); a policy naming
a tool whose definition says ``side_effect: false`` is a mistake in one of the two.
A policy declared once in the tool's fixture (``data.side_effect_policy``) governs every
case that offers the tool, unless the case gives its own for it (EC326 checks that one).

Passing::

    available_tools: [order_lookup, refund_submit]
    side_effect_policy:
      tool: refund_submit
      ...

Failing::

    available_tools: [order_lookup, refund_submit]    # refund_submit has side effects
    side_effect_policy:
      tool: order_lookup                               # and order_lookup has none
      ...
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import tool_definitions
from evalcase.model import Finding, Severity

CODE = "EC305"
NAME = "side-effect-policy"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

_OFFERED = frozenset({"available_tools", "environment.tools"})
_POLICY = "side_effect_policy.tool"


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    tools = tool_definitions(index)
    effects = {name: tool.side_effect for name, tool in tools.items()}
    changes_state = {name for name, effect in effects.items() if effect}
    for case in index.checked_cases():
        offered = [r for r in case.refs if r[2] in changes_state and r[0] in _OFFERED]
        policies = [r for r in case.refs if r[0] == _POLICY]
        if not offered and not policies:
            continue
        governed = {r[2] for r in policies}
        # A policy the tool's own fixture declares governs every case offering the tool
        # (evalcase.contract.build.resolve_policies).
        governed |= {r[2] for r in offered if r[2] in tools and tools[r[2]].policy_at}
        for _, _, tool, line, col in policies:
            if effects.get(tool) is False:
                yield report(
                    case.path,
                    line,
                    col,
                    f"side_effect_policy is for {tool!r}, whose definition "
                    f"({tools[tool].path}) says side_effect: false; policies govern tools that "
                    "change state: point it at the side-effect tool, or correct the tool "
                    "definition",
                )
        seen: set[str] = set()
        for field, _, tool, line, col in offered:
            if tool in governed or tool in seen:
                continue
            seen.add(tool)
            yield report(
                case.path,
                line,
                col,
                f"{tool!r} (in {field}) has side effects (side_effect: true in "
                f"{tools[tool].path}: a call changes state, if only a session's) but the "
                "case has no side_effect_policy for it; add one with precondition, "
                "confirmation_required, allowed and forbidden state transitions and "
                "audit_requirement",
            )
