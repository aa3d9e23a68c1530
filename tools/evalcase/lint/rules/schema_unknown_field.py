"""A field the contract does not define.

Typos such as `negtive_behavior` would otherwise be silently ignored. A case type's
fields are not unknown to a case of another type: any case may use any type's field
(`initial_state` and `final_state_check` in a `tool` case, say); a type in `case_types`
only makes its fields required (EC101 names the type). Team-specific fields go under an
`x-` prefix.

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
