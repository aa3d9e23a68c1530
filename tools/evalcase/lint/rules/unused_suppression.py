"""A suppression comment that suppresses nothing.

Suppressions outlive the problems they hid: once the finding is fixed, the comment only
hides the next, unrelated problem on that line. Remove it (as ruff's RUF100 asks).

Passing::

    case_id: Refund_Legacy_001  # evalcase: disable=EC201 legacy id kept for history

Failing::

    case_id: refund_legacy_001  # evalcase: disable=EC201 legacy id kept for history
"""

from evalcase.model import Severity

CODE = "EC900"
NAME = "unused-suppression"
SEVERITY = Severity.WARNING
SCOPE = "meta"
