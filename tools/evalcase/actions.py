"""Commands that combine lint and versioning (the layer above both).

evalcase.versioning reads files through an :class:`~evalcase.index.analysis.Analyzer`
and never imports the linter; these functions give it lint's analyzer (so that lint's
per-file cache serves both) and, for a release, lint's verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from evalcase.config import Config
from evalcase.files import WorkTree
from evalcase.index.analysis import Analyzer
from evalcase.model import Finding
from evalcase.versioning.bump import Edit
from evalcase.versioning.changelog import Changelog
from evalcase.versioning.export import Export
from evalcase.versioning.release import DatasetStatus


def lint_analyzer(config: Config, *, use_cache: bool = True) -> Analyzer:
    from evalcase.lint.linter import analyzer

    return analyzer(
        config,
        WorkTree(config.root, config.max_file_bytes, config.max_state_fixture_bytes),
        use_cache=use_cache,
    )


@contextmanager
def _lint_analyzer(config: Config, *, use_cache: bool = True) -> Iterator[Analyzer]:
    """lint's analyzer for one action, its cache committed and closed afterwards (also
    when the action fails): a store left open holds its transaction's lock, so a second
    lint in the same process waited the busy timeout (10 s) on its commit and lost its
    writes, and the action's own analyses were never kept."""
    analyzer = lint_analyzer(config, use_cache=use_cache)
    try:
        yield analyzer
    finally:
        analyzer.save()


def tag_dataset(
    config: Config,
    dataset_id: str,
    *,
    override_audit: str | None = None,
    warn: Callable[[str], None] | None = None,
) -> str:
    """Release a dataset after linting what is staged against HEAD (see
    evalcase.versioning.release.tag_dataset); returns the tag name."""
    from evalcase.lint.api import lint_repository
    from evalcase.versioning.release import tag_dataset as release

    def lint() -> list[Finding]:
        return lint_repository(config, staged=True, base="HEAD").findings

    with _lint_analyzer(config) as analyzer:
        return release(config, dataset_id, lint, analyzer, override_audit=override_audit, warn=warn)


def list_datasets(config: Config, *, use_cache: bool = True) -> list[DatasetStatus]:
    from evalcase.versioning.release import list_datasets as datasets

    with _lint_analyzer(config, use_cache=use_cache) as analyzer:
        return datasets(config, analyzer)


def bump(
    config: Config,
    *,
    base: str | None = None,
    staged: bool = False,
    dry_run: bool = False,
    use_cache: bool = True,
) -> list[Edit]:
    from evalcase.versioning.bump import bump as plan_and_write

    with _lint_analyzer(config, use_cache=use_cache) as analyzer:
        return plan_and_write(config, base=base, staged=staged, dry_run=dry_run, analyzer=analyzer)


def diff(config: Config, spec_a: str, spec_b: str, *, use_cache: bool = True) -> Changelog:
    from evalcase.versioning.changelog import diff as changelog

    with _lint_analyzer(config, use_cache=use_cache) as analyzer:
        return changelog(config, spec_a, spec_b, analyzer)


def export_dataset(config: Config, spec: str, *, use_cache: bool = True) -> Export:
    from evalcase.versioning.export import export_dataset as export

    with _lint_analyzer(config, use_cache=use_cache) as analyzer:
        return export(config, spec, analyzer)
