"""A value outside a fixed set (risk_level, difficulty, review_status, ...).

The message lists the allowed values and suggests the closest one.

Passing::

    risk_level: P1

Failing::

    risk_level: P7

Reported by schema validation (evalcase.schemas) against schemas/*.schema.json.
"""

from evalcase.model import Severity

CODE = "EC104"
NAME = "not-allowed-value"
SEVERITY = Severity.ERROR
SCOPE = "schema"
