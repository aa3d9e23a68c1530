"""The next free case number: never one that is used, was released, or was deleted.

Results, reports and review records refer to cases by ID, so an ID is never given to a
second case (docs/versioning.md): not while the first exists, not after it was deleted, not
when only a release tag still lists it. The IDs counted are the case files in the
working tree, every case file any commit of any branch ever held, and every case a
release tag records.
"""

from __future__ import annotations

import re
from pathlib import Path

from evalcase.config import Config
from evalcase.model import FatalError

_CASE_FILE = re.compile(r"^datasets/[^/]+/cases/([^/]+)\.ya?ml$")


def used_case_ids(config: Config) -> set[str]:
    """Every case ID the repository uses, used or released in its history."""
    used = {p.stem for p in (config.root / "datasets").glob("*/cases/*.y*ml")}
    from evalcase.gitio import Repo

    if not Repo.is_repo(config.root):
        return used
    repo = Repo(config.root)
    try:
        for path in repo.paths_in_history(["datasets"]):
            match = _CASE_FILE.match(path)
            if match:
                used.add(match.group(1))
        from evalcase.versioning.tags import Releases

        for release in Releases.from_tags(repo.tags(), config).all:
            used.update(release.cases or {})
    finally:
        repo.close()
    return used


def next_case_id(stem: str, used: set[str], width: int = 3) -> str:
    """``<stem>_<NNN>`` one past the highest number ever used with ``stem``."""
    pattern = re.compile(re.escape(stem) + r"_(\d+)$")
    numbers = [int(m.group(1)) for u in used if (m := pattern.match(u))]
    return f"{stem}_{max(numbers, default=0) + 1:0{width}d}"


def check_stem(stem: str, config: Config) -> str:
    """The ID stem (``<domain>_<ability>_<words...>``), checked against the vocabularies."""
    stem = stem.strip().lower()
    if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", stem):
        raise FatalError(
            f"'{stem}' is not a case ID stem: give <domain>_<ability>_<scenario words>, "
            "lower-case words joined by '_', e.g. refund_account_change"
        )
    words = stem.split("_")
    # No vocabulary configured: any well-formed word, as lint (EC202) accepts.
    for what, key, vocabulary, word in (
        ("domain", "domains", config.domains, words[0]),
        ("ability", "abilities", config.abilities, words[1]),
    ):
        if vocabulary and word not in vocabulary:
            raise FatalError(
                f"'{word}' is not {'an' if what == 'ability' else 'a'} {what} of this "
                f"repository ({', '.join(vocabulary)}); add it to [naming] {key} in "
                "evalcase.toml first"
            )
    if words[-1].isdigit():
        raise FatalError(f"'{stem}' ends in a number: give the stem, evalcase numbers it")
    return stem


def case_path(root: Path, dataset_id: str, case_id: str) -> Path:
    return root / "datasets" / dataset_id / "cases" / f"{case_id}.yaml"
