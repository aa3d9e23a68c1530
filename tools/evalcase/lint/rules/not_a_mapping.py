"""The file is not one YAML mapping: empty, only comments, a list, a scalar, several documents.

A case, manifest or fixture is exactly one YAML mapping per file.

Passing::

    case_id: refund_eligibility_001
    ...

Failing::

    - case_id: refund_eligibility_001
    - case_id: refund_eligibility_002

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC007"
NAME = "not-a-mapping"
SEVERITY = Severity.ERROR
SCOPE = "loader"
