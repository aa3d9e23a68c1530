"""The exports mean what the cases mean, graded by each peer tool's own engine.

- Every bundled dataset's exports, four answers per case (perfect, one forbidden phrase,
  empty, one required phrase missing): Inspect's ``evalcase_scorer``, ``promptfoo eval``
  (the CLI) and OpenAI evals' ``Includes`` give evalcase's deterministic verdict, or the
  export's summary declares why not (tests/authoring/export_agreement.py).
- Regexes keep Python's meaning in promptfoo (``(?i)``, ``\\d`` on full-width digits,
  ``\\w`` on Chinese text).
- promptfoo runs each case once, under its own prompt, as ``evalcase run`` does.
- The documented ``inspect eval "$(python -m …inspect_scorer)"`` command line runs, its
  relative dataset path read from the current directory.
- ``role: tool`` turns are listed as not carried by every format.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evalcase.authoring.exports import FORMATS, Rendered, export
from evalcase.authoring.exports.view import chat
from evalcase.config import Config, load_config
from evalcase.index.dataset import load_dataset
from evalcase.run.prompts import plan
from evalcase.yamlwrite import round_trip_load
from tests.authoring.export_agreement import (
    KINDS,
    Probe,
    PromptfooRun,
    evalcase_verdict,
    evals_verdicts,
    exports,
    inspect_verdicts,
    probes,
    promptfoo_eval,
    promptfoo_verdicts,
    tally,
)
from tests.authoring.test_exports import DATASETS, evals_site, promptfoo_dir
from tests.helpers import BASE_REPO, REPO_ROOT, invoke, serving

__all__ = ["evals_site", "promptfoo_dir"]  # fixtures, imported for their names


@pytest.fixture(scope="module")
def bundled() -> list[Probe]:
    return probes(REPO_ROOT, DATASETS)


@pytest.fixture(scope="module")
def rendered() -> dict[str, dict[str, Rendered]]:
    """Each bundled dataset exported once per format, shared by the module's tests."""
    return {fmt: exports(REPO_ROOT, DATASETS, fmt) for fmt in ("inspect", "promptfoo",
                                                                "openai-evals")}  # fmt: skip


def test_the_probes_are_four_answers_per_case_with_both_verdicts(bundled: list[Probe]) -> None:
    assert {p.kind for p in bundled} == set(KINDS)
    assert {p.want for p in bundled} == {True, False}
    # The perfect answer passes evalcase's own graders; the empty one never does here.
    assert all(p.want for p in bundled if p.kind == "perfect")


@pytest.mark.slow
def test_inspect_scorer_agrees_with_evalcase(
    bundled: list[Probe], rendered: dict[str, dict[str, Rendered]], tmp_path: Path
) -> None:
    got = inspect_verdicts(bundled, rendered["inspect"], tmp_path)
    result = tally(bundled, got, rendered["inspect"])
    assert not result.undeclared, result.undeclared
    assert result.agree == len(bundled), result.line("inspect")  # every check is carried


@pytest.mark.slow
def test_promptfoo_eval_agrees_with_evalcase(
    bundled: list[Probe],
    rendered: dict[str, dict[str, Rendered]],
    promptfoo_graded: dict[str, bool],
) -> None:
    got = {p.key: promptfoo_graded[p.key] for p in bundled if p.key in promptfoo_graded}
    result = tally(bundled, got, rendered["promptfoo"])
    assert not result.undeclared, result.undeclared
    assert result.agree == len(bundled), result.line("promptfoo")
    assert set(got.values()) == {True, False}


@pytest.mark.slow
def test_openai_evals_includes_agrees_with_evalcase(
    bundled: list[Probe],
    rendered: dict[str, dict[str, Rendered]],
    evals_site: Path,
    tmp_path: Path,
) -> None:
    got = evals_verdicts(bundled, rendered["openai-evals"], evals_site, tmp_path)
    result = tally(bundled, got, rendered["openai-evals"])
    assert not result.undeclared, result.undeclared
    assert got and set(got.values()) == {True, False}
    # The samples hold answers, never descriptions of behaviour.
    for dataset, r in rendered["openai-evals"].items():
        cases = {t.case_id: t for t in load_dataset(REPO_ROOT, dataset).tasks}
        for case_id, line in zip(r.order, r.text.splitlines(), strict=True):
            behaviours = cases[case_id].judge.text.get("expected_behavior") or []
            assert not set(json.loads(line)["ideal"]) & set(behaviours), case_id


# --- regexes in promptfoo: Python's meaning ---------------------------------------------

PATTERNS = {"must_match": ["(?i)^order", r"\d{3}"], "must_not_match": [r"\w退款"]}
REPLIES = ["order 123", "ORDER １２３", "Order 12", "订单 123", "order 456 可以退款",
           "order 456 退款", "order ٤٥٦"]  # fmt: skip


def _regex_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    patterns = json.dumps(PATTERNS, ensure_ascii=False)
    case.write_text(
        case.read_text("utf-8").replace(
            "evaluator_config:\n",
            f"evaluator_config:\n  graders:\n    - {{type: regex, {patterns[1:-1]}}}\n",
        ),
        "utf-8",
    )
    return repo


@dataclass(frozen=True)
class RegexCase:
    """The base repository's case with the regex grader of PATTERNS, its export, and
    evalcase's verdict on each of REPLIES."""

    config: Config
    want: list[bool | None]
    probes: list[Probe]
    promptfoo: Rendered


@pytest.fixture(scope="module")
def regex_case(tmp_path_factory: pytest.TempPathFactory) -> RegexCase:
    repo = _regex_repo(tmp_path_factory.mktemp("regex"))
    config = load_config(repo)
    task = next(t for t in load_dataset(repo, "sample_set", config=config).tasks
                if t.case_id == "refund_eligibility_001")  # fmt: skip
    want = [evalcase_verdict(task, r) for r in REPLIES]
    probes_ = [Probe("sample_set", "refund_eligibility_001", str(i), r, w)
               for i, (r, w) in enumerate(zip(REPLIES, want, strict=True))]  # fmt: skip
    return RegexCase(config, want, probes_, export(config, "sample_set", "promptfoo")[1])


# --- the checks written in JavaScript: Python's verdict on texts where engines differ ---

# Patterns the export writes as ``javascript`` (js_checks restates them), and texts on
# which a careless restatement would differ: Python's whitespace set (\x1c-\x1f, \x85,
# not \ufeff), ``$`` before a final newline, ``.`` on \r and \u2028, code points above
# the BMP, lookbehind, lazy and bounded repeats.
JS_PATTERNS = [r"^\s*([-*•]|[0-9]+[.、)])", r"(?<![0-9])1[3-9][0-9]{9}(?![0-9])", "ok$",
               r"\Aok\Z", "^a.c$", r"x\Sy", r"[^\s]+z", "a{2,}?b", "😀.", "[😀-😂]",
               "(?<!不)(?<!不能)(保证|一定)[^。！？，,]{0,6}到账", r"x[\s\-]y"]  # fmt: skip
# exact_match's answers (as the grader's flags normalise them) and flags
JS_EXACT = [(["cancel_order"], True, True), (["ss"], True, False), (["fi"], True, False),
            (["k"], True, False), (["σ"], True, False), (["可以退"], False, False),
            (["ab"], False, True), (["a b"], False, False)]  # fmt: skip
JS_TEXTS = ["ok", "ok\n", "ok\n\n", "abc", "a\rc", "a\u2028c", "a\nc", "x\x1cy", "x\ufeffy",
            "x\u3000y", "x-y", "  1. 退", "\u2003• 退", "\x85- 退", "13812345678", "113812345678",
            "aab", "😀x", "😁", "b😀\n", "保证三天到账", "不保证三天到账", "zz z", "ß", "SS", "ſ",
            "K", "k", "ﬁ", "FI", "Σ", "ς", " Cancel_Order\u3000", "cancel order", "\x1fab\x85",
            "a b", " a b\n", "cancel_order\ufeff", "可以退 "]  # fmt: skip


# promptfoo renders var values as templates, and the rendering drops a final newline:
# the answer travels as JSON text, and the test's transform hands the checks the text.
AS_WRITTEN = "JSON.parse(context.vars.evalcase_answer)"


@pytest.fixture(scope="module")
def js_checked() -> dict[str, tuple[dict[str, Any], list[bool]]]:
    """Each pattern and exact answer as the promptfoo export writes it, beside Python's
    (the graders') verdict on each of JS_TEXTS, keyed for promptfoo_graded."""
    from evalcase.authoring.exports.js_checks import exact_code
    from evalcase.authoring.exports.promptfoo import regex_assert
    from evalcase.grade.graders.exact_match import normal

    checks: list[tuple[dict[str, Any], Any]] = []
    for pattern in JS_PATTERNS:
        for wanted in (True, False):
            checks.append(
                (
                    regex_assert(pattern, wanted),
                    lambda t, p=pattern, w=wanted: (re.search(p, t) is not None) == w,
                )
            )
    for answers, ignore_case, ignore_space in JS_EXACT:
        code = exact_code(answers, ignore_case, ignore_space)
        checks.append(
            (
                {"type": "javascript", "value": code},
                lambda t, a=answers, c=ignore_case, s=ignore_space: normal(t, c, s) in a,
            )
        )
    # One promptfoo test per text, every check one of its asserts: promptfoo reports
    # each assert's own verdict (componentResults), in order.
    return {
        f"js|{j}": (
            {
                "vars": {"evalcase_answer": json.dumps(text)},
                "assert": [check for check, _ in checks],
                "options": {"transform": AS_WRITTEN},
            },
            [verdict(text) for _, verdict in checks],
        )
        for j, text in enumerate(JS_TEXTS)
    }


@dataclass(frozen=True)
class OwnPrompts:
    """english_support_set's promptfoo export as written, each test under its own prompt
    (its ``prompts`` names it), with the echo provider: what each test sends."""

    prompts: list[dict[str, Any]]
    tests: list[dict[str, Any]]

    @property
    def labels(self) -> list[str]:
        return [p["label"] for p in self.prompts]


@pytest.fixture(scope="module")
def own_prompts() -> OwnPrompts:
    text = export(load_config(REPO_ROOT), "english_support_set", "promptfoo")[1].text
    config = round_trip_load(text)
    # Echo shows what each test sends; the answer key is not what this test reads.
    tests = [{k: v for k, v in t.items() if k != "assert"} for t in config["tests"]]
    return OwnPrompts(list(config["prompts"]), tests)


@dataclass(frozen=True)
class TemplateLike:
    """sample_set with template-like text in a case's user turn and in its checks'
    values (``{{ input }}``, ``{% raw %}``, ``{{ order }}``, ``{# note #}``): the case, its
    exported promptfoo test, and the export's prompts."""

    task: Any
    test: dict[str, Any]
    prompts: list[dict[str, Any]]


@pytest.fixture(scope="module")
def template_like(tmp_path_factory: pytest.TempPathFactory) -> TemplateLike:
    repo = tmp_path_factory.mktemp("template-like") / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    case.write_text(
        case.read_text("utf-8")
        .replace("能不能退？", "能不能退？{{ input }} {% raw %}")
        .replace(
            "graders: [{type: trace_rule}]",
            "graders: [{type: trace_rule}, {type: must_include, values: ['{{ order }}']},"
            " {type: must_not_include, values: ['{# note #}']}]",
        ),
        "utf-8",
    )
    config = load_config(repo)
    task = next(t for t in load_dataset(repo, "sample_set", config=config).tasks
                if t.case_id == "refund_eligibility_001")  # fmt: skip
    exported = round_trip_load(export(config, "sample_set", "promptfoo")[1].text)
    [test] = [t for t in exported["tests"] if t["description"] == "refund_eligibility_001"]
    return TemplateLike(task, test, list(exported["prompts"]))


def _renamed(prompts: list[dict[str, Any]], test: dict[str, Any], prefix: str) -> dict[str, Any]:
    """A configuration of ``test`` alone under its own prompts, their labels prefixed (a
    label names a prompt in one promptfoo run: two exports' ``case`` would be one)."""
    named = [{**p, "label": prefix + p["label"]} for p in prompts]
    alone = {"vars": test["vars"], "prompts": [prefix + x for x in test["prompts"]]}
    return {"prompts": named, "tests": [alone]}


@pytest.fixture(scope="module")
def promptfoo_run(
    bundled: list[Probe],
    rendered: dict[str, dict[str, Rendered]],
    regex_case: RegexCase,
    js_checked: dict[str, tuple[dict[str, Any], list[bool]]],
    own_prompts: OwnPrompts,
    template_like: TemplateLike,
    promptfoo_dir: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> PromptfooRun:
    """promptfoo's verdicts on the bundled datasets' probes, on the regex replies and on
    the JavaScript checks' texts, and what english_support_set's tests send under their
    own prompts and what the template-like case sends, from one ``promptfoo eval`` (node's
    start and promptfoo's import are 2 s of CPU a run): the same tests, the probes each
    under the one prompt, as five runs would give them."""
    assert "sample_set" not in rendered["promptfoo"]  # the keys of the sets differ
    return promptfoo_verdicts(
        [*bundled, *regex_case.probes],
        {**rendered["promptfoo"], "sample_set": regex_case.promptfoo},
        promptfoo_dir,
        tmp_path_factory.mktemp("promptfoo-graded"),
        extra={key: test for key, (test, _) in js_checked.items()},
        routed={
            "own": {"prompts": own_prompts.prompts, "tests": own_prompts.tests},
            "template": _renamed(template_like.prompts, template_like.test, "template:"),
        },
    )


@pytest.fixture(scope="module")
def promptfoo_graded(
    promptfoo_run: PromptfooRun,
) -> dict[str, bool]:
    return promptfoo_run.verdicts


@pytest.mark.slow
def test_promptfoo_gives_pythons_verdicts_on_the_checks_written_in_javascript(
    js_checked: dict[str, tuple[dict[str, Any], list[bool]]], promptfoo_graded: dict[str, bool]
) -> None:
    # Every one of these is a javascript assertion (promptfoo starts no Python for it)...
    kinds = {a["type"] for test, _ in js_checked.values() for a in test["assert"]}
    assert kinds == {"javascript"}
    # ... and promptfoo's own engine gives the graders' verdict on every text.
    wrong = {
        (key, n): (test["vars"], test["assert"][n]["value"][:120], want)
        for key, (test, wants) in js_checked.items()
        for n, want in enumerate(wants)
        if promptfoo_graded[f"{key}|{n}"] != want
    }
    assert not wrong, wrong
    assert {w for _, wants in js_checked.values() for w in wants} == {True, False}
    assert sum(len(wants) for _, wants in js_checked.values()) == 32 * len(JS_TEXTS)


@pytest.mark.slow
def test_promptfoo_and_inspect_give_pythons_regex_verdicts(
    regex_case: RegexCase, promptfoo_graded: dict[str, bool], tmp_path: Path
) -> None:
    want, probes_ = regex_case.want, regex_case.probes
    # Python's \d reads full-width and Arabic-Indic digits, its \w Chinese text.
    assert want == [True, True, False, False, False, True, True], want
    assert [promptfoo_graded[p.key] for p in probes_] == want
    inspect = {"sample_set": export(regex_case.config, "sample_set", "inspect")[1]}
    (tmp_path / "i").mkdir()
    got = inspect_verdicts(probes_, inspect, tmp_path / "i")
    assert [got[p.key] for p in probes_] == want


# --- promptfoo: each case under its own prompt --------------------------------------------


@pytest.mark.slow
def test_promptfoo_runs_each_case_under_its_own_prompt_as_evalcase_run_does(
    own_prompts: OwnPrompts,
    promptfoo_run: PromptfooRun,
) -> None:
    dataset = load_dataset(REPO_ROOT, "english_support_set")
    labels, tests = own_prompts.labels, own_prompts.tests
    assert labels == ["case", *(p.label for _, p in sorted(dataset.prompts.items()))]
    # Run in the module's one promptfoo eval, beside the probes: its results are this
    # configuration's own (promptfoo_verdicts' routed), with the echo provider.
    results = promptfoo_run.routed["own"]
    assert len(results) == len(tests)  # one per case, not one per case and prompt
    sent = {tests[r["testIdx"]]["description"]: (labels[r["promptIdx"]], r["response"]["output"])
            for r in results}  # fmt: skip
    for variant in plan(dataset.tasks, dataset.prompts, []):  # each case's own prompt
        view = variant.view
        history = [(t.role, t.content) for t in view.history]
        label, output = sent[variant.case_id]
        assert label == (variant.prompt or "case"), variant.case_id
        assert json.loads(output) == chat(view.system, history, view.user_turns), label
    # The intent cases' label set reaches the model, under their prompt fixture.
    label, intent = sent["llm_intent_cancel_order_003"]
    assert label == "intent_labels_en@v1"
    assert "refund_request, order_status, cancel_order" in intent


# --- the documented Inspect command line ------------------------------------------------


@pytest.fixture
def openai_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local OpenAI-compatible server: the evaluated model answers ``cancel_order``,
    the grader model ``GRADE: C``; every request body is kept."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            graded = "You grade an assistant's answer" in json.dumps(body, ensure_ascii=False)
            text = "reason\nGRADE: C" if graded else "cancel_order"
            data = json.dumps({
                "id": "r", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield f"{url}/v1", seen


DOCUMENTED = (
    'inspect eval "$(python -m evalcase.authoring.exports.inspect_scorer)" \\\n'
    "    -T dataset=cases.jsonl -T grader_model=openai/gpt-4o-mini --model openai/gpt-4o"
)


@pytest.mark.slow
def test_the_documented_inspect_command_runs_as_printed(
    openai_server: tuple[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    from inspect_ai.log import list_eval_logs, read_eval_log

    docs = (REPO_ROOT / "docs/authoring.md").read_text("utf-8")
    assert "$ " + DOCUMENTED in docs
    url, seen = openai_server
    work = tmp_path / "work"
    work.mkdir()
    proc = invoke("export", "english_support_set", "--format", "inspect", "-o",
                   str(work / "cases.jsonl"), cwd=REPO_ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    bin_dir = str(Path(sys.executable).parent)  # `python` and `inspect` of this venv
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"],
           "PYTHONPATH": str(REPO_ROOT / "tools"), "OPENAI_BASE_URL": url,
           "OPENAI_API_KEY": "local", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "INSPECT_DISPLAY": "none", "INSPECT_LOG_DIR": str(work / "logs")}  # fmt: skip
    env.pop("INSPECT_EVAL_MODEL", None)
    ran = subprocess.run(["bash", "-c", DOCUMENTED], cwd=work, env=env, capture_output=True,
                         text=True, check=False, timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    [info] = list_eval_logs(str(work / "logs"))
    log = read_eval_log(info)
    assert log.status == "success" and log.samples is not None
    tasks = {t.case_id: t for t in load_dataset(REPO_ROOT, "english_support_set").tasks}
    assert {str(s.id) for s in log.samples} == set(tasks)  # read from ./cases.jsonl
    for s in log.samples:
        want = evalcase_verdict(tasks[str(s.id)], "cancel_order")
        if want is not None:  # the deterministic graders decide (the grader model says C)
            assert (s.scores["evalcase_scorer"].value == "C") is want, s.id
    # The intent cases' prompt fixture reached the evaluated model, rendered.
    systems = [m["content"] for b in seen if b["model"] == "gpt-4o" for m in b["messages"]
               if m["role"] == "system"]  # fmt: skip
    assert any("refund_request, order_status, cancel_order" in s for s in systems)
    assert any(b["model"] == "gpt-4o-mini" for b in seen)  # the grader model was asked


# --- role: tool turns -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_tool_turns_are_listed_as_not_carried(fmt: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    text = case.read_text("utf-8")
    assert "interaction:" not in text
    case.write_text(
        text.replace(
            "evaluator_config:\n",
            "interaction:\n  - {role: user, content: 我的退款到哪一步了？}\n"
            '  - {role: tool, content: \'{"status": "processing"}\'}\n'
            "  - {role: assistant, content: 正在处理。}\n"
            "  - {role: user, content: 还要多久？}\n"
            "evaluator_config:\n",
        ).replace(  # an answer OpenAI evals' Includes can compare: the case is exported
            "graders: [{type: trace_rule}]",
            "graders: [{type: trace_rule}, {type: must_include, values: [处理]}]",
        ),
        "utf-8",
    )
    proc = invoke("export", "sample_set", "--format", fmt, "--strict", cwd=repo)
    assert "not carried: tool turns in the conversation: refund_eligibility_001" in proc.stderr
    assert proc.returncode == 1, proc.stderr  # for jsonl, the tool turn is its one loss
    if fmt == "jsonl":
        line = next(json.loads(x) for x in proc.stdout.splitlines()
                    if json.loads(x)["id"] == "refund_eligibility_001")  # fmt: skip
        assert line["tool_turns"] == 1 and line["input"]["message"] == "还要多久？"


# --- soft graders -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["promptfoo", "inspect"])
def test_a_soft_grader_is_no_peer_check(fmt: str, tmp_path: Path) -> None:
    """``hard: false`` fails nothing alone in evalcase, so no export fails a case on it."""
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    case = repo / "datasets/sample_set/cases/refund_eligibility_001.yaml"
    case.write_text(
        case.read_text("utf-8").replace(
            "graders: [{type: trace_rule}]",
            "graders: [{type: trace_rule}, {type: must_include, values: [质量], hard: false},"
            " {type: must_not_include, values: [保证]}]",
        ),
        "utf-8",
    )
    rendered = export(load_config(repo), "sample_set", fmt)[1]
    if fmt == "promptfoo":
        [test] = [t for t in round_trip_load(rendered.text)["tests"]
                  if t["description"] == "refund_eligibility_001"]  # fmt: skip
        checks = [(a["type"], a["value"]) for a in test["assert"] if a["type"] != "llm-rubric"]
        assert checks == [("not-contains", "保证")]
    else:
        [sample] = [json.loads(x) for x in rendered.text.splitlines()
                    if json.loads(x)["id"] == "refund_eligibility_001"]  # fmt: skip
        graders = json.loads(sample["target"])["graders"]
        assert [g["type"] for g in graders] == ["must_not_include"]
    assert "refund_eligibility_001" in rendered.not_carried["must_include grader"]
    assert "refund_eligibility_001" in rendered.carried["must_not_include"]


# --- text promptfoo would read as a template --------------------------------------------

ANSWER_PROVIDER = """
import json


def call_api(prompt, options, context):
    # The answer, JSON-escaped so that promptfoo's templating leaves it as written.
    return {"output": json.loads(context["vars"]["evalcase_answer_json"])}
"""


@pytest.mark.slow
def test_promptfoo_gets_template_like_text_as_written(
    template_like: TemplateLike,
    promptfoo_run: PromptfooRun,
    promptfoo_dir: Path,
    tmp_path: Path,
) -> None:
    task, test = template_like.task, template_like.test
    # What the model gets: evalcase's view, the template-like text as written (echoed in
    # the module's one promptfoo eval, under the export's own prompt).
    echo = promptfoo_run.routed["template"]
    assert len(echo) == 1
    view = task.agent
    history = [(t.role, t.content) for t in view.history]
    assert json.loads(echo[0]["response"]["output"]) == chat(view.system, history, view.user_turns)
    # How it is graded: as evalcase grades.
    (tmp_path / "answer_provider.py").write_text(ANSWER_PROVIDER, "utf-8")
    replies = ["订单 {{ order }} 可以退", "订单 X 可以退", "{{ order }} {# note #}"]
    asserts = [a for a in test["assert"] if a["type"] != "llm-rubric"]
    hidden = [json.dumps(r).replace("{", "\\u007b").replace("}", "\\u007d") for r in replies]
    tests = [{"vars": {"evalcase_answer_json": h}, "assert": asserts} for h in hidden]
    graded = promptfoo_eval(promptfoo_dir, {"prompts": ["x"], "tests": tests,
                            "providers": ["file://answer_provider.py"]}, tmp_path)  # fmt: skip
    want = [evalcase_verdict(task, r) for r in replies]
    assert want == [True, False, False]
    assert [bool(r["success"]) for r in graded] == want, [
        (r.get("response"), r.get("error"), (r.get("gradingResult") or {}).get("reason"))
        for r in graded
    ]
