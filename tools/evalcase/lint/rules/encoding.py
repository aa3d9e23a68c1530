"""The file is not UTF-8 text (binary, NUL bytes, UTF-16, invalid bytes, control characters).

Cases and fixtures are text reviewed in pull requests; evalcase reads UTF-8 only. The
finding points at the first offending byte. Control characters (an ESC from a terminal
log, a BEL) cannot appear in YAML text at all; write them as escapes such as ``\\x1b``
inside a double-quoted string.

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
