"""Read a dataset as tasks, without the linter: from a work tree, or from any git revision
without a checkout (files come from one ``git cat-file --batch`` stream).

``load_dataset(root, dataset_id, revision=None) -> Dataset``: the manifest (suites,
gates), the :class:`~evalcase.contract.task.Task` of every case that builds, and the
problems of those that do not. Release specs (``DATASET@v3``) are resolved to a commit by
evalcase.versioning.revisions.parse_spec; pass its ``commit`` here.

References resolve through the one resolver (evalcase.index.refs), the digest is the
dataset digest versioning records in release tags (evalcase.index.digest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.config import Config, load_config
from evalcase.contract.build import Expansions, Problem, build_task
from evalcase.contract.prompt import KIND as PROMPT_KIND
from evalcase.contract.prompt import Prompt, prompt_of
from evalcase.contract.task import Task
from evalcase.files import GitTree, Snapshot, SourceFile, WorkTree
from evalcase.index.analysis import Analyzer, FileResult, broken_paths, index_of, limits_of
from evalcase.index.digest import dataset_contents, dataset_id_of, text
from evalcase.index.facts import CaseFacts, ManifestFacts
from evalcase.index.repo import RepoIndex
from evalcase.index.resolve import FixtureCatalog
from evalcase.loader import load
from evalcase.model import FatalError, FileKind


@dataclass(frozen=True)
class Dataset:
    dataset_id: str
    version: str
    commit: str | None  # None: the work tree
    digest: str
    manifest: Mapping[str, Any]  # the manifest document (suites, gates...)
    tasks: tuple[Task, ...]
    # case path -> why its task could not be built
    problems: Mapping[str, tuple[Problem, ...]] = field(default_factory=dict)
    complete: bool = True  # False when some file of the dataset could not be read
    # every prompt fixture of the revision (--prompt may name any of them)
    prompts: Mapping[str, Prompt] = field(default_factory=dict)
    # case path -> the readable document of a case whose task could not be built (its
    # ID, risk level and tags still decide which gates select it)
    unbuilt: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # the facts the dataset was read from (its cases, every manifest and fixture): what
    # content digests are computed from (evalcase audit keys its facts by them)
    index: RepoIndex | None = None

    def task(self, case_id: str) -> Task | None:
        return next((t for t in self.tasks if t.case_id == case_id), None)


def load_dataset(
    root: Path,
    dataset_id: str,
    *,
    revision: str | None = None,
    config: Config | None = None,
) -> Dataset:
    """The dataset ``dataset_id`` of the repository at ``root``, as it is in the work tree
    (``revision`` None) or at a git revision (commit, branch, tag)."""
    config = config or load_config(root)
    commit: str | None = None
    snapshot: Snapshot
    if revision is None:
        snapshot = WorkTree(root, config.max_file_bytes, config.max_state_fixture_bytes)
    else:
        from evalcase import gitio

        # The case repository may be a subfolder of the git work tree (evals/ of an app).
        if not gitio.Repo.is_repo(root):
            raise FatalError(f"{root} is not a git repository; cannot read revision {revision}")
        commit = gitio.Repo(root).rev_parse(revision)
        snapshot = GitTree(root, commit)
    # No state leaves: lint's state rules read them, a run does not.
    analyzer = Analyzer(config, snapshot, use_cache=False, state_leaves=False)
    memo = _memo(config)
    files = snapshot.files()
    blobs = {f.path: f.blob for f in files}
    manifests = [f for f in files if f.kind is FileKind.MANIFEST]
    results = memo.analyze(analyzer, manifests, snapshot)
    dirs = {
        s.group
        for s in manifests
        if isinstance(results[s.path].facts, ManifestFacts)
        and dataset_id_of(results[s.path].facts) == dataset_id  # type: ignore[arg-type]
    }
    wanted = [
        f
        for f in files
        if f.kind is FileKind.FIXTURE or (f.kind is FileKind.CASE and f.group in dirs)
    ]
    results.update(memo.analyze(analyzer, wanted, snapshot))
    index = index_of(results)
    governance = tuple(sorted(config.governance_fields))
    content = dataset_contents(index, governance, broken_paths(results), only=[dataset_id]).get(
        dataset_id
    )
    if content is None:
        where = "the working tree" if commit is None else f"revision {revision}"
        raise FatalError(f"no dataset '{dataset_id}' in {where}")

    paths = [content.manifest.path] + [e.path for e in content.cases]
    paths += [f.path for f in index.fixtures]
    raw = snapshot.read(paths)

    def data_of(path: str) -> dict[str, Any] | None:
        doc = load(path, raw.get(path, b""), limits_of(config, path))
        return doc.data if doc.ok and isinstance(doc.data, dict) else None

    def fixture_of(path: str) -> dict[str, Any] | None:
        key = (path, blobs.get(path, ""))
        if key in memo.fixtures:
            return memo.fixtures[key]
        data = data_of(path)
        if _keyed(key[1]):
            memo.fixtures[key] = data
        return data

    fixtures: dict[str, dict[str, Any]] = {}
    for fixture_facts in sorted(index.fixtures, key=lambda f: f.path):
        fixture_id = text(fixture_facts.fixture_id)
        data = fixture_of(fixture_facts.path)
        if fixture_id and data is not None:
            fixtures.setdefault(fixture_id, data)
    catalog = FixtureCatalog.of(fixtures)
    by_path: dict[str, CaseFacts] = {c.path: c for c in index.cases}
    tasks: list[Task] = []
    problems: dict[str, tuple[Problem, ...]] = {}
    unbuilt: dict[str, Mapping[str, Any]] = {}
    # A case's task is its case's blob and every fixture's blob (references resolve
    # among all of them): with the same blobs, the task an earlier load built.
    fixture_blobs = tuple(sorted((f.path, blobs.get(f.path, "")) for f in index.fixtures))
    keyed = all(_keyed(blob) for _path, blob in fixture_blobs)
    expansions: Expansions = {}  # every case's tools are these fixtures: expanded once
    for entry in content.cases:
        task_key = (dataset_id, entry.path, blobs.get(entry.path, ""), fixture_blobs)
        if keyed and _keyed(task_key[2]) and task_key in memo.tasks:
            tasks.append(memo.tasks[task_key])
            continue
        data = data_of(entry.path)
        facts = by_path.get(entry.path)
        if data is None or facts is None:
            problems[entry.path] = (Problem("", "the file cannot be read"),)
            continue
        built = build_task(
            data,
            fixtures,
            catalog.targets,
            refs=[(f, k, t) for f, k, t, _l, _c in facts.refs],
            dataset_id=dataset_id,
            path=entry.path,
            expansions=expansions,
        )
        if isinstance(built, Task):
            tasks.append(built)
            if keyed and _keyed(task_key[2]):
                memo.tasks[task_key] = built
        else:
            problems[entry.path] = tuple(built)
            unbuilt[entry.path] = data
    return Dataset(
        dataset_id=dataset_id,
        version=content.version,
        commit=commit,
        digest=content.digest,
        manifest=data_of(content.manifest.path) or {},
        tasks=tuple(tasks),
        problems=problems,
        complete=content.complete,
        prompts={
            fid: prompt_of(fid, doc)
            for fid, doc in sorted(fixtures.items())
            if doc.get("kind") == PROMPT_KIND
        },
        unbuilt=unbuilt,
        index=index,
    )


class _Memo:
    """What loading a dataset made of each file's content, for this process's next load
    with the same configuration: ``evalcase run`` reads the work tree to run, then the
    run's commit to grade, and a clean work tree is the same blobs, so the second load
    neither analyses nor parses a 3 MB state fixture again, nor builds its tasks again
    (each case's digest hashes the fixtures it uses: 50 cases of a 3 MB state fixture
    are 150 MB hashed per build). Keyed by git blob id: the same bytes at the same path
    give the same result; a task by its case's blob and every fixture's. Fixture
    documents and tasks are shared between loads: they are read, never changed in place."""

    LIMIT = 20_000  # entries of each kind kept (then forgotten all at once)

    def __init__(self, config: Config) -> None:
        self.config = config  # the first of the equal configurations it serves
        self.results: dict[tuple[str, str], FileResult] = {}
        self.fixtures: dict[tuple[str, str], dict[str, Any] | None] = {}
        self.tasks: dict[tuple[str, str, str, tuple[tuple[str, str], ...]], Task] = {}

    def analyze(
        self, analyzer: Analyzer, sources: Sequence[SourceFile], snapshot: Snapshot
    ) -> dict[str, FileResult]:
        for table in (self.results, self.fixtures, self.tasks):
            if len(table) > self.LIMIT:
                table.clear()
        missing = [s for s in sources if (s.path, s.blob) not in self.results]
        found = analyzer.analyze_files(missing, snapshot=snapshot)
        for source in missing:
            if _keyed(source.blob) and source.path in found:
                self.results[(source.path, source.blob)] = found[source.path]
        # In the order of ``sources``, as the analyzer gives them.
        return {
            s.path: found[s.path] if s.path in found else self.results[(s.path, s.blob)]
            for s in sources
            if s.path in found or (s.path, s.blob) in self.results
        }


def _keyed(blob: str) -> bool:
    """A git blob id (not empty, not an oversized file's size and time)."""
    return bool(blob) and ":" not in blob


_MEMOS: dict[str, _Memo] = {}


def _memo(config: Config) -> _Memo:
    """The memo of this configuration's content (its ``repr``: every field, the root
    included), not of the object: a process that loads the configuration again for each
    command (the suite's in-process commands, a library caller) would otherwise analyse
    every file of the repository again for each. What it holds is keyed by blob id, and a
    dataset's analysis reads nothing but the configuration and the files' contents (no
    lint rule runs in it: ``Analyzer`` with the default ``Checks``)."""
    key = repr(config)
    memo = _MEMOS.get(key)
    if memo is None:
        if len(_MEMOS) > 8:
            _MEMOS.clear()
        memo = _MEMOS[key] = _Memo(config)
    return memo
