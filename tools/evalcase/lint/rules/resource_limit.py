"""The document nests too deeply or expands to too many values.

Alias bombs ("billion laughs") and 100,000-level nesting (aliases included) are caught
while the file is being read, within [lint] max_depth (default 64) and max_nodes (default
200,000). Checking a file against its schema also stops after 50,000 steps (ordinary
files need a few hundred), so a file built to make validation slow is reported here too.

Passing::

    tags: [refund, quality_issue]

Failing::

    a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n...

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC006"
NAME = "resource-limit"
SEVERITY = Severity.ERROR
SCOPE = "loader"
