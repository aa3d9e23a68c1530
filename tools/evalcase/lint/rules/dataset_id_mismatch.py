"""A ``dataset_id`` that is not the name of the dataset directory holding the file.

A dataset is the directory ``datasets/<dataset_id>/``: its manifest, its cases and its
release tags all use that name. A case whose dataset_id names another dataset was
usually copied from it and would be counted, reported and released under the wrong one.

Passing::

    # datasets/refund_regression_set/cases/refund_eligibility_001.yaml
    dataset_id: refund_regression_set

Failing::

    # datasets/crm_safety_set/cases/refund_eligibility_001.yaml
    dataset_id: refund_regression_set
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC205"
NAME = "dataset-id-mismatch"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    for kind, what in ((FileKind.CASE, "case"), (FileKind.MANIFEST, "manifest")):
        data = data_of(doc, ctx, kind)
        if data is None:
            continue
        value = data.get("dataset_id")
        folder = ctx.source.group
        if isinstance(value, str) and value and value != folder:
            line, col = doc.locate(("dataset_id",))
            fix = (
                f"move the case to that dataset's cases/ folder or set dataset_id to {folder!r}"
                if kind is FileKind.CASE
                else f"rename the directory or set dataset_id to {folder!r}"
            )
            yield report(
                doc.path,
                line,
                col,
                f"dataset_id {value!r} of this {what} is not its directory "
                f"datasets/{folder}/; {fix}",
            )
