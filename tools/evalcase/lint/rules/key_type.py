"""A mapping key that is not a string (an integer, null, a list or a mapping).

Field names are strings; JSON and every downstream tool require it. The entry is
dropped and reported. A key that YAML 1.2 reads as a number although it was not written
as one prints (``6634E6``, ``1e5``, ``0x1F``, ``012``: an ID a YAML 1.1 writer such as
PyYAML left unquoted) is reported with the number it became and the quoted fix.

Passing::

    "404": not found

Failing::

    404: not found
    6634E6: {status: shipped}     # read as the number 6634000000.0: write '6634E6'

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC008"
NAME = "key-type"
SEVERITY = Severity.ERROR
SCOPE = "loader"
