"""A file whose name is not its ID, or a fixture in the folder of another kind.

Cases and fixtures are found by ID: ``datasets/<dataset_id>/cases/<case_id>.yaml`` and
``fixtures/<kind>/<fixture_id>.yaml``. When the file name and the ID disagree, a reader
who looks for the file by ID finds nothing (or the wrong file), and renaming one without
the other silently changes identity. A tool definition's ``data.name`` (the name the
agent calls) is its fixture ID as well.

Passing::

    # datasets/refund_regression_set/cases/refund_eligibility_001.yaml
    case_id: refund_eligibility_001

Failing::

    # datasets/refund_regression_set/cases/refund_eligibility_002.yaml
    case_id: refund_eligibility_001
    # fixtures/state/order_lookup.yaml
    fixture_id: order_lookup
    kind: tool
"""

from collections.abc import Iterable

from evalcase.files import FIXTURE_KINDS
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import CASE_ID, bad_characters, run_words

CODE = "EC204"
NAME = "file-name-mismatch"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _valid(case_id: str, ctx: FileContext) -> bool:
    return (
        CASE_ID.match(case_id) is not None
        and not bad_characters(case_id)
        and not run_words(case_id, ctx.config.forbidden_tokens)
    )


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    source = ctx.source
    file_name = source.path.rsplit("/", 1)[-1]
    case = data_of(doc, ctx, FileKind.CASE)
    if case is not None:
        value = case.get("case_id")
        if isinstance(value, str) and value and value != source.stem:
            line, col = doc.locate(("case_id",))
            if _valid(source.stem, ctx) and not _valid(value, ctx):
                fix = f"correct the case_id (the file name {source.stem!r} is a valid ID)"
            elif bad_characters(value):
                fix = "correct the case_id (it has characters an ID may not contain)"
            else:
                fix = f"rename the file to {value}.yaml (or correct the ID)"
            yield report(
                doc.path,
                line,
                col,
                f"file name {file_name!r} does not match case_id {value!r}; a case lives in "
                f"cases/<case_id>.yaml: {fix}",
            )
        return
    fixture = data_of(doc, ctx, FileKind.FIXTURE)
    if fixture is None:
        return
    fixture_id = fixture.get("fixture_id")
    if isinstance(fixture_id, str) and fixture_id and fixture_id != source.stem:
        line, col = doc.locate(("fixture_id",))
        if bad_characters(fixture_id) and not bad_characters(source.stem):
            fix = "correct the fixture_id (it has characters an ID may not contain)"
        else:
            fix = f"rename the file to {fixture_id}.yaml (or correct the ID)"
        yield report(
            doc.path,
            line,
            col,
            f"file name {file_name!r} does not match fixture_id {fixture_id!r}; a fixture "
            f"lives in fixtures/<kind>/<fixture_id>.yaml: {fix}",
        )
    kind = fixture.get("kind")
    # A folder that is no kind at all is EC013's; a kind outside the list is EC104's.
    if kind in FIXTURE_KINDS and source.group in FIXTURE_KINDS and kind != source.group:
        line, col = doc.locate(("kind",))
        yield report(
            doc.path,
            line,
            col,
            f"a {kind} fixture sits in fixtures/{source.group}/; move it to fixtures/{kind}/ "
            f"(or correct kind)",
        )
    body = fixture.get("data")
    name = body.get("name") if kind == "tool" and isinstance(body, dict) else None
    if isinstance(name, str) and isinstance(fixture_id, str) and name != fixture_id:
        line, col = doc.locate(("data", "name"))
        yield report(
            doc.path,
            line,
            col,
            f"tool name {name!r} differs from fixture_id {fixture_id!r}; cases name tools by "
            "fixture ID, so the name the agent calls must be the same",
        )
