"""The statistics behind decisions that know the noise: no dependency beyond the standard
library, so the base commands (compare, grade's gates) use it without the store.

- :func:`wilson` is the Wilson score interval of a pass rate: ``passes`` of ``n``
  attempts. It stays inside [0, 1] and is honest at 0/n and n/n, where the normal
  approximation claims certainty. ``evalcase flaky`` shows it two-sided at 95%; a gate's
  ``confidence`` uses its one-sided lower bound.
- :func:`fisher_less` is the one-sided p-value of Fisher's exact test that NEW's pass rate
  is lower than BASE's: the probability, with the total number of passes fixed, of NEW
  passing this few times or fewer if both runs drew from the same pass rate
  (hypergeometric). ``evalcase compare`` calls a case with repeats regressed only when
  this p-value is at most ``alpha`` (0.05 by default).

The assumptions (docs/grading.md, "Decisions that know the noise"): each attempt of a case
is an independent draw with one pass probability per case and side; the case content,
graders and judge are the same on both sides (compare pairs attempts by stable case ID
and content digest, so a changed case is "case changed", never tested); pending and
erroring attempts count as not passing, as everywhere in evalcase.
"""

from __future__ import annotations

import math
from statistics import NormalDist


def z_of(confidence: float, *, two_sided: bool) -> float:
    """The normal quantile of a confidence level (0.95 two-sided: 1.96; one-sided: 1.645)."""
    tail = (1 - confidence) / (2 if two_sided else 1)
    return NormalDist().inv_cdf(1 - tail)


def wilson(passes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval of ``passes / n``; (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    return _wilson(passes, n, z_of(confidence, two_sided=True))


def lower_bound(passes: int, n: int, confidence: float) -> float:
    """The one-sided lower Wilson bound: the rate is at least this with ``confidence``."""
    if n <= 0:
        return 0.0
    return _wilson(passes, n, z_of(confidence, two_sided=False))[0]


def _wilson(passes: int, n: int, z: float) -> tuple[float, float]:
    p = passes / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # At 0 of n and n of n the bound on that side is exact (rounding leaves 1e-17).
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == n else min(1.0, centre + half)
    return low, high


def fisher_less(base_passes: int, base_n: int, new_passes: int, new_n: int) -> float:
    """One-sided Fisher exact p-value for "NEW passes less often than BASE"."""
    total = base_passes + new_passes
    if base_n <= 0 or new_n <= 0:
        return 1.0
    denominator = math.comb(base_n + new_n, total)
    low = max(0, total - base_n)
    return min(
        1.0,
        sum(math.comb(new_n, x) * math.comb(base_n, total - x) for x in range(low, new_passes + 1))
        / denominator,
    )


def fisher_greater(base_passes: int, base_n: int, new_passes: int, new_n: int) -> float:
    """One-sided Fisher exact p-value for "NEW passes more often than BASE"."""
    return fisher_less(new_passes, new_n, base_passes, base_n)
