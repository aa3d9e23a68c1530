"""Does each peer tool, grading the export in its own engine, give the verdict evalcase
gives? Four answers per case (perfect, one forbidden phrase, empty, one required phrase
missing), each graded by evalcase's own deterministic graders (the ones the case
configures: what ``evalcase grade`` runs) and by

- Inspect AI: ``inspect_ai.eval`` with the exported samples, a model-free solver and
  ``evalcase_scorer`` (its grader model a local one that always answers ``GRADE: C``,
  so only the deterministic part decides);
- promptfoo: ``promptfoo eval`` itself (the CLI, on this machine's Node) over the
  exported tests with the echo provider, the model-graded ``llm-rubric`` left out;
- OpenAI evals: the ``Includes`` eval class's ``eval_sample`` over the exported samples.

A disagreement is *declared* when the export's summary lists one of the case's
deterministic checks as not carried (or the case as not exported to that tool).

``python -m tests.authoring.export_agreement`` (from the repository, the peer tools
installed as the tests install them) prints the figures; ``test_export_agreement.py``
asserts that no disagreement is undeclared.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.authoring.exports import Rendered, export
from evalcase.authoring.exports.promptfoo import templated
from evalcase.authoring.exports.view import TEXT_GRADERS, ExportCase, from_task
from evalcase.config import load_config
from evalcase.contract.task import Task
from evalcase.grade.graders import load
from evalcase.grade.spec import grader_configs
from evalcase.index.dataset import load_dataset

KINDS = ("perfect", "forbidden", "empty", "missing")
TOOLS = Path(__file__).parent / "tools"
# The summary parts that declare a deterministic check not carried.
CHECK_PARTS = ("exact_match", "must_include", "must_not_include", "regex", "json_schema")
NEUTRAL = "好的。"  # the perfect answer of a case with no reference or required phrase


@dataclass(frozen=True)
class Probe:
    """One answer to one case, and evalcase's deterministic verdict on it."""

    dataset: str
    case_id: str
    kind: str
    answer: str
    want: bool

    @property
    def key(self) -> str:
        return f"{self.dataset}|{self.case_id}|{self.kind}"


@dataclass
class Tally:
    agree: int = 0
    declared: int = 0  # disagreements the summary declares
    undeclared: list[str] = field(default_factory=list)
    not_exported: int = 0  # probes it did not grade: case left out, or no check carried

    def line(self, name: str) -> str:
        return (
            f"{name}: {self.agree} agree, {self.declared + len(self.undeclared)} disagree "
            f"({self.declared} declared, {len(self.undeclared)} undeclared), "
            f"{self.not_exported} not graded by it (declared: case left out or no check carried)"
        )


def configured_text_graders(task: Task) -> list[str]:
    """The deterministic text graders that decide the case in evalcase (configured and
    hard: a soft one's failure alone fails nothing)."""
    return [c.type for c in grader_configs(task.judge) if c.type in TEXT_GRADERS and c.hard]


def evalcase_verdict(task: Task, answer: str) -> bool | None:
    """evalcase's own graders on ``answer``; None when no deterministic grader judges it."""
    graders = configured_text_graders(task)
    if not graders:
        return None
    attempt = {"output": answer}
    return all(load(g).grade(task.judge, attempt).verdict == "pass" for g in graders)


def _literal(pattern: str) -> str | None:
    """A text a forbidden pattern matches, when the pattern is plain text."""
    return pattern if re.escape(pattern) == pattern else None


def answers(case: ExportCase, task: Task) -> dict[str, str]:
    """The four answers of a case (a kind the case has nothing for is left out)."""
    text = dict(task.judge.text)
    constraints = text.get("constraints") if isinstance(text.get("constraints"), dict) else {}
    if case.exact:
        perfect = case.exact[0]
    else:
        perfect = case.references[0] if case.references else NEUTRAL
        for group in case.must_include:
            if not any(c in perfect for c in group):
                perfect += " " + group[0]
    out = {"perfect": perfect, "empty": ""}
    forbidden = [str(x) for x in text.get("must_not_include") or () if isinstance(x, str)]
    forbidden += [str(x) for x in (constraints or {}).get("must_not_include") or ()]
    forbidden += list(case.must_not_include)
    forbidden += [p for p in map(_literal, case.anti_patterns) if p]
    if forbidden:
        out["forbidden"] = perfect + " " + forbidden[0]
    if case.must_include:
        missing = perfect
        for choice in case.must_include[0]:
            missing = missing.replace(choice, "")
        out["missing"] = missing
    return out


def probes(root: Path, datasets: Sequence[str]) -> list[Probe]:
    out = []
    for dataset in datasets:
        for task in load_dataset(root, dataset).tasks:
            case = from_task(task)
            for kind, text in answers(case, task).items():
                want = evalcase_verdict(task, text)
                if want is not None:
                    out.append(Probe(dataset, task.case_id, kind, text, want))
    return out


def exports(root: Path, datasets: Sequence[str], fmt: str) -> dict[str, Rendered]:
    config = load_config(root)
    return {d: export(config, d, fmt)[1] for d in datasets}


def declares(rendered: Rendered, case_id: str) -> bool:
    """Whether the summary says a deterministic check of the case is not carried."""
    return any(case_id in rendered.not_carried.get(part, ()) for part in CHECK_PARTS) or any(
        c == case_id for c, _ in rendered.not_exported
    )


def tally(
    probes_: Sequence[Probe], got: Mapping[str, bool], rendered: Mapping[str, Rendered]
) -> Tally:
    out = Tally()
    for p in probes_:
        if p.key not in got:
            out.not_exported += 1
            assert declares(rendered[p.dataset], p.case_id) or p.case_id in left_out(
                rendered[p.dataset]
            ), f"{p.key}: not graded and not declared"
            continue
        if got[p.key] == p.want:
            out.agree += 1
        elif declares(rendered[p.dataset], p.case_id):
            out.declared += 1
        else:
            out.undeclared.append(f"{p.key}: evalcase {p.want}, peer {got[p.key]}")
    return out


def left_out(rendered: Rendered) -> set[str]:
    """Cases a format left out of its file (listed in the summary as not carried)."""
    return {c for part, ids in rendered.not_carried.items() if part.startswith("the case")
            for c in ids}  # fmt: skip


# --- Inspect AI -------------------------------------------------------------------------


def inspect_verdicts(
    probes_: Sequence[Probe], rendered: Mapping[str, Rendered], tmp: Path
) -> dict[str, bool]:
    from inspect_ai import Task as InspectTask
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import json_dataset
    from inspect_ai.model import ModelAPI, ModelOutput, modelapi
    from inspect_ai.solver import Generate, TaskState, solver

    from evalcase.authoring.exports.inspect_scorer import evalcase_scorer

    @modelapi(name="evalcase_always_c")
    class AlwaysC(ModelAPI):  # the model part always agrees: the text graders decide
        async def generate(self, input: Any, tools: Any, tool_choice: Any, config: Any) -> Any:
            return ModelOutput.from_content(self.model_name, "ok\nGRADE: C")

    lines = {}
    for dataset, r in rendered.items():
        for line in r.text.splitlines():
            sample = json.loads(line)
            lines[(dataset, sample["id"])] = sample
    table = {}
    path = tmp / "inspect-probes.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for p in probes_:
            sample = lines.get((p.dataset, p.case_id))
            if sample is None:
                continue
            table[p.key] = p.answer
            out.write(json.dumps({**sample, "id": p.key}, ensure_ascii=False) + "\n")

    @solver
    def answers_with() -> Any:  # model-free: the probe's answer
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.output = ModelOutput.from_content("none", table[str(state.sample_id)])
            return state

        return solve

    task = InspectTask(
        dataset=json_dataset(str(path)),
        solver=answers_with(),
        scorer=evalcase_scorer("evalcase_always_c/judge"),
    )
    [log] = inspect_eval(task, model="mockllm/model", log_dir=str(tmp / "inspect-logs"),
                         display="none", max_samples=64)  # fmt: skip
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == len(table)
    return {str(s.id): s.scores["evalcase_scorer"].value == "C" for s in log.samples}


# --- promptfoo --------------------------------------------------------------------------

MODEL_GRADED = {"llm-rubric", "g-eval", "model-graded-closedqa", "factuality"}


def promptfoo_env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
            "PROMPTFOO_CONFIG_DIR": str(tmp / "pf"), "PROMPTFOO_CACHE_ENABLED": "false",
            "PROMPTFOO_PYTHON": sys.executable, "NO_COLOR": "1",
            "PROMPTFOO_DISABLE_SHARING": "1"}  # fmt: skip


def promptfoo_eval(
    promptfoo_dir: Path, config: Mapping[str, Any], tmp: Path
) -> list[dict[str, Any]]:
    """``promptfoo eval`` (the CLI) over ``config``: each test's result, in test order."""
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "promptfooconfig.json"
    path.write_text(json.dumps(config, ensure_ascii=False), "utf-8")
    out = tmp / "promptfoo-results.json"
    cli = promptfoo_dir / "node_modules" / ".bin" / "promptfoo"
    proc = subprocess.run(
        [str(cli), "eval", "-c", str(path), "-o", str(out), "--no-cache", "--no-write",
         "--no-table", "--no-progress-bar", "-j", "4"],
        cwd=tmp, capture_output=True, text=True, check=False, env=promptfoo_env(tmp),
        timeout=1500,
    )  # fmt: skip
    # promptfoo eval exits 100 when some test failed: failing is what half the probes do.
    assert proc.returncode in (0, 100), proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text("utf-8"))["results"]["results"]
    return sorted(results, key=lambda r: (r["testIdx"], r["promptIdx"]))


def promptfoo_tests(text: str) -> list[dict[str, Any]]:
    from evalcase.yamlwrite import round_trip_load

    data = round_trip_load(text)
    return list(data["tests"] if isinstance(data, Mapping) else data)


ANSWER_PROMPT = "evalcase_answer"  # the label of the prompt the probes are graded under


@dataclass(frozen=True)
class PromptfooRun:
    """One ``promptfoo eval`` of :func:`promptfoo_verdicts`: the verdicts, and each routed
    configuration's results as that configuration alone would give them."""

    verdicts: dict[str, bool]
    routed: dict[str, list[dict[str, Any]]]


def promptfoo_verdicts(
    probes_: Sequence[Probe],
    rendered: Mapping[str, Rendered],
    promptfoo_dir: Path,
    tmp: Path,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    routed: Mapping[str, Mapping[str, Any]] | None = None,
) -> PromptfooRun:
    """promptfoo's verdict on each probe under its case's exported asserts, and on each
    assert of each of ``extra`` (key: a test of the one prompt below; its verdicts keyed
    ``key|n``, the n-th assert's, from promptfoo's per-assert results), all in one
    ``promptfoo eval`` (node's start and promptfoo's import are 2 s of CPU a run); in the
    same run each of ``routed``: a configuration's ``prompts`` and ``tests`` whose tests
    name their prompts by label, as an export's do, its results given back as that
    configuration alone would give them (one per test that ran, ``testIdx`` and
    ``promptIdx`` its own)."""
    by_case = {}
    for dataset, r in rendered.items():
        for test in promptfoo_tests(r.text):
            by_case[(dataset, test["metadata"]["case_id"])] = test
    tests, keys = [], []
    for p in probes_:
        test = by_case.get((p.dataset, p.case_id))
        if test is None:
            continue
        # The echo provider answers the var as promptfoo renders it: template-like text
        # would not arrive as written (test_export_agreement sends such text otherwise).
        assert not templated(p.answer), p.key
        asserts = [a for a in test.get("assert", ()) if a["type"] not in MODEL_GRADED]
        if not asserts:  # nothing but the model's judgement: promptfoo decides nothing
            continue
        # Graded under the one prompt below (the export's test names its own).
        alone = {k: v for k, v in test.items() if k != "prompts"}
        tests.append({**alone, "assert": asserts, "description": p.key,
                      "vars": {**test["vars"], "evalcase_answer": p.answer}})  # fmt: skip
        keys.append(p.key)
    for key, test in (extra or {}).items():
        tests.append({**test, "description": key})
        keys.append(key)
    prompts: list[Any] = [{"label": ANSWER_PROMPT, "raw": "{{evalcase_answer}}"}]
    own = len(tests)
    tests = [{**t, "prompts": [ANSWER_PROMPT]} for t in tests]
    # Where each routed configuration's prompts and tests sit in the one run's lists.
    places: dict[str, tuple[int, int, int]] = {}
    for name, config in (routed or {}).items():
        labels = {p["label"] for p in prompts}
        assert not labels & {p["label"] for p in config["prompts"]}, name
        assert all(t.get("prompts") for t in config["tests"]), name  # each names its own
        places[name] = (len(prompts), len(tests), len(config["tests"]))
        prompts += list(config["prompts"])
        tests += list(config["tests"])
        keys += [f"{name}#{i}" for i in range(len(config["tests"]))]
    if not tests:
        return PromptfooRun({}, {})
    config = {"prompts": prompts, "providers": ["echo"], "tests": tests}
    results = promptfoo_eval(promptfoo_dir, config, tmp)
    mine = [r for r in results if r["testIdx"] < own]
    assert len(mine) == own  # each test under the one prompt only
    assert all(r["promptIdx"] == 0 for r in mine)
    verdicts = {keys[r["testIdx"]]: bool(r["success"]) for r in mine}
    for r in mine:
        key = keys[r["testIdx"]]
        if extra and key in extra:
            parts = r["gradingResult"]["componentResults"]
            assert len(parts) == len(extra[key]["assert"]), key  # each assert, in order
            for n, (part, wanted) in enumerate(zip(parts, extra[key]["assert"], strict=True)):
                assert part["assertion"]["value"] == wanted["value"], (key, n)
                verdicts[f"{key}|{n}"] = bool(part["pass"])
    back: dict[str, list[dict[str, Any]]] = {}
    for name, (first_prompt, first_test, count) in places.items():
        back[name] = [
            {**r, "testIdx": r["testIdx"] - first_test, "promptIdx": r["promptIdx"] - first_prompt}
            for r in results
            if first_test <= r["testIdx"] < first_test + count
        ]
    return PromptfooRun(verdicts, back)


# --- OpenAI evals -----------------------------------------------------------------------


def evals_verdicts(
    probes_: Sequence[Probe], rendered: Mapping[str, Rendered], evals_site: Path, tmp: Path
) -> dict[str, bool]:
    """Includes over the exported samples (the sample a case exported, found by the
    order of the cases the export kept)."""
    lines: list[str] = []
    index = {}
    for dataset, r in rendered.items():
        ids = sample_ids(r)
        for case_id, line in zip(ids, r.text.splitlines(), strict=True):
            index[(dataset, case_id)] = len(lines)
            lines.append(line)
    samples = tmp / "samples.jsonl"
    samples.write_text("".join(x + "\n" for x in lines), "utf-8")
    asked = [(p.key, index[(p.dataset, p.case_id)], p.answer) for p in probes_
             if (p.dataset, p.case_id) in index]  # fmt: skip
    table = tmp / "answers.json"
    table.write_text(json.dumps([[i, a] for _, i, a in asked], ensure_ascii=False), "utf-8")
    env = {**os.environ, "PYTHONPATH": str(evals_site), "OPENAI_API_KEY": "not-used-offline"}
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "evals_grade.py"), str(samples), str(table), str(tmp)],
        capture_output=True, text=True, check=False, env=env, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdicts = json.loads(proc.stdout.strip().splitlines()[-1])["verdicts"]
    return {k: v for (k, _, _), v in zip(asked, verdicts, strict=True)}


def sample_ids(rendered: Rendered) -> list[str]:
    """The case ID of each line of an openai-evals export, in order (the registry format
    has no room for it: the export lists the cases it wrote in ``carried``)."""
    return list(rendered.order)


# --- all three --------------------------------------------------------------------------


def measure(
    root: Path, datasets: Sequence[str], promptfoo_dir: Path, evals_site: Path, tmp: Path
) -> dict[str, Tally]:
    probes_ = probes(root, datasets)
    out = {}
    for name, fmt in (("inspect", "inspect"), ("promptfoo", "promptfoo"),
                      ("openai-evals", "openai-evals")):  # fmt: skip
        rendered = exports(root, datasets, fmt)
        folder = tmp / fmt
        folder.mkdir(parents=True, exist_ok=True)
        if fmt == "inspect":
            got = inspect_verdicts(probes_, rendered, folder)
        elif fmt == "promptfoo":
            got = promptfoo_verdicts(probes_, rendered, promptfoo_dir, folder).verdicts
        else:
            got = evals_verdicts(probes_, rendered, evals_site, folder)
        out[name] = tally(probes_, got, rendered)
    return out


def main() -> None:
    import tempfile

    from tests.authoring.test_exports import (
        EVALS_VERSION,
        PROMPTFOO_VERSION,
        _install_evals,
        _install_promptfoo,
    )
    from tests.helpers import BUNDLED_DATASETS, REPO_ROOT
    from tests.peer_tools import cached_install

    promptfoo_dir = cached_install("promptfoo", PROMPTFOO_VERSION, _install_promptfoo)
    evals_site = cached_install("evals", EVALS_VERSION, _install_evals)
    with tempfile.TemporaryDirectory() as tmp:
        probes_ = probes(REPO_ROOT, BUNDLED_DATASETS)
        cases = len({(p.dataset, p.case_id) for p in probes_})
        print(f"{len(probes_)} answers to {cases} cases with a deterministic verdict")
        for name, t in measure(REPO_ROOT, BUNDLED_DATASETS, promptfoo_dir, evals_site,
                               Path(tmp)).items():  # fmt: skip
            print(t.line(name))
            for u in t.undeclared:
                print("  undeclared:", u)


if __name__ == "__main__":
    main()
