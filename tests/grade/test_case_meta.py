"""What reports need of a case is read into types (evalcase.grade.tasks: ``TaskMeta`` of a
built task, ``CaseDocument`` of a case file that could not be built)."""

from __future__ import annotations

from evalcase.grade.tasks import raw_case_meta


def test_an_unbuilt_case_keeps_its_labels() -> None:
    doc = {"case_id": "refund_1", "case_version": "v2", "title": "Refund", "risk_level": "high",
           "case_types": "tool_use", "ability_tags": ["refund", 7],
           "metadata": {"tags": "smoke", "dataset_role": ["regression"]}}  # fmt: skip
    meta = raw_case_meta("datasets/d/cases/refund_1.yaml", doc)
    assert (meta.case_id, meta.case_version, meta.title, meta.risk_level) == (
        "refund_1", "v2", "Refund", "high",
    )  # fmt: skip
    assert (meta.case_types, meta.ability_tags) == (("tool_use",), ("refund", "7"))
    assert (meta.tags, meta.dataset_roles) == (("smoke",), ("regression",))


def test_an_unbuilt_case_of_the_wrong_shape_is_named_by_its_file() -> None:
    """A title that is a mapping is not shown as its Python repr in a report: the build
    has already said what is wrong; the report names the file."""
    for doc in ({"case_id": "x", "title": {"zh": "退款"}}, {"case_id": "x", "metadata": ["a"]}):
        meta = raw_case_meta("datasets/d/cases/refund_1.yaml", doc)
        assert (meta.case_id, meta.case_version, meta.title, meta.tags) == (
            "refund_1", "?", "", (),
        )  # fmt: skip
