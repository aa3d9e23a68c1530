"""The OpenAI-compatible judge behind ``llm_rubric``: prompt, call, parse, cache.

Answers are cached by judge model, prompt version, rubric (id@version) and a digest of what
was judged, so re-grading a run does not pay twice. Only parsed, valid answers are cached.
The API key is read from the environment variable the configuration names and is passed to
the client only: it is never part of a prompt, a cache entry, a grade or an error message.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.grade.context import JudgeConfig
from evalcase.grade.spec import as_list, field_of

PROMPT_VERSION = "p1"


@dataclass(frozen=True)
class Dimension:
    name: str
    description: str
    low: float
    high: float
    weight: float


@dataclass(frozen=True)
class Verdict:
    """A parsed judge answer: a score per dimension with its reason, or a problem."""

    scores: tuple[tuple[str, float, str], ...] = ()
    score: float = 0.0
    problem: str | None = None
    cached: bool = False


def rubric_id(rubric: Any) -> str:
    ident = field_of(rubric, "id") or field_of(rubric, "fixture_id") or "inline"
    version = field_of(rubric, "version") or field_of(rubric, "fixture_version") or "v1"
    return f"{ident}@{version}"


def dimensions(rubric: Any) -> list[Dimension]:
    raw = field_of(rubric, "dimensions") or field_of(field_of(rubric, "data"), "dimensions")
    out = []
    for d in as_list(raw):
        if isinstance(d, str):  # an inline rubric may list dimension names only
            out.append(Dimension(d, "", 1.0, 5.0, 1.0))
            continue
        scale = field_of(d, "scale") or {}
        out.append(
            Dimension(
                name=str(field_of(d, "name", "")),
                description=str(field_of(d, "description", "")),
                low=float(field_of(scale, "min", 1)),
                high=float(field_of(scale, "max", 5)),
                weight=float(field_of(d, "weight", 1.0)),
            )
        )
    return [d for d in out if d.name and d.high > d.low]


def rubric_setting(rubric: Any, name: str) -> Any:
    return field_of(rubric, name) or field_of(field_of(rubric, "data"), name)


def build_messages(
    rubric: Any,
    dims: list[Dimension],
    case_text: Mapping[str, Any],
    conversation: list[Any],
    answer: str,
) -> list[dict[str, str]]:
    instructions = str(rubric_setting(rubric, "judge_instructions") or "")
    wanted = {
        "dimensions": [
            {"name": d.name, "score": f"{d.low:g}-{d.high:g}", "reason": "..."} for d in dims
        ]
    }
    system = (
        "You grade an assistant's answer against a rubric. "
        + instructions
        + "\nReply with JSON only, exactly in this shape: "
        + json.dumps(wanted, ensure_ascii=False)
    )
    rubric_text = "\n".join(f"- {d.name} ({d.low:g}-{d.high:g}): {d.description}" for d in dims)
    material = {
        k: case_text[k]
        for k in (
            "expected_behavior",
            "negative_behavior",
            "success_criteria",
            "failure_criteria",
            "reference",
            "constraints",
        )
        if k in case_text
    }
    user = (
        f"Rubric:\n{rubric_text}\n\nCase expectations:\n"
        + json.dumps(material, ensure_ascii=False, indent=1, default=str)
        + "\n\nConversation:\n"
        + json.dumps(conversation, ensure_ascii=False, default=str)
        + f"\n\nAnswer to grade:\n{answer}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse(content: str, dims: list[Dimension]) -> Verdict:
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*\n(.*)\n```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Verdict(problem=f"the judge's answer is not JSON ({exc.msg})")
    items = data.get("dimensions") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return Verdict(problem="the judge's answer has no 'dimensions' list")
    by_name = {i.get("name"): i for i in items if isinstance(i, dict)}
    scores = []
    total = weights = 0.0
    for d in dims:
        item = by_name.get(d.name)
        if item is None:
            return Verdict(problem=f"the judge's answer lacks dimension {d.name!r}")
        score = item.get("score")
        if isinstance(score, bool) or not isinstance(score, int | float):
            return Verdict(problem=f"dimension {d.name!r}: score is not a number")
        if not d.low <= float(score) <= d.high:
            return Verdict(
                problem=f"dimension {d.name!r}: score {score} outside {d.low:g}-{d.high:g}"
            )
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            return Verdict(problem=f"dimension {d.name!r}: no reason given")
        scores.append((d.name, float(score), reason.strip()))
        total += d.weight * (float(score) - d.low) / (d.high - d.low)
        weights += d.weight
    return Verdict(tuple(scores), total / weights if weights else 0.0)


def response_format(config: JudgeConfig, dims: list[Dimension]) -> dict[str, Any] | None:
    """The request's ``response_format`` for ``[grade.judge] response_format``."""
    if config.response_format == "json_object":
        return {"type": "json_object"}
    if config.response_format != "json_schema":
        return None
    item = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "enum": [d.name for d in dims]},
            "score": {"type": "number"},
            "reason": {"type": "string"},
        },
        "required": ["name", "score", "reason"],
        "additionalProperties": False,
    }
    schema = {
        "type": "object",
        "properties": {
            "dimensions": {
                "type": "array",
                "items": item,
                "minItems": len(dims),
                "maxItems": len(dims),
            }
        },
        "required": ["dimensions"],
        "additionalProperties": False,
    }
    return {
        "type": "json_schema",
        "json_schema": {"name": "rubric_verdict", "strict": True, "schema": schema},
    }


def cache_key(config: JudgeConfig, rubric: str, messages: list[dict[str, str]]) -> str:
    h = hashlib.sha256()
    for part in (config.model or "", config.prompt_version, PROMPT_VERSION, rubric):
        h.update(part.encode() + b"\0")
    if config.response_format != "none":  # keys of judges without it stay as they were
        h.update(f"response_format={config.response_format}".encode() + b"\0")
    h.update(json.dumps(messages, ensure_ascii=False, sort_keys=True).encode())
    return h.hexdigest()[:32]


def _cache_path(config: JudgeConfig, key: str) -> Path | None:
    return config.cache_dir / "judge" / f"{key}.json" if config.cache_dir else None


def ask(
    config: JudgeConfig,
    environ: Mapping[str, str],
    rubric: str,
    messages: list[dict[str, str]],
    dims: list[Dimension],
) -> Verdict:
    """The judge's verdict, from the cache or the server."""
    key = cache_key(config, rubric, messages)
    path = _cache_path(config, key)
    if path is not None and path.is_file():
        try:
            cached = parse(path.read_text("utf-8"), dims)
            if cached.problem is None:
                return Verdict(cached.scores, cached.score, None, cached=True)
        except OSError:
            pass
    try:
        import openai
    except ImportError:
        return Verdict(
            problem="the 'openai' package is not installed (pip install 'evalcase[judge]')"
        )
    client = _client(openai, config, environ.get(config.api_key_env) or "unset")
    body: dict[str, Any] = {"model": str(config.model), "messages": messages, "temperature": 0}
    wanted = response_format(config, dims)
    if wanted is not None:
        body["response_format"] = wanted
    try:
        # post, not chat.completions.create: the same request without re-validating the
        # body and building pydantic models (most of a call's CPU when grading at scale).
        response = client.post("/chat/completions", body=body, cast_to=dict)
    except openai.APIStatusError as exc:
        return Verdict(problem=f"the judge answered HTTP {exc.status_code} after retries")
    except openai.APIError as exc:
        return Verdict(problem=f"the judge could not be reached: {type(exc).__name__}")
    except ValueError:
        return Verdict(problem="the judge's reply is not JSON")
    content = _content(response)
    if not isinstance(content, str):
        return Verdict(problem="the judge's answer has no content")
    verdict = parse(content, dims)
    if verdict.problem is None and path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "dimensions": [{"name": n, "score": s, "reason": r} for n, s, r in verdict.scores]
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, ensure_ascii=False), "utf-8")
        tmp.replace(path)
    return verdict


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def _client(openai: Any, config: JudgeConfig, api_key: str) -> Any:
    """One client (one connection pool) per judge setting, shared by every judge call of
    the process, so concurrent grading does not open a connection per call."""
    key = (config.base_url, api_key, config.max_retries, config.timeout_s)
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            client = openai.OpenAI(
                base_url=config.base_url,
                api_key=api_key,
                max_retries=config.max_retries,
                timeout=config.timeout_s,
            )
            _clients[key] = client
    return client


def _content(response: Any) -> Any:
    choices = response.get("choices") if isinstance(response, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    return message.get("content") if isinstance(message, dict) else None
