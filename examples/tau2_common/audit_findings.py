#!/usr/bin/env python3
"""The findings of an ``evalcase audit --format json`` output, one Markdown row a case.

    evalcase audit tau2_retail --format json > audit.json
    python examples/tau2_common/audit_findings.py audit.json
    python examples/tau2_common/audit_findings.py --mutants audit.json

Each row: the tau2 task, the outcome of every agent that passes, the hard graders that
passed them, the other findings (a gold that fails). The classification column of
docs/tau2-audit.md (a refusal to declare, or a reward hole) is a reader's judgement of
each task and is written there by hand.

``--mutants`` prints the gold mutants' counts instead (docs/tau2-audit.md, "Gold
mutants"): drop-one mutants by outcome, the ones that pass by tool and actor (with their
tasks), foreign writes by tool and outcome, the collateral_damage findings, the write
tools skipped (their warnings), and the cases flagged by mutants only.
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


def _task(case_id: str) -> int:
    return int(case_id.rsplit("_", 1)[1])


def mutant_counts(audit: dict[str, Any]) -> list[str]:
    drops: dict[str, int] = {}
    passing: dict[tuple[str, str], list[int]] = {}
    foreign: dict[tuple[str, str], int] = {}
    skipped: dict[str, int] = {}
    damage: dict[str, list[int]] = {}
    only = 0
    for case_id, case in sorted(audit.items()):
        task = _task(case_id)
        for m in case.get("mutants") or []:
            if m["kind"] == "drop":
                drops[m["outcome"]] = drops.get(m["outcome"], 0) + 1
                if m["outcome"] == "passes":
                    passing.setdefault((m["tool"], m.get("actor", "agent")), []).append(task)
            else:
                key = (m["tool"], m["outcome"])
                foreign[key] = foreign.get(key, 0) + 1
        for w in case.get("warnings") or []:
            if w.startswith("no foreign write with "):
                tool = w.split()[4].rstrip(",")
                skipped[tool] = skipped.get(tool, 0) + 1
        kinds = {f.get("kind") for f in case.get("findings") or []}
        for f in case.get("findings") or []:
            if f.get("kind") == "collateral_damage":
                tool = f["reason"].split("the gold plus ", 1)[1].split(" on ", 1)[0]
                damage.setdefault(tool, []).append(task)
        if kinds and kinds <= {"drop_passes", "collateral_damage"}:
            only += 1
    out = [f"drop-one mutants: {sum(drops.values())}, by outcome {dict(sorted(drops.items()))}"]
    for (tool, actor), tasks in sorted(passing.items()):
        out.append(f"  passes without {tool} ({actor}): {len(tasks)}, tasks {tasks}")
    tools = sorted({t for t, _ in foreign})
    out.append(f"foreign writes: {sum(foreign.values())}")
    for tool in tools:
        by = {o: n for (t, o), n in sorted(foreign.items()) if t == tool}
        out.append(f"  {tool}: {by}")
    out.append(f"collateral_damage findings: {sum(len(v) for v in damage.values())}")
    for tool, tasks in sorted(damage.items()):
        out.append(f"  {tool}: {len(tasks)} cases")
    out.append(f"write tools skipped (warnings): {dict(sorted(skipped.items()))}")
    out.append(f"cases flagged by mutants only: {only}")
    return out


def main() -> int:
    if sys.argv[1:2] == ["--mutants"]:
        print("\n".join(mutant_counts(json.loads(Path(sys.argv[2]).read_text()))))
        return 0
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
