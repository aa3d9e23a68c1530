"""One suite vocabulary and one selector (evalcase.suites): lint, `evalcase run --suite`
and release gates select exactly the same cases, and a lint-clean suite always runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase import suites
from evalcase.config import load_config
from evalcase.grade.aggregate import CaseFigures
from evalcase.grade.gates import evaluate
from evalcase.grade.tasks import case_meta
from evalcase.index.dataset import load_dataset
from evalcase.index.facts import ManifestFacts
from evalcase.lint.api import lint_repository
from evalcase.lint.semantic import dataset_cases, in_suite
from evalcase.run.select import SelectionError, select
from tests.helpers import BUNDLED_DATASETS, bundled_repo, commit_all, invoke

DATASETS = BUNDLED_DATASETS
# Suites over every criterion, the old spelling, globs and no criteria at all.
EXTRA_SUITES = {
    "by_id": {"case_ids": ["refund_eligibility_*", "crm_safety_bulk_delete_001"]},
    "old_spelling": {"cases": ["refund_eligibility_*", "crm_safety_bulk_delete_001"]},
    "by_type": {"case_types": ["tool", "rag"]},
    "typed_p0": {"case_types": ["tool"], "risk_levels": ["P0"]},
    "roles_and_tags": {"dataset_roles": ["golden", "risk"], "tags": ["smoke"]},
    "everything": {"description": "no criteria: every case"},
}


def test_the_criteria_and_the_selection() -> None:
    wanted = suites.criteria({"description": "x", "cases": ["a_*"], "case_ids": ["b"]})
    assert wanted == {"case_ids": ("a_*", "b")}
    case = suites.Facets("a_1", tags=("smoke",), risk_level="P0", case_types=("tool",))
    assert suites.in_suite(case, wanted) and suites.in_suite(case, {})
    assert suites.in_suite(case, {"tags": ("smoke", "golden"), "risk_levels": ("P[01]",)})
    assert not suites.in_suite(case, {"tags": ("smoke",), "case_types": ("rag",)})
    assert not suites.in_suite(case, {"tags": ()})
    with pytest.raises(suites.SuiteError, match="'tag' is not a suite criterion"):
        suites.criteria({"tag": ["smoke"]}, "smoke")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled datasets, with the extra suites added to every manifest."""
    root = bundled_repo(tmp_path_factory.mktemp("suites") / "repo", ("/outputs/", "/reports/"))
    for dataset_id in DATASETS:
        manifest = root / "datasets" / dataset_id / "dataset.yaml"
        text = manifest.read_text("utf-8")
        extra = "".join(f"  {name}: {json.dumps(s)}\n" for name, s in EXTRA_SUITES.items())
        manifest.write_text(text.replace("suites:\n", "suites:\n" + extra, 1), "utf-8")
    commit_all(root, "suites")
    return root


def test_lint_run_and_gates_select_the_same_cases(repo: Path) -> None:
    config = load_config(repo)
    result = lint_repository(config, use_cache=False)
    index = result.index
    assert index is not None
    compared = 0
    for dataset_id in DATASETS:
        dataset = load_dataset(repo, dataset_id, config=config)
        named = dict(dataset.manifest["suites"])
        manifest = next(m for m in index.manifests if m.dataset_dir == dataset_id)
        assert isinstance(manifest, ManifestFacts)
        facts = {str(c.case_id[0]): c for c in dataset_cases(index, manifest) if c.case_id}
        selectors = {s[0]: s[3] for s in manifest.suites}
        # Every case fails, so a gate's failing cases are exactly the cases it measures.
        figures = [CaseFigures(case_meta(t), ("fail",), (0.0,), ()) for t in dataset.tasks]
        counted = {c.meta.case_id for c in figures if not c.meta.observation}
        for name in named:
            try:
                by_run = {t.case_id for t in select(dataset.tasks, named, [name])}
            except SelectionError:
                by_run = set()
            by_lint = {i for i, c in facts.items() if in_suite(c, selectors[name])}
            gate = evaluate({"name": "g", "suite": name, "min_pass_rate": 0.0}, figures, named)
            assert by_run == by_lint, (dataset_id, name)
            assert set(gate.failing) == by_run & counted, (dataset_id, name, gate.reason)
            compared += 1
            about = [
                f for f in result.findings
                if f.path == manifest.path
                and (f"suite {name!r}" in f.message or f"suites.{name}" in f.message)
            ]  # fmt: skip
            if not about:
                assert by_run, f"{dataset_id} suite {name}: lint-clean but selects nothing"
            else:
                assert {f.code for f in about} <= {"EC102", "EC310"}, about
    assert compared >= len(DATASETS) * len(EXTRA_SUITES)


@pytest.mark.slow
def test_a_lint_clean_suite_by_case_ids_runs(repo: Path) -> None:
    """The bug of issue 22: lint read case_ids and run read cases, so a lint-clean suite
    could not run. Now both read case_ids (and cases, reported by lint, runs too)."""
    lint = invoke("lint", "--no-cache", "--format", "json", cwd=repo)
    on_refund = [
        f for f in json.loads(lint.stdout)
        if f["path"] == "datasets/refund_regression_set/dataset.yaml"
    ]  # fmt: skip
    # Only the old spelling, and the ID of another dataset's case that by_id lists.
    assert sorted(f["code"] for f in on_refund) == ["EC102", "EC310", "EC310"]
    assert all(
        "crm_safety_bulk_delete_001" in f["message"] for f in on_refund if f["code"] == "EC310"
    )
    for suite in ("by_id", "old_spelling"):
        proc = invoke(
            "run", "--no-grade", "refund_regression_set", "--suite", suite,
            "--progress", "none", cwd=repo,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        run_dir = repo / proc.stdout.strip().splitlines()[-1].split(" -> ")[-1]
        meta = json.loads((run_dir / "run.json").read_text("utf-8"))
        assert sorted(meta["cases"]) and all(
            c.startswith("refund_eligibility_") for c in meta["cases"]
        )
