"""Two fixture files with the same fixture_id.

Cases reference fixtures by ID alone, so fixture IDs are unique across ``fixtures/``, all
kinds together: with two ``order_123`` files, which one a case gets would depend on the
order files are read in. Every file holding the ID is reported, pointing at the others.

Passing::

    # fixtures/state/order_123.yaml
    fixture_id: order_123
    # fixtures/tool/order_lookup.yaml
    fixture_id: order_lookup

Failing::

    # fixtures/state/order_123.yaml
    fixture_id: order_123
    # fixtures/conversation/order_123.yaml
    fixture_id: order_123
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity

CODE = "EC207"
NAME = "duplicate-fixture-id"
SEVERITY = Severity.ERROR
SCOPE = "repo"

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for value, fixtures in index.fixtures_by_id.items():
        if len(fixtures) < 2:
            continue
        places = [(f.path, f.fixture_id[1], f.fixture_id[2]) for f in fixtures if f.fixture_id]
        for place in places:
            others = tuple(p for p in places if p != place)
            where = ", ".join(p[0] for p in others)
            yield report(
                place[0],
                place[1],
                place[2],
                f"fixture ID {value!r} is also used by {where}; fixture IDs are unique "
                "across fixtures/ (all kinds): give one of them a new ID (and file name)",
                others,
            )
