"""What graders may need beyond the case and the attempt: judge settings and human verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalcase.grade.gold import GoldStates


@dataclass(frozen=True)
class JudgeConfig:
    """An OpenAI-compatible judge. The key itself is never stored: only the variable's name."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "EVALCASE_JUDGE_API_KEY"
    prompt_version: str = "rubric-v1"
    max_retries: int = 3
    timeout_s: float = 60.0
    pass_threshold: float = 0.6
    cache_dir: Path | None = None
    max_tokens: int = 1024
    # Why a configured cache folder was not used (inside the work tree), for the summary.
    cache_warning: str | None = None
    # Judge calls in flight at once while a run is graded (a hosted judge answers in
    # seconds: a large run is graded at the rate the judge allows, not one call at a time).
    concurrency: int = 16
    # How the judge is told to answer JSON: "json_schema" (default: the verdict's schema,
    # falling back to the prompt alone when a server refuses it with HTTP 400),
    # "json_object", or "none" (the prompt only). With constrained decoding (llama.cpp,
    # vLLM) json_schema keeps even a small model on the shape.
    response_format: str = "json_schema"

    @property
    def configured(self) -> bool:
        return bool(self.base_url and self.model)


@dataclass(frozen=True)
class HumanVerdict:
    verdict: str  # pass | fail
    reviewer: str
    reviewed_at: str
    reason: str = ""


@dataclass(frozen=True)
class GradeContext:
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    # (case_id, case_version, attempt) -> the person's verdict
    human: Mapping[tuple[str, str, int], HumanVerdict] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=dict)
    # Gold end states of final_state_check.from_expected_calls, replayed once per case
    # (None: no replay available, and such a check is an error, never a pass).
    gold: GoldStates | None = None


def default_cache_dir() -> Path:
    """The user cache directory's judge folder (e.g. ~/.cache/evalcase/judge)."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("evalcase")) / "judge"


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class JudgeSettings:
    """``[grade.judge]`` (or ``[run.judge]``) as read from evalcase.toml, with the
    EVALCASE_JUDGE_* variables over it (evalcase.grade.readers.parse)."""

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "EVALCASE_JUDGE_API_KEY"
    prompt_version: str = "rubric-v1"
    max_retries: int = 3
    timeout_s: float = 60.0
    pass_threshold: float = 0.6
    max_tokens: int = 1024
    concurrency: int = 16
    response_format: str = "json_schema"
    cache_dir: str = ""


# The variables that override a setting, setting -> variable.
JUDGE_ENVIRON = {
    "base_url": "EVALCASE_JUDGE_BASE_URL",
    "model": "EVALCASE_JUDGE_MODEL",
    "api_key_env": "EVALCASE_JUDGE_API_KEY_ENV",
    "cache_dir": "EVALCASE_JUDGE_CACHE_DIR",
}


def judge_settings(settings: Mapping[str, Any], environ: Mapping[str, str]) -> JudgeSettings:
    """The settings read once into their type; a value of the wrong kind (``[run.judge]``
    has no schema) is a ``FatalError`` naming the setting."""
    from evalcase.grade.readers import ReadError, parse
    from evalcase.model import FatalError

    over = {key: environ[var] for key, var in JUDGE_ENVIRON.items() if environ.get(var)}
    read = parse(JudgeSettings, {**settings, **over})
    if isinstance(read, ReadError):
        raise FatalError(
            f"evalcase.toml: judge setting {read} ([grade.judge], docs/configuration.md)"
        )
    return read


def judge_cache_dir(
    settings: Mapping[str, Any], environ: Mapping[str, str], work_tree: Path | None
) -> tuple[Path, str | None]:
    """Where judge answers are cached, and a warning when the configured folder was
    refused: ``EVALCASE_JUDGE_CACHE_DIR``, else ``[grade.judge] cache_dir`` (relative to
    the work tree), else the user cache directory. A folder inside the git work tree is
    never used (anyone with a pull request could commit an answer there)."""
    raw = judge_settings(settings, environ).cache_dir
    default = default_cache_dir()
    if not raw:
        return default, None
    chosen = Path(raw).expanduser()
    if not chosen.is_absolute() and work_tree is not None:
        chosen = work_tree / chosen
    if work_tree is not None and _inside(chosen, work_tree):
        return default, (
            f"judge cache_dir {raw} is inside the work tree: ignored (a committed file must "
            f"never decide a verdict); answers are cached in {default}"
        )
    return chosen, None


def judge_config_from(
    settings: Mapping[str, Any],
    environ: Mapping[str, str],
    cache_dir: Path | None,
    cache_warning: str | None = None,
) -> JudgeConfig:
    """``[grade.judge]`` settings, overridden by EVALCASE_JUDGE_BASE_URL / _MODEL / _API_KEY_ENV."""
    read = judge_settings(settings, environ)
    return JudgeConfig(
        base_url=read.base_url,
        model=read.model,
        api_key_env=read.api_key_env,
        prompt_version=read.prompt_version,
        max_retries=read.max_retries,
        timeout_s=read.timeout_s,
        pass_threshold=read.pass_threshold,
        cache_dir=cache_dir,
        max_tokens=read.max_tokens,
        cache_warning=cache_warning,
        concurrency=read.concurrency,
        response_format=read.response_format,
    )
