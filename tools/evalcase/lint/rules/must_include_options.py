"""A ``must_include`` grader option that makes the check mean nothing, or nothing known.

``scope`` is ``final_answer`` (the default) or ``assistant_messages``; ``ignore_case``
and ``ignore_punctuation`` are ``true`` or ``false``. A required value that is empty once
the options apply (``"--"`` or ``" . "`` with ``ignore_punctuation``) would be found in
every answer: a check that cannot fail. The grader gives the same reasons as its error
(``evalcase.grade.graders.must_include.option_problems``), so lint reports them first,
at the option's line.

Passing::

    evaluator_config:
      graders:
        - {type: must_include, values: ["1628"], scope: assistant_messages,
           ignore_punctuation: true}

Failing::

    evaluator_config:
      graders:
        - {type: must_include, values: ["1628", " - "], scope: all_messages,
           ignore_case: "yes", ignore_punctuation: true}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, judge_view_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC325"
NAME = "must-include-options"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    config = data.get("evaluator_config")
    graders = config.get("graders") if isinstance(config, dict) else None
    if not isinstance(graders, list):
        return
    # Imported here: only cases with graders pay for the grader modules.
    from evalcase.grade.graders._util import text_values
    from evalcase.grade.graders.must_include import option_problems
    from evalcase.grade.spec import options_of

    for i, grader in enumerate(graders):
        if not isinstance(grader, dict) or grader.get("type") != "must_include":
            continue
        spec = judge_view_of(doc, data)
        if spec is None:
            return
        options = options_of(spec, "must_include")
        values = text_values(spec, options, "values", "must_include")
        for option, why in option_problems(options, values):
            where = ("evaluator_config", "graders", i, option)
            if option not in grader:
                where = ("evaluator_config", "graders", i, "type")
            line, col = doc.locate(where)
            yield report(doc.path, line, col, f"must_include {why}")
        return  # graders of one type merge: their options are read once
