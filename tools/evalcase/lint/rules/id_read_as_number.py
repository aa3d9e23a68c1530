"""An identifier that YAML 1.2 reads as a number: ``6634E6``, ``1e5``, ``0x1F``, ``012``.

evalcase reads YAML 1.2, where an unquoted ``6634E6`` is the float 6634000000.0, ``0x1F``
the integer 31 and ``012`` the integer 12. A YAML 1.1 writer (PyYAML, the usual way cases
are generated from logs) leaves such IDs unquoted, so an order ID, a case ID in a suite,
a tag or a passage ID silently becomes another value: a tool's ``when`` never matches, a
state path names nothing, a suite selects no case. Reported where an identifier is
expected: a field named ``id``, ``*_id`` or ``*_ids`` (and the items of such a list), and
the identifier lists ``tags``, ``case_ids``, ``fixtures``, ``available_tools``,
``forbidden_tools``, ``dataset_roles``, ``case_types``, ``ability_tags``. Numbers written
as they print (``signed_days: 10``, ``amount: 99.5``) are numbers and are not reported.

Passing::

    order_id: "6634E6"
    case_ids: ["012"]

Failing::

    order_id: 6634E6        # read as 6634000000.0
    case_ids: [012]         # read as 12
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document, Path
from evalcase.model import Finding, Severity

CODE = "EC211"
NAME = "id-read-as-number"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

ID_LISTS = frozenset(
    {
        "tags",
        "case_ids",
        "cases",
        "fixtures",
        "available_tools",
        "forbidden_tools",
        "dataset_roles",
        "case_types",
        "ability_tags",
    }
)


def expects_id(path: Path) -> bool:
    """Whether the value at ``path`` stands where an identifier is expected."""
    names = [p for p in path if isinstance(p, str)]
    if not names:
        return False
    name = names[-1].lower()
    in_list = isinstance(path[-1], int)
    if name == "id" or name.endswith("_id") or name.endswith("_ids"):
        return True
    return in_list and name in ID_LISTS


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not doc.numbers or not doc.ok:
        return
    by_place: dict[tuple[int, int], Path] = {}
    for at, place in doc.positions.items():
        if place in doc.numbers and at:
            by_place.setdefault(place, at)
    for place, text in sorted(doc.numbers.items()):
        found = by_place.get(place)
        if found is None or not expects_id(found):
            continue
        value = doc.get(found)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        yield report(
            doc.path,
            *place,
            f"{text} is read by YAML 1.2 as the number {value!r}, not the identifier "
            f"{text!r} (a YAML 1.1 writer such as PyYAML leaves it unquoted); quote it: "
            f"'{text}'",
        )
