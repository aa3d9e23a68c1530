"""``final_state_check.from_expected_calls`` that cannot give a gold end state.

``from_expected_calls: true`` makes the gold end state the state that replaying the
case's ``expected_calls`` on a fresh environment produces (``paths`` limits the
comparison to named parts). Each ``any_of`` plan of ``expected_calls`` gives a gold
state of its own (matching any one passes), but alternatives of the *state check*
(``final_state_check.any_of``) have no calls of their own and cannot be combined with
it; ``paths`` are static dotted state paths (no ``{}`` segment: there is no call to
fill it in). Elsewhere: a case without expected calls is EC320's (the grader cannot
grade), the flag's and paths' types are the schema's, a call without its required
arguments is EC617's, arguments the tool's schema rejects are EC304's.

Passing::

    expected_calls:
      calls: [{tool: cancel_reservation, args: {reservation_id: EHGLP3}}]
    final_state_check: {from_expected_calls: true, paths: [reservations]}

Failing::

    final_state_check:
      from_expected_calls: true
      paths: ['reservations.{args.id}']        # no call to fill {args.id} in
      any_of: [{expected: {...}}, {expected: {...}}]   # use expected_calls.any_of
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC323"
NAME = "gold-state-misuse"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_FSC = "final_state_check"


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    fsc = data.get(_FSC)
    if not isinstance(fsc, dict) or "from_expected_calls" not in fsc:
        if isinstance(fsc, dict) and "paths" in fsc:
            line, col = doc.locate_key((_FSC, "paths"))
            yield report(doc.path, line, col, "final_state_check.paths is read only with "
                         "from_expected_calls: true (it names what the gold state is "
                         "compared over); add the flag or remove paths")  # fmt: skip
        return
    flag = fsc["from_expected_calls"]
    if flag is not True:
        return  # false, or not a boolean (the schema says so: EC1xx)
    if isinstance(fsc.get("any_of"), list):
        at = doc.locate_key((_FSC, "any_of"))
        yield report(
            doc.path,
            *at,
            "final_state_check.any_of cannot be combined with from_expected_calls: the "
            "alternatives have no calls of their own; give each acceptable end state as an "
            "expected_calls.any_of plan instead (each plan's replay is a gold state)",
        )
    if "paths" in fsc:
        paths = fsc["paths"]
        items = [paths] if isinstance(paths, str) else paths
        if not isinstance(items, list) or not items or not all(
            isinstance(p, str) and p.strip() and "{" not in p for p in items
        ):
            at = doc.locate((_FSC, "paths"))
            yield report(
                doc.path,
                *at,
                "final_state_check.paths must be a non-empty list of static dotted state "
                "paths (e.g. [reservations, users.mia_li_3668]); leave it out to compare "
                "the whole state",
            )
