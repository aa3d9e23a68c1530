"""SARIF 2.1.0, for code-scanning dashboards: repo-relative URIs, stable rule ids."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from evalcase.lint.reporters import ReportContext
from evalcase.model import Finding, Severity

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


def render(findings: Sequence[Finding], ctx: ReportContext) -> str:
    from evalcase.lint.rules import RULES

    codes = sorted(RULES)
    rule_index = {code: i for i, code in enumerate(codes)}
    rules: list[dict[str, Any]] = [
        {
            "id": code,
            "name": RULES[code].name,
            "shortDescription": {"text": RULES[code].summary},
            "fullDescription": {"text": RULES[code].doc.strip()},
            "defaultConfiguration": {"level": _LEVEL[RULES[code].severity]},
            "helpUri": f"https://evalcase.invalid/rules/{code}",
        }
        for code in codes
    ]
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": _LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
                    }
                }
            ],
        }
        if f.code in rule_index:
            result["ruleIndex"] = rule_index[f.code]
        if f.related:
            result["relatedLocations"] = [
                {
                    "id": i,
                    "physicalLocation": {
                        "artifactLocation": {"uri": p, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": max(ln, 1), "startColumn": max(c, 1)},
                    },
                }
                for i, (p, ln, c) in enumerate(f.related)
            ]
        results.append(result)
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "evalcase",
                        "version": ctx.tool_version,
                        "informationUri": "https://evalcase.invalid/",
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {"%SRCROOT%": {"uri": ctx.root.absolute().as_uri() + "/"}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, ensure_ascii=False, indent=2) + "\n"
