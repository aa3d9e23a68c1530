"""A symbolic link under datasets/ or fixtures/.

A link can point outside the repository (``fixtures/state/users.yaml -> /etc/passwd``)
or make one file count twice. evalcase never follows links: each one is reported and
skipped. Replace the link with the file itself.

Passing::

    fixtures/state/order_123.yaml      (a regular file)

Failing::

    fixtures/state/order_123.yaml -> ../../../etc/passwd
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.files import SourceFile
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity

CODE = "EC012"
NAME = "symlink"
SEVERITY = Severity.ERROR
SCOPE = "source"

report = reporter(CODE, NAME, SEVERITY)


def check_source(source: SourceFile, config: Config) -> Iterable[Finding]:
    if source.symlink:
        yield report(
            source.path,
            1,
            1,
            "symbolic link: evalcase never follows links (they can point outside the "
            "repository); replace it with the file itself",
        )
