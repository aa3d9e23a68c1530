"""A UTF-8 byte-order mark, Windows (CRLF) line endings, or a line break git does not count.

A byte-order mark and CRLF make diffs noisy and some tools misread the first key. A
carriage return without a line feed, NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH
SEPARATOR (U+2029) are line breaks for YAML 1.1 parsers (libyaml, PyYAML) and some
editors but not for git, so tools disagree on line numbers and even on values; write them
as escapes (``\\u2028``) inside double-quoted strings. Line numbers in findings are always
git's. The file is still read.

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
