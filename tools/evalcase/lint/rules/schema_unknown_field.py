"""A field the contract does not define.

Typos such as `negtive_behavior` would otherwise be silently ignored. Fields of a case
type that the case does not declare in `case_types` are reported with the type to add.
Team-specific fields go under an `x-` prefix.

Passing::

    negative_behavior:
      - 未查询订单就承诺退款。
    x-team-note: legacy

Failing::

    negtive_behavior:
      - 未查询订单就承诺退款。

Reported by schema validation (evalcase.schemas) against schemas/*.schema.json.
"""

from evalcase.model import Severity

CODE = "EC102"
NAME = "unknown-field"
SEVERITY = Severity.ERROR
SCOPE = "schema"
