"""A value that breaks a constraint: a pattern (versions are v<N>), an empty list or text, a range.

Versions are compared by their number, so they must look like v1, v2, ... v10.

Passing::

    case_version: v3

Failing::

    case_version: 3.0

Reported by schema validation (evalcase.schemas) against schemas/*.schema.json.
"""

from evalcase.model import Severity

CODE = "EC105"
NAME = "invalid-value"
SEVERITY = Severity.ERROR
SCOPE = "schema"
