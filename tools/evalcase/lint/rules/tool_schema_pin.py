"""A stale ``tool_schema`` pin, a pin for a tool not offered, or an offered tool unpinned.

``tool_schema`` records, for each available tool, the ``fixture_version`` of the tool
definition the case's expectations were written against (docs/fields.md). When the
definition moves on (new required argument, renamed parameter) the pin no longer matches
and the expectations must be reviewed against the new definition before the pin is
updated. A pin for a tool that is not among the available tools is left over from an
edit; in a case that has ``tool_schema``, an available tool without a pin is reported
where it is offered.

Passing::

    # fixtures/tool/refund_submit.yaml: fixture_version: v2
    available_tools: [refund_submit]
    tool_schema: {refund_submit: v2}

Failing::

    # fixtures/tool/refund_submit.yaml: fixture_version: v2
    available_tools: [refund_submit]
    tool_schema: {refund_submit: v1, order_lookup: v1}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import listing, tool_definitions
from evalcase.model import Finding, Severity

CODE = "EC309"
NAME = "tool-schema-pin"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

_OFFERED = frozenset({"available_tools", "environment.tools"})


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    tools = tool_definitions(index)
    versions = {
        name: tool.fixture_version[0]
        for name, tool in tools.items()
        if tool.fixture_version is not None and isinstance(tool.fixture_version[0], str)
    }
    for case in index.checked_cases():
        # The raw text is enough to know the field is there; decoding it per case is not.
        if not case.tool_pins and '"tool_schema":' not in case.field_digest_text:
            continue
        offered = [r for r in case.refs if r[0] in _OFFERED]
        offered_names = {r[2] for r in offered}
        pinned = {pin[0]: pin[1] for pin in case.tool_pins}
        if offered_names == pinned.keys() and all(
            versions.get(tool, version) == version for tool, version in pinned.items()
        ):
            continue  # the common case: every offered tool pinned at its current version
        seen: set[str] = set()
        for field, _, tool, line, col in offered:
            if tool in pinned or tool in seen:
                continue
            seen.add(tool)
            version = versions.get(tool)
            hint = f" (add {tool}: {version})" if version else ""
            yield report(
                case.path,
                line,
                col,
                f"{tool!r} (in {field}) has no pin in tool_schema; pin every available tool "
                f"to the definition version the expectations were written against{hint}",
            )
        for i, (tool, version, line, col) in enumerate(case.tool_pins):
            if tool not in offered_names:
                yield report(
                    case.path,
                    line,
                    col,
                    f"tool_schema pins {tool!r}, which is not among the case's available "
                    f"tools ({listing(offered_names) or 'none'}); remove the pin or offer the "
                    "tool",
                )
                continue
            current = versions.get(tool)
            if current is None or current == version:
                continue  # no such tool: EC301 / EC302 where it is offered
            vline, vcol = case.pin_values[i] if i < len(case.pin_values) else (line, col)
            yield report(
                case.path,
                vline,
                vcol,
                f"tool_schema pins {tool!r} at {version} but its definition "
                f"({tools[tool].path}) is {current}; review the expectations for this tool "
                f"against {current}, then update the pin",
            )
