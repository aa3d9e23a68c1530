"""A key appears twice in the same mapping.

Only one of the two values would survive loading, silently. The finding names the lines
of both copies.

Passing::

    risk_level: P1
    difficulty: Medium

Failing::

    risk_level: P1
    risk_level: P0

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC002"
NAME = "duplicate-key"
SEVERITY = Severity.ERROR
SCOPE = "loader"
