"""Exports other evaluation tools load, each checked with the target tool itself.

- inspect: Inspect AI's own ``json_dataset`` (inspect-ai, test extra).
- openai-evals: the OpenAI evals library's own ``Includes`` eval runs over the samples
  (the ``evals`` wheel without its heavy dependencies, fetched once with pip; the few it
  needs to import are in the test extra).
- promptfoo: promptfoo's own schemas (the zod schemas its package exports, and the JSON
  Schema it publishes, generated from them the same way), via node (slow: installs the
  npm package once).
- jsonl: the seed 002 section 11 schema (schemas/offline-case.schema.json).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from evalcase.authoring.exports import FORMATS, describe, export, suffix
from evalcase.authoring.exports.js_checks import exact_code
from evalcase.config import load_config
from evalcase.contract.task import Task
from evalcase.index.dataset import load_dataset
from evalcase.schemas import validator_for
from evalcase.yamlwrite import round_trip_load
from tests.helpers import BASE_REPO, BUNDLED_DATASETS, REPO_ROOT, invoke
from tests.peer_tools import cached_install

DATASETS = BUNDLED_DATASETS
EVALS_VERSION = "3.0.1.post1"
PROMPTFOO_VERSION = "0.121.20"  # the last whose CLI runs on Node 20 (engines ^20.20)
TOOLS = Path(__file__).parent / "tools"


@cache
def _export(dataset: str, fmt: str) -> tuple[str, str]:
    """The dataset's records (JSON) and its export as ``fmt``, from one export call."""
    result, rendered = export(load_config(REPO_ROOT), dataset, fmt)
    return json.dumps(result.records, ensure_ascii=False), rendered.text


def records(dataset: str) -> list[dict[str, Any]]:
    """A fresh copy each time (tests may not share mutable records)."""
    return list(json.loads(_export(dataset, "jsonl")[0]))


@cache
def tasks(dataset: str) -> dict[str, Task]:
    """The dataset's tasks that build, by case ID (what non-jsonl exports carry)."""
    return {t.case_id: t for t in load_dataset(REPO_ROOT, dataset).tasks}


class Exported:
    """Each bundled dataset's export in each format, written on first use: the tests
    outside ``slow`` read the jsonl ones only (16 exports cost about 25 s of CPU)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __getitem__(self, key: tuple[str, str]) -> Path:
        dataset, fmt = key
        path = self.folder / f"{dataset}-{fmt}{suffix(fmt)}"
        if not path.exists():
            path.write_text(_export(dataset, fmt)[1], "utf-8")
        return path


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Exported:
    return Exported(tmp_path_factory.mktemp("exports"))


def answer_key(task: Task) -> list[str]:
    text = task.judge.text
    return [str(t) for f in ("expected_behavior", "negative_behavior") for t in text.get(f, [])]


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
def test_inspect_loads_the_dataset_with_its_own_json_dataset(
    dataset: str, exported: Exported
) -> None:
    from inspect_ai.dataset import json_dataset
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    built = tasks(dataset)
    samples = list(json_dataset(str(exported[(dataset, "inspect")])))
    assert [s.id for s in samples] == [
        r["case_id"] for r in records(dataset) if r["case_id"] in built
    ]
    assert samples
    for s in samples:
        task = built[str(s.id)]
        assert isinstance(s.input, list) and s.input
        assert isinstance(s.input[-1], ChatMessageUser)
        assert all(isinstance(m, ChatMessageSystem | ChatMessageUser) or m.role == "assistant"
                   for m in s.input)  # fmt: skip
        assert s.metadata is not None
        assert s.metadata["case_types"] == list(task.judge.case_types)
        assert s.metadata["risk_level"] == task.judge.risk_level
        assert s.metadata["tags"] == list(task.meta.get("tags", []))
        # One text: the answer key (a list target would read as alternatives).
        assert isinstance(s.target, str)
        key = json.loads(s.target)
        assert key["evalcase_answer_key"] == 1 and key["text"] == dict(task.judge.text)
        # The answer key is in the target, never where the solver reads.
        visible = json.dumps([m.model_dump() for m in s.input], ensure_ascii=False)
        visible += json.dumps(s.metadata, ensure_ascii=False)
        given = json.dumps([task.agent.user_turns, dict(task.agent.context)], ensure_ascii=False)
        for text in answer_key(task):
            # (unless the case's own input happens to contain the words)
            assert text not in visible or text in given, (s.id, text)
        if task.judge.rubric is not None:
            assert key["rubric"] == dict(task.judge.rubric.data)


def _install_evals(site: Path) -> None:
    wheels = site / ".wheels"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
         f"evals=={EVALS_VERSION}", "-d", str(wheels)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, "cannot fetch the evals wheel:\n" + proc.stderr
    wheel = next(wheels.glob(f"evals-{EVALS_VERSION}-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    shutil.rmtree(wheels)


@pytest.fixture(scope="module")
def evals_site() -> Path:
    """The OpenAI evals package (its wheel, without the 40 heavy dependencies it declares
    but these evals never import), fetched once into the locked cache."""
    return cached_install("evals", EVALS_VERSION, _install_evals)


RUN_EVALS = """
import json, sys
from pathlib import Path
import evals.record
from evals.api import DummyCompletionFn
from evals.base import RunSpec
from evals.elsuite.basic.includes import Includes

spec = RunSpec(completion_fns=["dummy"], eval_name="cases.test.v1", base_eval="cases",
               split="test", run_config={}, created_by="evalcase")
recorder = evals.record.LocalRecorder(sys.argv[2], spec)
ev = Includes(completion_fns=[DummyCompletionFn()], samples_jsonl=sys.argv[1],
              eval_registry_path=Path(sys.argv[3]), name="cases.test.v1")
loaded = ev.get_samples()
with recorder.as_default_recorder("evalcase"):
    result = ev.run(recorder)
print(json.dumps({"loaded": len(loaded), "matches": len(recorder.get_events("match")),
                  "result": result}))
"""


def _export_case_ids(dataset: str) -> tuple[str, ...]:
    """The cases the openai-evals export wrote a sample for, in order."""
    return export(load_config(REPO_ROOT), dataset, "openai-evals")[1].order


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
def test_openai_evals_runs_its_includes_eval_over_the_samples(
    dataset: str, exported: Exported, evals_site: Path, tmp_path: Path
) -> None:
    samples = exported[(dataset, "openai-evals")]
    count = len(samples.read_text("utf-8").splitlines())
    if not count:  # no case with an answer Includes compares: nothing to run
        assert not any(_export_case_ids(dataset)), dataset
        return
    env = {**os.environ, "PYTHONPATH": str(evals_site), "OPENAI_API_KEY": "not-used-offline"}
    proc = subprocess.run(
        [sys.executable, "-c", RUN_EVALS, str(samples), str(tmp_path / "log.jsonl"),
         str(tmp_path)],
        capture_output=True, text=True, check=False, env=env, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["loaded"] == count and report["matches"] == count
    for line in samples.read_text("utf-8").splitlines():
        sample = json.loads(line)
        assert sample["input"][-1]["role"] == "user" and sample["ideal"]


@pytest.mark.parametrize("dataset", DATASETS)
def test_jsonl_lines_are_the_section_11_shape_and_keep_the_full_record(
    dataset: str, exported: Exported
) -> None:
    validator = validator_for("offline_case")
    recs = records(dataset)
    lines = [json.loads(x) for x in exported[(dataset, "jsonl")].read_text("utf-8").splitlines()]
    assert len(lines) == len(recs)
    built = tasks(dataset)
    for line, record in zip(lines, recs, strict=True):
        assert not list(validator.iter_errors(line)), line["id"]
        assert line["id"] == record["case_id"]
        # evalcase's own record follows, whole: the task in its separate parts.
        for key in ("agent_view", "environment", "answer_key", "meta", "digest"):
            assert line[key] == record[key], key
        task = built[line["id"]]
        risk = {"P0": "critical", "P1": "high", "P2": "medium", "P3": "low"}
        assert line["risk_level"] == risk[task.judge.risk_level]
        assert line["input"]["message"] == task.agent.user_turns[0]
        assert line["expected"]["forbidden_tools"] == list(task.judge.forbidden_tools)
        assert set(line["input"].get("context_refs", [])) == set(task.fixture_versions)
    broken = {**lines[0], "risk_level": "P0"}
    assert list(validator.iter_errors(broken))


@pytest.mark.slow
def test_every_export_states_what_it_could_not_carry(tmp_path: Path) -> None:
    dataset = "workout_plan_edit_set"
    built = len(tasks(dataset))
    for fmt in FORMATS:
        out = tmp_path / f"x.{fmt}"
        proc = invoke("export", dataset, "--format", fmt, "-o", str(out), cwd=REPO_ROOT)
        summary = next(x for x in proc.stderr.splitlines() if x.startswith(f"{fmt}: "))
        if fmt == "jsonl":
            assert proc.returncode == 0, proc.stderr
            assert summary == f"{fmt}: 13 cases exported; everything carried"
            continue
        if fmt == "openai-evals":  # every case is judged by its tool calls and state
            assert summary.startswith(f"{fmt}: 0 cases exported; ")
            left = f"the case (no answer Includes compares as evalcase does) ({built} cases)"
            assert left in summary
            continue
        assert summary.startswith(f"{fmt}: {built} cases exported; ")
        assert "not carried: " in summary
        assert (
            f"state ({built} cases)" in summary and f"final-state checks ({built} cases)" in summary
        )
        assert proc.returncode == (0 if built == 13 else 1)
        assert describe(fmt)


def test_a_case_whose_task_does_not_build_is_named_and_fails_the_export(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    text = case.read_text("utf-8").replace(
        "expected_behavior:",
        "environment:\n  permissions: {identity_required: true}\nexpected_behavior:",
    )
    case.write_text(text, "utf-8")
    proc = invoke("export", "sample_set", "--format", "inspect", cwd=repo)
    assert proc.returncode == 1
    assert (
        "inspect: 1 case exported; NOT EXPORTED (1, fix them first): refund_eligibility_001"
        in proc.stderr
    )
    assert "evalcase: error: refund_eligibility_001 not exported: " in proc.stderr
    assert "a permission is a named policy" in proc.stderr
    # The cases that build are exported; the broken one is not.
    assert [json.loads(line)["id"] for line in proc.stdout.splitlines()] == [
        "refund_tool_submit_001"
    ]


def test_an_unknown_format_is_a_usage_error() -> None:
    proc = invoke("export", "workout_plan_edit_set", "--format", "csv", cwd=REPO_ROOT)
    assert proc.returncode == 2 and "'csv' is not one of" in proc.stderr


def _install_promptfoo(target: Path) -> None:
    npm = shutil.which("npm")
    assert npm, "npm is needed to install promptfoo for this test"
    proc = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(target),
         f"promptfoo@{PROMPTFOO_VERSION}"],
        capture_output=True, text=True, check=False, timeout=1500,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def promptfoo_dir() -> Path:
    """promptfoo from the npm registry, installed once into the locked cache (large: it
    is the real CLI)."""
    return cached_install("promptfoo", PROMPTFOO_VERSION, _install_promptfoo)


def promptfoo_check(
    promptfoo_dir: Path, schema_out: Path, configs: list[Path]
) -> list[dict[str, Any]]:
    """``tools/promptfoo_check.mjs`` over several configurations in one node process:
    each one's report, in order; promptfoo's JSON Schema written to ``schema_out``."""
    proc = subprocess.run(
        ["node", str(TOOLS / "promptfoo_check.mjs"), str(schema_out), *map(str, configs)],
        cwd=promptfoo_dir, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(x) for x in proc.stdout.strip().splitlines()[-len(configs) :]]
    assert len(reports) == len(configs), proc.stdout[-3000:]
    return reports


@pytest.fixture(scope="module")
def promptfoo_checked(
    exported: Exported, promptfoo_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, dict[str, Any]], Path]:
    """promptfoo's schemas on every bundled dataset's config and on a config they must
    refuse (a test whose vars are not a mapping), in one run: the reports by dataset
    (``bad`` for the refused one) and the JSON Schema promptfoo publishes."""
    folder = tmp_path_factory.mktemp("promptfoo-check")
    paths = []
    for dataset in DATASETS:
        config = round_trip_load(exported[(dataset, "promptfoo")].read_text("utf-8"))
        paths.append(folder / f"{dataset}.json")
        paths[-1].write_text(json.dumps(config, ensure_ascii=False), "utf-8")
    bad = folder / "bad.json"
    bad.write_text(json.dumps({"tests": [{"vars": "not a mapping"}]}), "utf-8")
    schema_path = folder / "config-schema.json"
    reports = promptfoo_check(promptfoo_dir, schema_path, [*paths, bad])
    return dict(zip([*DATASETS, "bad"], reports, strict=True)), schema_path


@pytest.mark.slow
@pytest.mark.parametrize("dataset", DATASETS)
def test_promptfoo_accepts_the_config_with_its_own_schemas(
    dataset: str, exported: Exported, promptfoo_checked: tuple[dict[str, dict[str, Any]], Path]
) -> None:
    config = round_trip_load(exported[(dataset, "promptfoo")].read_text("utf-8"))
    reports, schema_path = promptfoo_checked
    report = reports[dataset]
    assert report["tests"] == len(tasks(dataset))
    # One entry per prompt the cases run with ("case", or a prompt fixture a case names),
    # each test restricted to its own.
    named = {t.meta.get("prompt") for t in tasks(dataset).values()}
    assert report["prompts"] == len(config["prompts"]) == len({*named} - {None}) + (None in named)
    assert all(len(test["prompts"]) == 1 for test in config["tests"])
    assert report["test_errors"] == [] and report["config_errors"] == []
    known = set(report["assertion_types"])
    for test in config["tests"]:
        for assertion in test.get("assert", []):
            kind = assertion["type"]
            assert kind in known or kind.removeprefix("not-") in known, kind
        assert "input" in test["vars"] and "messages" in test["vars"]
    schema = json.loads(schema_path.read_text("utf-8"))
    assert not list(
        jsonschema.Draft7Validator(schema).iter_errors({**config, "providers": ["echo"]})
    )
    # The check can fail: a test whose vars are not a mapping is refused.
    assert reports["bad"]["test_errors"]


def _answer_key_repo(tmp_path: Path) -> Path:
    """The base repository with a case whose answer key is in grader options: required
    points in must_include's ``values`` (one of them alternatives), an exact answer."""
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    text = case.read_text("utf-8").replace(
        "evaluator_config:\n",
        "reference: 可以退\nnegative_behavior:\n  - 承诺今天到账。\nevaluator_config:\n"
        "  graders:\n    - {type: must_include, values: [质量问题, [售后, 退货]]}\n"
        "    - {type: exact_match}\n",
    )
    case.write_text(text, "utf-8")
    return repo


def test_promptfoo_carries_grader_values_and_exact_match_as_their_asserts(tmp_path: Path) -> None:
    repo = _answer_key_repo(tmp_path)
    proc = invoke("export", "sample_set", "--format", "promptfoo", cwd=repo)
    tests = round_trip_load(proc.stdout)["tests"]
    test = next(t for t in tests if t["description"] == "refund_eligibility_001")
    asserts = [(a["type"], a.get("value")) for a in test["assert"]]
    assert ("contains", "质量问题") in asserts
    assert ("contains-any", ["售后", "退货"]) in asserts
    # exact_match compares as the grader does (surrounding whitespace ignored, Python's
    # whitespace set), in JavaScript: promptfoo starts no Python process for it.
    assert ("javascript", exact_code(["可以退"], False, False)) in asserts
    assert [k for k, _ in asserts if k in ("python", "javascript")] == ["javascript"]
    rubric = next(v for k, v in asserts if k == "llm-rubric")
    assert "承诺今天到账。" in rubric and "识别为质量问题售后。" in rubric
    assert "llm-rubric" not in [k for k, _ in asserts[:-1]]  # exact_match is not a rubric


def test_promptfoo_checks_the_bundled_patterns_and_answers_without_python() -> None:
    """Every regex and exact answer of the bundled datasets means the same in JavaScript
    (test_export_agreement proves the verdicts): none costs promptfoo a Python process."""
    kinds = {}
    for dataset in DATASETS:
        for test in round_trip_load(export(load_config(REPO_ROOT), dataset, "promptfoo")[1].text)[
            "tests"
        ]:
            for a in test["assert"]:
                kinds[a["type"]] = kinds.get(a["type"], 0) + 1
    assert "python" not in kinds, kinds
    assert kinds["javascript"] == 17, kinds  # 12 patterns, 5 exact answers (ignore_case)


@pytest.mark.slow
def test_the_summary_names_each_dropped_part_and_strict_exits_1(tmp_path: Path) -> None:
    repo = _answer_key_repo(tmp_path)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    case.write_text(  # one required point (alternatives): what Includes compares
        case.read_text("utf-8").replace(
            "values: [质量问题, [售后, 退货]]", "values: [[售后, 退货]]"
        ),
        "utf-8",
    )
    proc = invoke("export", "sample_set", "--format", "openai-evals", "--strict", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    # ideal holds the required point's alternatives; the exact answer (Includes does not
    # compare for equality), the negative behaviour and the rubric have no place in a
    # registry sample: each is named with the case.
    assert "not carried: exact_match: refund_eligibility_001" in proc.stderr
    assert "not carried: negative behaviour: refund_eligibility_001" in proc.stderr
    assert "not carried: rubric: refund_eligibility_001" in proc.stderr
    assert "carried: " in proc.stderr and "must_include (1 case)" in proc.stderr
    # The other case has no answer to compare: left out, and said so.
    left = "not carried: the case (no answer Includes compares as evalcase does): "
    assert left + "refund_tool_submit_001" in proc.stderr
    samples = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [s["ideal"] for s in samples] == [["售后", "退货"]]
    # Without --strict the loss is reported, not an error; jsonl loses nothing.
    assert invoke("export", "sample_set", "--format", "openai-evals", cwd=repo).returncode == 0
    whole = invoke("export", "sample_set", "--format", "jsonl", "--strict", cwd=repo)
    assert whole.returncode == 0, whole.stderr
    assert "jsonl: 2 cases exported; everything carried" in whole.stderr


@pytest.mark.parametrize("fmt", ["promptfoo", "inspect", "openai-evals", "jsonl"])
def test_must_include_options_no_peer_grades_alike_refuse_the_case(
    tmp_path: Path, fmt: str
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    case.write_text(
        case.read_text("utf-8").replace(
            "evaluator_config:\n",
            "evaluator_config:\n  graders:\n    - {type: must_include, values: ['1628'], "
            "scope: assistant_messages, ignore_punctuation: true}\n",
        ),
        "utf-8",
    )
    proc = invoke("export", "sample_set", "--format", fmt, cwd=repo)
    if fmt == "jsonl":  # jsonl grades nothing: it carries the record whole.
        assert proc.returncode == 0 and "refund_eligibility_001" in proc.stdout, proc.stderr
        return
    assert proc.returncode == 1, proc.stderr
    assert "NOT EXPORTED (1, fix them first): refund_eligibility_001" in proc.stderr
    assert "must_include uses scope: assistant_messages, ignore_punctuation" in proc.stderr
    assert "refund_eligibility_001" not in proc.stdout
    if fmt == "openai-evals":  # the other case has no answer Includes could compare
        assert (
            "the case (no answer Includes compares as evalcase does): "
            "refund_tool_submit_001" in proc.stderr
        )
    else:
        assert "refund_tool_submit_001" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("target", ["/dev/full", "missing/folder/out.jsonl"])
def test_an_output_that_cannot_be_written_is_one_clear_line_and_exit_2(
    tmp_path: Path, target: str
) -> None:
    """Issue 32: ``export -o /dev/full`` and into a missing folder."""
    if target == "/dev/full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    output = target if target.startswith("/") else str(tmp_path / target)
    proc = invoke("export", "workout_plan_edit_set", "-o", output, cwd=REPO_ROOT)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("evalcase: ")]
    assert len(errors) == 1, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert errors[0].startswith(f"evalcase: error: cannot write {output}: ")
    if target == "/dev/full":
        assert "No space left on device" in errors[0]
    else:
        assert f"its folder {tmp_path / 'missing' / 'folder'} does not exist" in errors[0]
