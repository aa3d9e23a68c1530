"""The file is not valid YAML.

A syntax error stops the file from being read at all, so nothing else in it can be
checked. Tabs in indentation are the most common cause: YAML indents with spaces only.

Passing::

    case_id: refund_eligibility_001
    title: 签收超过 7 天

Failing::

    case_id: refund_eligibility_001
    title: [签收超过 7 天

Reported by the YAML loader (evalcase.loader) while the file is read.
"""

from evalcase.model import Severity

CODE = "EC001"
NAME = "yaml-syntax"
SEVERITY = Severity.ERROR
SCOPE = "loader"
