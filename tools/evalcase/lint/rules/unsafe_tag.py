"""A YAML tag other than the standard ones (str, int, float, bool, null, map, seq).

Tags such as `!!python/object/apply:os.system` ask a loader to construct objects or
run code. evalcase never constructs anything from a tag; the tag is reported and the
value is read as plain data.

Passing::

    input: "帮我退款"

Failing::

    input: !!python/object/apply:os.system ["rm -rf /"]

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC003"
NAME = "unsafe-tag"
SEVERITY = Severity.ERROR
SCOPE = "loader"
