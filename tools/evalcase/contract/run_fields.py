"""Fields that describe a run, not a case.

A case defines the task; the run records what it resolved and what came out. These
names, written at the top level of a case or in its metadata (or, for the names that
mean nothing but a run, anywhere in it), are reported by the
``run-result-in-case`` rule (EC106) with where the value belongs, instead of as an
unknown field.
"""

from __future__ import annotations

_RUN = "the run's run.json (written by `evalcase run`: run id, commit, dataset digest)"
_RESOLVED = (
    "the run's run.json: the run records the model, prompt, index and corpus versions it "
    "resolved; a case states only what it requires (environment_requirements, tool_schema)"
)
_ATTEMPT = "the run's attempts.jsonl (one record per attempt: output, messages, trace, calls)"
_GRADE = "the run's grades.jsonl and report (verdict, score, reason per grader)"
_USAGE = "the attempt record's usage and latency_ms"

RUN_FIELDS: dict[str, str] = {
    **dict.fromkeys(
        ("run_id", "run_ids", "experiment_id", "experiment", "ab_test", "run_at", "ran_at",
         "executed_at", "evaluated_at", "graded_at"),
        _RUN,
    ),
    **dict.fromkeys(
        ("model", "model_name", "model_version", "model_used", "prompt_version", "prompt_id",
         "agent_version", "index_version", "embedding_version", "retriever_version",
         "resolved_corpus_version", "actual_corpus_version", "resolved_versions",
         "tool_versions_used"),
        _RESOLVED,
    ),
    **dict.fromkeys(
        ("output", "outputs", "actual_output", "model_output", "response", "actual_answer",
         "final_answer", "trace", "actual_calls", "tool_calls_made", "retrieved",
         "final_state", "state_diff"),
        _ATTEMPT,
    ),
    **dict.fromkeys(
        ("score", "scores", "passed", "pass_rate", "verdict", "grade", "grades",
         "judge_score", "result", "results", "eval_result"),
        _GRADE,
    ),
    **dict.fromkeys(("latency_ms", "cost", "usage", "tokens", "token_usage"), _USAGE),
}  # fmt: skip

# Where they are looked for: the top level and metadata of a case.
RUN_FIELD_PLACES: tuple[tuple[str, ...], ...] = ((), ("metadata",))

# Looked for at any depth too (inside environment, context, initial_state, ...): the names
# that mean a run and nothing else. Ordinary words (output, result, score, model, trace)
# are business data at depth (an exam's result, a car's model), so only the top level
# and metadata report them.
NESTED_RUN_FIELDS: frozenset[str] = frozenset(
    {
        "run_id", "run_ids", "experiment_id", "run_at", "ran_at", "executed_at",
        "evaluated_at", "graded_at", "model_version", "model_used", "prompt_version",
        "prompt_id", "agent_version", "index_version", "embedding_version",
        "retriever_version", "resolved_corpus_version", "actual_corpus_version",
        "resolved_versions", "tool_versions_used", "actual_output", "model_output",
        "actual_answer", "actual_calls", "tool_calls_made", "judge_score", "pass_rate",
        "eval_result",
    }
)  # fmt: skip
