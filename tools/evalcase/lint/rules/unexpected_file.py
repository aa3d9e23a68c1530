"""A YAML file in a place where evalcase expects none.

Each file is validated against the schema its location implies, so a file elsewhere
would be silently skipped. The places are:

- ``datasets/<dataset_id>/dataset.yaml``: the dataset manifest;
- ``datasets/<dataset_id>/cases/<case_id>.yaml``: one case per file;
- ``fixtures/<kind>/<fixture_id>.yaml`` with kind one of state, tool, corpus, rubric,
  conversation, prompt, cel.

Passing::

    datasets/refund_regression_set/cases/refund_eligibility_001.yaml

Failing::

    datasets/refund_regression_set/refund_eligibility_001.yaml
    datasets/refund_regression_set/cases/refund_eligibility_001.yml
    fixtures/orders/order_123.yaml
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.files import FIXTURE_KINDS, SourceFile
from evalcase.lint.base import reporter
from evalcase.model import FileKind, Finding, Severity

CODE = "EC013"
NAME = "unexpected-file"
SEVERITY = Severity.ERROR
SCOPE = "source"

report = reporter(CODE, NAME, SEVERITY)


def check_source(source: SourceFile, config: Config) -> Iterable[Finding]:
    if source.symlink:
        return
    if source.kind is FileKind.UNKNOWN:
        if source.path.endswith(".yml"):
            hint = "rename it to .yaml"
        elif source.path.startswith("fixtures/"):
            hint = f"fixtures live in fixtures/<kind>/ with kind one of {', '.join(FIXTURE_KINDS)}"
        else:
            hint = (
                "cases live in datasets/<dataset_id>/cases/<case_id>.yaml and the manifest "
                "in datasets/<dataset_id>/dataset.yaml"
            )
        yield report(source.path, 1, 1, f"YAML file in an unexpected place: {hint}")
    elif source.kind is FileKind.FIXTURE and source.group not in FIXTURE_KINDS:
        yield report(
            source.path,
            1,
            1,
            f"fixtures/{source.group}/ is not a fixture kind; use one of "
            f"{', '.join(FIXTURE_KINDS)}",
        )
