"""`evalcase new-dataset ID`: a dataset manifest that lint accepts as written.

Writes ``datasets/<ID>/dataset.yaml`` (``dataset_id``, ``dataset_version: v1``, a title,
a description, the owner and a ``full`` suite of every case) and an empty ``cases/``
folder. The title and description say what to write in them, in words lint accepts; a
release gate is added by hand once the dataset has cases that count (a gate over no
counted case is EC311). Nothing is overwritten: an existing manifest is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from evalcase.config import Config
from evalcase.model import FatalError

_ID = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


@dataclass(frozen=True)
class NewDataset:
    """What was written."""

    manifest: Path
    cases: Path


def manifest_text(dataset_id: str, owner: str, title: str | None = None) -> str:
    """The manifest of a new, empty dataset."""
    shown = title or dataset_id.replace("_", " ")
    return (
        f"dataset_id: {dataset_id}\n"
        "dataset_version: v1\n"
        f"title: {shown}\n"
        "description: >-\n"
        f"  Cases of {shown}. Add one with `evalcase new {dataset_id} --type <types>\n"
        "  --scenario <domain>_<ability>_<words>`.\n"
        f"owner: {owner}\n"
        "suites:\n"
        "  full:\n"
        "    description: Every case.\n"
        "    risk_levels: [P0, P1, P2, P3]\n"
    )


def new_dataset(
    config: Config, dataset_id: str, owner: str, title: str | None = None
) -> NewDataset:
    """Write ``datasets/<dataset_id>/dataset.yaml`` and ``cases/``; FatalError on bad input."""
    if not _ID.match(dataset_id) or len(dataset_id) > 128:
        raise FatalError(
            f"dataset ID {dataset_id!r} must be lower snake case (letters, digits, "
            "underscores, starting with a letter), e.g. refund_regression_set"
        )
    if not _ID.match(owner):
        raise FatalError(f"owner {owner!r} must be an identifier such as ai_eval_team")
    if title is not None and (not title.strip() or "\n" in title or ":" in title):
        raise FatalError("--title is one line of text without ':'")
    folder = config.root / "datasets" / dataset_id
    manifest = folder / "dataset.yaml"
    if manifest.exists():
        raise FatalError(f"{manifest.relative_to(config.root)} already exists")
    cases = folder / "cases"
    cases.mkdir(parents=True, exist_ok=True)
    manifest.write_text(manifest_text(dataset_id, owner, title), "utf-8")
    return NewDataset(manifest, cases)
