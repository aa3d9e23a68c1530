"""The file is larger than [lint] max_file_bytes (default 1,000,000).

Checked before parsing, so an enormous file costs nothing. Move bulk data into a
fixture, split it, or raise the limit in evalcase.toml.

Passing::

    a 4 KB case

Failing::

    a 50 MB corpus dump placed in cases/

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC005"
NAME = "file-too-large"
SEVERITY = Severity.ERROR
SCOPE = "loader"
