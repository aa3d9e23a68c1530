"""Attempt records against their schema, ``schemas/attempt.schema.json``.

:func:`problems` says where a record breaks the schema. :func:`check_written` is called
by every writer of records (the runner's :class:`~evalcase.run.outputs.AttemptWriter`,
the redaction of a graded run) just before a record is written: when
:data:`CHECK_VARIABLE` names a folder, it logs there one line per record, ``ok`` or what
breaks the schema. The test suite sets the variable and fails when any record its runs
wrote broke the schema (``tests/conftest.py``); otherwise the check costs nothing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from evalcase.contract.attempt import RECORD_VERSION

# A folder named by this variable receives, from every process that writes records, one
# line per record written.
CHECK_VARIABLE = "EVALCASE_CHECK_RECORDS"


def schema() -> dict[str, Any]:
    """``schemas/attempt.schema.json``."""
    from evalcase.schemas import raw_schemas

    return raw_schemas()["attempt.schema.json"]


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema())


def problems(raw: Mapping[str, Any]) -> list[str]:
    """Where ``raw`` breaks the schema (empty: it is a valid current record)."""
    return [
        f"{'/'.join(str(p) for p in e.absolute_path) or '(record)'}: {e.message}"
        for e in sorted(_validator().iter_errors(raw), key=lambda e: list(e.absolute_path))
    ]


def check_written(raw: Mapping[str, Any]) -> None:
    """Check a record about to be written, when :data:`CHECK_VARIABLE` names a folder.

    A record of an earlier version (the redaction of an old run rewrites its records as
    they were, evalcase.contract.attempt) is logged as ``earlier``: the schema is the
    current version's."""
    folder = os.environ.get(CHECK_VARIABLE)
    if not folder:
        return
    version = raw.get("record_version")
    if not isinstance(version, int) or isinstance(version, bool):
        version = 1
    if version < RECORD_VERSION:
        line = "earlier"
    else:
        found = problems(raw)
        line = json.dumps({"case_id": raw.get("case_id"), "problems": found}) if found else "ok"
    with (Path(folder) / f"records-{os.getpid()}.log").open("a", encoding="utf-8") as out:
        out.write(line + "\n")
