"""Output formats: json parses, github escapes, sarif validates against SARIF 2.1.0."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft4Validator

from evalcase.lint.reporters import ReportContext, get
from evalcase.lint.reporters.github import escape_data, escape_property
from evalcase.model import Finding, Severity

DATA = Path(__file__).resolve().parents[2] / "data"

FINDINGS = [
    Finding("datasets/a/cases/x.yaml", 9, 13, "EC104", Severity.ERROR,
            "risk_level 'P7' is not one of P0, P1, P2, P3", "not-allowed-value"),
    Finding("datasets/a/cases/y,z:1.yaml", 3, 1, "EC002", Severity.ERROR,
            "duplicate key 'a': 100% sure\nsecond line", "duplicate-key",
            (("datasets/a/cases/y,z:1.yaml", 1, 1),)),
    Finding("fixtures/state/s.yaml", 1, 1, "EC011", Severity.WARNING, "CRLF", "text-hygiene"),
]  # fmt: skip
CTX = ReportContext(Path("/tmp/repo"), 3, "0.1.0")


def test_json_output_parses_and_carries_every_field() -> None:
    data = json.loads(get("json")(FINDINGS, CTX))
    assert len(data) == 3
    for item in data:
        assert {"code", "name", "severity", "path", "line", "column", "message"} <= set(item)
    assert data[0]["severity"] == "error" and data[2]["severity"] == "warning"
    assert data[1]["related"] == [{"path": "datasets/a/cases/y,z:1.yaml", "line": 1, "column": 1}]


def test_github_escapes_percent_colon_comma_and_newlines() -> None:
    assert escape_data("100%\r\nx") == "100%25%0D%0Ax"
    assert escape_property("a,b:c%\n") == "a%2Cb%3Ac%25%0A"
    lines = get("github")(FINDINGS, CTX).splitlines()
    assert len(lines) == 3  # a newline in a message never splits a command
    assert lines[0] == (
        "::error file=datasets/a/cases/x.yaml,line=9,col=13,title=EC104 not-allowed-value::"
        "risk_level 'P7' is not one of P0, P1, P2, P3"
    )
    assert "file=datasets/a/cases/y%2Cz%3A1.yaml," in lines[1]
    assert lines[1].endswith("::duplicate key 'a': 100%25 sure%0Asecond line")
    assert lines[2].startswith("::warning ")


def test_sarif_validates_against_the_sarif_2_1_0_schema() -> None:
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text("utf-8"))
    log = json.loads(get("sarif")(FINDINGS, CTX))
    errors = [e.message for e in Draft4Validator(schema).iter_errors(log)]
    assert not errors, errors
    run = log["runs"][0]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["EC104", "EC002", "EC011"]
    uri = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri == {"uri": "datasets/a/cases/x.yaml", "uriBaseId": "%SRCROOT%"}
    rules = run["tool"]["driver"]["rules"]
    assert rules[results[0]["ruleIndex"]]["id"] == "EC104"


def test_sarif_with_no_findings_is_valid() -> None:
    schema = json.loads((DATA / "sarif-schema-2.1.0.json").read_text("utf-8"))
    log = json.loads(get("sarif")([], CTX))
    assert not list(Draft4Validator(schema).iter_errors(log))


def test_text_shows_the_line_with_a_caret(tmp_path: Path) -> None:
    case = tmp_path / "datasets/a/cases/x.yaml"
    case.parent.mkdir(parents=True)
    case.write_text("case_id: x\n" * 8 + "risk_level: P7\n", "utf-8")
    out = get("text")(FINDINGS[:1], ReportContext(tmp_path, 1, "0"))
    lines = out.splitlines()
    assert lines[0].startswith("datasets/a/cases/x.yaml:9:13: EC104 [error]")
    assert lines[1] == "    9 | risk_level: P7"
    assert lines[2] == "      |             ^"
    assert lines[-1].startswith("Found 1 error and 0 warnings in 1 file")
