"""The one secret scrubber: applied to every file evalcase writes.

Agents and judges are untrusted, and so is everything they answer: an endpoint can echo
the key it was sent, a served agent can copy a header into its reply. So whatever evalcase
writes (``outputs/``: ``run.json`` and ``attempts.jsonl``; ``reports/``: every format; the
judge cache; exports) passes through :func:`active` first, which replaces with
``[secret]``:

- the values of the variables the configuration names as holding secrets: every
  ``*_env`` setting (``api_key_env``, ...) anywhere in the configuration, and the
  variables evalcase reads keys from by default (``OPENAI_API_KEY``,
  ``EVALCASE_JUDGE_API_KEY``, the one ``EVALCASE_JUDGE_API_KEY_ENV`` names);
- values of environment variables whose names say they are secrets (``*KEY*``,
  ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``; 8 characters or more);
- header values from the configuration (any ``headers`` table, but for a few headers that
  carry no secret: ``Content-Type``, ``Accept``, ``User-Agent``), and any configuration
  string whose key says it is a secret;
- the user and password of a URL (``https://user:pass@host``): removed from every URL
  written, and the configured ones are also scrubbed wherever else they appear (with the
  base64 form HTTP basic authentication sends).

Each secret is also matched as JSON, HTML and URL encoding would write it. A configuration
registers its secrets when it is loaded (:func:`register`), so that every command that
read one scrubs with it; the variables' values are read when a file is written.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

MASK = "[secret]"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.I)
# A configuration key whose value is itself a secret (``api_key = "..."``, which the
# configuration should not hold, but may).
_SECRET_KEY = re.compile(
    r"(?:^|_)(?:key|token|secret|password|passwd|authorization|credentials?)$", re.I
)
# Headers whose values are protocol, not credentials.
_PLAIN_HEADERS = frozenset({"content-type", "accept", "user-agent", "accept-language"})
# Variables evalcase reads keys from when the configuration names none.
DEFAULT_KEY_VARIABLES = ("OPENAI_API_KEY", "EVALCASE_JUDGE_API_KEY")
# scheme://user[:password]@ -- the userinfo part is dropped.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>\\]+@")
MIN_CONFIGURED = 4  # shorter configured values would mask ordinary words
MIN_GUESSED = 8  # values of variables guessed secret by their names

T = TypeVar("T")


@dataclass(frozen=True)
class Sources:
    """What one configuration says is secret: variable names and literal values."""

    variables: frozenset[str] = frozenset()
    values: frozenset[str] = frozenset()

    def __or__(self, other: Sources) -> Sources:
        return Sources(self.variables | other.variables, self.values | other.values)


def sources_of(raw: Mapping[str, Any]) -> Sources:
    """The secrets a raw configuration (evalcase.toml's tables) names."""
    variables: set[str] = set()
    values: set[str] = set()

    def walk(node: Any, key: str = "") -> None:
        if isinstance(node, Mapping):
            for k, v in node.items():
                k = str(k)
                if k.lower() == "headers" and isinstance(v, Mapping):
                    values.update(
                        str(hv)
                        for hk, hv in v.items()
                        if isinstance(hv, str) and str(hk).lower() not in _PLAIN_HEADERS
                    )
                    continue
                walk(v, k)
        elif isinstance(node, list):
            for item in node:
                walk(item, key)
        elif isinstance(node, str):
            lowered = key.lower()
            if lowered.endswith("_env"):
                variables.add(node)
            elif _SECRET_KEY.search(key):
                values.add(node)
            if "@" in node and "://" in node:
                values.update(_userinfo_parts(node))

    walk(raw)
    return Sources(frozenset(variables), frozenset(values))


def _userinfo_parts(text: str) -> list[str]:
    """The password, and user:password, of each URL with userinfo in ``text``."""
    import base64
    from urllib.parse import unquote, urlsplit

    out = []
    for match in _USERINFO.finditer(text):
        try:
            parts = urlsplit(text[match.start() :].split()[0])
        except ValueError:
            continue
        if parts.password:
            out += [parts.password, unquote(parts.password)]
        userinfo = parts.netloc.rpartition("@")[0]
        if userinfo:
            # Clients send it as HTTP basic auth, which a server can echo back.
            basic = base64.b64encode(unquote(userinfo).encode()).decode()
            out += [userinfo, unquote(userinfo), basic]
    return out


_lock = threading.Lock()
_registered = Sources()


def register(raw: Mapping[str, Any]) -> None:
    """Add a configuration's secrets to those every later write scrubs (never removed:
    a process that read two configurations scrubs the secrets of both)."""
    global _registered
    found = sources_of(raw)
    with _lock:
        _registered = _registered | found


@dataclass(frozen=True)
class Scrubber:
    """Replaces each secret (longest first, with its encodings) and URL userinfo."""

    secrets: tuple[str, ...] = ()

    def text(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        if "@" in text and "://" in text:
            text = _USERINFO.sub(r"\1", text)
        return text

    def data(self, value: T) -> T:
        """JSON-like data with every string (keys included) scrubbed; unchanged parts are
        the same objects."""
        return _walk(value, self)  # type: ignore[no-any-return]

    def json_line(self, value: Any, dumps: Callable[[Any], str]) -> str:
        """``dumps(self.data(value))``, without walking the data when nothing in it needs
        scrubbing: JSON escapes character by character, so a string holding a secret
        puts the secret's JSON form (one of its encodings) in the text, and a URL with
        userinfo stays one; when the text holds neither, the walk would change nothing."""
        text = dumps(value)
        if any(secret in text for secret in self.secrets) or (
            "://" in text and "@" in text and _USERINFO.search(text)
        ):
            return dumps(self.data(value))
        return text


def _walk(value: Any, scrubber: Scrubber) -> Any:
    if isinstance(value, str):
        return scrubber.text(value)
    if isinstance(value, Mapping):
        return {_walk(k, scrubber): _walk(v, scrubber) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v, scrubber) for v in value]
    return value


def build(
    sources: Sources = Sources(),
    environ: Mapping[str, str] | None = None,
) -> Scrubber:
    """A scrubber for ``sources`` and the variables of ``environ`` (default: the
    environment, with the keys a run holds: :func:`evalcase.keys.environ`)."""
    if environ is None:
        from evalcase import keys

        environ = keys.environ()
    found: set[str] = {v for v in sources.values if len(v) >= MIN_CONFIGURED}
    named = set(sources.variables) | set(DEFAULT_KEY_VARIABLES)
    indirect = environ.get("EVALCASE_JUDGE_API_KEY_ENV")
    if indirect:
        named.add(indirect)
    for name in named:
        value = environ.get(name)
        if value and len(value) >= MIN_CONFIGURED:
            found.add(value)
    for name, value in environ.items():
        if _SECRET_NAME.search(name) and len(value) >= MIN_GUESSED:
            found.add(value)
    return Scrubber(_with_encodings(found))


def _with_encodings(secrets: Iterable[str]) -> tuple[str, ...]:
    # Imported here: every command loads a configuration, and lint (the commit hook)
    # writes nothing that needs them.
    import html
    from urllib.parse import quote

    out: set[str] = set()
    for secret in secrets:
        out.add(secret)
        out.add(json.dumps(secret, ensure_ascii=False)[1:-1])
        out.add(json.dumps(secret)[1:-1])
        out.add(html.escape(secret))
        out.add(quote(secret, safe=""))
    return tuple(sorted((s for s in out if s), key=len, reverse=True))


def active(environ: Mapping[str, str] | None = None) -> Scrubber:
    """The scrubber for a file written now: every registered configuration's secrets and
    the environment's current values."""
    with _lock:
        sources = _registered
    return build(sources, environ)
