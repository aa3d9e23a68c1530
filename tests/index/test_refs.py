"""One resolver of references: the dataset digest, the export catalog and the lint focus
all resolve a case's references the same way (evalcase.index.refs)."""

from __future__ import annotations

from evalcase.config import load_config
from evalcase.files import WorkTree
from evalcase.index.analysis import Analyzer, analyze_all
from evalcase.index.digest import text
from evalcase.index.repo import RepoIndex
from evalcase.index.resolve import FixtureCatalog
from evalcase.loader import load
from tests.helpers import REPO_ROOT


def _index() -> tuple[RepoIndex, FixtureCatalog]:
    config = load_config(REPO_ROOT)
    snapshot = WorkTree(REPO_ROOT, config.max_file_bytes)
    _results, index = analyze_all(Analyzer(config, snapshot, use_cache=False), snapshot)
    raw = snapshot.read(f.path for f in index.fixtures)
    docs = {text(f.fixture_id): load(f.path, raw[f.path]).data for f in index.fixtures}
    return index, FixtureCatalog.of(docs)


def test_every_reference_resolves_to_the_same_fixtures_everywhere() -> None:
    index, catalog = _index()
    checked = 0
    for case in index.cases:
        for _field, kind, target, _line, _col in case.refs:
            by_index = sorted(text(f.fixture_id) for f in index.resolve(kind, target))
            assert by_index == sorted(catalog.targets(kind, target)), (case.path, kind, target)
            checked += 1
    assert checked > 100


def test_a_fixture_in_focus_checks_exactly_the_cases_that_reference_it() -> None:
    index, _catalog = _index()
    fixture = next(f for f in index.fixtures if text(f.fixture_id) == "refund_submit")
    focused = RepoIndex(focus=frozenset({fixture.path}))
    for facts in [*index.cases, *index.fixtures, *index.manifests]:
        focused.add(facts)
    users = {c.path for c in focused.checked_cases()}
    expected = {c.path for c in index.cases if fixture in index.referenced_fixtures([c])}
    assert users == expected
    assert users  # refund_submit is used by bundled cases
