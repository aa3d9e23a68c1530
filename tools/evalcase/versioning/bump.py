"""`evalcase bump`: write the version bumps lint asks for, in place.

What it writes (the same comparison lint makes, evalcase.versioning.history):

- case_version above the base's for every case whose execution or judging fields changed
  (EC501), fixture_version likewise for changed fixtures (EC504), and back up to the
  base's for any version that went down (EC502);
- dataset_version past every release for each dataset whose released current version
  changed (EC505);
- the manifest's (new) dataset_version into every case added or changed since the base
  or since the dataset's last release (EC506).

Values are replaced in place (evalcase.yamlwrite.set_scalars): comments, key order, quoting
and layout stay as they were. A second run finds nothing to do. Released IDs reused for
other cases (EC507) and bumps without changes (EC503) need a person and are left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evalcase.config import Config
from evalcase.index.digest import text
from evalcase.model import FatalError
from evalcase.versioning.history import History

if TYPE_CHECKING:
    from evalcase.index.analysis import Analyzer


@dataclass(frozen=True, order=True)
class Edit:
    """One value bump writes."""

    path: str
    field: str
    old: str
    new: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {
            "path": self.path,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "reason": self.reason,
        }


def plan(history: History) -> list[Edit]:
    """The edits that make the history rules pass (where a version can)."""
    edits: dict[tuple[str, str], Edit] = {}

    def add(path: str, field: str, old: str, new: str, reason: str) -> None:
        if old and new and old != new:
            edits.setdefault((path, field), Edit(path, field, old, new, reason))

    targets: dict[str, str] = {}
    for dataset_id, manifest in sorted(history.manifests_by_id.items()):
        target = history.dataset_target(dataset_id)
        if target is None:
            continue
        targets[dataset_id] = target
        version = history.version_of(dataset_id)
        if target != version:
            reason = "EC505" if history.frozen_change(dataset_id) else "EC502"
            add(manifest.path, "dataset_version", version, target, reason)
    for case_pair in history.cases:
        case = case_pair.current
        target_version = case_pair.target_version()
        if case is not None and target_version is not None:
            reason = "EC501" if case_pair.content_changed else "EC502"
            add(case.path, "case_version", case_pair.new_version, target_version, reason)
    for fixture_pair in history.fixtures:
        fixture = fixture_pair.current
        target_version = fixture_pair.target_version()
        if fixture is not None and target_version is not None:
            reason = "EC504" if fixture_pair.content_changed else "EC502"
            add(fixture.path, "fixture_version", fixture_pair.new_version, target_version, reason)
    for dataset_id, target in targets.items():
        for case in history.cases_needing(dataset_id, target):
            add(case.path, "dataset_version", text(case.dataset_version), target, "EC506")
    return sorted(edits.values())


def bump(
    config: Config,
    *,
    base: str | None = None,
    staged: bool = False,
    dry_run: bool = False,
    analyzer: Analyzer | None = None,
) -> list[Edit]:
    """Plan the bumps against ``base`` (default HEAD) and write them to the working tree
    unless ``dry_run``. Under ``staged`` the comparison reads the git index (what is
    about to be committed); the edits still go to the files on disk. ``analyzer``: how
    files are read (default: facts only, uncached)."""
    from ruamel.yaml.error import YAMLError

    from evalcase.files import GitTree, Snapshot, WorkTree
    from evalcase.index.analysis import Analyzer, analyze_all
    from evalcase.versioning.history import VersionHistory, resolve_base
    from evalcase.versioning.revisions import open_repo
    from evalcase.yamlwrite import set_scalars

    repo = open_repo(config)
    if not repo.has_commits():
        raise FatalError("nothing is committed yet: there is no version to compare with")
    base_ref = base or "HEAD"
    base_sha = resolve_base(repo, base_ref)
    snapshot: Snapshot = (
        GitTree(config.root, None)
        if staged
        else WorkTree(config.root, config.max_file_bytes, config.max_state_fixture_bytes)
    )
    if analyzer is None:
        analyzer = Analyzer(config, snapshot, use_cache=False)
    results, index = analyze_all(analyzer, snapshot)
    history = VersionHistory(config, repo, base_sha, base_ref, staged).build(
        analyzer, index, results
    )
    edits = plan(history)
    if dry_run or not edits:
        return edits
    by_path: dict[str, list[Edit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    for path, file_edits in sorted(by_path.items()):
        full = config.root / path
        try:
            source = full.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise FatalError(f"{path}: cannot read it to bump versions: {exc}") from exc
        try:
            updated = set_scalars(source, {(e.field,): e.new for e in file_edits})
        except (KeyError, ValueError, YAMLError) as exc:
            raise FatalError(f"{path}: cannot bump versions: {exc}") from exc
        full.write_bytes(updated.encode("utf-8"))
    return edits
