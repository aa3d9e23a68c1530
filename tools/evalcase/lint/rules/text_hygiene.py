"""A UTF-8 byte-order mark or Windows (CRLF) line endings.

Both make diffs noisy and some tools misread the first key. The file is still read.

Passing::

    LF line endings, no BOM

Failing::

    \r\n line endings

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC011"
NAME = "text-hygiene"
SEVERITY = Severity.WARNING
SCOPE = "loader"
