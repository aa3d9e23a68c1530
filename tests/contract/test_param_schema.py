"""No parameter schema crashes lint: every JSON Schema keyword given every wrong kind of value.

A tool fixture is untrusted data. Each keyword of the 2020-12 meta schema (and the
legacy ``dependencies``/``definitions``) is given values of every JSON type, inside a
property and at the root of ``data.parameters``, in a fixture that a case calls with
``expected_args`` and whose responses have ``when`` (so EC304, EC606 and EC418 all read
the schema). Lint must not raise, and every value the meta schema rejects is one EC418
finding on the line of that keyword.
"""

from __future__ import annotations

import shutil
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY

from evalcase.config import load_config
from evalcase.contract.param_schema import first_error, problems
from evalcase.lint.api import lint_repository
from tests.helpers import BASE_REPO

KEYWORDS = sorted(
    {
        key
        for uri in REGISTRY
        if uri.startswith("https://json-schema.org/draft/2020-12/meta/")
        for key in REGISTRY.contents(uri).get("properties", {})
    }
    | {"dependencies", "definitions"}
)
CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
CDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
WRONG: list[Any] = [12345, -1, 1.5, "strng", "(", True, None, {"x": 1}, ["x"], [1, 1], {}]


def _rejected(schema: dict[str, Any]) -> bool:
    meta = Draft202012Validator(
        Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
    )
    return any(True for _ in meta.iter_errors(schema))


def _fixture(name: str, parameters: dict[str, Any]) -> str:
    body = {
        "fixture_id": name,
        "fixture_version": "v1",
        "kind": "tool",
        "description": "查询订单。",
        "source": "合成数据",
        "desensitized": True,
        "data": {
            "name": name,
            "side_effect": False,
            "parameters": parameters,
            "responses": [
                {"when": {p: "ORDER_1"}, "result": {"status": "signed"}}
                for p in [f"p{i}" for i in range(len(WRONG))]
            ]
            + [{"result": {"status": "unknown"}}],
        },
    }
    # libyaml's dumper: the same text as PyYAML's pure-Python one for all of these
    # fixtures (compared on 2026-12-07), in a fifth of the time.
    return yaml.dump(
        body, Dumper=CDumper, allow_unicode=True, sort_keys=False, default_flow_style=False
    )


@cache
def _composed(text: str) -> Any:
    """The fixture's node tree, composed once for every path read in it."""
    return yaml.compose(text, Loader=CLoader)


def _line_of(text: str, path: tuple[Any, ...]) -> int:
    """1-based line of the value at ``path`` (read with PyYAML's libyaml binding, not
    evalcase's loader; the same lines as its pure-Python composer)."""
    node: Any = _composed(text)
    for part in path:
        if isinstance(node, yaml.MappingNode):
            node = next(v for k, v in node.value if k.value == str(part))
        else:
            node = node.value[int(part)]
    return int(node.start_mark.line) + 1


def _variants() -> dict[str, tuple[dict[str, Any], list[tuple[Any, ...]]]]:
    """fixture name -> (parameters, paths inside parameters that the meta schema rejects)."""
    out: dict[str, tuple[dict[str, Any], list[tuple[Any, ...]]]] = {}
    for n, kw in enumerate(KEYWORDS):
        props = {f"p{i}": {kw: value} for i, value in enumerate(WRONG)}
        params: dict[str, Any] = {"type": "object", "properties": props}
        bad = [("properties", p, kw) for p, s in props.items() if _rejected(s)]
        out[f"kw_prop_{n:02d}"] = (params, bad)
        for i, value in enumerate(WRONG):
            root = {"type": "object", "properties": {"p0": {"type": "string"}}, kw: value}
            if _rejected(root):
                out[f"kw_root_{n:02d}_{i:02d}"] = (root, [(kw,)])
    return out


@pytest.mark.slow
def test_every_keyword_with_a_wrong_value_is_a_finding_at_its_line(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    variants = _variants()
    assert len(KEYWORDS) > 55 and len(variants) > 150
    texts = {}
    for name, (params, _bad) in variants.items():
        texts[name] = _fixture(name, params)
        (repo / "fixtures" / "tool" / f"{name}.yaml").write_text(texts[name], "utf-8")
    case = repo / "datasets" / "sample_set" / "cases" / "refund_tool_submit_001.yaml"
    doc = yaml.safe_load(case.read_text("utf-8"))
    doc["available_tools"] = list(doc["available_tools"]) + sorted(variants)
    doc["tool_schema"] = {**doc["tool_schema"], **{n: "v1" for n in variants}}
    doc["expected_args"] = {
        **doc["expected_args"],
        **{n: {"p0": "ORDER_1", "p3": 5} for n in variants},
    }
    case.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False), "utf-8")

    result = lint_repository(load_config(repo), use_cache=False, jobs=1)  # must not raise

    assert not [f for f in result.findings if f.code in ("EC000", "EC999")]
    found: dict[str, set[int]] = {}
    for f in result.findings:
        if f.code == "EC418":
            found.setdefault(Path(f.path).stem, set()).add(f.line)
    missing = []
    for name, (_params, bad) in variants.items():
        want = {_line_of(texts[name], ("data", "parameters", *p)) for p in bad}
        if not want <= found.get(name, set()):
            missing.append((name, sorted(want), sorted(found.get(name, set()))))
        if not bad:
            assert name not in found, (name, found[name])
    assert not missing, missing


def test_type_strng_is_reported_on_its_line_and_nothing_crashes(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    tool = repo / "fixtures" / "tool" / "order_lookup.yaml"
    text = tool.read_text("utf-8").replace("{type: string}", "{type: strng}")
    text += "  responses:\n    - when: {order_id: ORDER_1}\n      result: {status: signed}\n"
    tool.write_text(text, "utf-8")
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    on_tool = [(f.code, f.line) for f in result.findings if f.path.endswith("order_lookup.yaml")]
    line = text.splitlines().index("      order_id: {type: strng}") + 1
    assert on_tool == [("EC418", line)]


@pytest.mark.parametrize(
    ("schema", "value", "why"),
    [
        ({"type": "string"}, 5, "is not of type 'string'"),
        ({"type": "strng"}, 5, None),  # broken: EC418's, not a verdict on the value
        ({"$ref": "#/nowhere"}, 5, None),  # valid yet unresolvable: no exception
        ({"pattern": "^A"}, "B", "does not match"),
    ],
)
def test_first_error_never_raises(schema: dict[str, Any], value: Any, why: str | None) -> None:
    got = first_error(schema, value)
    assert (got is None) if why is None else (got is not None and why in got)


def test_problems_name_the_keyword() -> None:
    (problem,) = problems({"properties": {"a": {"pattern": "("}}})
    assert problem.path == ("properties", "a", "pattern")
    assert "not a regular expression" in problem.message
    assert problems({"type": "object"}) == []


def test_a_schema_checked_before_gets_the_same_answer_and_a_lookalike_its_own() -> None:
    # problems() remembers what it found per schema: a repository names the same tool
    # schemas in many cases. Schemas that print alike but differ in type are others.
    assert problems({"minLength": 1}) == problems({"minLength": 1}) == []
    assert problems({"minLength": True}) and problems({"minLength": "1"})
    assert problems({"maxItems": 2.5}) and problems({"maxItems": 2}) == []
    first = problems({"type": "strng"})
    first.clear()  # the caller's list is its own
    (again,) = problems({"type": "strng"})
    assert again.path == ("type",)


def test_a_schema_that_contains_itself_or_is_huge_is_checked_without_being_remembered() -> None:
    looped: dict[str, Any] = {"type": "object"}
    looped["properties"] = {"self": looped}
    (problem,) = problems(looped)  # the key's walk gives up instead of going round
    assert problem.message.startswith("cannot be checked: RecursionError")
    huge = {"enum": ["x" * 100] * 1000}
    assert problems(huge) == [] and problems(huge) == []
