"""The file is not UTF-8 text (binary, NUL bytes, UTF-16, invalid bytes).

Cases and fixtures are text reviewed in pull requests; evalcase reads UTF-8 only. The
finding points at the first offending byte.

Passing::

    title: 退款 (saved as UTF-8)

Failing::

    title: 退款 (saved as UTF-16 or GBK)

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC004"
NAME = "encoding"
SEVERITY = Severity.ERROR
SCOPE = "loader"
