"""What graders may need beyond the case and the attempt: judge settings and human verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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
    # Judge calls in flight at once while a run is graded (a hosted judge answers in
    # seconds: a large run is graded at the rate the judge allows, not one call at a time).
    concurrency: int = 16
    # How the judge is told to answer JSON: "none" (the prompt only), "json_object", or
    # "json_schema" (the verdict's schema, for servers with constrained decoding such as
    # llama.cpp and vLLM: a small model then cannot answer off the shape).
    response_format: str = "none"

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


def judge_config_from(
    settings: Mapping[str, Any], environ: Mapping[str, str], cache_dir: Path | None
) -> JudgeConfig:
    """``[grade.judge]`` settings, overridden by EVALCASE_JUDGE_BASE_URL / _MODEL / _API_KEY_ENV."""
    base_url = environ.get("EVALCASE_JUDGE_BASE_URL") or settings.get("base_url")
    model = environ.get("EVALCASE_JUDGE_MODEL") or settings.get("model")
    key_env = environ.get("EVALCASE_JUDGE_API_KEY_ENV") or settings.get(
        "api_key_env", "EVALCASE_JUDGE_API_KEY"
    )
    return JudgeConfig(
        base_url=base_url,
        model=model,
        api_key_env=key_env,
        prompt_version=str(settings.get("prompt_version", "rubric-v1")),
        max_retries=int(settings.get("max_retries", 3)),
        timeout_s=float(settings.get("timeout_s", 60.0)),
        pass_threshold=float(settings.get("pass_threshold", 0.6)),
        cache_dir=cache_dir,
        concurrency=int(settings.get("concurrency", 16)),
        response_format=str(settings.get("response_format", "none")),
    )
