"""A gate's repeat or confidence requirement that no run could ever meet.

Gates may ask more of repeated attempts (docs/grading.md, "Decisions that know the
noise"): ``case_passes: {min: M, of: K}`` passes a case when at least M of its first K
attempts pass, and ``confidence: C`` requires the one-sided Wilson lower bound of the
gate's rate to clear ``min_pass_rate`` as well. Some combinations can never pass, so the
gate would fail every release whatever the agent does:

- ``min`` above ``of``: no case passes M of fewer than M attempts;
- ``confidence`` with ``min_pass_rate: 1``: a lower bound is below 1 at any number of
  attempts, even when every attempt passed;
- ``case_passes`` beside ``metric``: the per-case threshold is the gate's rate, so a
  metric beside it is a contradiction (which one did the author mean?).

Passing::

    gates:
      - {name: p0_repeats, risk_levels: [P0], min_pass_rate: 1.0, case_passes: {min: 4, of: 5}}
      - {name: overall, min_pass_rate: 0.8, confidence: 0.95}

Failing::

    gates:
      - {name: p0_repeats, min_pass_rate: 1.0, case_passes: {min: 6, of: 5}}
      - {name: overall, min_pass_rate: 1.0, confidence: 0.95}
"""

from collections.abc import Iterable, Mapping

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC324"
NAME = "gate-cannot-pass"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.MANIFEST)
    gates = data.get("gates") if data is not None else None
    if not isinstance(gates, list):
        return
    for i, gate in enumerate(gates):
        if not isinstance(gate, Mapping):
            continue
        name = gate.get("name", f"#{i + 1}")
        repeats = gate.get("case_passes")
        if isinstance(repeats, Mapping):
            m, k = repeats.get("min"), repeats.get("of")
            if isinstance(m, int) and isinstance(k, int) and m > k:
                yield report(
                    doc.path,
                    *doc.locate(("gates", i, "case_passes", "min")),
                    f"gate {name!r} asks {m} passing attempts of {k}: no case can pass; "
                    f"make min at most {k}, or raise of (and run with --repeat of)",
                )
            if "metric" in gate:
                yield report(
                    doc.path,
                    *doc.locate(("gates", i, "metric")),
                    f"gate {name!r} has both case_passes and metric: case_passes is the "
                    "gate's rate (the share of cases passing M of K attempts); remove metric",
                )
        confidence = gate.get("confidence")
        minimum = gate.get("min_pass_rate")
        if (
            isinstance(confidence, int | float)
            and isinstance(minimum, int | float)
            and not isinstance(minimum, bool)
            and minimum >= 1
        ):
            yield report(
                doc.path,
                *doc.locate(("gates", i, "confidence")),
                f"gate {name!r} requires the rate's lower bound at {confidence} confidence "
                "to reach min_pass_rate 1, which no number of passing attempts gives: lower "
                "min_pass_rate (0.9 needs 25 passes of 25 at 0.95), or drop confidence",
            )
