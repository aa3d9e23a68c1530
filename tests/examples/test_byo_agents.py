"""Bring your own agent: the three framework examples (examples/support_sdk,
examples/support_langgraph, examples/support_pydantic_ai), real frameworks in real
processes (sandboxed where bubblewrap works), real MCP and model proxy, against the
deterministic model on 127.0.0.1 (tests.run.byo_model), compared with ``openai:`` on the
same model: the same calls, state diff and verdict per case.

Each framework's process imports it once per attempt (2-4 s of CPU), so the
per-framework runs take a covering subset of english_support_set (both agent cases, a
policy case, an intent case); the OpenAI Agents SDK runs the whole set once, and its
subset is that run's records of the subset's cases (the same agent on the same
deterministic model: four of its processes fewer). Every run is made once per module
(``runs``) and read by each test whose claim it carries: LangGraph's and PydanticAI's
subsets are their streamed run of the confirmation case (the streaming test's) and their
plain run of the other three, so both paths match ``openai:``; the SDK's streaming test
reads the guardrail test's streamed run. The runner runs in this process (``invoke``);
the agents are real processes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import bundled_repo, commit_all, invoke
from tests.run.byo_model import ModelServer

pytestmark = pytest.mark.slow
DATASET = "english_support_set"
KEY_ENV = "EVALCASE_BYO_UPSTREAM_KEY"
KEY = "sk-byo-upstream-5d1f0a-never-leaked"
FRAMEWORKS = ("sdk", "langgraph", "pydantic_ai")
SUBSET = (
    "--select",
    "agent_*",
    "--select",
    "rag_policy_return_window_001",
    "--select",
    "llm_intent_refund_request_001",
)
CANCEL = "agent_state_order_cancel_confirmed_001"
# The subset's cases but the confirmation case, which LangGraph's and PydanticAI's
# subsets take from their streamed run of it.
REST = (
    "--select",
    "agent_status_shipped_order_002",
    "--select",
    "rag_policy_return_window_001",
    "--select",
    "llm_intent_refund_request_001",
)
Runs = Callable[..., dict[str, Any]]


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with ModelServer().running() as s:
        yield s


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory, server: ModelServer) -> Path:
    root = bundled_repo(
        tmp_path_factory.mktemp("byo") / "repo", ("/outputs/", "/reports/", "/.evalcase/")
    )
    lines = ["", "# Bring your own agent (tests/examples/test_byo_agents.py)"]
    for name in FRAMEWORKS:
        for suffix, model, flag in (
            ("", "english-1", ""),
            ("_stream", "english-1", " --stream"),
            ("_eager", "eager-1", ""),
            ("_eager_stream", "eager-1", " --stream"),
        ):
            spec = f"cmd:{{python}} examples/support_{name}/agent.py{flag}"
            upstream = f'base_url = "{server.url}", api_key_env = "{KEY_ENV}", model = "{model}"'
            lines.append(
                f'support_{name}{suffix} = {{ spec = "{spec}", loop = "agent", '
                f"upstream = {{ {upstream} }} }}"
            )
    refuser = Path(__file__).resolve().parents[1] / "run" / "cmd_agents" / "loop_agent.py"
    lines.append(
        f'loop_refuser = {{ spec = "cmd:{{python}} {refuser} refuse", loop = "agent", '
        f'upstream = {{ base_url = "{server.url}", api_key_env = "{KEY_ENV}", '
        f'model = "eager-1" }} }}'
    )
    for model in ("english-1", "eager-1"):
        lines.append(
            f'openai_{model.split("-")[0]} = {{ spec = "openai:{model}", '
            f'base_url = "{server.url}", api_key_env = "{KEY_ENV}" }}'
        )
    with (root / "evalcase.toml").open("a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    commit_all(root, "byo agents")
    return root


def run(repo: Path, agent: str, *args: str) -> dict[str, Any]:
    proc = invoke(
        "run",
        DATASET,
        "--agent",
        agent,
        "--progress",
        "none",
        "--concurrency",
        "4",
        *args,
        cwd=repo,
        env={KEY_ENV: KEY},
    )
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    run_dir = repo / proc.stdout.splitlines()[0].split(" -> ")[-1]
    lines = (run_dir / "attempts.jsonl").read_text("utf-8").splitlines()
    records = {r["case_id"]: r for r in map(json.loads, lines)}
    report_dir = repo / "reports" / run_dir.parent.name / run_dir.name
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    texts = [
        p.read_text("utf-8") for p in (run_dir, report_dir) for p in p.iterdir() if p.is_file()
    ]
    assert not any(KEY in t for t in texts), "the upstream key is in a record or report"
    return {
        "run_dir": run_dir,
        "report_dir": report_dir,
        "records": records,
        "verdicts": {c["case_id"]: c["status"] for c in report["cases"]},
        # One gate per prompt the run used ("overall [intent_labels_en@v1]"): by name.
        "gates": {
            name: {g["verdict"] for g in report["gates"] if g["name"].split(" [")[0] == name}
            for name in {g["name"].split(" [")[0] for g in report["gates"]}
        },
    }


def calls(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            c["tool"],
            json.dumps(c["args"], sort_keys=True),
            c["fault"],
            c["user_confirmed"],
            json.dumps(c["error"], sort_keys=True),
        )
        for c in record["calls"]
    ]


@pytest.fixture(scope="module")
def runs(repo: Path) -> Runs:
    """``run`` made once per agent and arguments in this module: each test that reads a
    run asks for it here, whichever test runs first."""
    done: dict[tuple[str, ...], dict[str, Any]] = {}

    def get(agent: str, *args: str) -> dict[str, Any]:
        key = (agent, *args)
        if key not in done:
            done[key] = run(repo, agent, *args)
        return done[key]

    return get


@pytest.fixture(scope="module")
def baseline(runs: Runs) -> dict[str, Any]:
    return runs("openai_english")


def sdk_whole_set(runs: Runs) -> dict[str, Any]:
    """The Agents SDK's one run of the whole set (its subset test reads it too)."""
    return runs("support_sdk")


def streamed_cancel(runs: Runs, framework: str) -> dict[str, Any]:
    """The framework's streamed run of the confirmation case: the SDK's is the guardrail
    test's (the eager model, whose early cancellation the guardrail refuses: then the same
    calls as ``english-1``'s), the others' the plain model's."""
    suffix = "_eager_stream" if framework == "sdk" else "_stream"
    return runs(f"support_{framework}{suffix}", "--select", CANCEL)


def merged(plain: dict[str, Any], streamed: dict[str, Any]) -> dict[str, Any]:
    """Two runs' records and verdicts as one; the gates of the run that holds the P0 case
    (the confirmation case, the only one the P0 gate counts: the plain run has none)."""
    return {
        "records": {**plain["records"], **streamed["records"]},
        "verdicts": {**plain["verdicts"], **streamed["verdicts"]},
        "gates": streamed["gates"],
    }


def subset_of(got: dict[str, Any]) -> dict[str, Any]:
    """A run's records and verdicts of the cases ``SUBSET`` selects, and its gates (the
    whole run's: a P0 gate at 1.0 that passes on every case passes on any of them)."""
    patterns = SUBSET[1::2]
    chosen = {c for c in got["records"] if any(fnmatchcase(c, p) for p in patterns)}
    return {
        "records": {c: r for c, r in got["records"].items() if c in chosen},
        "verdicts": {c: v for c, v in got["verdicts"].items() if c in chosen},
        "gates": got["gates"],
    }


def same_as_baseline(got: dict[str, Any], baseline: dict[str, Any]) -> None:
    for case, record in got["records"].items():
        assert record["error"] is None, (case, record["error"], record.get("agent_stderr"))
        assert record["loop"] == "agent"
        expected = baseline["records"][case]
        assert calls(record) == calls(expected), case
        assert record["state_diff"] == expected["state_diff"], case
        assert got["verdicts"][case] == baseline["verdicts"][case], case


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_framework_matches_openai_on_a_covering_subset(
    runs: Runs, baseline: dict[str, Any], framework: str
) -> None:
    if framework == "sdk":
        got = subset_of(sdk_whole_set(runs))
    else:  # the plain agent on three cases, the streamed one on the confirmation case
        got = merged(runs(f"support_{framework}", *REST), streamed_cancel(runs, framework))
    assert set(got["records"]) == set(subset_of(baseline)["records"])
    assert len(got["records"]) == 4
    same_as_baseline(got, baseline)
    cancel = got["records"][CANCEL]
    # The fault the agent saw (a rate limit it retried), the confirmation turn, the state.
    assert cancel["calls"][0]["fault"] == "rate_limited"
    assert [c["user_confirmed"] for c in cancel["calls"]] == [False, False, True]
    assert all(p["executed"] for p in cancel["proposals"])
    assert got["gates"]["no_unconfirmed_cancellation"] == {"pass"}


def test_the_agents_sdk_matches_openai_on_the_whole_set(
    runs: Runs, baseline: dict[str, Any]
) -> None:
    got = sdk_whole_set(runs)
    assert set(got["records"]) == set(baseline["records"]) and len(got["records"]) == 10
    same_as_baseline(got, baseline)
    assert got["gates"] == baseline["gates"]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_streaming_is_passed_through_and_recorded(
    runs: Runs, baseline: dict[str, Any], framework: str
) -> None:
    got = streamed_cancel(runs, framework)
    same_as_baseline(got, baseline)
    model_calls = got["records"][CANCEL]["model_calls"]
    assert model_calls and all(m["stream"] and m["status"] == 200 for m in model_calls)
    assert all(m["response"]["choices"][0]["finish_reason"] for m in model_calls)


def test_a_guardrail_refused_call_is_a_proposal_and_the_gate_judges_what_the_agent_did(
    runs: Runs, baseline: dict[str, Any]
) -> None:
    # The eager model proposes the cancellation before the customer confirmed.
    runner_loop = runs("openai_eager", "--select", CANCEL)
    executed = runner_loop["records"][CANCEL]
    assert executed["calls"][0]["tool"] == "shop_order_cancel"  # the runner executed it
    assert runner_loop["gates"]["no_unconfirmed_cancellation"] == {"fail"}
    # The Agents SDK's tool guardrail refused it: never made, kept as a proposal (a
    # streamed run: the proposal is read from the server-sent chunks).
    got = streamed_cancel(runs, "sdk")
    record = got["records"][CANCEL]
    assert calls(record) == calls(baseline["records"][CANCEL])
    refused = [p for p in record["proposals"] if not p["executed"]]
    assert [(p["tool"], p["call"]) for p in refused] == [("shop_order_cancel", None)]
    assert any(e["type"] == "proposal_unexecuted" for e in record["trace"])
    assert got["gates"]["no_unconfirmed_cancellation"] == {"pass"}
    assert got["verdicts"][CANCEL] == "pass"


def test_unexecuted_proposals_are_shown_in_the_report_and_the_viewer(
    repo: Path, runs: Runs
) -> None:
    from starlette.testclient import TestClient

    from evalcase.config import load_config
    from evalcase.results.view_pages import make_app

    # An agent that refuses every cancellation: the case fails, its proposals stay.
    got = runs("loop_refuser", "--select", CANCEL)
    record = got["records"][CANCEL]
    assert got["verdicts"][CANCEL] == "fail"
    assert record["calls"] and all(c["tool"] != "shop_order_cancel" for c in record["calls"])
    refused = [p for p in record["proposals"] if not p["executed"]]
    assert len(refused) >= 2 and {p["tool"] for p in refused} == {"shop_order_cancel"}
    html = (got["report_dir"] / "report.html").read_text("utf-8")
    details = html.split(f'id="case-{CANCEL}', 1)[1]
    assert "Proposals" in details and details.count("not executed") == len(refused)
    run_id = got["run_dir"].name
    client = TestClient(make_app(load_config(repo)), follow_redirects=False)
    page = client.get(
        f"/attempt?run={run_id}&case={CANCEL}&attempt=1", headers={"Host": "127.0.0.1"}
    )
    assert page.status_code == 200
    table = page.text.split('id="proposals"', 1)[1].split("</table>", 1)[0]
    assert table.count("not executed") == len(refused) and "loop: agent" in page.text
