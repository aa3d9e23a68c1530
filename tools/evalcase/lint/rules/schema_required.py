"""A required field is missing.

The fields every case has (docs/fields.md) are required on every case, and each case type in
`case_types` adds its own (docs/fields.md). The finding is at the line of the mapping that lacks
the field and names it.

Passing::

    case_id: refund_eligibility_001
    case_version: v3
    ... (all required fields)

Failing::

    case_id: refund_eligibility_001
    # expected_behavior missing

Reported by schema validation (evalcase.schemas) against schemas/*.schema.json.
"""

from evalcase.model import Severity

CODE = "EC101"
NAME = "required-field"
SEVERITY = Severity.ERROR
SCOPE = "schema"
