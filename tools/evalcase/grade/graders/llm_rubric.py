"""An LLM judge scores the answer on the rubric's dimensions.

Configuration: the case's ``rubric`` (a rubric fixture with ``dimensions``, each with a
``scale`` and ``weight``, ``judge_instructions`` and ``pass_threshold``) and a judge in
``evalcase.toml``::

    [grade.judge]
    base_url = "http://127.0.0.1:8000/v1"    # any OpenAI-compatible server
    model = "judge-model"
    api_key_env = "EVALCASE_JUDGE_API_KEY"   # the variable's NAME; the key stays there

(or EVALCASE_JUDGE_BASE_URL / EVALCASE_JUDGE_MODEL in the environment). The judge returns a
score and a reason per dimension; the grade's score is the weighted, normalised mean and it
passes at ``pass_threshold`` (rubric's, else the judge config's, default 0.6). Passing: every
dimension 5/5 with reasons. Failing: ``no_overpromise`` 1/5 pulls the score under the
threshold. Without a configured judge the verdict is ``pending``, never ``pass``; a
malformed answer (not JSON, a dimension missing, a score off the scale, no reason) or an
unreachable judge is an ``error``, and so is an answer cut at ``max_tokens``. An attempt
with no final text is an ``error``, unless it completed and its conversation was ended
(a tool's ``ends_conversation``, the simulated user's stop): then the judge grades the
turns and calls, told that there is no final text. The judge
sees the whole attempt (evalcase.grade.judge_prompt: tool calls and results, retrieved
passages, gold evidence text, state changes, the rubric's descriptions, the case's
instructions and expectations). Every grade records the judge model, prompt version and
rubric id@version; answers are cached by a digest of the whole request, outside the work
tree.
"""

from __future__ import annotations

from evalcase.contract.records import Observed
from evalcase.grade import judge, judge_prompt
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Evidence, Grade, JudgeInfo, error, pending
from evalcase.grade.spec import JudgeSpec

NAME = "llm_rubric"
VERSION = "1"


def needs(spec: JudgeSpec) -> str | None:
    rubric = spec.rubric
    if not rubric:
        return "the case names no rubric (rubric: <rubric fixture ID>, or an inline rubric)"
    # A rubric named by fixture ID is checked by its own schema (dimensions required); lint
    # sees only the reference, so the dimensions are checked here when they are at hand.
    if (rubric.data or rubric.id is None) and not judge.dimensions(rubric):
        return f"rubric {judge.rubric_id(rubric)} has no scorable dimensions"
    return None


def _ended_without_text(attempt: Observed) -> str | None:
    """What the judge is shown as the final answer of a completed attempt whose
    conversation ended without a final text, or None for any other attempt."""
    record = attempt.record
    if record.status != "completed":
        return None
    ended_by = record.conversation.ended_by if record.conversation is not None else None
    ends = attempt.events("conversation_end")
    reason = ended_by or (ends[-1].get("reason") if ends else None)
    if not reason:
        return None
    return f"(no final text: the conversation ended by {reason}; judge the turns and calls above)"


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    ctx = ctx or GradeContext()
    if (problem := needs(spec)) is not None:
        return error(problem)
    rubric = spec.rubric
    dims = judge.dimensions(rubric)
    if not dims:
        return error(
            f"rubric {judge.rubric_id(rubric)} has no scorable dimensions "
            "(is the rubric fixture resolved?)"
        )
    answer = attempt.output
    if answer is None:
        ended = _ended_without_text(attempt)
        if ended is None:
            return error("the attempt has no output to judge")
        # A conversation a tool or the user ended (a transfer to a person, the simulated
        # user's stop) after a reply without text is still an attempt to judge: the judge
        # sees every turn and call, and is told there is no final text.
        answer = ended
    config = ctx.judge
    if not config.configured:
        return pending("no judge configured ([grade.judge] base_url and model)")
    info = JudgeInfo(
        str(config.model),
        f"{config.prompt_version}/{judge.PROMPT_VERSION}",
        judge.rubric_id(rubric),
    )
    prompt = judge_prompt.build(spec, attempt, rubric, dims, answer)
    messages = prompt.messages
    verdict = judge.ask(config, ctx.environ, info.rubric, messages, dims)
    if verdict.problem is not None:
        return Grade("error", 0.0, verdict.problem, kind="grader_error", judge=info,
                     details={"cut_items": prompt.cuts})  # fmt: skip
    threshold = judge_prompt.rubric_setting(rubric, "pass_threshold")
    threshold = float(threshold) if isinstance(threshold, int | float) else config.pass_threshold
    detail = "; ".join(f"{n} {s:g}: {r}" for n, s, r in verdict.scores)
    reason = f"score {verdict.score:.2f} (threshold {threshold:.2f}). {detail}"
    evidence = (Evidence(None, "output"),)
    details = {
        "dimensions": [{"name": n, "score": s, "reason": r} for n, s, r in verdict.scores],
        "cached": verdict.cached,
        "prompt_version": judge.PROMPT_VERSION,
        "structured_output": verdict.structured,
        "cut_items": prompt.cuts,
    }
    ok = verdict.score + 1e-9 >= threshold
    return Grade(
        "pass" if ok else "fail",
        verdict.score,
        reason,
        evidence,
        kind=None if ok else "agent_capability",
        judge=info,
        details=details,
    )
