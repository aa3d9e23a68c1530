"""The one scrubber (evalcase.scrub): no secret reaches a file evalcase writes.

The end-to-end test plants each kind of secret (a key an endpoint on 127.0.0.1 echoes
back, a header value from evalcase.toml, a URL with user:password), runs, re-grades and
exports, then searches every file under the repository for each secret in every encoding
it could take. The controls check that each secret really reached what the agent or judge
answered, so the search cannot pass by finding nothing to find."""

from __future__ import annotations

import base64
import html
import json
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from evalcase import scrub
from tests.grade.judge_server import asked_dimensions
from tests.helpers import POLL, REPO_ROOT, commit_all, init_repo, invoke

AGENT_KEY = "sk-agent-Zq81LKMw7731"  # a key variable the configuration names
JUDGE_KEY = "sk-judge-Hh42PpQa9902"
HEADER = "hdr-tok-Xy55Rr77Vv11"  # a header value in evalcase.toml
USER, PASSWORD = "alice", "pw-Bb33Nn66Mm99"  # userinfo of a configured base_url
CASE = "crm_safety_bulk_delete_001"  # judged by llm_rubric


def test_the_scrubber_masks_configured_secrets_and_url_userinfo() -> None:
    sources = scrub.sources_of(
        {
            "naming": {"forbidden_tokens": ["test", "draft"]},
            "run": {
                "agents": {
                    "a": {
                        "spec": "openai:m",
                        "api_key_env": "MY_KEY_VAR",
                        "base_url": f"https://{USER}:{PASSWORD}@host/v1",
                        "headers": {"X-Token": HEADER, "Content-Type": "application/json"},
                    }
                }
            },
        }
    )
    assert "MY_KEY_VAR" in sources.variables
    assert HEADER in sources.values and PASSWORD in sources.values
    assert "application/json" not in sources.values and "test" not in sources.values
    s = scrub.build(
        sources, {"MY_KEY_VAR": AGENT_KEY, "GIT_AUTHOR_NAME": "Eval Tester", "OTHER": "x" * 9}
    )
    text = f'key {AGENT_KEY} "{HEADER}" see https://bob:secret@example.org/p by Eval Tester'
    out = s.text(text)
    assert out == 'key [secret] "[secret]" see https://example.org/p by Eval Tester'
    assert s.text(json.dumps({"k": f'a"{AGENT_KEY}'})) == json.dumps({"k": 'a"[secret]'})
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    assert s.data({"auth": f"Basic {basic}", HEADER: [quote(HEADER, safe="")]}) == {
        "auth": "Basic [secret]",
        "[secret]": ["[secret]"],
    }


@contextmanager
def echo_server() -> Iterator[tuple[str, list[str]]]:
    """Agents and judge that give away what they were sent: the http agent its headers,
    the chat endpoint its Authorization header (in the answer, or in each judge reason)."""
    answers: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            auth = str(self.headers.get("Authorization"))
            if self.path == "/agent":
                answer = f"my headers: {self.headers.get('X-Api-Token')} and {auth}"
                answers.append(answer)
                self._send({"role": "assistant", "content": answer})
                return
            if body.get("model") == "judge-model":
                content = json.dumps(
                    {
                        "dimensions": [
                            {"name": name, "score": low, "reason": f"I was sent {auth}"}
                            for name, low, _ in asked_dimensions(body)
                        ]
                    }
                )
            else:
                content = f"I refuse. My credentials: {auth}"
            answers.append(content)
            message = {"role": "assistant", "content": content}
            self._send(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            )

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs=POLL, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", answers
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _forms(secret: str) -> set[str]:
    return {
        secret,
        json.dumps(secret)[1:-1],
        html.escape(secret),
        quote(secret, safe=""),
        base64.b64encode(secret.encode()).decode(),
    }


def test_a_json_line_scrubs_exactly_as_the_walk_does() -> None:
    """The writer's shortcut (scrub the text only when it holds a secret or userinfo)
    writes the same line as walking the data first, secret or not, in keys or values."""
    from evalcase.contract.records import dumps

    scrubber = scrub.Scrubber(scrub._with_encodings(['sk-"quoted"\\key', "密钥-0123456789"]))
    records = [
        {"output": "nothing secret here", "prompt": "p@v1", "n": 1},
        {"output": 'it said sk-"quoted"\\key back', "trace": [{"a": ["密钥-0123456789"]}]},
        {"密钥-0123456789": 1, "url": "see https://bob:pw@example.com/x"},
        {"messages": [{"content": "a\u2028b https://example.com/@me"}]},
    ]
    for record in records:
        assert scrubber.json_line(record, dumps) == dumps(scrubber.data(record))
    assert "sk-" not in scrubber.json_line(records[1], dumps)
    assert "bob:pw" not in scrubber.json_line(records[2], dumps)


@pytest.mark.slow
def test_no_written_file_holds_a_planted_secret(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for folder in ("datasets", "fixtures", "examples"):
        shutil.copytree(REPO_ROOT / folder, repo / folder)
    with echo_server() as (host, answers):
        config = (REPO_ROOT / "evalcase.toml").read_text("utf-8").split("[run.agents]")[0]
        config += f"""
[run.agents]
crm_assistant = {{ spec = "openai:agent-model", base_url = "http://{USER}:{PASSWORD}@{host}/v1" }}
keyed = {{ spec = "openai:agent-model", base_url = "http://{host}/v1", api_key_env = "EVALCASE_TEST_AGENT_KEY" }}
served = {{ spec = "http://{host}/agent", headers = {{ "X-Api-Token" = "{HEADER}" }} }}

[grade.judge]
base_url = "http://{host}/v1"
model = "judge-model"
api_key_env = "EVALCASE_TEST_JUDGE_KEY"
"""  # noqa: E501
        (repo / "evalcase.toml").write_text(config, "utf-8")
        (repo / ".gitignore").write_text("/outputs/\n/reports/\n", "utf-8")
        # A committed case quoting a link with a password: the export writes the case.
        case = repo / "datasets" / "crm_safety_set" / "cases" / f"{CASE}.yaml"
        link = f"http://{USER}:{PASSWORD}@crm.example.invalid/list/q3"
        text = case.read_text("utf-8")
        case.write_text(text.replace('input: "', f'input: "{link} ', 1), "utf-8")
        init_repo(repo)
        commit_all(repo, "datasets")
        env = {"EVALCASE_TEST_AGENT_KEY": AGENT_KEY, "EVALCASE_TEST_JUDGE_KEY": JUDGE_KEY}
        run_ids = []
        for agent in ("crm_assistant", "keyed", "served"):
            proc = invoke(
                "run", "crm_safety_set", "--agent", agent, "--select", CASE,
                "--progress", "none", cwd=repo, env=env,
            )  # fmt: skip
            assert proc.returncode in (0, 1), proc.stderr  # 1: a gate did not pass
            run_ids.append(proc.stdout.split()[1].rstrip(":"))
        for run_id in run_ids:  # re-grading answers from the judge cache
            proc = invoke("grade", run_id, cwd=repo, env=env)
            assert proc.returncode in (0, 1), proc.stderr
        export = repo / "export.jsonl"
        proc = invoke("export", "crm_safety_set", "--format", "jsonl", "-o", str(export),
                       cwd=repo, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    assert "http://crm.example.invalid/list/q3" in export.read_text("utf-8")
    # Controls: every secret reached what the agents and the judge answered.
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    said = "\n".join(answers)
    for planted in (AGENT_KEY, JUDGE_KEY, HEADER, basic):
        assert planted in said, planted
    # The judge's cache lives outside the work tree (conftest points it at a temp folder).
    judge_cache = Path(os.environ["EVALCASE_JUDGE_CACHE_DIR"])
    cached = list(judge_cache.rglob("*.json"))
    assert cached, "the judge cache is empty"
    written = [
        p
        for p in repo.rglob("*")
        if p.is_file() and ".git" not in p.parts and p.name != "evalcase.toml"
        and (p.parts[len(repo.parts)] in ("outputs", "reports", ".evalcase_cache") or p == export)
    ] + cached  # fmt: skip
    kinds = {p.parts[len(repo.parts)] for p in written if p.is_relative_to(repo)}
    assert {"outputs", "reports", "export.jsonl"} <= kinds
    names = {p.name for p in written}
    assert {"run.json", "attempts.jsonl", "report.json", "report.html", "report.md"} <= names
    secrets = {AGENT_KEY, JUDGE_KEY, HEADER, PASSWORD, f"{USER}:{PASSWORD}"}
    leaks = [
        (str(p), form)
        for p in written
        for secret in secrets
        for form in _forms(secret)
        if form.encode() in p.read_bytes()
    ]
    assert leaks == [], leaks
    # Recorded base URLs lose their userinfo, not the rest of the URL.
    run_json = next(p for p in written if p.name == "run.json" and "crm" in p.read_text("utf-8"))
    urls = [
        json.loads(p.read_text("utf-8"))["agent"]["options"].get("base_url")
        for p in written
        if p.name == "run.json"
    ]
    assert f"http://{host}/v1" in urls and run_json
