"""Every grader against its good and bad samples; the registry is walked so that nothing
ships without samples and documentation."""

from __future__ import annotations

import pytest

from evalcase import judging
from evalcase.grade.graders import GRADERS, load
from evalcase.grade.rule_checks import RULE_CHECKS
from evalcase.grade.spec import judge_spec_from_case
from tests.grade.samples import SAMPLES

# Graders whose passing/failing samples need a live counterpart (see SAMPLES comments).
LIVE = {
    "llm_rubric": "tests/grade/test_llm_rubric.py",
    "human": "tests/grade/test_human_verdicts.py",
}

CASES = [(name, s) for name, samples in SAMPLES.items() for s in samples]


@pytest.mark.parametrize(("grader", "sample"), CASES, ids=[f"{n}:{s.name}" for n, s in CASES])
def test_sample(grader: str, sample: object) -> None:
    from tests.grade.samples import Sample

    assert isinstance(sample, Sample)
    spec = judge_spec_from_case({"case_id": "sample_case_001", **sample.case})
    result = load(grader).grade(spec, sample.attempt)
    assert result.verdict == sample.verdict, result.reason
    assert result.reason
    if result.verdict == "fail":
        assert result.kind, "a failing grade names its failure class"


@pytest.mark.parametrize("grader", sorted(GRADERS))
def test_registry_grader_has_samples_and_docs(grader: str) -> None:
    verdicts = {s.verdict for s in SAMPLES.get(grader, [])}
    wanted = {"pass", "fail"} if grader not in LIVE else {"pending"}
    assert wanted <= verdicts, f"{grader} needs samples with verdicts {wanted - verdicts}"
    assert verdicts & {"error", "pending"}, f"{grader} needs a nothing-to-grade sample"
    loaded = load(grader)
    assert loaded.doc.splitlines()[0] == GRADERS[grader]
    assert "Passing" in loaded.doc and "Failing" in loaded.doc, "docstring needs both examples"
    assert loaded.version


def test_lint_names_come_from_the_registry() -> None:
    assert set(GRADERS) <= judging.known_graders()
    assert set(judging.GRADERS) == set(GRADERS)
    assert set(RULE_CHECKS) == set(judging.RULE_CHECKS)


def test_a_case_without_graders_is_an_error_not_a_pass() -> None:
    from evalcase.grade.context import GradeContext
    from evalcase.grade.engine import grade_attempt
    from tests.grade.attempts import attempt

    result = grade_attempt(judge_spec_from_case({"case_id": "x"}), attempt(), GradeContext())
    assert result.verdict == "error"
