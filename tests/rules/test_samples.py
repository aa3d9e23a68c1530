"""Data-driven rule tests: every rule ships good and bad samples.

Layout: ``tests/rules/samples/<CODE>/{good,bad}/<file>``. Each sample is placed into a fresh
copy of ``tests/rules/base_repo`` (a small, consistent repository) and the repository is
linted with every rule on. A good sample must produce no finding on its file; a bad sample
must produce exactly the declared (code, line) pairs on its file.

Sample settings come from a comment line in the first lines of the file::

    # sample: path=fixtures/state/x.yaml expect=EC204@1,EC101@1

or, for binary samples, from a sidecar ``<file>.sample.toml`` with the same keys
(``path``, ``expect`` as a list of "CODE@LINE", ``symlink`` for a link target, ``config``
for an evalcase.toml placed at the root, ``extra`` for companion files placed into the
repository first, as ``repo/path=<file>.extra`` next to the sample (``@audit/path``: into
this machine's audit store, the repository then a git repository), ``base`` for the
content of the same path at a base commit, ``tag`` to tag the base commit's datasets
with ``evalcase tag``, ``remove`` for repository paths deleted in a second commit after
the tags, which then is the base).
With ``base``, ``tag`` or ``remove`` the repository is a git repository and is linted
with ``--base HEAD``. Default path: ``datasets/sample_set/cases/<file name>``.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evalcase.config import load_config
from evalcase.lint.api import lint_repository
from evalcase.lint.rules import RULES
from tests.helpers import BASE_REPO, commit_all, init_repo

SAMPLES = Path(__file__).parent / "samples"
_HEADER = re.compile(r"^#\s*sample:\s*(.*)$")


@dataclass
class Sample:
    code: str
    verdict: str
    file: Path
    path: str
    expect: set[tuple[str, int]] = field(default_factory=set)
    symlink: str | None = None
    config: str | None = None
    base: str | None = None
    tag: list[str] = field(default_factory=list)
    remove: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.code}-{self.verdict}-{self.file.name}"


def _parse_expect(items: list[str]) -> set[tuple[str, int]]:
    out = set()
    for item in items:
        code, _, line = item.strip().partition("@")
        out.add((code, int(line)))
    return out


def _meta(file: Path) -> dict[str, object]:
    sidecar = file.with_name(file.name + ".sample.toml")
    if sidecar.exists():
        return tomllib.loads(sidecar.read_text("utf-8"))
    meta: dict[str, object] = {}
    head = file.read_bytes()[:4000].decode("latin-1")
    for line in head.splitlines()[:15]:
        match = _HEADER.match(line.strip())
        if match:
            for part in match.group(1).split():
                key, _, value = part.partition("=")
                listed = key in ("expect", "tag", "remove", "extra")
                meta[key] = value.split(",") if listed else value
    return meta


def discover() -> list[Sample]:
    samples = []
    for code_dir in sorted(p for p in SAMPLES.iterdir() if p.is_dir()):
        for verdict in ("good", "bad"):
            folder = code_dir / verdict
            if not folder.is_dir():
                continue
            for file in sorted(folder.iterdir()):
                if file.name.endswith((".sample.toml", ".base", ".extra")):
                    continue
                meta = _meta(file)
                expect = meta.get("expect", [])
                assert isinstance(expect, list)
                samples.append(
                    Sample(
                        code=code_dir.name,
                        verdict=verdict,
                        file=file,
                        path=str(meta.get("path", f"datasets/sample_set/cases/{file.name}")),
                        expect=_parse_expect([str(e) for e in expect if e]),
                        symlink=meta.get("symlink"),  # type: ignore[arg-type]
                        config=meta.get("config"),  # type: ignore[arg-type]
                        base=meta.get("base"),  # type: ignore[arg-type]
                        tag=[str(t) for t in meta.get("tag", []) or []],  # type: ignore[union-attr]
                        remove=[str(r) for r in meta.get("remove", []) or []],  # type: ignore[union-attr]
                        extra=[str(e) for e in meta.get("extra", []) or []],  # type: ignore[union-attr]
                    )
                )
    return samples


SAMPLE_LIST = discover()


def lint_sample(sample: Sample, tmp_path: Path) -> set[tuple[str, int]]:
    repo = tmp_path / "repo"
    import shutil

    shutil.copytree(BASE_REPO, repo)
    if sample.config:
        (repo / "evalcase.toml").write_text((sample.file.parent / sample.config).read_text())
    if any(item.startswith("@audit/") for item in sample.extra):
        init_repo(repo)  # the audit store is in the git directory
    for item in sample.extra:  # repo/path=<companion file>.extra, next to the sample
        where, _, local = item.partition("=")
        if where.startswith("@audit/"):  # this machine's audit store (audit_facts.store)
            from evalcase.audit_facts.store import root_of

            dest = root_of(repo) / where.removeprefix("@audit/")
        else:
            dest = repo / where
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes((sample.file.parent / local).read_bytes())
    target = repo / sample.path
    target.parent.mkdir(parents=True, exist_ok=True)
    base = None
    if sample.base or sample.tag or sample.remove:
        init_repo(repo)
        if sample.base:
            target.write_bytes((sample.file.parent / sample.base).read_bytes())
        commit_all(repo, "base")
        for dataset in sample.tag:
            from evalcase.actions import tag_dataset

            tag_dataset(load_config(repo), dataset)
        if sample.remove:
            for removed in sample.remove:
                (repo / removed).unlink()
            commit_all(repo, "remove")
        base = "HEAD"
    if sample.symlink:
        if target.exists():
            target.unlink()
        os.symlink(sample.symlink, target)
    else:
        target.write_bytes(sample.file.read_bytes())
    result = lint_repository(load_config(repo), use_cache=False, jobs=1, base=base)
    for f in result.findings:
        # A message points at a docs page or `evalcase rule CODE`, never at the design
        # documents' section numbers, which no user can look up.
        assert not _SOURCE_REF.search(f.message), (f.code, f.message)
    return {(f.code, f.line) for f in result.findings if f.path == sample.path}


_SOURCE_REF = re.compile(r"\bseed\b|§|\b00[024] (?:section|step|[0-9]+\.[0-9])|\(0?0[024]\)")


@pytest.mark.parametrize("sample", SAMPLE_LIST, ids=[s.id for s in SAMPLE_LIST])
def test_sample(sample: Sample, tmp_path: Path) -> None:
    found = lint_sample(sample, tmp_path)
    if sample.verdict == "good":
        assert found == set(), f"good sample produced findings: {sorted(found)}"
    else:
        assert sample.expect, "a bad sample must declare what it produces (expect=CODE@LINE)"
        assert any(code == sample.code for code, _ in sample.expect), (
            f"a bad sample of {sample.code} must expect at least one {sample.code}"
        )
        assert found == sample.expect


def test_every_rule_has_good_and_bad_samples() -> None:
    have = {(s.code, s.verdict) for s in SAMPLE_LIST}
    missing = [
        f"{code} {verdict}"
        for code in RULES
        for verdict in ("good", "bad")
        if (code, verdict) not in have
    ]
    assert not missing, "rules without samples: " + ", ".join(missing)


def test_every_sample_folder_is_a_rule() -> None:
    unknown = sorted({s.code for s in SAMPLE_LIST} - set(RULES))
    assert not unknown, f"sample folders for unknown rules: {unknown}"
