"""A number that cannot be used: NaN, an infinity, or an integer with thousands of digits.

NaN compares false with everything, so it slips through range checks; infinities are
not JSON; Python refuses to convert integers over 4,300 digits (in any base: a short
hexadecimal number can have a long decimal form). The value is kept as text and reported.

Passing::

    temperature: 0.2

Failing::

    temperature: .nan

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC009"
NAME = "bad-number"
SEVERITY = Severity.ERROR
SCOPE = "loader"
