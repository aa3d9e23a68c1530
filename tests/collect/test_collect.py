"""evalcase collect: the OTLP/HTTP receiver and its inbox, in-process (Starlette's test
client against the real application and a real inbox folder) and as a real process."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from starlette.testclient import TestClient

from evalcase.collect.inbox import Inbox, Skipped, read_inbox
from evalcase.collect.otlp import Marking
from evalcase.collect.server import Receiver, make_app
from tests.helpers import REPO_ROOT, init_repo, invoke

TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
JSON_TYPE = {"Content-Type": "application/json"}


def _json_request(trace: str = TRACE, span: str = SPAN, **attrs: str) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "agent"},
                        "spans": [
                            {
                                "traceId": trace,
                                "spanId": span,
                                "name": "chat",
                                "kind": 3,
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "attributes": [
                                    {"key": k, "value": {"stringValue": v}}
                                    for k, v in attrs.items()
                                ],
                            }
                        ],
                    }
                ],
            }
        ]
    }


def _proto_request() -> bytes:
    request = trace_service_pb2.ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id = bytes.fromhex(TRACE)
    span.span_id = bytes.fromhex(SPAN)
    span.parent_span_id = bytes.fromhex("00f067aa0ba902b7")
    span.name = "execute_tool lookup"
    span.kind = trace_pb2.Span.SPAN_KIND_INTERNAL
    attr = span.attributes.add()
    attr.key = "gen_ai.tool.name"
    attr.value.string_value = "lookup"
    data: bytes = request.SerializeToString()
    return data


def _client(tmp_path: Path, **kwargs: Any) -> tuple[TestClient, Receiver]:
    inbox = Inbox(tmp_path / "inbox", kwargs.pop("max_inbox", 10**8), kwargs.pop("max_file", 10**7))
    receiver = Receiver(inbox, kwargs.pop("max_body", 10**6), **kwargs)
    return TestClient(make_app(receiver)), receiver


def _lines(folder: Path) -> list[dict[str, Any]]:
    return [item[2] for item in read_inbox(folder) if not isinstance(item, Skipped)]


def test_json_and_protobuf_bodies_become_otlp_json_lines_with_hex_ids(tmp_path: Path) -> None:
    client, _ = _client(tmp_path)
    r = client.post("/v1/traces", json=_json_request(**{"gen_ai.operation.name": "chat"}))
    assert (r.status_code, r.headers["content-type"], r.json()) == (200, "application/json", {})
    r = client.post(
        "/v1/traces",
        content=gzip.compress(_proto_request()),
        headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "gzip"},
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/x-protobuf"
    trace_service_pb2.ExportTraceServiceResponse().ParseFromString(r.content)
    first, second = _lines(tmp_path / "inbox")
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["traceId"], span["spanId"], span["kind"]) == (TRACE, SPAN, 3)
    assert span["attributes"] == [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}
    ]
    span = second["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (span["traceId"], span["spanId"], span["parentSpanId"]) == (
        TRACE,
        SPAN,
        "00f067aa0ba902b7",
    )
    assert span["attributes"][0]["value"] == {"stringValue": "lookup"}
    assert span["kind"] == 1  # enums as integers, as OTLP/JSON says


# mtime=0: gzip writes the current second into its header otherwise, and the bytes are
# the test's id, so two xdist workers collecting a second apart would disagree on it.
GZIPPED_SPACES = gzip.compress(b" " * 5000, mtime=0)


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        (b"{not json", {"Content-Type": "application/json"}, 400, "not JSON"),
        (b"[1]", {"Content-Type": "application/json"}, 400, "not an object"),
        (json.dumps(_json_request(trace="zz")).encode(), JSON_TYPE, 400, "hex"),
        (b"\xff\xff\xff", {"Content-Type": "application/x-protobuf"}, 400, "protobuf"),
        (b"garbage", {"Content-Type": "application/json", "Content-Encoding": "gzip"}, 400, "gzip"),
        (b"{}", {"Content-Type": "text/plain"}, 415, "Content-Type"),
        (b"x" * 2000, {"Content-Type": "application/json"}, 413, "over 1000 bytes"),
        (GZIPPED_SPACES, {**JSON_TYPE, "Content-Encoding": "gzip"}, 413, "decompress"),
    ],
)  # fmt: skip
def test_bad_bodies_get_the_spec_status_and_nothing_is_written(
    tmp_path: Path, body: bytes, headers: dict[str, str], status: int, says: str
) -> None:
    client, _ = _client(tmp_path, max_body=1000)
    r = client.post("/v1/traces", content=body, headers=headers)
    assert r.status_code == status
    if r.headers["content-type"] == "application/json":
        assert says in r.json()["message"]
    else:
        assert says.encode() in r.content
    assert _lines(tmp_path / "inbox") == []
    assert client.get("/v1/traces").status_code == 405
    assert client.post("/v1/logs", content=b"{}").status_code == 404


def test_a_full_inbox_refuses_with_507_writes_nothing_and_logs_once(tmp_path: Path) -> None:
    logged: list[str] = []
    line = len(json.dumps(_json_request(), separators=(",", ":"))) + 1
    client, _ = _client(tmp_path, max_inbox=2 * line + 10, log=logged.append)
    statuses = [client.post("/v1/traces", json=_json_request()).status_code for _ in range(6)]
    assert statuses[:2] == [200, 200] and set(statuses[2:]) == {507}
    assert len(_lines(tmp_path / "inbox")) == 2
    assert sum(p.stat().st_size for p in (tmp_path / "inbox").glob("*.jsonl")) <= 2 * line + 10
    assert len(logged) == 1 and "import and remove inbox files" in logged[0]
    for path in (tmp_path / "inbox").glob("*.jsonl"):  # an import took the files away
        path.unlink()
    assert client.post("/v1/traces", json=_json_request()).status_code == 200


def test_files_rotate_by_size_and_are_only_appended_to(tmp_path: Path) -> None:
    line = len(json.dumps(_json_request(), separators=(",", ":"))) + 1
    client, _ = _client(tmp_path, max_file=2 * line + 10)
    for _ in range(3):
        assert client.post("/v1/traces", json=_json_request()).status_code == 200
    files = sorted((tmp_path / "inbox").glob("*.jsonl"))
    assert [p.name for p in files] == ["traces-000001.jsonl", "traces-000002.jsonl"]
    assert len(_lines(tmp_path / "inbox")) == 3


def test_a_torn_last_line_is_skipped_and_the_next_process_starts_a_new_file(tmp_path: Path) -> None:
    client, receiver = _client(tmp_path)
    assert client.post("/v1/traces", json=_json_request()).status_code == 200
    receiver.inbox.close()
    first = tmp_path / "inbox" / "traces-000001.jsonl"
    with first.open("ab") as handle:  # what a kill in the middle of a write leaves
        handle.write(b'{"resourceSpans":[{"reso')
    client, _ = _client(tmp_path)  # the next collect on the same inbox
    assert client.post("/v1/traces", json=_json_request(span="aaaaaaaaaaaaaaaa")).status_code == 200
    items = list(read_inbox(tmp_path / "inbox"))
    assert [type(i).__name__ for i in items] == ["tuple", "Skipped", "tuple"]
    assert isinstance(items[1], Skipped) and "torn" in items[1].reason
    assert first.read_bytes().endswith(b'"reso')  # never rewritten


def test_only_marked_keeps_marked_traces_with_spans_that_came_before_the_mark(
    tmp_path: Path,
) -> None:
    client, receiver = _client(tmp_path, marking=Marking.parse("user.feedback=thumbs_down"))
    other = "1" * 32
    assert client.post("/v1/traces", json=_json_request(span="a" * 16)).status_code == 200
    assert (
        client.post("/v1/traces", json=_json_request(trace=other, span="b" * 16)).status_code == 200
    )
    assert _lines(tmp_path / "inbox") == []  # held: not marked yet
    r = client.post(
        "/v1/traces", json=_json_request(span="c" * 16, **{"user.feedback": "thumbs_down"})
    )
    assert r.status_code == 200
    r = client.post(
        "/v1/traces",
        json=_json_request(trace=other, span="d" * 16, **{"user.feedback": "thumbs_up"}),
    )
    assert (
        client.post("/v1/traces", json=_json_request(span="e" * 16)).status_code == 200
    )  # after the mark
    spans = [
        (s["traceId"], s["spanId"])
        for line in _lines(tmp_path / "inbox")
        for rs in line["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    assert spans == [(TRACE, "a" * 16), (TRACE, "c" * 16), (TRACE, "e" * 16)]
    assert receiver.stats.spans_held == 2  # the other trace's, never marked


def test_only_marked_holds_bounded_memory_and_counts_what_it_drops(tmp_path: Path) -> None:
    client, receiver = _client(tmp_path, marking=Marking.parse("user.feedback"), pending_bytes=2000)
    for n in range(50):
        trace = f"{n:032x}"
        assert client.post("/v1/traces", json=_json_request(trace=trace)).status_code == 200
    assert receiver._pending_size <= 2000
    assert receiver.stats.spans_dropped + receiver.stats.spans_held == 50
    assert receiver.stats.spans_dropped >= 40


def test_collect_refuses_a_non_loopback_host_and_needs_an_inbox_outside_git(tmp_path: Path) -> None:
    r = invoke("collect", "--host", "0.0.0.0", "--inbox", str(tmp_path / "i"), cwd=tmp_path)
    assert (
        r.returncode == 2 and "not a loopback address" in r.stderr and "--allow-remote" in r.stderr
    )
    r = invoke("collect", "--port", "0", cwd=tmp_path)
    assert r.returncode == 2 and "give --inbox DIR" in r.stderr
    r = invoke("collect", "--max-body", "lots", cwd=tmp_path)
    assert r.returncode == 2 and "not a size" in r.stderr


def _start(args: list[str], cwd: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "tools")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalcase", "collect", "--port", "0", *args],
        cwd=cwd, env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    line = proc.stderr.readline()
    found = re.search(r"(http://127\.0\.0\.1:\d+/v1/traces) -> (.+) \(", line)
    assert found, line
    return proc, found.group(1)


@pytest.mark.slow
def test_collect_process_defaults_to_the_git_dir_and_stops_cleanly_on_sigterm(
    tmp_path: Path,
) -> None:
    import httpx

    repo = init_repo(tmp_path / "repo")
    proc, url = _start([], repo)
    try:
        r = httpx.post(
            url, content=_proto_request(), headers={"Content-Type": "application/x-protobuf"}
        )
        assert r.status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "1 requests, 1 spans written" in err
    assert len(_lines(repo / ".git" / "evalcase" / "inbox")) == 1
    assert (
        "evalcase"
        not in subprocess.run(
            ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout
    )


def test_attribute_values_naming_paths_change_nothing_about_where_lines_go(tmp_path: Path) -> None:
    client, _ = _client(tmp_path)
    request = _json_request(**{"file.path": "../../escape.jsonl", "service.name": "/tmp/x"})
    request["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"] = "../../../escape"
    assert client.post("/v1/traces", json=request).status_code == 200
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        ".lock",
        "traces-000001.jsonl",
    ]


def test_a_loopback_receiver_refuses_another_host_header_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """DNS rebinding: a page that makes its own name resolve to 127.0.0.1 sends its own
    Host header; the loopback receiver answers 421 and writes nothing."""
    from evalcase.results.view import host_header_is_loopback

    inbox = Inbox(tmp_path / "inbox", 10**8, 10**7)
    app = make_app(Receiver(inbox, 10**6), host_header_is_loopback)
    client = TestClient(app, base_url="http://127.0.0.1:4318")
    r = client.post("/v1/traces", json=_json_request(), headers={"host": "rebind.example:4318"})
    assert r.status_code == 421
    assert not list((tmp_path / "inbox").glob("*.jsonl")) or all(
        p.stat().st_size == 0 for p in (tmp_path / "inbox").glob("*.jsonl")
    )
    assert client.post("/v1/traces", json=_json_request()).status_code == 200
