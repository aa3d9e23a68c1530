"""Repository configuration: evalcase.toml, or [tool.evalcase] in pyproject.toml.

Where the case repository is (its *root*: the folder holding ``datasets/`` and
``fixtures/``) and which configuration applies are decided here, once, for every command:

- a configuration file in a folder applies to that folder, or to the folder its ``root``
  key names (``root = "evals"`` at the top of a git repository whose cases live in
  ``evals/``);
- with no ``--root``, the nearest folder upwards from the current one with a
  configuration or a ``datasets/`` folder decides; without either, the nearest git
  repository.

The ID vocabularies (domains, abilities) belong to the team: there is no built-in list.
With none configured, any well-formed word is accepted.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.model import FatalError, Severity

# Words that name a run, not the business object under evaluation (000 12.2.1). "new" and
# "old" are not among them: they describe business objects (a new user, the old policy).
# What seed 000 (chapter 2) forbids in a case ID: model and model-family names, prompt and
# version names, run and temporary experiment words. Ordinary nouns a business uses
# ("test", "draft", "copy", "final", "latest") are not here: a case about a fitness test
# is about a test. Teams adjust with [naming] extend_forbidden_tokens / ignore_forbidden_tokens.
DEFAULT_FORBIDDEN_TOKENS = (
    # model families (a version or variant attached is caught too: gpt4o, o4mini, qwen72b)
    "gpt", "chatgpt", "claude", "sonnet", "opus", "haiku", "gemini", "gemma", "llama",
    "qwen", "deepseek", "mistral", "mixtral", "glm", "chatglm", "ernie", "baichuan", "yi",
    "kimi", "moonshot", "doubao", "hunyuan", "minimax", "zhipu", "internlm", "phi", "grok",
    "codex", "davinci", "o1", "o3", "o4",
    # prompts
    "prompt", "sysprompt", "systemprompt",
    # experiments and temporary runs
    "exp", "experiment", "tmp", "abtest", "ablation",
    "ab_test", "ab_group", "variant_a", "variant_b", "group_a", "group_b", "exp_group",
)  # fmt: skip
DEFAULT_GOVERNANCE_FIELDS = ("title", "metadata")


CONFIG_FILE = "evalcase.toml"


# Sections that cannot change a lint finding, hashed apart from the lint cache key.
NON_LINT_SECTIONS = frozenset({"run", "grade", "report", "results"})


@dataclass(frozen=True)
class RunConfig:
    """The [run] section: how `evalcase run` starts agents and paces attempts."""

    default_agent: str | None = None
    agents: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 4
    timeout_s: float = 120.0
    repeat: int = 1
    max_steps: int = 64
    max_reply_bytes: int = 1_000_000
    max_tool_calls: int = 256
    max_state_bytes: int = 32 * 1024 * 1024
    max_record_bytes: int = 64 * 1024 * 1024
    cel_memory_mb: int = 512
    # None: sandboxed wherever bubblewrap works (evalcase.run.isolation.decide).
    sandbox: bool | None = None
    require_sandbox: bool = False
    outputs_dir: str = "outputs"
    executor: str = "local"
    judge: dict[str, Any] = field(default_factory=dict)
    # [run.user_simulator]: the model that plays simulated users (evalcase.run.user_simulator).
    user_simulator: dict[str, Any] = field(default_factory=dict)
    # [run.ray]: cluster address and per-attempt resources for --executor ray.
    ray: dict[str, Any] = field(default_factory=dict)


def is_state_fixture(path: str) -> bool:
    """``fixtures/state/<name>.yaml``: the files ``[lint] max_state_fixture_bytes`` covers."""
    return path.startswith("fixtures/state/") and path.count("/") == 2


@dataclass(frozen=True)
class Config:
    root: Path
    # Empty: no vocabulary configured, any well-formed word is accepted.
    domains: tuple[str, ...] = ()
    abilities: tuple[str, ...] = ()
    forbidden_tokens: tuple[str, ...] = DEFAULT_FORBIDDEN_TOKENS
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    per_path_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    allow_not_desensitized: tuple[str, ...] = ()
    max_file_bytes: int = 1_000_000
    max_depth: int = 64
    max_nodes: int = 200_000
    # State fixtures may be larger (a benchmark's database): None = max_file_bytes.
    max_state_fixture_bytes: int | None = None
    cache_dir: str = ".evalcase_cache"
    jobs: int = 0
    tag_format: str = "{dataset_id}@{dataset_version}"
    governance_fields: tuple[str, ...] = DEFAULT_GOVERNANCE_FIELDS
    # Plain `evalcase lint` compares with this branch (its merge base); None: with HEAD.
    base_branch: str | None = None
    # [versioning] require_audit: `evalcase tag` refuses unaudited counted cases too
    require_audit: bool = False
    default_agent: str | None = None
    agents: dict[str, Any] = field(default_factory=dict)
    grade: dict[str, Any] = field(default_factory=dict)
    run: RunConfig = field(default_factory=lambda: RunConfig())
    source: str = "defaults"
    raw: dict[str, Any] = field(default_factory=dict)
    # Where each vocabulary in force comes from, for messages ("evalcase.toml [naming]
    # domains"); absent when none is configured.
    vocabulary_sources: dict[str, str] = field(default_factory=dict)

    def file_limit(self, path: str) -> int:
        """The most bytes the file at ``path`` may have: ``max_file_bytes``, or for a state
        fixture ``max_state_fixture_bytes`` when that is larger."""
        if self.max_state_fixture_bytes is not None and is_state_fixture(path):
            return max(self.max_file_bytes, self.max_state_fixture_bytes)
        return self.max_file_bytes

    def node_limit(self, path: str) -> int:
        """The most values the file may expand to: ``max_nodes``, scaled for a state fixture
        allowed to be larger than ``max_file_bytes``."""
        size = self.file_limit(path)
        if size <= self.max_file_bytes:
            return self.max_nodes
        return max(self.max_nodes, self.max_nodes * size // self.max_file_bytes)

    @property
    def digest(self) -> str:
        """Changes whenever any setting that can change findings changes: every section but
        those that only steer runs, grading and reports (so a [run] change never makes the
        next lint cold)."""
        lint_relevant = {k: v for k, v in self.raw.items() if k not in NON_LINT_SECTIONS}
        # What data may name (evalcase.trust) is linted: the names [run.agents] defines and
        # the handlers [run.handlers] registers are part of the key; nothing else of [run].
        run = self.raw.get("run")
        if isinstance(run, dict) and (run.get("agents") or run.get("handlers")):
            lint_relevant["run.names"] = {
                "agents": sorted(run.get("agents") or {}),
                "handlers": run.get("handlers") or {},
            }
        blob = json.dumps(lint_relevant, sort_keys=True, default=str).encode()
        return hashlib.blake2b(blob, digest_size=16).hexdigest()

    def section_digest(self, name: str) -> str:
        """The digest of one section alone."""
        blob = json.dumps(self.raw.get(name, {}), sort_keys=True, default=str).encode()
        return hashlib.blake2b(blob, digest_size=16).hexdigest()

    def tag_name(self, dataset_id: str, dataset_version: str) -> str:
        return self.tag_format.format(dataset_id=dataset_id, dataset_version=dataset_version)


class _Found:
    """A configuration file that was read: its folder, label and contents."""

    def __init__(self, folder: Path, label: str, raw: dict[str, Any]) -> None:
        self.folder = folder
        self.label = label
        self.raw = raw

    @property
    def case_root(self) -> Path:
        return (self.folder / str(self.raw.get("root", "."))).resolve()


def _read_toml(path: Path, label: str) -> dict[str, Any]:
    # Imported here: most case repositories have no configuration file, and the commit
    # hook would pay for the parser's import on every commit.
    import tomllib

    try:
        return tomllib.loads(path.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise FatalError(f"{label}: {exc}") from exc


def _config_in(folder: Path) -> _Found | None:
    """The configuration file of ``folder``, if it has one: evalcase.toml first, then a
    pyproject.toml with a [tool.evalcase] table."""
    toml_path = folder / CONFIG_FILE
    if toml_path.is_file():
        return _Found(folder, str(toml_path), _read_toml(toml_path, str(toml_path)))
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text("utf-8", "replace")
        if "[tool.evalcase" in text:
            raw = _read_toml(pyproject, str(pyproject)).get("tool", {}).get("evalcase")
            if isinstance(raw, dict):
                return _Found(folder, f"{pyproject} [tool.evalcase]", raw)
    return None


def _is_git_top(folder: Path) -> bool:
    return (folder / ".git").exists()


def find_root(start: Path) -> Path:
    """The case repository for a command run in ``start`` without ``--root``.

    The nearest folder upwards with a configuration (evalcase.toml or [tool.evalcase]) or
    a ``datasets/`` folder decides: a configuration names its own folder, or the one its
    ``root`` key names. Without either, the nearest git repository, then ``start``.
    """
    start = start.resolve()
    for candidate in (start, *start.parents):
        found = _config_in(candidate)
        if found is not None:
            return found.case_root
        if (candidate / "datasets").is_dir():
            return candidate
    for candidate in (start, *start.parents):
        if _is_git_top(candidate):
            return candidate
    return start


def _config_for(root: Path) -> _Found | None:
    """The configuration that applies to the case repository at ``root``: its own, or one
    further up (as far as the top of its git repository) whose ``root`` names it."""
    own = _config_in(root)
    if own is not None:
        return own
    for folder in root.parents:
        found = _config_in(folder)
        if found is not None and "root" in found.raw and found.case_root == root:
            return found
        if _is_git_top(folder):
            break
    return None


def _label(found: _Found, root: Path) -> str:
    """The configuration file as messages name it: relative to the case repository."""
    import os

    path, _, table = found.label.partition(" ")
    rel = os.path.relpath(path, root)
    return f"{rel} {table}".strip()


def load_config(root: Path) -> Config:
    """The configuration of the case repository at ``root`` (or of the one ``root``'s
    configuration names with its ``root`` key). A bad file is a FatalError naming the key.
    """
    root = root.resolve()
    found = _config_for(root)
    raw: dict[str, Any] = {}
    source = "defaults"
    if found is not None:
        raw = found.raw
        source = _label(found, root)
        _validate(raw, source)
        if "root" in raw:
            target = found.case_root
            if not target.is_dir():
                raise FatalError(
                    f"{source}: root = {raw['root']!r}: no such folder ({target}); it names "
                    "the folder that holds datasets/ and fixtures/, relative to this file"
                )
            if target != root:
                root = target
                source = _label(found, root)
    from evalcase import scrub

    scrub.register(raw)  # whatever this command writes is scrubbed of its secrets
    naming = raw.get("naming", {})
    lint = raw.get("lint", {})
    versioning = raw.get("versioning", {})
    run = raw.get("run", {})
    forbidden = tuple(naming.get("forbidden_tokens", DEFAULT_FORBIDDEN_TOKENS))
    forbidden += tuple(naming.get("extend_forbidden_tokens", ()))
    forbidden += tuple(naming.get("extra_forbidden_tokens", ()))
    ignored = {str(t).lower() for t in naming.get("ignore_forbidden_tokens", ())}
    forbidden = tuple(t for t in forbidden if str(t).lower() not in ignored)
    vocabularies: dict[str, tuple[str, ...]] = {}
    sources: dict[str, str] = {}
    for key in ("domains", "abilities"):
        words = tuple(naming.get(key, ())) + tuple(naming.get(f"extend_{key}", ()))
        vocabularies[key] = tuple(dict.fromkeys(words))
        keys = [k for k in (key, f"extend_{key}") if k in naming]
        if keys:
            file, _, table = source.partition(" [")
            section = "[tool.evalcase.naming]" if table else "[naming]"
            sources[key] = f"{file} {section} {' + '.join(keys)}"
    return Config(
        root=root,
        domains=vocabularies["domains"],
        abilities=vocabularies["abilities"],
        forbidden_tokens=forbidden,
        select=tuple(lint.get("select", ())),
        ignore=tuple(lint.get("ignore", ())),
        severity={k: Severity.parse(v) for k, v in lint.get("severity", {}).items()},
        per_path_ignores={k: tuple(v) for k, v in lint.get("per_path_ignores", {}).items()},
        allow_not_desensitized=tuple(lint.get("allow_not_desensitized", ())),
        max_file_bytes=lint.get("max_file_bytes", 1_000_000),
        max_depth=lint.get("max_depth", 64),
        max_nodes=lint.get("max_nodes", 200_000),
        max_state_fixture_bytes=lint.get("max_state_fixture_bytes"),
        cache_dir=lint.get("cache_dir", ".evalcase_cache"),
        jobs=lint.get("jobs", 0),
        tag_format=versioning.get("tag_format", "{dataset_id}@{dataset_version}"),
        governance_fields=tuple(versioning.get("governance_fields", DEFAULT_GOVERNANCE_FIELDS)),
        base_branch=versioning.get("base_branch"),
        require_audit=bool(versioning.get("require_audit", False)),
        default_agent=run.get("default_agent"),
        agents=dict(run.get("agents", {})),
        grade=dict(raw.get("grade", {})),
        run=RunConfig(
            default_agent=run.get("default_agent"),
            agents=dict(run.get("agents", {})),
            concurrency=run.get("concurrency", 4),
            timeout_s=float(run.get("timeout_s", 120.0)),
            repeat=run.get("repeat", 1),
            max_steps=run.get("max_steps", 64),
            max_reply_bytes=run.get("max_reply_bytes", 1_000_000),
            max_tool_calls=run.get("max_tool_calls", 256),
            max_state_bytes=run.get("max_state_bytes", 32 * 1024 * 1024),
            max_record_bytes=run.get("max_record_bytes", 64 * 1024 * 1024),
            cel_memory_mb=run.get("cel_memory_mb", 512),
            sandbox=None if run.get("sandbox") is None else bool(run["sandbox"]),
            require_sandbox=bool(run.get("require_sandbox", False)),
            outputs_dir=run.get("outputs_dir", "outputs"),
            executor=run.get("executor", "local"),
            judge=dict(run.get("judge", {})),
            user_simulator=dict(run.get("user_simulator", {})),
            ray=dict(run.get("ray", {})),
        ),
        source=source,
        raw=raw,
        vocabulary_sources=sources,
    )


def _validate(raw: dict[str, Any], source: str) -> None:
    if not raw:
        return
    from evalcase.schemas import fast_validator_for, validator_for

    fast = fast_validator_for("config")
    try:
        if fast is not None and fast.is_valid(raw):
            return
    except Exception:  # e.g. TOML dates, which JSON has not: the full validator explains
        pass

    errors = sorted(validator_for("config").iter_errors(raw), key=lambda e: list(e.path))
    if errors:
        lines = []
        for error in errors:
            where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
            lines.append(f"  {where}: {error.message}")
        raise FatalError(f"invalid configuration in {source}:\n" + "\n".join(lines))
