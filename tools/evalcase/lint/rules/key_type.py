"""A mapping key that is not a string (an integer, null, a list or a mapping).

Field names are strings; JSON and every downstream tool require it. The entry is
dropped and reported.

Passing::

    "404": not found

Failing::

    404: not found

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC008"
NAME = "key-type"
SEVERITY = Severity.ERROR
SCOPE = "loader"
