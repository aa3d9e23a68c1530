"""The OpenAI-compatible judge behind ``llm_rubric``: call, parse, cache (the prompt is
evalcase.grade.judge_prompt).

Requests go through :mod:`evalcase.transport` (one event loop and connection pool per
process, whatever the number of grading threads). A call is retried, up to
``max_retries`` times, on 408, 409, 429 (after ``retry-after`` when the server sends one)
and 5xx, on a dropped connection and on a try that got no answer within ``timeout_s``;
the backoff starts at 0.5 s and doubles.

The request asks for structured output (``response_format`` with the JSON Schema of the
scores) and, when a server refuses that with HTTP 400, asks again without it and parses
the plain answer; it sets ``max_tokens``, and an answer cut there (``finish_reason:
length``) is an error, never parsed.

The cache only remembers what the judge said: each entry stores the digest of the full
request it answered (endpoint, model, prompt version, rubric id@version, messages,
response format, token limit) and is used only when that digest matches the request
being made. It lives outside the git work tree (evalcase.grade.context.judge_cache_dir):
an entry committed in a pull request is never read. The API key is read from the
environment variable the configuration names and is passed to the client only: it is
never part of a prompt, a cache entry, a grade or an error message.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase import __version__
from evalcase.contract.task import Rubric
from evalcase.grade import readers
from evalcase.grade.context import JudgeConfig
from evalcase.grade.judge_prompt import PROMPT_VERSION, Dimension, response_schema, rubric_setting
from evalcase.grade.spec import as_list

__all__ = ["PROMPT_VERSION", "Dimension", "Verdict", "ask", "dimensions", "parse", "request"]


@dataclass(frozen=True)
class Verdict:
    """A parsed judge answer: a score per dimension with its reason, or a problem."""

    scores: tuple[tuple[str, float, str], ...] = ()
    score: float = 0.0
    problem: str | None = None
    cached: bool = False
    structured: bool = False  # the server honoured response_format


def _own(rubric: Rubric | Mapping[str, Any] | None, *names: str) -> Any:
    """The first set of ``names`` on the rubric itself (a :class:`Rubric`'s id and version,
    an inline rubric's keys), not in its data."""
    for name in names:
        if isinstance(rubric, Rubric):
            value = {"id": rubric.id, "version": rubric.version}.get(name)
        else:
            value = rubric.get(name) if isinstance(rubric, Mapping) else None
        if value:
            return value
    return None


def rubric_id(rubric: Rubric | Mapping[str, Any] | None) -> str:
    ident = _own(rubric, "id", "fixture_id") or "inline"
    version = _own(rubric, "version", "fixture_version") or "v1"
    return f"{ident}@{version}"


@dataclass(frozen=True)
class Scale:
    min: float = 1.0
    max: float = 5.0


@dataclass(frozen=True)
class DimensionDocument:
    """One rubric dimension as written (a fixture's ``dimensions`` entry)."""

    name: str = ""
    description: str = ""
    scale: Scale = Scale()
    weight: float = 1.0


def dimensions(rubric: Rubric | Mapping[str, Any] | None) -> list[Dimension]:
    """The rubric's dimensions; one whose fields are of the wrong kind or whose scale is
    impossible is left out, as before (lint's EC319 reports an impossible scale)."""
    out = []
    for d in as_list(rubric_setting(rubric, "dimensions")):
        if isinstance(d, str):  # an inline rubric may list dimension names only
            out.append(Dimension(d, "", 1.0, 5.0, 1.0))
            continue
        read = readers.parse(DimensionDocument, d)
        if isinstance(read, readers.ReadError):
            continue
        out.append(Dimension(read.name, read.description, read.scale.min, read.scale.max,
                             read.weight))  # fmt: skip
    return [d for d in out if d.name and d.high > d.low]


@dataclass(frozen=True)
class AnswerItem:
    """One scored dimension of a judge's answer (checked by ``parse``)."""

    name: readers.JSONValue = None
    score: readers.JSONValue = None
    reason: readers.JSONValue = None


@dataclass(frozen=True)
class Answer:
    dimensions: readers.JSONValue = None


@dataclass(frozen=True)
class CacheEntry:
    """A cached judge answer: bound to the digest of the request it answered."""

    request_digest: readers.JSONValue = None
    content: readers.JSONValue = None


# The most bytes of a judge's reply read (the HTTP body): a verdict is a few hundred
# bytes a dimension; anything near this is a broken or hostile endpoint, not an answer.
MAX_ANSWER_BYTES = 1_000_000


def parse(content: str, dims: list[Dimension]) -> Verdict:
    """The scores of a judge's answer, or the problem with it: not JSON, a dimension
    missing, scored twice, out of range or without a reason (never the last of two)."""
    if len(content) > MAX_ANSWER_BYTES:
        return Verdict(problem=f"the judge's answer exceeds {MAX_ANSWER_BYTES:,} bytes")
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*\n(.*)\n```$", text, re.S)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return Verdict(problem=f"the judge's answer is not JSON ({exc.msg})")
    answer = readers.parse(Answer, data) if isinstance(data, dict) else None
    items = answer.dimensions if isinstance(answer, Answer) else None
    if not isinstance(items, list):
        return Verdict(problem="the judge's answer has no 'dimensions' list")
    by_name: dict[Any, AnswerItem] = {}
    for raw in items:
        item = readers.parse(AnswerItem, raw) if isinstance(raw, dict) else None
        if not isinstance(item, AnswerItem):
            continue
        if item.name in by_name:
            return Verdict(problem=f"the judge's answer scores dimension {item.name!r} twice")
        by_name[item.name] = item
    scores = []
    total = weights = 0.0
    for d in dims:
        item = by_name.get(d.name)
        if item is None:
            return Verdict(problem=f"the judge's answer lacks dimension {d.name!r}")
        score = item.score
        if isinstance(score, bool) or not isinstance(score, int | float):
            return Verdict(problem=f"dimension {d.name!r}: score is not a number")
        if not d.low <= float(score) <= d.high:
            return Verdict(
                problem=f"dimension {d.name!r}: score {score} outside {d.low:g}-{d.high:g}"
            )
        reason = item.reason
        if not isinstance(reason, str) or not reason.strip():
            return Verdict(problem=f"dimension {d.name!r}: no reason given")
        scores.append((d.name, float(score), reason.strip()))
        total += d.weight * (float(score) - d.low) / (d.high - d.low)
        weights += d.weight
    return Verdict(tuple(scores), total / weights if weights else 0.0)


def request(
    config: JudgeConfig,
    rubric: str,
    messages: list[dict[str, str]],
    dims: list[Dimension],
    structured: bool = True,
) -> dict[str, Any]:
    """The whole request: what is sent, and what its cache entry is bound to."""
    body: dict[str, Any] = {
        "endpoint": config.base_url,
        "model": config.model,
        "prompt_version": f"{config.prompt_version}/{PROMPT_VERSION}",
        "rubric": rubric,
        "messages": messages,
        "temperature": 0,
        "max_tokens": config.max_tokens,
    }
    if structured and config.response_format == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "rubric_scores", "schema": response_schema(dims)},
        }  # fmt: skip
    elif structured and config.response_format == "json_object":
        body["response_format"] = {"type": "json_object"}
    return body


def digest(body: Mapping[str, Any]) -> str:
    text = json.dumps(body, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _cached(config: JudgeConfig, body: Mapping[str, Any], dims: list[Dimension]) -> Verdict | None:
    """The cached answer to exactly this request, if one was stored; else None."""
    if config.cache_dir is None:
        return None
    wanted = digest(body)
    path = config.cache_dir / f"{wanted}.json"
    try:
        entry = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    read = readers.parse(CacheEntry, entry)
    if not isinstance(read, CacheEntry) or read.request_digest != wanted:
        return None  # an entry for another request (or forged): the judge is asked
    content = read.content
    if not isinstance(content, str):
        return None
    verdict = parse(content, dims)
    if verdict.problem is not None:
        return None
    return Verdict(verdict.scores, verdict.score, None, cached=True,
                   structured="response_format" in body)  # fmt: skip


# What of a request goes over the wire (the rest binds the cache entry to it).
SENT = ("model", "messages", "temperature", "max_tokens", "response_format")


def _store(
    config: JudgeConfig, body: Mapping[str, Any], content: str, environ: Mapping[str, str]
) -> None:
    if config.cache_dir is None:
        return
    key = digest(body)
    path: Path = config.cache_dir / f"{key}.json"
    try:
        entry = {"request_digest": key, "model": body["model"],
                 "prompt_version": body["prompt_version"], "rubric": body["rubric"],
                 "content": content}  # fmt: skip
        from evalcase import scrub
        from evalcase.atomic import write_atomic

        entry = scrub.active(environ).data(entry)  # an answer can echo the key it was sent
        # Judge threads may cache the same request at once: each writes its own file.
        write_atomic(path, json.dumps(entry, ensure_ascii=False), parents=True)
    except OSError:
        pass  # a cache that cannot be written costs a judge call next time, nothing more


def ask(
    config: JudgeConfig,
    environ: Mapping[str, str],
    rubric: str,
    messages: list[dict[str, str]],
    dims: list[Dimension],
) -> Verdict:
    """The judge's verdict, from the cache (this exact request) or the server."""
    structured = request(config, rubric, messages, dims, structured=True)
    plain = request(config, rubric, messages, dims, structured=False)
    for body in (structured, plain):
        hit = _cached(config, body, dims)
        if hit is not None:
            return hit
    # Imported here: lint loads this module to ask what a rubric needs, and the HTTP
    # client (asyncio and all) would double the commit hook's import time.
    from evalcase import chat_completions, transport

    missing = transport.available()
    if missing:
        return Verdict(problem=f"the judge needs {missing} ({transport.INSTALL_HINT})")
    url, headers = _endpoint(config, environ.get(config.api_key_env) or "unset")
    policy = transport.RetryPolicy(
        max_retries=config.max_retries,
        backoff_s=0.5,
        statuses=JUDGE_RETRY_STATUSES,
        times_500=config.max_retries,
    )
    body = structured
    while True:
        sent = {k: body[k] for k in SENT if k in body}
        deadline = time.monotonic() + config.timeout_s * (config.max_retries + 1) + 30
        outcome = transport.post_with_retries(
            url, json.dumps(sent, ensure_ascii=False).encode("utf-8"), headers, deadline,
            policy, limit=MAX_ANSWER_BYTES, try_timeout_s=config.timeout_s,
        )  # fmt: skip
        result = outcome.result
        if isinstance(result, transport.Failure):
            if result.kind == "timeout":
                return Verdict(problem=f"the judge did not answer within {config.timeout_s:g} s")
            if result.kind == "oversized":
                return Verdict(
                    problem=f"the judge's answer exceeds {MAX_ANSWER_BYTES:,} bytes: not "
                    "read further, parsed or cached"
                )
            return Verdict(problem=f"the judge could not be reached: {result.message}")
        if result.status >= 400:
            if result.status == 400 and body is structured and "response_format" in body:
                body = plain  # the server refuses response_format: plain JSON, parsed
                continue
            return Verdict(problem=f"the judge answered HTTP {result.status} after retries")
        try:
            response = result.json()
        except ValueError:
            return Verdict(problem="the judge's reply is not JSON")
        break
    answer = chat_completions.read(response)
    if answer.cut:
        return Verdict(
            problem=f"the judge's answer was cut at max_tokens ({config.max_tokens}): "
            "raise [grade.judge] max_tokens"
        )
    content = answer.content
    if content is None:
        return Verdict(problem="the judge's answer has no content")
    verdict = parse(content, dims)
    if verdict.problem is None:
        _store(config, body, content, environ)
    return Verdict(verdict.scores, verdict.score, verdict.problem,
                   structured="response_format" in body)  # fmt: skip


# What the official client retries (a judge call is idempotent: any server error may pass).
JUDGE_RETRY_STATUSES = frozenset({408, 409, 429, *range(501, 600)})


def _endpoint(config: JudgeConfig, api_key: str) -> tuple[str, dict[str, str]]:
    """The chat-completions URL and headers of the judge (the key as a bearer token)."""
    base = str(config.base_url or "").rstrip("/")
    return f"{base}/chat/completions", {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": f"evalcase/{__version__}",
        "Authorization": f"Bearer {api_key}",
    }
