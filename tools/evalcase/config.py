"""Repository configuration: evalcase.toml, or [tool.evalcase] in pyproject.toml."""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcase.model import FatalError, Severity

DEFAULT_DOMAINS = (
    "refund", "llm", "rag", "tool", "agent", "business", "privacy", "workout", "crm",
)  # fmt: skip
DEFAULT_ABILITIES = (
    "eligibility", "instruction", "refund", "policy", "account", "rag", "tool", "agent",
    "redteam", "safety", "intent", "edit", "state", "delete", "business", "sop", "citation",
    "injection", "export", "approval", "points", "status",
)  # fmt: skip
# Words that name a run, not the business object under evaluation (000 12.2.1). "new" and
# "old" are not among them: they describe business objects (a new user, the old policy).
DEFAULT_FORBIDDEN_TOKENS = (
    "gpt", "gpt4", "gpt4o", "chatgpt", "claude", "sonnet", "opus", "haiku", "gemini", "llama",
    "qwen", "deepseek", "mistral", "mixtral", "glm", "chatglm", "ernie", "baichuan", "yi",
    "kimi", "moonshot", "doubao", "o1", "o3", "prompt", "exp", "experiment", "tmp", "temp",
    "test", "draft", "debug", "copy", "latest", "final", "sysprompt", "abtest", "ablation",
    "ab_test", "ab_group", "variant_a", "variant_b", "group_a", "group_b", "exp_group",
)  # fmt: skip
DEFAULT_GOVERNANCE_FIELDS = ("title", "metadata")


@dataclass(frozen=True)
class Config:
    root: Path
    domains: tuple[str, ...] = DEFAULT_DOMAINS
    abilities: tuple[str, ...] = DEFAULT_ABILITIES
    forbidden_tokens: tuple[str, ...] = DEFAULT_FORBIDDEN_TOKENS
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    per_path_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    allow_not_desensitized: tuple[str, ...] = ()
    max_file_bytes: int = 1_000_000
    max_depth: int = 64
    max_nodes: int = 200_000
    cache_dir: str = ".evalcase_cache"
    jobs: int = 0
    tag_format: str = "{dataset_id}@{dataset_version}"
    governance_fields: tuple[str, ...] = DEFAULT_GOVERNANCE_FIELDS
    base_branch: str = "main"
    default_agent: str | None = None
    agents: dict[str, Any] = field(default_factory=dict)
    source: str = "defaults"
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """Changes whenever any setting that can change findings changes."""
        blob = json.dumps(self.raw, sort_keys=True, default=str).encode()
        return hashlib.blake2b(blob, digest_size=16).hexdigest()

    def tag_name(self, dataset_id: str, dataset_version: str) -> str:
        return self.tag_format.format(dataset_id=dataset_id, dataset_version=dataset_version)


def find_root(start: Path) -> Path:
    """The nearest ancestor holding evalcase.toml, a datasets/ folder or .git."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / "evalcase.toml").is_file():
            return candidate
        pyproject = candidate / "pyproject.toml"
        if pyproject.is_file() and "[tool.evalcase" in pyproject.read_text("utf-8", "replace"):
            return candidate
    for candidate in (start, *start.parents):
        if (candidate / "datasets").is_dir() or (candidate / ".git").exists():
            return candidate
    return start


def load_config(root: Path) -> Config:
    """Read the configuration at ``root``; a bad file is a FatalError naming the key."""
    raw: dict[str, Any] = {}
    source = "defaults"
    toml_path = root / "evalcase.toml"
    pyproject = root / "pyproject.toml"
    try:
        if toml_path.is_file():
            raw = tomllib.loads(toml_path.read_text("utf-8"))
            source = "evalcase.toml"
        elif pyproject.is_file():
            raw = tomllib.loads(pyproject.read_text("utf-8")).get("tool", {}).get("evalcase", {})
            source = "pyproject.toml [tool.evalcase]" if raw else "defaults"
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise FatalError(f"{source if source != 'defaults' else toml_path.name}: {exc}") from exc
    _validate(raw, source)
    naming = raw.get("naming", {})
    lint = raw.get("lint", {})
    versioning = raw.get("versioning", {})
    run = raw.get("run", {})
    forbidden = tuple(naming.get("forbidden_tokens", DEFAULT_FORBIDDEN_TOKENS))
    forbidden += tuple(naming.get("extra_forbidden_tokens", ()))
    return Config(
        root=root,
        domains=tuple(naming.get("domains", DEFAULT_DOMAINS)),
        abilities=tuple(naming.get("abilities", DEFAULT_ABILITIES)),
        forbidden_tokens=forbidden,
        select=tuple(lint.get("select", ())),
        ignore=tuple(lint.get("ignore", ())),
        severity={k: Severity.parse(v) for k, v in lint.get("severity", {}).items()},
        per_path_ignores={k: tuple(v) for k, v in lint.get("per_path_ignores", {}).items()},
        allow_not_desensitized=tuple(lint.get("allow_not_desensitized", ())),
        max_file_bytes=lint.get("max_file_bytes", 1_000_000),
        max_depth=lint.get("max_depth", 64),
        max_nodes=lint.get("max_nodes", 200_000),
        cache_dir=lint.get("cache_dir", ".evalcase_cache"),
        jobs=lint.get("jobs", 0),
        tag_format=versioning.get("tag_format", "{dataset_id}@{dataset_version}"),
        governance_fields=tuple(versioning.get("governance_fields", DEFAULT_GOVERNANCE_FIELDS)),
        base_branch=versioning.get("base_branch", "main"),
        default_agent=run.get("default_agent"),
        agents=dict(run.get("agents", {})),
        source=source,
        raw=raw,
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
