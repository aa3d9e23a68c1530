"""The answer is JSON valid against a schema.

Configuration: grader options ``{type: json_schema, schema: {...}}``, else the case's
``json_schema`` / ``output_schema``. A fenced ```json block is unwrapped first. Passing:
schema ``{type: object, required: [order_id]}``, answer ``{"order_id": "ORDER_6001"}``.
Failing: answer ``{"id": 1}`` (the reason gives the JSON path of the first violation), or
an answer that is not JSON. No schema, an invalid schema, or no answer is an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, options_of

NAME = "json_schema"
VERSION = "1"
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*)\n```\s*$", re.S)


def _schema(spec: JudgeSpec) -> Any:
    text_fields = spec.text
    return (
        options_of(spec, NAME).get("schema")
        or text_fields.get("json_schema")
        or text_fields.get("output_schema")
    )


def needs(spec: JudgeSpec) -> str | None:
    import jsonschema

    schema = _schema(spec)
    if not isinstance(schema, Mapping):
        return "no JSON Schema configured (grader option schema or case json_schema)"
    try:
        jsonschema.Draft202012Validator.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        return f"the configured schema is invalid: {exc.message}"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    import jsonschema

    if (problem := needs(spec)) is not None:
        return error(problem)
    schema = _schema(spec)
    answer = attempt.output
    if answer is None:
        return error("the attempt has no output to check")
    fenced = _FENCE.match(answer.strip())
    try:
        document = json.loads(fenced.group(1) if fenced else answer)
    except json.JSONDecodeError as exc:
        return failed(
            f"the answer is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            Evidence(None, "output"),
        )
    validator = jsonschema.Draft202012Validator(dict(schema))
    problems = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if problems:
        where = "/".join(str(p) for p in problems[0].absolute_path) or "(root)"
        return failed(f"{where}: {problems[0].message}", Evidence(None, f"output.{where}"))
    return passed("the answer is valid against the schema")
