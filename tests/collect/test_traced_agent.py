"""The whole path from a real instrumented agent: an OpenAI Agents SDK agent, instrumented
with OpenTelemetry from PyPI (OpenInference's instrumentation, the OTLP/HTTP protobuf
exporter), talking to a deterministic model server on 127.0.0.1 and exporting to a real
``evalcase collect`` process."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalcase.collect.inbox import Skipped, read_inbox
from tests.collect.model_server import model_server
from tests.helpers import REPO_ROOT, commit_all, init_repo, invoke, serving

pytestmark = pytest.mark.slow
STEM = ("--scenario", "shop_order_refund")  # a new dataset has no case to take an ID stem from

AGENT = Path(__file__).with_name("traced_agent.py")
RECORDED = REPO_ROOT / "tests" / "authoring" / "data" / "traces" / "agents_sdk_inbox.jsonl"
ENV = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}
BAD = "Where is my order A-1001? I am jane.doe@gmail.com, +1 415 555 0134."
FINE = "Where is my order A-2002?"


def start_collect(*args: str, cwd: Path) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcase", "collect", "--port", "0", *args],
        cwd=cwd, env=ENV, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+/v1/traces)", line)
    assert found, line
    return proc, found.group(1)


def stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return err


def spans(folder: Path) -> list[dict[str, Any]]:
    return [
        span
        for item in read_inbox(folder)
        if not isinstance(item, Skipped)
        for rs in item[2]["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
    ]


def attrs(span: dict[str, Any]) -> dict[str, Any]:
    return {a["key"]: next(iter(a["value"].values())) for a in span.get("attributes", [])}


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A repository whose collect (marked traces only) received two conversations of one
    agent process, each exported before the next: a bad one (marked thumbs_down) and a
    fine one (not marked)."""
    repo = init_repo(tmp_path_factory.mktemp("traced") / "repo")
    proc, url = start_collect("--only-marked", "user.feedback=thumbs_down", cwd=repo)
    try:
        with serving(model_server()) as model:
            run = subprocess.run(
                [sys.executable, str(AGENT), model + "/v1", url, BAD, "thumbs_down", FINE, ""],
                env=ENV, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert run.returncode == 0, run.stderr
    finally:
        err = stop(proc)
    yield repo, err


def test_the_inbox_holds_the_marked_conversation_with_its_tool_calls_and_hex_ids(
    collected: tuple[Path, str],
) -> None:
    repo, err = collected
    found = spans(repo / ".git" / "evalcase" / "inbox")
    assert {s["traceId"] for s in found} and len({s["traceId"] for s in found}) == 1
    for span in found:
        assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"])
        assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
        assert "parentSpanId" not in span or re.fullmatch(r"[0-9a-f]{16}", span["parentSpanId"])
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for span in found:
        by_kind.setdefault(str(attrs(span).get("openinference.span.kind")), []).append(span)
    tools = [attrs(s) for s in by_kind["TOOL"]]
    assert [(t["tool.name"], json.loads(t["input.value"])) for t in tools] == [
        ("order_lookup", {"order_id": "A-1001"}),
        ("refund_policy", {"reason": "delayed"}),
    ]
    assert json.loads(tools[0]["output.value"])["status"] == "delayed"
    llm = [attrs(s) for s in by_kind["LLM"]]
    assert len(llm) == 3 and all(a["llm.model_name"] == "scripted" for a in llm)
    assert "jane.doe@gmail.com" in llm[0]["llm.input_messages.1.message.content"]
    assert "you can get a refund" in llm[-1]["output.value"]
    marked = [s for s in found if attrs(s).get("user.feedback") == "thumbs_down"]
    assert [s["name"] for s in marked] == ["conversation"]
    assert "A-2002" not in json.dumps(found)  # the unmarked conversation was not kept
    assert "spans written" in err and "held unmarked and dropped" in err


def test_a_kill_mid_stream_leaves_a_readable_inbox_and_the_next_collect_appends(
    tmp_path: Path,
) -> None:
    import httpx

    inbox = tmp_path / "inbox"
    body = RECORDED.read_bytes().splitlines()[0]
    proc, url = start_collect("--inbox", str(inbox), cwd=tmp_path)
    answered: list[int] = []
    enough = threading.Event()

    def post() -> None:
        with httpx.Client() as client:
            while True:
                try:
                    r = client.post(url, content=body, headers={"Content-Type": "application/json"})
                except httpx.HTTPError:
                    return
                answered.append(r.status_code)
                if len(answered) >= 20:
                    enough.set()

    sender = threading.Thread(target=post)
    sender.start()
    assert enough.wait(60)
    proc.kill()  # SIGKILL while requests keep coming
    proc.wait()
    sender.join()
    items = list(read_inbox(inbox))
    whole = [i for i in items if not isinstance(i, Skipped)]
    assert len(whole) >= answered.count(200)  # every 200 was durable before it was sent
    assert all(isinstance(i, Skipped) for i in items[len(whole) :])  # at most a torn tail
    proc, url = start_collect("--inbox", str(inbox), cwd=tmp_path)
    try:
        r = httpx.post(url, content=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 200
    finally:
        stop(proc)
    assert len([i for i in read_inbox(inbox) if not isinstance(i, Skipped)]) == len(whole) + 1


def test_the_bounds_refuse_and_say_so(tmp_path: Path) -> None:
    import httpx

    inbox = tmp_path / "inbox"
    body = RECORDED.read_bytes().splitlines()[0]
    proc, url = start_collect(
        "--inbox", str(inbox), "--max-inbox", str(2 * len(body) + 100), "--max-body", "64K",
        cwd=tmp_path,
    )  # fmt: skip
    try:
        statuses = [
            httpx.post(url, content=body, headers={"Content-Type": "application/json"}).status_code
            for _ in range(4)
        ]
        big = httpx.post(url, content=b" " * 70_000, headers={"Content-Type": "application/json"})
    finally:
        err = stop(proc)
    assert statuses == [200, 200, 507, 507] and big.status_code == 413
    assert sum(p.stat().st_size for p in inbox.glob("*.jsonl")) <= 2 * len(body) + 100
    assert "refusing spans" in err and "2 refused (inbox full)" in err


def test_the_collected_conversation_imports_lints_runs_and_audits(
    collected: tuple[Path, str], tmp_path: Path
) -> None:
    """The interface with `evalcase import` of traces: the collected inbox becomes a
    redacted draft case with tool fixtures that lints with only its TODO findings; the
    same deterministic model, as an `openai:` agent, makes the same calls and gets the
    recorded results back from the fixtures (its answer depends on them); the audit says
    what it does not check yet."""
    source, _ = collected
    # A repository of its own (no fixture of these tools yet: the import writes them).
    repo = init_repo(tmp_path / "cases")
    (repo / "evalcase.toml").write_text("", "utf-8")
    assert invoke("new-dataset", "shop_traces", cwd=repo).returncode == 0
    commit_all(repo, "a dataset for the traces")
    inbox = source / ".git" / "evalcase" / "inbox"
    r = invoke("import", str(inbox), "--dataset", "shop_traces", *STEM, cwd=repo)
    assert r.returncode == 0, r.stderr
    written = "\n".join(
        p.read_text("utf-8")
        for folder in ("datasets", "fixtures")
        for p in (repo / folder).rglob("*.yaml")
    )
    assert "jane.doe@gmail.com" not in written and "555 0134" not in written
    assert "order_lookup" in written and "refund_policy" in written and "A-1001" in written
    r = invoke("lint", "--format", "json", "datasets/shop_traces", cwd=repo)
    findings = json.loads(r.stdout)
    # Only what a reviewer must write: the TODO fields (EC451), the usage rights (EC405),
    # and the new dataset's suite, which selects by the risk level the draft leaves TODO.
    assert findings and {f["code"] for f in findings} <= {"EC451", "EC405", "EC310"}, r.stdout
    again = invoke("import", str(inbox), "--dataset", "shop_traces", *STEM, cwd=repo)
    assert again.returncode == 0, again.stderr
    assert "nothing new" in again.stdout + again.stderr
    (draft,) = (repo / "datasets" / "shop_traces" / "cases").glob("*.yaml")
    r = invoke("audit", "shop_traces", "--progress", "none", cwd=repo)
    # Nothing to audit yet is an error, never a pass, and it says why: the TODO fields.
    assert r.returncode == 2 and "not runnable yet" in r.stderr, r.stderr
    assert draft.name in r.stderr and "TODO" in r.stderr, r.stderr
    _review(draft)
    commit_all(repo, "the trace draft reviewed")
    r = invoke("lint", "--format", "json", "datasets/shop_traces", cwd=repo)
    assert [f for f in json.loads(r.stdout) if f["severity"] == "error"] == [], r.stdout
    with serving(model_server()) as model:
        r = invoke(
            "run", "shop_traces", "--agent", "openai:scripted", "--base-url", model + "/v1",
            "--progress", "none", cwd=repo, env={"OPENAI_API_KEY": "not-a-key"},
        )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    (attempts,) = (repo / "outputs").rglob("attempts.jsonl")
    (record,) = [json.loads(line) for line in attempts.read_text("utf-8").splitlines()]
    assert [c["tool"] for c in record["calls"]] == ["order_lookup", "refund_policy"]
    assert "delayed" in json.dumps(record["calls"][0])  # the recorded result, replayed
    assert "no_matching_response" not in json.dumps(record)
    assert record["output"] == "Order A-1001 is delayed; you can get a refund."
    # Promoted to the regression set, the reviewed case is audited: its gold (the
    # expected calls, answered by the recorded results) passes, and each of its two
    # calls is needed (the gold without it fails).
    text = draft.read_text("utf-8").replace("dataset_role: observation", "dataset_role: regression")
    draft.write_text(text, "utf-8")
    commit_all(repo, "the reviewed case joins the regression set")
    r = invoke("audit", "shop_traces", "--progress", "none", "--format", "json", cwd=repo)
    assert r.returncode in (0, 1), r.stderr
    (fact,) = json.loads(r.stdout).values()
    assert fact["status"] == "passed" and fact["outcomes"]["gold"] == "passes", fact
    assert {a: o for a, o in fact["outcomes"].items() if a != "gold"} == {
        a: "fails" for a in ("echo", "flail", "handoff", "mutants", "parrot", "refuse", "silent")
    }, fact
    assert [(m["tool"], m["outcome"]) for m in fact["mutants"]] == [
        ("order_lookup", "fails"), ("refund_policy", "fails")
    ]  # fmt: skip


def _review(path: Path) -> None:
    """What a reviewer does first: the expectation written (the calls the conversation
    needed, as the observed outcome shows them), every TODO field filled, usage approved."""
    from evalcase.yamlwrite import round_trip_dump

    case = yaml.safe_load(path.read_text("utf-8"))
    observed = case["metadata"]["origin"]["observed"]

    def filled(value: Any) -> Any:
        if isinstance(value, str) and value.startswith("TODO"):
            return "Reviewed: " + value.split(":", 1)[1].strip()
        if isinstance(value, list):
            return [filled(v) for v in value]
        if isinstance(value, dict):
            return {k: filled(v) for k, v in value.items()}
        return value

    case = filled(case)
    case["difficulty"] = "Medium"
    case["ability_tags"] = ["tool use"]
    case["expected_calls"] = {
        "order": "in_order",
        "calls": [{"tool": c["tool"], "args": dict(c["args"])} for c in observed["calls"]],
    }
    case["rubric"] = ["The answer gives the order's status and whether it can be refunded."]
    case["evaluator_config"] = {"graders": [{"type": "tool_calls"}]}
    case["risk_level"] = "P2"
    case["metadata"]["usage_rights_status"] = "approved_for_evaluation"
    path.write_text(round_trip_dump(case), "utf-8")
