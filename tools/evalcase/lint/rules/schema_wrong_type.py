"""A value of the wrong type (text where a list is expected, ...).

The runner, graders and reports rely on the declared types.

Passing::

    ability_tags:
      - RAG

Failing::

    ability_tags: RAG

Reported by schema validation (evalcase.schemas) against schemas/*.schema.json.
"""

from evalcase.model import Severity

CODE = "EC103"
NAME = "wrong-type"
SEVERITY = Severity.ERROR
SCOPE = "schema"
