"""`evalcase import PATH` for OpenTelemetry traces: each conversation a draft case, its
recorded tool results fixtures, personal data replaced by placeholders."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.loader import load
from evalcase.model import FatalError
from tests.authoring import otlp_samples as otlp
from tests.helpers import BASE_REPO, REPO_ROOT, commit_all, init_repo, invoke

CASES = "datasets/sample_set/cases"
FIRST = f"{CASES}/refund_eligibility_bad_case_001.yaml"


def repo_copy(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(BASE_REPO, repo)
    return repo


def files(repo: Path) -> set[str]:
    return {p.relative_to(repo).as_posix() for p in repo.rglob("*.yaml")}


def read(repo: Path, rel: str) -> dict:  # type: ignore[type-arg]
    data = load(rel, (repo / rel).read_bytes()).data
    assert isinstance(data, dict)
    return data


def trace_file(tmp_path: Path, *requests: dict, name: str = "traces.jsonl") -> Path:  # type: ignore[type-arg]
    path = tmp_path / name
    path.write_text(otlp.jsonl(*requests), "utf-8")
    return path


def run_import(repo: Path, source: Path, *extra: str):  # type: ignore[no-untyped-def]
    return invoke("import", str(source), "--dataset", "sample_set", *extra, cwd=repo)


def test_a_genai_trace_becomes_a_redacted_draft_with_its_tool_fixture(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    proc = run_import(repo, trace_file(tmp_path, otlp.request(otlp.genai_refund())))
    assert proc.returncode == 0, proc.stderr
    case = read(repo, FIRST)
    assert case["input"] == "订单 ORDER_123 的耳机能退吗？我的邮箱是 <EMAIL_1>"
    assert case["generation_config"] == {"system_prompt": "你是退款助手。"}
    assert case["available_tools"] == ["order_lookup"]
    assert case["tool_schema"] == {"order_lookup": "v2"}
    assert case["source"].startswith(f"OpenTelemetry trace {otlp.TRACE}: spans a000000000000001")
    meta = case["metadata"]
    assert (meta["dataset_role"], meta["review_status"]) == ("observation", "draft")
    origin = meta["origin"]
    assert origin["trace_ids"] == [otlp.TRACE] and len(origin["span_ids"]) == 4
    # What the agent did is a review aid; the expectation stays for a person.
    recorded = {"order_id": "ORDER_123", "status": "signed", "contact": "<EMAIL_1>"}
    observed_call = {"tool": "order_lookup", "args": {"order_id": "ORDER_123"}, "result": recorded}
    assert origin["observed"]["calls"] == [observed_call]
    assert origin["observed"]["answer"] == "可以退，已为您登记。"
    assert case["expected_calls"]["calls"][0]["tool"].startswith("TODO:")
    assert case["expected_behavior"][0].startswith("TODO:")
    # A new version of the existing fixture, its recorded result a response by arguments.
    fixture = read(repo, "fixtures/tool/order_lookup.yaml")
    assert fixture["fixture_version"] == "v2"
    last = fixture["data"]["responses"][-1]
    assert last == {"when": {"order_id": "ORDER_123"}, "result": recorded}
    # The same address, the same placeholder in the case and its fixture; said, masked.
    assert "zhang.san@corp.cn" not in (repo / FIRST).read_text("utf-8")
    assert "zhang.san" not in proc.stdout + proc.stderr
    assert "personal data (email) replaced in refund_eligibility_bad_case_001 user turn 1: " \
        "z***@corp.cn by <EMAIL_1>" in proc.stdout  # fmt: skip
    assert "call 1 (order_lookup) result.contact: z***@corp.cn by <EMAIL_1>" in proc.stdout


def test_openinference_spans_with_a_session_across_traces_are_one_conversation(
    tmp_path: Path,
) -> None:
    repo = repo_copy(tmp_path)
    first = otlp.openinference_refund(session="sess-42")
    second = otlp.openinference_refund(trace="5" * 32, session="sess-42")
    for span in second:  # the user's second turn, in a second trace
        for a in span["attributes"]:
            if a["value"].get("stringValue") == "帮我查一下 ORDER_2001 的退款进度":
                a["value"]["stringValue"] = "那什么时候到账？"
    source = trace_file(tmp_path, otlp.request(first), otlp.request(second))
    proc = run_import(repo, source)
    assert proc.returncode == 0, proc.stderr
    case = read(repo, FIRST)
    assert not (repo / f"{CASES}/refund_eligibility_bad_case_002.yaml").exists()
    assert case["interaction"] == [
        {"role": "user", "content": "帮我查一下 ORDER_2001 的退款进度"},
        {"role": "user", "content": "那什么时候到账？"},
    ]
    assert case["generation_config"] == {"system_prompt": "You are a refund assistant."}
    assert case["metadata"]["origin"]["trace_key"] == "conversation sess-42"
    assert len(case["metadata"]["origin"]["trace_ids"]) == 2
    # A tool without a fixture gets a draft one, its parameters inferred from the calls.
    fixture = read(repo, "fixtures/tool/refund_status.yaml")
    assert fixture["fixture_version"] == "v1"
    assert fixture["description"].startswith("TODO:")
    assert fixture["data"]["parameters"] == {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "verbose": {"type": "boolean"}},
        "required": ["order_id", "verbose"],
    }
    assert fixture["data"]["responses"] == [
        {"when": {"order_id": "ORDER_2001", "verbose": True}, "result": {"status": "processing"}}
    ]


def test_the_older_genai_prompt_and_completion_attributes_and_events(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    flat = otlp.span("c000000000000001", "chat", {
        "gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "ORDER_123 在哪？",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "已签收。",
    })  # fmt: skip
    events = otlp.span("c000000000000002", "chat", {"gen_ai.system": "openai"}, trace="6" * 32,
        events=[{"name": "gen_ai.user.message", "attributes": {"content": "能开发票吗"}},
                {"name": "gen_ai.choice", "attributes": {"index": 0, "finish_reason": "stop",
                 "message": json.dumps({"content": "可以。"}, ensure_ascii=False)}}])  # fmt: skip
    proc = run_import(repo, trace_file(tmp_path, otlp.request([flat, events])))
    assert proc.returncode == 0, proc.stderr
    by_input = {}
    for n in ("001", "002"):
        case = read(repo, f"{CASES}/refund_eligibility_bad_case_{n}.yaml")
        by_input[case["input"]] = case
    assert by_input["ORDER_123 在哪？"]["metadata"]["origin"]["observed"]["answer"] == "已签收。"
    assert by_input["ORDER_123 在哪？"]["generation_config"] == {"system_prompt": "Be brief."}
    assert by_input["能开发票吗"]["metadata"]["origin"]["observed"]["answer"] == "可以。"


def test_an_otlp_protobuf_file_is_read_by_its_content(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    repo = repo_copy(tmp_path)
    message = ExportTraceServiceRequest()
    scope = message.resource_spans.add().scope_spans.add()
    for raw in otlp.genai_refund():
        span = scope.spans.add()
        span.trace_id = bytes.fromhex(raw["traceId"])
        span.span_id = bytes.fromhex(raw["spanId"])
        span.parent_span_id = bytes.fromhex(raw["parentSpanId"])
        span.name = raw["name"]
        span.start_time_unix_nano = int(raw["startTimeUnixNano"])
        for a in raw["attributes"]:
            span.attributes.append(KeyValue(key=a["key"]))
            span.attributes[-1].value.string_value = a["value"]["stringValue"]
    source = tmp_path / "export.bin"
    source.write_bytes(message.SerializeToString())
    proc = run_import(repo, source)
    assert proc.returncode == 0, proc.stderr
    assert read(repo, FIRST)["metadata"]["origin"]["trace_ids"] == [otlp.TRACE]


def test_a_protobuf_file_without_opentelemetry_proto_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repo_copy(tmp_path)
    before = files(repo)
    source = tmp_path / "export.bin"
    source.write_bytes(b"\x0a\x05\x12\x03\x12\x01\x00")
    monkeypatch.setitem(
        sys.modules, "opentelemetry.proto.collector.trace.v1.trace_service_pb2", None
    )
    proc = run_import(repo, source)
    assert proc.returncode == 2
    assert "pip install 'opentelemetry-proto" in proc.stderr and "Traceback" not in proc.stderr
    assert files(repo) == before


def test_allow_personal_data_keeps_it_and_says_so(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    source = trace_file(tmp_path, otlp.request(otlp.genai_refund()))
    proc = run_import(repo, source, "--allow-personal-data")
    assert proc.returncode == 0, proc.stderr
    assert "zhang.san@corp.cn" in read(repo, FIRST)["input"]
    assert "kept (--allow-personal-data)" in proc.stdout
    assert read(repo, "fixtures/tool/order_lookup.yaml")["desensitized"] is True  # existing


def test_the_same_trace_imported_twice_writes_nothing_new(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    source = trace_file(tmp_path, otlp.request(otlp.genai_refund()))
    assert run_import(repo, source).returncode == 0
    before = {p: (repo / p).read_bytes() for p in files(repo)}
    again = run_import(repo, source)
    assert again.returncode == 0, again.stderr
    assert f"trace {otlp.TRACE} already imported as refund_eligibility_bad_case_001" in again.stdout
    assert "nothing new" in again.stderr
    assert {p: (repo / p).read_bytes() for p in files(repo)} == before


def test_a_near_duplicate_is_reported_by_lint_and_the_draft_has_only_review_findings(
    tmp_path: Path,
) -> None:
    repo = repo_copy(tmp_path)
    one = otlp.genai_refund(question="订单 ORDER_123 的耳机能退吗？")
    two = otlp.genai_refund(trace=otlp.TRACE_2, question="订单ORDER_123的耳机 能退吗")
    proc = run_import(repo, trace_file(tmp_path, otlp.request(one), otlp.request(two)))
    assert proc.returncode == 0, proc.stderr
    result = lint_repository(load_config(repo), use_cache=False, jobs=1)
    drafts = {f"{CASES}/refund_eligibility_bad_case_00{n}.yaml" for n in (1, 2)}
    codes = {f.code for f in result.findings if f.path in drafts}
    # Placeholders to fill (EC451), usage to approve (EC405), the near-duplicate (EC408).
    near = [f for f in result.findings if f.path in drafts and f.code not in ("EC451", "EC405")]
    assert "EC451" in codes and "EC405" in codes
    assert near and all(f.code == "EC408" for f in near), near
    fixture_findings = [f for f in result.findings if f.path.startswith("fixtures/")]
    # order_lookup v2: the case that pinned v1 is asked to review its pin, nothing else.
    assert {f.code for f in result.findings if f.path not in drafts} <= {"EC309", "EC451"}
    assert not [f for f in fixture_findings if f.code != "EC451"]


def test_recorded_arguments_that_do_not_fit_the_fixtures_parameters_are_said(
    tmp_path: Path,
) -> None:
    # the fixture's order_lookup takes order_id matching ^ORDER_[0-9]+$; production sent A-1001
    repo = repo_copy(tmp_path)
    fixture = repo / "fixtures" / "tool" / "order_lookup.yaml"
    text = fixture.read_text("utf-8")
    assert "order_id: {type: string}" in text
    fixture.write_text(
        text.replace(
            "order_id: {type: string}", "order_id: {type: string, pattern: '^ORDER_[0-9]+$'}"
        ),
        "utf-8",
    )
    fits = run_import(repo, trace_file(tmp_path, otlp.request(otlp.genai_refund())))
    assert fits.returncode == 0, fits.stderr
    assert "do not fit" not in fits.stdout + fits.stderr
    source = trace_file(
        tmp_path, otlp.request(otlp.genai_refund(trace=otlp.TRACE_2, question="A-1001 能退吗？",
                                                 order="A-1001"))
    )  # fmt: skip
    proc = run_import(repo, source)
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert "order_lookup: 1 of 1 recorded call(s) do not fit the fixture's parameters" in said
    assert '{"order_id": "A-1001"}' in said
    assert "runner refuses such a call" in said


def test_an_inbox_folder_is_read_file_by_file_in_name_order(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    trace_file(inbox, otlp.request(otlp.openinference_refund()), name="b.jsonl")
    trace_file(inbox, otlp.request(otlp.genai_refund()), name="a.jsonl")
    (inbox / "notes.txt").write_text("not a trace", "utf-8")
    proc = run_import(repo, inbox)
    assert proc.returncode == 0, proc.stderr
    assert read(repo, FIRST)["metadata"]["origin"]["imported_from"] == "a.jsonl:1"
    second = read(repo, f"{CASES}/refund_eligibility_bad_case_002.yaml")
    assert second["metadata"]["origin"]["imported_from"] == "b.jsonl:1"


# --- hostile traces ---------------------------------------------------------------------
def _hostile(tmp_path: Path, text: bytes) -> tuple[Path, set[str], object]:
    repo = repo_copy(tmp_path)
    before = files(repo)
    source = tmp_path / "hostile.jsonl"
    source.write_bytes(text)
    return repo, before, run_import(repo, source)


def _line(spans: list[dict]) -> bytes:  # type: ignore[type-arg]
    return otlp.jsonl(otlp.request(spans)).encode("utf-8")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("invalid UTF-8", _line(otlp.genai_refund()) + b'{"resourceSpans": ["\xff\xfe"]}\n',
         "hostile.jsonl:2: not UTF-8 (invalid start byte at byte 20)"),
        ("deep JSON", b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
         "hostile.jsonl:1: JSON nested deeper than 64 levels"),
        ("not JSON", _line(otlp.genai_refund()) + b'{"resourceSpans": [\n\n',
         "hostile.jsonl:2: not JSON"),
        ("not spans", b'{"resourceSpans": "x"}\n', "hostile.jsonl:1: resourceSpans is not a list"),
    ],
)  # fmt: skip
def test_a_file_that_cannot_be_read_is_one_clear_error_and_nothing_is_written(
    tmp_path: Path, name: str, text: bytes, message: str
) -> None:
    repo, before, proc = _hostile(tmp_path, text)
    assert proc.returncode == 2, name  # type: ignore[attr-defined]
    assert message in proc.stderr and "nothing written" in proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    assert files(repo) == before


def test_more_spans_than_the_bound_is_a_clear_error(tmp_path: Path) -> None:
    from evalcase.authoring.traces.model import MAX_SPANS

    spans = [
        {"traceId": otlp.TRACE, "spanId": f"{i:016x}", "name": "x"} for i in range(MAX_SPANS + 1)
    ]
    repo, before, proc = _hostile(tmp_path, _line(spans))
    assert proc.returncode == 2  # type: ignore[attr-defined]
    assert "more than 100,000 spans in one import (the bound)" in proc.stderr  # type: ignore[attr-defined]
    assert files(repo) == before


def test_the_bound_across_an_inbox_stops_the_reading_where_it_is_crossed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four files of 6 spans against a bound of 10: the second file crosses it, and the
    # files after it are not read (held in memory) before the error.
    import evalcase.authoring.traces as traces

    monkeypatch.setattr(traces, "MAX_SPANS", 10)
    read: list[str] = []
    real = traces.read_file

    def counted(path: Path, shown: str, budget: int):  # type: ignore[no-untyped-def]
        read.append(path.name)
        return real(path, shown, budget)

    monkeypatch.setattr(traces, "read_file", counted)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for f in range(4):
        spans = [{"traceId": otlp.TRACE, "spanId": f"{f:08x}{i:08x}", "name": "x"}
                 for i in range(6)]  # fmt: skip
        (inbox / f"{f}.jsonl").write_bytes(_line(spans))
    with pytest.raises(FatalError, match=r"1\.jsonl:1: more than .* spans in one import"):
        traces.read_spans(inbox)
    assert read == ["0.jsonl", "1.jsonl"]


def test_hostile_spans_are_skipped_with_their_reason_and_nothing_leaves_the_repository(
    tmp_path: Path,
) -> None:
    good = otlp.genai_refund()
    huge = otlp.span("d000000000000001", "chat", {"gen_ai.operation.name": "chat",
        "gen_ai.input.messages": "x" * 300_000}, trace="7" * 32)  # fmt: skip
    deep = otlp.span("d000000000000002", "execute_tool x", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "order_lookup",
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.result": "[" * 70 + "]" * 70}, trace="8" * 32)  # fmt: skip
    cycle = [otlp.span("d000000000000003", "chat", {"gen_ai.operation.name": "chat"},
                       trace="9" * 32, parent="d000000000000004"),
             otlp.span("d000000000000004", "chat", {"gen_ai.operation.name": "chat"},
                       trace="9" * 32, parent="d000000000000003")]  # fmt: skip
    orphan = otlp.openinference_refund(trace="a" * 32)
    orphan[0]["parentSpanId"] = "ffffffffffffffff"
    path_tool = otlp.genai_refund(trace="b" * 32, question="请看 ../../etc/passwd")
    path_tool[2]["attributes"][1]["value"]["stringValue"] = "../../etc/passwd"
    path_tool[1]["attributes"][3]["value"]["stringValue"] = json.dumps([{"role": "assistant",
        "parts": [{"type": "tool_call", "id": "call_1", "name": "../../etc/passwd",
                   "arguments": {}}]}])  # fmt: skip
    repo, before, proc = _hostile(tmp_path, _line([*good, huge, deep, *cycle, *orphan, *path_tool]))
    err = proc.stderr  # type: ignore[attr-defined]
    assert proc.returncode == 0, err  # type: ignore[attr-defined]
    assert "skipped span d000000000000001: attribute gen_ai.input.messages holds 300,000 bytes, " \
        "over the 262,144-byte bound" in err  # fmt: skip
    assert "skipped span d000000000000002: attribute gen_ai.tool.call.result holds JSON nested " \
        "deeper than 64 levels" in err  # fmt: skip
    assert "skipped span d000000000000003: its parents form a cycle" in err
    assert "note: 1 span(s) whose parent is not in the import (kept)" in err
    assert "tool name '../../etc/passwd' is not a fixture ID" in err
    assert "Traceback" not in err
    new = files(repo) - before
    assert all(p.startswith((f"{CASES}/", "fixtures/tool/")) for p in new), new
    assert not (tmp_path / "etc").exists() and not (repo.parent / "etc").exists()
    assert not any("passwd" in p for p in new)


def test_a_dataset_that_is_no_identifier_is_refused(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    before = files(repo)
    source = trace_file(tmp_path, otlp.request(otlp.genai_refund()))
    proc = invoke("import", str(source), "--dataset", "../../x", cwd=repo)
    assert proc.returncode == 2 and "no dataset '../../x'" in proc.stderr
    assert files(repo) == before


# --- the draft runs and audits ----------------------------------------------------------
def _reviewed(repo: Path) -> None:
    """What a reviewer does first: the expectation written, usage approved."""
    path = repo / FIRST
    text = path.read_text("utf-8")
    case = read(repo, FIRST)
    case.pop("rubric")
    case["expected_calls"] = {"order": "in_order",
        "calls": [{"tool": "order_lookup", "args": {"order_id": "ORDER_123"}}]}  # fmt: skip
    case["evaluator_config"] = {"graders": [{"type": "trace_rule"}]}
    assert text
    from evalcase.yamlwrite import round_trip_dump

    path.write_text(round_trip_dump(case), "utf-8")


def test_the_recorded_responses_replay_for_an_agent_making_the_same_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = init_repo(tmp_path / "repo", BASE_REPO)
    source = trace_file(tmp_path, otlp.request(otlp.genai_refund()))
    assert run_import(repo, source).returncode == 0
    audit = invoke("audit", "sample_set", "--progress", "none", cwd=repo)
    # The draft's expectations are TODO: the audit says it does not check it yet.
    assert f"not audited: {FIRST}" in audit.stdout + audit.stderr
    _reviewed(repo)
    commit_all(repo, "a reviewed trace draft")
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke("run", "--no-grade", "sample_set", "--select", "refund_eligibility_bad_case_*",
                  "--agent", "py:tests.authoring.trace_agents:order_lookup_then_answer",
                  "--progress", "none", cwd=repo)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (attempts,) = (repo / "outputs").rglob("attempts.jsonl")
    record = json.loads(attempts.read_text("utf-8").splitlines()[0])
    text = json.dumps(record, ensure_ascii=False)
    assert '"status": "signed"' in text and "<EMAIL_1>" in text
    assert "no_matching_response" not in text


def test_a_new_version_of_a_fixture_keeps_its_text_and_answers_before_its_catch_all(
    tmp_path: Path,
) -> None:
    repo = repo_copy(tmp_path)
    path = repo / "fixtures/tool/order_lookup.yaml"
    original = path.read_text("utf-8") + (
        "  # answered in the sandbox\n"
        "  responses:\n"
        "    - when: {order_id: ORDER_1}\n"
        "      result: {status: paid}\n"
        "    - error: not_found  # everything else\n"
    )
    path.write_text(original, "utf-8")
    proc = run_import(repo, trace_file(tmp_path, otlp.request(otlp.genai_refund())))
    assert proc.returncode == 0, proc.stderr
    text = path.read_text("utf-8")
    assert "# answered in the sandbox" in text and "- error: not_found  # everything else" in text
    assert "fixture_version: v2" in text
    responses = read(repo, "fixtures/tool/order_lookup.yaml")["data"]["responses"]
    assert [r.get("when") for r in responses] == [
        {"order_id": "ORDER_1"}, {"order_id": "ORDER_123"}, None
    ]  # fmt: skip
    # The case that pinned v1 is named, for its pin to be reviewed.
    assert "refund_tool_submit_001" in proc.stderr and "EC309" in proc.stderr
    # Importing a second trace with the same call adds nothing to the fixture.
    again = otlp.genai_refund(trace=otlp.TRACE_2, question="ORDER_123 能退吗")
    proc = run_import(repo, trace_file(tmp_path, otlp.request(again), name="b.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert path.read_text("utf-8") == text
    assert read(repo, f"{CASES}/refund_eligibility_bad_case_002.yaml")["tool_schema"] == {
        "order_lookup": "v2"
    }


def test_an_incomplete_last_line_of_an_inbox_file_is_left_out_and_said(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    whole = otlp.jsonl(otlp.request(otlp.genai_refund()))
    half = otlp.jsonl(otlp.request(otlp.openinference_refund()))[:200]  # being appended
    (inbox / "0001.jsonl").write_text(whole + half, "utf-8")
    proc = run_import(repo, inbox)
    assert proc.returncode == 0, proc.stderr
    assert "0001.jsonl:2: skipped: an incomplete last line" in proc.stderr
    assert read(repo, FIRST)["metadata"]["origin"]["trace_ids"] == [otlp.TRACE]


def test_a_new_fixture_takes_the_apps_own_tool_definition_when_the_trace_has_it(
    tmp_path: Path,
) -> None:
    repo = repo_copy(tmp_path)
    schema = {"type": "object", "properties": {"order_id": {"type": "string"},
              "verbose": {"type": "boolean"}}, "required": ["order_id"]}  # fmt: skip
    spans = otlp.openinference_refund()
    spans[2]["attributes"] += otlp.attrs(
        {"tool.parameters": json.dumps(schema), "tool.description": "退款进度查询"}
    )
    genai = otlp.genai_refund(trace=otlp.TRACE)
    definitions = [{"type": "function", "name": "order_lookup", "description": "查订单",
                    "parameters": {"type": "object", "properties": {}}}]  # fmt: skip
    genai[1]["attributes"] += otlp.attrs({"gen_ai.tool.definitions": json.dumps(definitions)})
    proc = run_import(repo, trace_file(tmp_path, otlp.request(spans), otlp.request(genai)))
    assert proc.returncode == 0, proc.stderr
    fixture = read(repo, "fixtures/tool/refund_status.yaml")
    assert fixture["data"]["parameters"] == schema
    assert fixture["description"].startswith("TODO: the app says: 退款进度查询.")
    assert "the parameters are the app's own tool definition" in fixture["description"]
    # An existing fixture keeps its own parameters: only responses are added.
    assert read(repo, "fixtures/tool/order_lookup.yaml")["data"]["parameters"]["required"] == [
        "order_id"
    ]


def test_an_agent_span_alone_carrying_the_messages_is_a_conversation(tmp_path: Path) -> None:
    repo = repo_copy(tmp_path)
    user = {"role": "user", "parts": [{"type": "text", "content": "我的快递到哪了"}]}
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "在路上。"}]}
    agent = otlp.span("e000000000000001", "invoke_agent", {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.input.messages": json.dumps([user], ensure_ascii=False),
        "gen_ai.output.messages": json.dumps([answer], ensure_ascii=False),
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "简短。"}],
                                                 ensure_ascii=False),
    })  # fmt: skip
    proc = run_import(repo, trace_file(tmp_path, otlp.request([agent])))
    assert proc.returncode == 0, proc.stderr
    case = read(repo, FIRST)
    assert case["input"] == "我的快递到哪了"
    assert case["generation_config"] == {"system_prompt": "简短。"}
    assert case["metadata"]["origin"]["observed"] == {"calls": [], "answer": "在路上。"}


def test_a_fixtures_folder_that_is_a_link_out_of_the_repository_is_refused(
    tmp_path: Path,
) -> None:
    repo = repo_copy(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(repo / "fixtures/tool")
    (repo / "fixtures/tool").symlink_to(outside)
    proc = run_import(repo, trace_file(tmp_path, otlp.request(otlp.openinference_refund())))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "refused to write" in proc.stderr or "link" in proc.stderr
    assert list(outside.iterdir()) == []
