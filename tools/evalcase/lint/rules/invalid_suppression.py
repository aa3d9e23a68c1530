"""A suppression comment without a reason, or naming no known rule.

Every suppression must say why, so reviewers can judge it; a misspelt code would
suppress nothing while looking like it does. Such a comment suppresses nothing.

Syntax::

    <line>  # evalcase: disable=EC201 reason why
    # evalcase: disable=EC201,EC203 reason why      (applies to the next line)
    # evalcase: disable-file=EC408 reason why       (applies to the whole file)

Passing::

    case_id: Refund_Legacy_001  # evalcase: disable=EC201 legacy id kept for history

Failing::

    case_id: Refund_Legacy_001  # evalcase: disable=EC201
    case_id: Refund_Legacy_001  # evalcase: disable=EC2O1 typo in the code
"""

from evalcase.model import Severity

CODE = "EC901"
NAME = "invalid-suppression"
SEVERITY = Severity.ERROR
SCOPE = "meta"
