"""The bundled crm_export tool made to call a shared CEL definition (fixtures/cel): the
setup of the tests of `uses` (loading, versioning)."""

from __future__ import annotations

from pathlib import Path

CRM_RULES = """fixture_id: crm_rules
fixture_version: v1
kind: cel
description: Shared CRM conditions.
source: synthetic
desensitized: true
data:
  definitions:
    is_all:
      params: [scope]
      expr: 'scope == "all"'
"""
TOOL = "fixtures/tool/crm_export.yaml"
RULES = "fixtures/cel/crm_rules.yaml"


def use_crm_rules(repo: Path) -> Path:
    """crm_export's ``when: {scope: all}`` becomes ``is_all(args.scope)`` from the
    crm_rules fixture, written beside it: the rules fixture's path."""
    tool = repo / TOOL
    text = tool.read_text("utf-8")
    for old in ("  side_effect: true\n", "when: {scope: all}"):
        assert old in text, f"{old!r} not in {TOOL}"
    tool.write_text(
        text.replace("  side_effect: true\n", "  side_effect: true\n  uses: [crm_rules]\n", 1)
        .replace("when: {scope: all}", "when: 'is_all(args.scope)'", 1),
        "utf-8",
    )  # fmt: skip
    rules = repo / RULES
    rules.parent.mkdir()
    rules.write_text(CRM_RULES, "utf-8")
    return rules
