#!/usr/bin/env python3
"""The findings of an ``evalcase audit --format json`` output, one Markdown row a case.

    evalcase audit tau2_retail --format json > audit.json
    python examples/tau2_common/audit_findings.py audit.json

Each row: the tau2 task, the outcome of every agent that passes, the hard graders that
passed them, the other findings (a gold that fails). The classification column of
docs/tau2-audit.md (a refusal to declare, or a reward hole) is a reader's judgement of
each task and is written there by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def rows(audit: dict[str, Any]) -> list[str]:
    out = []
    for case_id, case in sorted(audit.items()):
        findings = case.get("findings") or []
        if not findings:
            continue
        task = str(int(case_id.rsplit("_", 1)[1]))
        passing = [f for f in findings if f.get("kind") == "panel_passes"]
        agents = ", ".join(f"`{f['agent']}`" for f in passing)
        hard = sorted(
            {
                g["grader"]
                for f in passing
                for g in case["agents"][f["agent"]]["graders"]
                if g.get("hard") and g.get("verdict") == "pass"
            }
        )
        other = "; ".join(
            f"{f['kind']} ({', '.join(f.get('graders') or [])}): {f.get('reason', '')[:120]}"
            for f in findings
            if f.get("kind") != "panel_passes"
        )
        out.append(f"| {task} | {agents} | {', '.join(hard)} | {other} |")
    return out


def main() -> int:
    audit = json.loads(Path(sys.argv[1]).read_text())
    print("| task | agents that pass | hard graders that passed them | other findings |")
    print("|---|---|---|---|")
    print("\n".join(rows(audit)))
    statuses: dict[str, int] = {}
    for case in audit.values():
        statuses[case["status"]] = statuses.get(case["status"], 0) + 1
    print(f"\n{len(audit)} cases: {statuses}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
