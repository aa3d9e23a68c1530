"""Reports of a recorded run: the four files, report.json against its schema, and every
figure of report.json recomputed independently from grades.jsonl."""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evalcase.loader import load
from tests.grade.runs import (
    check_008,
    crashed,
    duplicate_003,
    gift_observation,
    refund_repo,
    write_run,
)
from tests.helpers import REPO_ROOT, invoke

SCHEMA = json.loads((REPO_ROOT / "schemas" / "report.schema.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Any]:
    repo, commit = refund_repo(tmp_path_factory.mktemp("report"))
    attempts = [
        check_008(True, 1),
        check_008(False, 2),
        check_008(True, 3),  # flaky P1
        duplicate_003(False, 1),
        duplicate_003(False, 2),  # P0 fails (forbidden tool)
        gift_observation(1),  # observation: human pending, never counted
        crashed("llm_instruction_001", "agent_exit"),  # agent crashed: fail
        crashed("refund_eligibility_001", "worker_lost"),  # environment: error
    ]
    run_dir = write_run(repo, commit, "run-a", attempts)
    proc = invoke("grade", "run-a", cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the P0 gate fails
    return repo, repo / "reports" / commit / "run-a", run_dir


def test_four_files_and_the_schema(graded: tuple[Path, Path, Path]) -> None:
    _, report_dir, _ = graded
    for name in ("grades.jsonl", "report.json", "report.md", "report.html"):
        assert (report_dir / name).is_file(), name
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    errors = [e.message for e in Draft202012Validator(SCHEMA).iter_errors(report)]
    assert not errors
    assert len((report_dir / "report.md").read_text("utf-8")) < 65_536  # a PR comment's limit


def _attempt_verdict(lines: list[dict[str, Any]]) -> tuple[str, float]:
    scored = [x for x in lines if x["verdict"] in ("pass", "fail")]
    weight = sum(x["weight"] for x in scored)
    score = sum(x["weight"] * x["score"] for x in scored) / weight if weight else 0.0
    verdicts = {x["verdict"] for x in lines}
    if any(x["verdict"] == "fail" and x["hard"] for x in lines):
        return "fail", score
    for v in ("error", "pending"):
        if v in verdicts:
            return v, score
    return "pass", score


def _rates(cases: list[dict[str, Any]]) -> dict[str, Any]:
    counted = [c for c in cases if not c["observation"]]
    out: dict[str, Any] = {"cases": len(counted), "attempts": sum(len(c["v"]) for c in counted)}
    for name, f in (
        ("pass@1", lambda v: v.count("pass") / len(v)),
        ("pass@k", lambda v: float("pass" in v)),
        ("pass^k", lambda v: float(all(x == "pass" for x in v))),
    ):
        out[name] = round(sum(f(c["v"]) for c in counted) / len(counted), 6) if counted else None
    return out


def test_every_figure_recomputed_from_grades(graded: tuple[Path, Path, Path]) -> None:
    repo, report_dir, run_dir = graded
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    lines = [json.loads(x) for x in (report_dir / "grades.jsonl").read_text("utf-8").splitlines()]
    run_attempts = [json.loads(x) for x in (run_dir / "attempts.jsonl").read_text().splitlines()]
    by_attempt: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for line in lines:
        by_attempt[(line["case_id"], line["attempt"])].append(line)
    status_error = {
        (a["case_id"], a["attempt"]): a["error"]["kind"]
        for a in run_attempts
        if a["status"] == "error"
    }

    # attempts: verdicts and scores
    verdicts: dict[tuple[str, int], str] = {}
    for key, group in by_attempt.items():
        verdict, score = _attempt_verdict(group)
        if key in status_error:  # the runner's error overrides: agent fault fails, infra errs
            verdict = "error" if status_error[key] in ("worker_lost", "adapter") else "fail"
            score = 0.0
        verdicts[key] = verdict
        row = next(a for a in report["attempts"] if (a["case_id"], a["attempt"]) == key)
        assert row["verdict"] == verdict, key
        assert row["score"] == pytest.approx(score, abs=1e-6)
    assert len(report["attempts"]) == len(by_attempt) == len(run_attempts)

    # cases
    metas = {c["case_id"]: c for c in report["cases"]}
    cases = []
    for case_id in sorted({k[0] for k in verdicts}):
        v = [verdicts[k] for k in sorted(k for k in verdicts if k[0] == case_id)]
        meta = metas[case_id]
        cases.append({"id": case_id, "v": v, "observation": meta["observation"], "meta": meta})
        assert meta["verdicts"] == v
        assert meta["passed"] == v.count("pass")
        assert meta["pass@1"] == pytest.approx(v.count("pass") / len(v))
        assert meta["pass@k"] == float("pass" in v)
        assert meta["pass^k"] == float(all(x == "pass" for x in v))
    assert {c["id"] for c in cases} == set(metas)

    # summary
    expected = _rates(cases)
    for key, value in expected.items():
        assert report["summary"][key] == value, key
    assert report["summary"]["stable_pass_rate"] == expected["pass^k"]
    assert report["summary"]["observation_cases"] == sum(c["observation"] for c in cases)

    # slices
    fields = {
        "risk_level": lambda m: [m["risk_level"]],
        "case_type": lambda m: m["case_types"],
        "ability_tag": lambda m: m["ability_tags"],
        "scenario": lambda m: [m["scenario"]],
        "tool": lambda m: m["tools"],
        "dataset_role": lambda m: m["dataset_roles"],
        "failure_class": lambda m: m["failure_classes"],
    }
    for key, values_of in fields.items():
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for c in cases:
            for value in dict.fromkeys(values_of(c["meta"])):
                if value:
                    groups[value].append(c)
        assert set(report["slices"][key]) == set(groups), key
        for value, members in groups.items():
            got = report["slices"][key][value]
            for name, want in _rates(members).items():
                assert got[name] == want, (key, value, name)

    # gates, from the manifest as written
    manifest = load(
        "dataset.yaml", (repo / "datasets/refund_regression_set/dataset.yaml").read_bytes()
    ).data
    suites = manifest["suites"]
    for gate, got in zip(manifest["gates"], report["gates"], strict=True):
        members = [c for c in cases if not c["observation"]]
        if "risk_levels" in gate:
            members = [c for c in members if c["meta"]["risk_level"] in gate["risk_levels"]]
        if "suite" in gate:
            suite = suites[gate["suite"]]
            checks = [
                ("tags", "tags"),
                ("dataset_roles", "dataset_roles"),
                ("risk_levels", "risk_level"),
                ("case_types", "case_types"),
            ]

            def member(
                m: dict[str, Any],
                suite: dict[str, Any] = suite,
                checks: list[tuple[str, str]] = checks,
            ) -> bool:
                for k, f in checks:
                    if k in suite:
                        have = m[f] if isinstance(m[f], list) else [m[f]]
                        if not set(suite[k]) & set(have):
                            return False
                return True

            members = [c for c in members if member(c["meta"])]
        metric = gate.get("metric", "pass@1")
        assert got["name"] == gate["name"] and got["metric"] == metric
        assert got["cases"] == len(members)
        if not members:
            # none of the gate's cases ran: skipped when the dataset has some (the
            # run's selection left them out), an error when it has none
            assert got["verdict"] in ("error", "skipped"), got
            assert got["verdict"] == "error" or "none of its" in got["reason"]
            continue
        value = _rates(members)[metric]
        assert got["value"] == value
        if value >= gate["min_pass_rate"]:
            assert got["verdict"] == "pass"
        else:
            assert got["verdict"] in ("fail", "pending", "error")
    assert report["summary"]["gates_passed"] is all(g["verdict"] == "pass" for g in report["gates"])

    # failing cases ordered by risk, then id
    failing = [c for c in cases if c["meta"]["status"] != "pass"]
    order = sorted(
        failing,
        key=lambda c: (
            {"P0": 0, "P1": 1, "P2": 2, "P3": 3}.get(c["meta"]["risk_level"], 9),
            c["id"],
        ),
    )
    assert [c["case_id"] for c in report["failing_cases"]] == [c["id"] for c in order]

    # usage
    tokens = [a["usage"]["prompt_tokens"] + a["usage"]["completion_tokens"] for a in run_attempts]
    latency = sorted(float(a["latency_ms"]) for a in run_attempts)
    usage = report["usage"]
    assert usage["tokens"] == sum(tokens)
    assert usage["latency_ms_p50"] == latency[math.ceil(0.5 * len(latency)) - 1]
    assert usage["latency_ms_p90"] == latency[math.ceil(0.9 * len(latency)) - 1]
    assert usage["cost"] == pytest.approx(sum(a["usage"]["cost"] or 0 for a in run_attempts))
    assert report["calibration"] == []  # no attempt has both a human and a judge verdict


def test_verdicts_of_the_mixed_run(graded: tuple[Path, Path, Path]) -> None:
    _, report_dir, _ = graded
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    status = {c["case_id"]: c["status"] for c in report["cases"]}
    assert status["tool_refund_check_008"] == "flaky"
    assert status["agent_refund_duplicate_submit_003"] == "fail"
    assert status["llm_instruction_001"] == "fail"
    assert status["refund_eligibility_001"] == "error"
    assert status["refund_policy_gift_no_order_001"] == "pending"
    classes = {c["case_id"]: c["failure_classes"] for c in report["cases"]}
    assert classes["agent_refund_duplicate_submit_003"] == ["safety_policy"]
    assert classes["refund_eligibility_001"] == ["environment_fault"]
    p0 = next(g for g in report["gates"] if g["name"] == "p0_safety")
    assert p0["verdict"] == "fail"
    assert "agent_refund_duplicate_submit_003" in p0["failing"]


HOSTILE = (
    "gate | x <img src=x onerror=alert(1)> [click](javascript:alert(1)) ![t](http://t/p.png)\n# h"
)


def test_report_md_escapes_every_name_from_data(graded: tuple[Path, Path, Path]) -> None:
    """Issue 32: gate names (and every other name from data) cannot break report.md's
    tables or inject links, images or HTML where the report is pasted."""
    from markdown_it import MarkdownIt

    from evalcase.report.write import MD_CASE_LIMIT, environment

    _, report_dir, _ = graded
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    assert report["gates"] and report["failing_cases"]
    report["run"]["dataset_id"] = HOSTILE
    for gate in report["gates"]:
        gate["name"] = HOSTILE
    for case in report["failing_cases"]:
        case["case_id"] = "a`b|c" + HOSTILE
        case["prompt"] = HOSTILE
        case["risk_level"] = HOSTILE
    report["slices"]["risk_level"] = {HOSTILE: next(iter(report["slices"]["risk_level"].values()))}
    text = environment().get_template("report.md.j2").render(report=report, limit=MD_CASE_LIMIT)
    html = MarkdownIt("commonmark").enable("table").render(text)
    for injected in ("<img", "<a ", "onerror=alert(1)>", "<h1"):
        assert injected not in html, injected
    tables = html.split("<table>")[1:]
    assert tables
    for table in tables:
        head = len(re.findall(r"<th[ >]", table.split("</thead>")[0]))
        for row in table.split("<tbody>")[1].split("</tr>")[:-1]:
            assert len(re.findall(r"<td[ >]", row)) == head  # no cell split by a '|'
    assert "gate | x &lt;img src=x onerror=alert(1)&gt;" in html  # shown, as text


@pytest.mark.slow
def test_concurrent_gradings_leave_one_whole_default_copy(tmp_path: Path) -> None:
    """Four `evalcase grade RUN` of one run at once: four gradings, and the default copy
    at the run's report paths is exactly the newest grading's files, never a mix."""
    import os
    import subprocess
    import sys

    from evalcase.report.gradings import list_gradings

    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-x", [check_008(True, 1), duplicate_003(False, 1)])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "evalcase", "grade", "run-x"],
            cwd=repo,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode in (0, 1) for p in procs), outs
    folder = repo / "reports" / commit / "run-x"
    gradings = list_gradings(folder)
    assert len(gradings) == 4
    newest = gradings[-1].path
    names = ["report.json", "report.md", "report.html", "grades.jsonl", "grading.json"]
    for name in names:
        assert (folder / name).read_bytes() == (newest / name).read_bytes(), name
    assert not any(p.name.endswith(".writing") for p in (folder / "gradings").iterdir())
