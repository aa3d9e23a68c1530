"""A YAML merge key `<<`.

Merged fields do not appear in the file that uses them, so reviewers cannot see them
in a diff, and merges are a size-amplification vector. Write the fields out.

Passing::

    environment:
      tools: [order_lookup]

Failing::

    environment:
      <<: *defaults

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC010"
NAME = "merge-key"
SEVERITY = Severity.ERROR
SCOPE = "loader"
