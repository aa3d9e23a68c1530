"""llm_rubric against a real OpenAI-compatible server on 127.0.0.1, through evalcase.transport."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.grade.context import GradeContext, JudgeConfig
from evalcase.grade.graders import llm_rubric
from evalcase.grade.spec import judge_spec_from_case
from tests.grade.attempts import attempt
from tests.grade.judge_server import Script, judge_server, scores

pytest.importorskip("aiohttp")

RUBRIC = {
    "fixture_id": "refund_service_quality_v1",
    "fixture_version": "v1",
    "data": {
        "pass_threshold": 0.75,
        "judge_instructions": "只依据期望行为评分。",
        "dimensions": [
            {"name": "policy_correctness", "scale": {"min": 1, "max": 5}, "weight": 0.6},
            {"name": "no_overpromise", "scale": {"min": 1, "max": 5}, "weight": 0.4},
        ],
    },
}
SPEC = judge_spec_from_case(
    {
        "case_id": "refund_sample_001",
        "case_version": "v1",
        "rubric": RUBRIC,
        "expected_behavior": ["说明审核时效"],
        "evaluator_config": {"graders": [{"type": "llm_rubric"}]},
    }
)
KEY = "sk-test-judge-key-do-not-write-0123456789"


def ctx(url: str, cache: Path | None = None) -> GradeContext:
    config = JudgeConfig(
        base_url=url, model="judge-test", max_retries=2, timeout_s=10, cache_dir=cache
    )
    return GradeContext(judge=config, environ={"EVALCASE_JUDGE_API_KEY": KEY})


def test_scores_are_parsed_and_the_judge_is_recorded() -> None:
    script = Script([(200, scores(policy_correctness=5, no_overpromise=4))])
    with judge_server(script) as url:
        grade = llm_rubric.grade(SPEC, attempt("审核通常 1-3 个工作日。"), ctx(url))
    assert grade.verdict == "pass", grade.reason
    assert grade.score == pytest.approx(0.6 * 1.0 + 0.4 * 0.75)
    assert "policy_correctness 5" in grade.reason
    assert grade.judge is not None
    assert grade.judge.model == "judge-test"
    assert grade.judge.rubric == "refund_service_quality_v1@v1"
    assert grade.judge.prompt_version
    sent = script.requests[0]
    assert sent["model"] == "judge-test"
    assert "审核通常 1-3 个工作日" in sent["messages"][-1]["content"]
    assert script.headers[0]["authorization"] == f"Bearer {KEY}"


def test_low_scores_fail() -> None:
    script = Script([(200, scores(policy_correctness=2, no_overpromise=1))])
    with judge_server(script) as url:
        grade = llm_rubric.grade(SPEC, attempt("保证今天到账"), ctx(url))
    assert grade.verdict == "fail"
    assert grade.kind == "agent_capability"


@pytest.mark.slow
def test_429_then_success_is_retried() -> None:
    script = Script(
        [
            (429, "rate limited"),
            (503, "busy"),
            (200, scores(policy_correctness=5, no_overpromise=5)),
        ]
    )
    with judge_server(script) as url:
        grade = llm_rubric.grade(SPEC, attempt("好的"), ctx(url))
    assert grade.verdict == "pass", grade.reason
    assert len(script.requests) == 3


@pytest.mark.parametrize(
    "content",
    [
        "The answer looks good to me.",
        json.dumps({"dimensions": [{"name": "policy_correctness", "score": 5, "reason": "ok"}]}),
        scores(policy_correctness=9, no_overpromise=5),
        json.dumps(
            {
                "dimensions": [
                    {"name": "policy_correctness", "score": 5, "reason": ""},
                    {"name": "no_overpromise", "score": 5, "reason": "ok"},
                ]
            }
        ),
    ],
    ids=["not-json", "dimension-missing", "off-scale", "no-reason"],
)
def test_a_malformed_answer_is_an_error_never_a_pass(content: str) -> None:
    with judge_server(Script([(200, content)])) as url:
        grade = llm_rubric.grade(SPEC, attempt("好的"), ctx(url))
    assert grade.verdict == "error"
    assert grade.judge is not None and grade.judge.model == "judge-test"


@pytest.mark.slow
def test_server_errors_after_retries_are_an_error() -> None:
    script = Script(default=(500, "down"))
    with judge_server(script) as url:
        grade = llm_rubric.grade(SPEC, attempt("好的"), ctx(url))
    assert grade.verdict == "error"
    assert "500" in grade.reason
    assert len(script.requests) == 3  # the first try and max_retries=2


def test_answers_are_cached_by_model_rubric_and_output(tmp_path: Path) -> None:
    script = Script(default=(200, scores(policy_correctness=5, no_overpromise=5)))
    with judge_server(script) as url:
        first = llm_rubric.grade(SPEC, attempt("好的"), ctx(url, tmp_path))
        again = llm_rubric.grade(SPEC, attempt("好的"), ctx(url, tmp_path))
        other = llm_rubric.grade(SPEC, attempt("另一个回答"), ctx(url, tmp_path))
    assert first.verdict == again.verdict == other.verdict == "pass"
    assert again.details["cached"] is True
    assert len(script.requests) == 2


def test_no_judge_configured_is_pending() -> None:
    assert llm_rubric.grade(SPEC, attempt("好的"), GradeContext()).verdict == "pending"


@pytest.mark.parametrize("fmt", ["json_schema", "json_object", "none"])
def test_response_format_reaches_the_judge_request(fmt: str) -> None:
    from dataclasses import replace

    script = Script([(200, scores(policy_correctness=5, no_overpromise=5))])
    with judge_server(script) as url:
        base = ctx(url)
        context = GradeContext(replace(base.judge, response_format=fmt), {}, base.environ)
        grade = llm_rubric.grade(SPEC, attempt("审核通常 1-3 个工作日。"), context)
    assert grade.verdict == "pass", grade.reason
    sent = script.requests[0].get("response_format")
    if fmt == "none":
        assert sent is None
    elif fmt == "json_object":
        assert sent == {"type": "json_object"}
    else:
        schema = sent["json_schema"]["schema"]
        item = schema["properties"]["dimensions"]["items"]
        assert item["properties"]["name"]["enum"] == ["policy_correctness", "no_overpromise"]
        assert schema["properties"]["dimensions"]["minItems"] == 2


def test_a_large_run_is_graded_with_judge_calls_in_flight_at_once(tmp_path: Path) -> None:
    """Every attempt is graded, in order, while the server sees calls overlap."""
    import threading
    import time

    from evalcase.grade.aggregate import CaseMeta
    from evalcase.grade.recorded_run import RunRecord, grade_run
    from evalcase.grade.tasks import GradingCase, GradingDataset

    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def slow(request: dict[str, object]) -> tuple[int, str]:
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.2)  # long enough for the other calls to arrive: the peak shows overlap
        with lock:
            state["now"] -= 1
        return 200, scores(policy_correctness=5, no_overpromise=5)

    script = Script(responder=slow)
    attempts = tuple(
        {**attempt(f"answer {i}"), "case_id": "refund_sample_001", "attempt": i}
        for i in range(1, 9)
    )
    dataset = GradingDataset(
        "ds",
        "v1",
        "d",
        {},
        {"refund_sample_001": GradingCase(SPEC, CaseMeta("refund_sample_001", "v1"))},
    )
    with judge_server(script) as url:
        from dataclasses import replace

        base = ctx(url)
        context = GradeContext(replace(base.judge, concurrency=8), {}, base.environ)
        graded = grade_run(RunRecord(tmp_path, {"run_id": "r"}, attempts), dataset, context)
    assert [r.attempt for r in graded.results] == list(range(1, 9))
    assert {r.verdict for r in graded.results} == {"pass"}
    assert len(script.requests) == 8 and state["peak"] > 1


def test_a_conversation_ended_without_final_text_is_judged_whole() -> None:
    """A transfer to a person (ends_conversation) after a reply with no text: the judge
    grades the turns and calls; an errored attempt without output stays an error."""
    ended = attempt(None, trace=[{"step": 3, "type": "conversation_end",
                                  "reason": "ends_conversation", "turn": 1}])  # fmt: skip
    script = Script([(200, scores(policy_correctness=4, no_overpromise=5))])
    with judge_server(script) as url:
        grade = llm_rubric.grade(SPEC, ended, ctx(url))
        broken = llm_rubric.grade(SPEC, attempt(None, status="error"), ctx(url))
    assert grade.verdict == "pass", grade.reason
    assert (
        "no final text: the conversation ended by ends_conversation"
        in (script.requests[0]["messages"][-1]["content"])
    )
    assert broken.verdict == "error" and "no output" in broken.reason
    assert len(script.requests) == 1  # the errored attempt never reached the judge


def test_a_dimension_scored_twice_is_an_error_never_the_last_score(tmp_path: Path) -> None:
    twice = json.dumps(
        {
            "dimensions": [
                {"name": "policy_correctness", "score": 1, "reason": "wrong policy"},
                {"name": "no_overpromise", "score": 5, "reason": "ok"},
                {"name": "policy_correctness", "score": 5, "reason": "on second thought"},
            ]
        }
    )
    with judge_server(Script(default=(200, twice))) as url:
        grade = llm_rubric.grade(SPEC, attempt("好的"), ctx(url, tmp_path))
    assert grade.verdict == "error"
    assert "scores dimension 'policy_correctness' twice" in grade.reason
    assert not list(tmp_path.glob("*.json"))  # never cached


def test_a_judge_answer_over_the_byte_limit_is_an_error_and_not_cached(tmp_path: Path) -> None:
    # The 10 MB answer: valid scores with a reason padded to 10 MB.
    huge = json.dumps(
        {
            "dimensions": [
                {"name": "policy_correctness", "score": 5, "reason": "x" * 10_000_000},
                {"name": "no_overpromise", "score": 5, "reason": "ok"},
            ]
        }
    )
    with judge_server(Script(default=(200, huge))) as url:
        grade = llm_rubric.grade(SPEC, attempt("好的"), ctx(url, tmp_path))
    assert grade.verdict == "error"
    assert "exceeds 1,000,000 bytes" in grade.reason
    assert not list(tmp_path.glob("*.json"))
