"""`evalcase view` as a user meets it: the real command serving a real store of graded
runs, driven in headless Chromium (Debian's, through Playwright): every page reachable
by a link loads, no console error, and hostile content from data stays inert text."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run
from tests.helpers import GIT_ENV, REPO_ROOT, invoke
from tests.results.folders import copy_without_store
from tests.results.viewer_process import http_get, start_view

pytest.importorskip("duckdb")
pytest.importorskip("starlette")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Each probe sets window.__pwned if it ever runs; some also try to leave the page.
PROBES = (
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    '"><svg onload="window.__pwned = 3">',
    "javascript:window.__pwned = 4",
    "</pre></td></tr></table><script>window.__pwned = 5</script>",
    "{{ 7 * 7 }} {% raw %}",
)
HOSTILE = " ".join(PROBES)


def _hostile(attempt: dict[str, Any]) -> dict[str, Any]:
    """An attempt whose answer, conversation and tool arguments carry the probes."""
    attempt = json.loads(json.dumps(attempt))
    attempt["output"] = HOSTILE
    attempt["messages"] = [
        {"role": "user", "content": HOSTILE},
        {"role": "assistant", "content": HOSTILE},
    ]
    for call in attempt.get("calls") or []:
        call["args"] = {"order_id": HOSTILE}
    return attempt


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    repo, commit = refund_repo(tmp_path_factory.mktemp("view"))
    # Three runs: a good one, a worse one whose agent writes the probes (and whose agent
    # name is one), and one with two prompts for the prompt x case grid.
    write_run(repo, commit, "run-1", [check_008(True, 1), duplicate_003(True, 1)])
    write_run(
        repo,
        commit,
        "run-2",
        [_hostile(check_008(False, 1)), _hostile(duplicate_003(False, 1))],
        agent={"spec": "cmd:x", "name": PROBES[1]},
        started_at="2026-07-08T11:00:00Z",
    )
    # The same agent again, failing where run-1 passed: a flaky case.
    # (The same cases, so the same graders' configuration.)
    write_run(
        repo,
        commit,
        "run-4",
        [check_008(False, 1), duplicate_003(True, 1)],
        started_at="2026-07-08T13:00:00Z",
    )
    prompted = []
    # As the runner numbers them: a case's attempts count on across prompts.
    for n, prompt in enumerate(("concise", "friendly"), start=1):
        for a in (check_008(prompt == "concise", n), duplicate_003(True, n)):
            prompted.append({**a, "prompt": prompt})
    write_run(repo, commit, "run-3", prompted, started_at="2026-07-08T12:00:00Z")
    for run_id in ("run-1", "run-2", "run-3", "run-4"):
        graded = invoke("grade", run_id, cwd=repo)
        assert graded.returncode in (0, 1), graded.stderr
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools")}
    proc, base, before = start_view(repo, env)
    assert before == [], before  # the address is the first thing it prints
    try:
        yield {"repo": repo, "commit": commit, "base": base, "proc": proc}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def app_repo(site: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the site's repository (its runs and reports; not its results store, which
    its first request builds) for the viewers made in the test process: the served viewer
    keeps its store open until idle (evalcase.results.view.IDLE_S), and an in-process
    viewer of the same folder waited for DuckDB's lock (3.75 s), as the served one did
    for theirs."""
    return copy_without_store(site["repo"], tmp_path_factory.mktemp("view-app") / "repo")


def test_pages_answer_and_escape(site: dict[str, Any]) -> None:
    base = site["base"]
    status, html, headers = http_get(base)
    assert status == 200
    assert "script-src" not in headers["content-security-policy"]  # default-src 'none'
    assert "default-src 'none'" in headers["content-security-policy"]
    assert all(f">{run}<" in html for run in ("run-1", "run-2", "run-3"))
    status, html, _ = http_get(base + "attempt?run=run-2&case=tool_refund_check_008&attempt=1")
    assert status == 200
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert not re.search(r"<(script|img|svg)\b", html, re.IGNORECASE), "every probe is text"
    assert "{{ 7 * 7 }}" in html  # data is never a template
    status, html, _ = http_get(base + "runs/run-2")
    assert (status == 200 and 'id="gates"' not in html) or "gate" in html
    cases = html.split('id="cases"', 1)[1]
    assert "tool_refund_check_008" in cases and "agent_refund_duplicate_submit_003" in cases
    assert 'class="fail">fail' in cases
    status, html, _ = http_get(base + "compare?base=run-1&new=run-2")
    assert status == 200
    first = html.index("regressed")
    assert "tool_refund_check_008" in html[first:]
    status, html, _ = http_get(base + "grid?run=run-3")
    assert status == 200 and "concise" in html and "friendly" in html
    status, html, _ = http_get(base + "flaky")
    assert status == 200
    flaky = html.split('id="flaky"', 1)[1]
    assert "tool_refund_check_008" in flaky and "run-4" in flaky
    assert "agent_refund_duplicate_submit_003" not in flaky
    status, html, _ = http_get(base + "case?id=tool_refund_check_008")
    assert status == 200 and html.count("/runs/run-") >= 3
    assert http_get(base + "runs/no-such-run")[0] == 404
    assert http_get(base + "compare?base=nothing-like-this&new=latest")[0] == 400


def test_foreign_host_header_is_refused(site: dict[str, Any]) -> None:
    """A page on another site that resolves its name to 127.0.0.1 (DNS rebinding) sends
    its own Host header: the viewer does not answer it."""
    status, _, _ = http_get(site["base"], {"Host": "attacker.example"})
    assert status == 421


def test_token_required_off_loopback(app_repo: Path) -> None:
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    app = make_app(load_config(app_repo), token="t0ken", host="0.0.0.0")
    client = TestClient(app, base_url="http://192.0.2.10:8765", follow_redirects=False)
    assert client.get("/").status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer t0ken"}).status_code == 200
    opened = client.get("/runs/run-1?token=t0ken")
    assert opened.status_code == 303 and opened.headers["location"] == "/runs/run-1"
    assert "httponly" in opened.headers["set-cookie"].lower()
    assert client.get("/runs/run-1").status_code == 200  # the cookie
    assert client.post("/").status_code == 405


# Host headers that name this machine's loopback, and some that only look like one.
LOOPBACK_HOSTS = (
    "127.0.0.1", "127.0.0.1:8765", "127.3.4.5:80", "localhost", "LocalHost:8765",
    "localhost.:8765", "[::1]", "[::1]:8765",
)  # fmt: skip
FOREIGN_HOSTS = (
    "127.attacker.example", "127.0.0.1.attacker.example", "127.0.0.1.attacker.example:8765",
    "localhost.attacker.example", "attacker.example:8765", "[::2]:8765", "::1",
    "127.0.0.1:8765:80", "127.0.0.1:", "127.0.0.1:x", "[::1", "[127.0.0.1]x", "",
    "0.0.0.0:8765", "192.0.2.10:8765", "[::ffff:192.0.2.10]:8765",
)  # fmt: skip


@pytest.mark.parametrize("host", LOOPBACK_HOSTS)
def test_loopback_host_headers_are_answered(app_repo: Path, host: str) -> None:
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    client = TestClient(make_app(load_config(app_repo)), follow_redirects=False)
    assert client.get("/runs/run-1", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", FOREIGN_HOSTS)
def test_names_that_only_start_like_loopback_are_refused(app_repo: Path, host: str) -> None:
    """The DNS-rebinding guard parses the Host header: a name that starts with ``127.``
    or ``localhost`` is anyone's name, not this machine's loopback."""
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    client = TestClient(make_app(load_config(app_repo)), follow_redirects=False)
    assert client.get("/runs/run-1", headers={"Host": host}).status_code == 421


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True), ("127.255.0.9", True), ("::1", True), ("[::1]", True),
        ("localhost", True), ("LOCALHOST", True), ("localhost.", True),
        ("127.attacker.example", False), ("127.0.0.1.attacker.example", False),
        ("localhost.attacker.example", False), ("0.0.0.0", False), ("::", False),
        ("192.0.2.10", False), ("", False),
    ],
)  # fmt: skip
def test_bind_address_loopback(host: str, loopback: bool) -> None:
    """``evalcase view --host`` asks the same question: a name that starts with ``127.`` is
    not a loopback bind, so the token is required there."""
    from evalcase.results.view import is_loopback

    assert is_loopback(host) is loopback


def test_non_ascii_token_is_refused_not_an_error(app_repo: Path) -> None:
    """A token, Bearer header or cookie with non-ASCII characters is a wrong token (401),
    never a server error."""
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    app = make_app(load_config(app_repo), token="t0ken", host="0.0.0.0")
    client = TestClient(
        app,
        base_url="http://192.0.2.10:8765",
        follow_redirects=False,
        raise_server_exceptions=False,
    )
    assert client.get("/?token=t%C3%B6ken").status_code == 401
    assert client.get("/?token=%ED%A0%80").status_code == 401
    for header in (
        {"Authorization": "Bearer tökén".encode()},  # UTF-8
        {"Authorization": b"Bearer t\xf6ken"},  # Latin-1
        {"Cookie": b"evalcase_view_token=t\xf6ken"},
        {"Cookie": "evalcase_view_token=tökén".encode()},
    ):
        assert client.get("/", headers=header).status_code == 401, header
    assert client.get("/", headers={"Authorization": "Bearer t0ken"}).status_code == 200
    # A token chosen with non-ASCII characters works as given.
    app = make_app(load_config(app_repo), token="tökén", host="0.0.0.0")
    client = TestClient(app, base_url="http://192.0.2.10:8765", follow_redirects=False)
    assert client.get("/?token=t%C3%B6k%C3%A9n").status_code == 303
    assert client.get("/", headers={"Authorization": "Bearer tökén".encode()}).status_code == 200


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="needs Debian's chromium")
def test_every_link_in_chromium(site: dict[str, Any], tmp_path: Path) -> None:
    """Crawl every same-site link from the first page in real Chromium: each page loads,
    logs no console error, and no probe ever runs."""
    sync_api = pytest.importorskip("playwright.sync_api")
    base = site["base"]
    seen: set[str] = set()
    queue = [base]
    problems: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-component-update",
                "--disable-sync",
            ],
        )  # fmt: skip
        page = browser.new_page()
        page.on(
            "console",
            lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None,
        )
        page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
        while queue and len(seen) < 80:
            target = queue.pop(0)
            if target in seen:
                continue
            seen.add(target)
            response = page.goto(target)
            assert response is not None
            if response.status != 200:
                problems.append(f"{target}: HTTP {response.status}")
                continue
            if page.evaluate("() => window.__pwned") is not None:
                problems.append(f"{target}: a probe ran")
            for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                if href.startswith(base) and href not in seen:
                    queue.append(href)
                elif not href.startswith(base):
                    problems.append(f"{target}: a link leaves the viewer: {href}")
        page.goto(base + "runs/run-3")
        page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
        browser.close()
    assert not problems, "\n".join(problems)
    assert any("/attempt?" in url for url in seen) and any("/compare?" in url for url in seen)
    assert any("/grid?" in url for url in seen) and any("/case?" in url for url in seen)
    assert (tmp_path / "run.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_compare_page_follows_compares_rules(site: dict[str, Any]) -> None:
    """A run with itself and runs over different case sets (run-3 ran each case under two
    prompts) are refused, saying why, with common=1 too (no row in common); the header
    states both sides and warns of another agent."""
    base = site["base"]
    status, html, _ = http_get(base + "compare?base=run-1&new=run-1")
    assert status == 400 and "are the same run, run-1" in html
    status, html, _ = http_get(base + "compare?base=run-1&new=run-3")
    assert status == 400 and "ran different cases" in html
    status, html, _ = http_get(base + "compare?base=run-1&new=run-3&common=1")
    assert status == 400 and "have no case in common" in html  # rows are case [prompt]
    status, html, _ = http_get(base + "compare?base=run-1&new=run-2")
    assert status == 200
    sides = html.split('id="sides"', 1)[1]
    assert "base: refund_regression_set v1, agent refund_agent (version ?), all cases" in sides
    assert "different agents: BASE refund_agent" in html


def test_the_attempt_page_says_which_calls_the_user_made(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Two actors (docs/contract.md#user-tools): a call with ``actor: user`` is marked
    ``user:`` as in the HTML report; the agent's calls (no actor) and a record's actor that
    is neither are not."""
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    repo, commit = refund_repo(tmp_path_factory.mktemp("actors"))
    attempt = check_008(True, 1)
    attempt["calls"][0]["actor"] = "user"
    attempt["calls"][1]["actor"] = '<b class="actor-user">user:</b>'  # data, never markup
    write_run(repo, commit, "run-actors", [attempt])
    graded = invoke("grade", "run-actors", cwd=repo)
    assert graded.returncode in (0, 1), graded.stderr
    client = TestClient(make_app(load_config(repo)), follow_redirects=False)
    page = client.get(
        "/attempt?run=run-actors&case=tool_refund_check_008&attempt=1",
        headers={"Host": "127.0.0.1:8765"},
    )
    assert page.status_code == 200
    calls = page.text.split('id="calls"', 1)[1].split("</table>", 1)[0]
    assert calls.count('<span class="actor-user"') == 1
    rows = calls.split("<tr>")[2:]
    assert "user:</span> order_lookup" in rows[0]
    assert "actor-user" not in rows[1] and "refund_eligibility_check" in rows[1]
