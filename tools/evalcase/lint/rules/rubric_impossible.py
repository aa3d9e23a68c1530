"""A rubric whose scale, threshold or weights cannot work.

A rubric (a fixture of kind rubric, or an inline ``rubric`` mapping in a case) scores
each dimension on its ``scale`` and passes an attempt at ``pass_threshold``. Reported,
for rubric fixtures and inline rubrics alike:

- a dimension whose scale has ``min`` above (or equal to) ``max``: no score can be given;
- a dimension ``threshold`` outside its own scale;
- a ``pass_threshold`` outside 0-1 (it is the weighted, normalised score needed to pass);
- a ``weight`` outside 0-1, or weights that add up to zero.

Rubric fixtures get the range checks from their schema (EC105); an inline rubric, which
the case schema only requires to be a mapping, gets them here, so both are held to the
same rules.

Passing::

    dimensions:
      - {name: policy_correctness, scale: {min: 1, max: 5}, weight: 0.6}
      - {name: no_overpromise, scale: {min: 1, max: 5}, weight: 0.4}
    pass_threshold: 0.75

Failing::

    dimensions:
      - {name: policy_correctness, scale: {min: 5, max: 1}, weight: -0.6}
    pass_threshold: 7
"""

from collections.abc import Iterable
from typing import Any

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document, Path
from evalcase.model import FileKind, Finding, Severity

CODE = "EC319"
NAME = "rubric-impossible"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def problems(rubric: dict[str, Any], base: Path, ranges: bool = True) -> list[tuple[Path, str]]:
    """(path, message) for everything impossible in one rubric mapping; ``ranges``: also
    the 0-1 ranges of weights and pass_threshold (a fixture's schema checks those)."""
    out: list[tuple[Path, str]] = []
    dims = rubric.get("dimensions")
    scales: set[tuple[float, float]] = set()
    weights: list[float] = []
    for i, dim in enumerate(dims if isinstance(dims, list) else []):
        if not isinstance(dim, dict):
            continue
        at: Path = (*base, "dimensions", i)
        name = dim.get("name", i)
        scale = dim.get("scale")
        low = high = None
        if isinstance(scale, dict):
            low, high = _number(scale.get("min")), _number(scale.get("max"))
            if low is not None and high is not None:
                if low >= high:
                    out.append(
                        (
                            (*at, "scale"),
                            f"dimension {name!r}: scale min {low:g} is not below "
                            f"max {high:g}; no score can be given",
                        )
                    )
                else:
                    scales.add((low, high))
        threshold = _number(dim.get("threshold"))
        bounded = low is not None and high is not None and low < high
        if threshold is not None and bounded and not low <= threshold <= high:  # type: ignore[operator]
            out.append(
                (
                    (*at, "threshold"),
                    f"dimension {name!r}: threshold {threshold:g} is "
                    f"outside its scale {low:g}-{high:g}",
                )
            )
        weight = _number(dim.get("weight"))
        if weight is not None:
            weights.append(weight)
            if ranges and not 0 <= weight <= 1:
                out.append(
                    ((*at, "weight"), f"dimension {name!r}: weight {weight:g} is not in 0-1")
                )
    if weights and all(w >= 0 for w in weights) and sum(weights) == 0:
        out.append(((*base, "dimensions"), "the dimensions' weights add up to 0"))
    threshold = _number(rubric.get("pass_threshold"))
    if ranges and threshold is not None and not 0 <= threshold <= 1:
        out.append(
            (
                (*base, "pass_threshold"),
                f"pass_threshold {threshold:g} is not in 0-1 (the weighted, normalised score "
                "needed to pass): no attempt, or every attempt, passes",
            )
        )
    return out


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    found: list[tuple[Path, str]] = []
    case = data_of(doc, ctx, FileKind.CASE)
    if case is not None:
        if isinstance(case.get("rubric"), dict):
            found = problems(case["rubric"], ("rubric",))
    else:
        fixture = data_of(doc, ctx, FileKind.FIXTURE)
        if fixture is None or fixture.get("kind") != "rubric":
            return
        if isinstance(fixture.get("data"), dict):
            found = problems(fixture["data"], ("data",), ranges=False)
    for path, message in found:
        line, col = doc.locate(path)
        yield report(
            doc.path,
            line,
            col,
            f"{message}; a rubric that cannot be scored passes or fails by accident: fix "
            "the scale, threshold or weights",
        )
