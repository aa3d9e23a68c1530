"""The contract itself: the schemas are valid, documented, portable and shipped."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from evalcase.loader import load
from evalcase.schemas import extension_fields, raw_schemas
from tests.helpers import REPO_ROOT

SCHEMA_DIR = REPO_ROOT / "schemas"
SCHEMA_FILES = sorted(SCHEMA_DIR.glob("*.schema.json"))


def _kind_of(path: Path) -> str:
    if path.parent.name == "cases":
        return "case.schema.json"
    if path.name == "dataset.yaml":
        return "dataset.schema.json"
    return "fixture.schema.json"


def example_documents() -> list[tuple[Path, Any]]:
    paths = sorted(REPO_ROOT.glob("datasets/*/cases/*.yaml"))
    paths += sorted(REPO_ROOT.glob("datasets/*/dataset.yaml"))
    paths += sorted(REPO_ROOT.glob("fixtures/*/*.yaml"))
    docs = []
    for path in paths:
        doc = load(str(path), path.read_bytes())
        assert doc.ok, doc.findings
        docs.append((path, doc.data))
    return docs


@pytest.mark.parametrize("schema_file", SCHEMA_FILES, ids=lambda p: p.name)
def test_schema_passes_the_2020_12_metaschema(schema_file: Path) -> None:
    schema = json.loads(schema_file.read_text("utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def _walk_properties(node: Any, where: str) -> list[str]:
    """Every property definition lacking a description, anywhere in a schema.

    Conditions (if/then/else) only refine properties defined elsewhere, so they are skipped.
    """
    missing = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, dict) and "description" not in sub:
                missing.append(f"{where}.properties.{name}")
        for key, sub in node.items():
            if key not in ("if", "then", "else"):
                missing += _walk_properties(sub, f"{where}.{key}")
    elif isinstance(node, list):
        for i, sub in enumerate(node):
            missing += _walk_properties(sub, f"{where}[{i}]")
    return missing


def test_every_property_has_a_description() -> None:
    missing = []
    for schema_file in SCHEMA_FILES:
        missing += _walk_properties(json.loads(schema_file.read_text("utf-8")), schema_file.name)
    assert not missing, "properties without description:\n" + "\n".join(missing)


def test_python_jsonschema_accepts_every_example() -> None:
    registry = Registry().with_resources(
        (p.name, Resource.from_contents(json.loads(p.read_text("utf-8")))) for p in SCHEMA_FILES
    )
    validators = {
        p.name: Draft202012Validator(json.loads(p.read_text("utf-8")), registry=registry)
        for p in SCHEMA_FILES
    }
    errors = [
        f"{path}: {e.message}"
        for path, data in example_documents()
        for e in validators[_kind_of(path)].iter_errors(data)
    ]
    assert not errors, "\n".join(errors)


def test_a_second_independent_implementation_accepts_every_example() -> None:
    """jsonschema-rs (Rust) shares no code with python-jsonschema: the schemas are portable."""
    import jsonschema_rs

    base = "https://schemas.example.invalid/"
    schemas = {p.name: json.loads(p.read_text("utf-8")) for p in SCHEMA_FILES}
    registry = jsonschema_rs.Registry([(base + n, s) for n, s in schemas.items()])
    validators = {
        name: jsonschema_rs.validator_for(schema, registry=registry, base_uri=base + name)
        for name, schema in schemas.items()
    }
    docs = example_documents()
    assert len(docs) > 60
    errors = [
        f"{path}: {e.message}"
        for path, data in docs
        for e in validators[_kind_of(path)].iter_errors(data)
    ]
    assert not errors, "\n".join(errors)


def test_second_implementation_rejects_what_python_rejects() -> None:
    import jsonschema_rs

    base = "https://schemas.example.invalid/"
    schemas = {p.name: json.loads(p.read_text("utf-8")) for p in SCHEMA_FILES}
    registry = jsonschema_rs.Registry([(base + n, s) for n, s in schemas.items()])
    validator = jsonschema_rs.validator_for(
        schemas["case.schema.json"], registry=registry, base_uri=base + "case.schema.json"
    )
    path, case = next((p, d) for p, d in example_documents() if p.parent.name == "cases")
    for mutate in (
        lambda c: c.pop("expected_behavior"),
        lambda c: c.update(risk_level="P7"),
        lambda c: c.update(negtive_behavior=["x"]),
        lambda c: c.update(case_version="v３"),  # full-width digit: [0-9] does not match it
        # any case may use a rag case's field (issue 42.5), in its one shape
        lambda c: c.update(gold_evidence="d"),
    ):
        bad = json.loads(json.dumps(case))
        mutate(bad)
        assert not validator.is_valid(bad), f"{path} mutated should be invalid"


def test_extension_fields_are_mapped_to_their_case_type() -> None:
    fields = extension_fields()
    assert fields["gold_evidence"] == "rag"
    assert fields["expected_args"] == "tool"
    assert fields["final_state_check"] == "agent"
    assert fields["sop"] == "business"
    assert fields["generation_config"] == "llm"


def test_common_case_schema_has_all_19_fields_of_12_10() -> None:
    case = raw_schemas()["case.schema.json"]
    fields_12_10 = [
        "case_id", "case_version", "dataset_id", "dataset_version", "title", "scenario",
        "user_task", "ability_tags", "risk_level", "difficulty", "source", "input", "context",
        "environment", "expected_behavior", "negative_behavior", "rubric", "evaluator_config",
        "metadata",
    ]  # fmt: skip
    assert len(fields_12_10) == 19
    assert set(fields_12_10) <= set(case["properties"])
    optional = {"context", "environment", "negative_behavior"}
    # input is required unless a simulated user opens the conversation (a rule of its own)
    assert set(case["required"]) == set(fields_12_10) - optional - {"input"}
    assert {"if": {"not": {"required": ["user_simulator"]}},
            "then": {"required": ["input"]}} in case["allOf"]  # fmt: skip
    metadata = case["properties"]["metadata"]
    assert set(metadata["required"]) == {
        "dataset_role", "tags", "owner", "review_status", "usage_rights_status",
    }  # fmt: skip


@pytest.mark.slow
def test_the_wheel_ships_the_schemas(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), str(REPO_ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("evalcase-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for schema_file in SCHEMA_FILES:
        packaged = f"evalcase/schemas/{schema_file.name}"
        assert packaged in names
        assert zipfile.ZipFile(wheel).read(packaged) == schema_file.read_bytes()


def test_every_missing_field_of_a_policy_is_reported_in_one_run() -> None:
    from evalcase.schemas import validate

    sample = REPO_ROOT / "tests/rules/samples/EC101/bad/refund_tool_submit_327.yaml"
    doc = load(str(sample), sample.read_bytes())
    messages = sorted(f.message for f in validate(doc, "case") if f.code == "EC101")
    assert messages == [
        "missing required field 'audit_requirement' in side_effect_policy",
        "missing required field 'confirmation_required' in side_effect_policy",
    ]


def _findings(text: str, kind: str) -> list[str]:
    from evalcase.schemas import validate

    doc = load("x.yaml", text.encode())
    assert doc.ok, doc.findings
    return [f.message for f in validate(doc, kind)]


def test_a_tool_fixtures_policy_error_names_no_case_type() -> None:
    # issue 42.5: a fixture's missing policy field is the fixture schema's requirement,
    # not "case type 'rag'" (the fixture schema's second allOf branch)
    text = (
        "fixture_id: t\nfixture_version: v1\nkind: tool\ndescription: d\nsource: s\n"
        "desensitized: true\ndata:\n  name: t\n  side_effect: true\n"
        "  parameters: {type: object}\n  side_effect_policy: {confirmation_required: true}\n"
    )
    messages = [m for m in _findings(text, "fixture") if "missing required field" in m]
    assert messages
    assert not [m for m in messages if "case type" in m], messages


def test_any_case_may_use_another_case_types_fields() -> None:
    # issue 42.5: a tool case with an agent case's initial_state and final_state_check
    # (the specialised schemas are extensions, not owners); the agent's required fields
    # are not required of it.
    base = (REPO_ROOT / "tests/rules/samples/EC327/good/refund_tool_submit_372.yaml").read_text()
    text = base + (
        "initial_state: {fixtures: [order_123]}\n"
        "final_state_check: {type: state_match, unchanged: [orders]}\n"
        "gold_evidence: []\n"
    )
    assert [m for m in _findings(text, "case") if "belongs to" in m or "unknown" in m] == []
