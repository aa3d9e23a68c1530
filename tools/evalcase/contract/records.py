"""Attempt records as files: strict JSON out, JSON Lines in, state rebuilt from diffs.

One place for what the runner writes and what ``--resume``, ``grade`` and ``runs`` read,
so that all of them treat a file the same way:

- :func:`dumps` writes strict JSON: NaN and Infinity are not JSON, so a non-finite
  float is written as ``null`` (the runner never records one from an agent: a reply with
  an out-of-range number is a ``protocol`` error, see :func:`loads_strict`).
- :func:`read_jsonl` splits on ``\\n`` only (never on U+2028, U+2029 or U+0085, which are
  legal inside JSON strings), skips a damaged line and reports it as a
  :class:`Damaged` (file, line, why), and drops a torn last line (a run killed
  mid-write) the same way.
- :func:`state_before` and :func:`final_state` rebuild the state an attempt saw from its
  initial state and the ordered ``changes`` of its calls: the record keeps diffs
  (path, before, after), never a copy of the whole state per call.
- The initial state itself is not in a record (version 3): it is the case's, rebuilt from
  the case and its fixtures at the run's commit (trusted), never read from the record (an
  output anyone can write). The record keeps its :func:`state_digest`
  (``initial_state_digest``) so that grading can tell when the case's state is not the
  one the attempt ran on; :func:`with_initial_state` gives graders the attempt with the
  case's state. Records of versions 1 and 2 carry ``initial_state``: still readable, but
  the case's state is used when the case is known.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def state_text(state: Mapping[str, Any]) -> str:
    """The state as the runner hands it to an attempt (JSON, non-JSON values as text)."""
    return json.dumps(state, ensure_ascii=False, default=str)


def state_digest(state: Mapping[str, Any] | str) -> str:
    """``sha256:<hex>`` of :func:`state_text` (or of the text given)."""
    text = state if isinstance(state, str) else state_text(state)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


_DIGESTS: dict[int, tuple[Any, str]] = {}


def _cached_digest(state: Mapping[str, Any]) -> str:
    hit = _DIGESTS.get(id(state))
    if hit is not None and hit[0] is state:
        return hit[1]
    digest = state_digest(state)
    if len(_DIGESTS) > 1024:
        _DIGESTS.clear()
    _DIGESTS[id(state)] = (state, digest)
    return digest


def with_initial_state(
    attempt: Mapping[str, Any], initial: Mapping[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """The attempt as graders read it: ``initial_state`` is the case's (``initial``, from
    the case at the run's commit), never the record's own. The second value says why the
    state could not be given (the record's digest names another state): graders that need
    it then find none and answer ``error``, never a verdict over the wrong state."""
    out = dict(attempt)
    if initial is None:
        return out, None
    recorded = attempt.get("initial_state_digest")
    if isinstance(recorded, str) and recorded != _cached_digest(initial):
        out["initial_state"] = None
        out["initial_state_problem"] = reason = (
            "the attempt ran on another initial state than the case's at the run's commit "
            f"(record {recorded[:19]}..., case {_cached_digest(initial)[:19]}...)"
        )
        return out, reason
    out["initial_state"] = initial
    return out, None


@dataclass(frozen=True)
class Damaged:
    """A line of a JSONL file that is not a JSON object (skipped)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: skipped a damaged line ({self.message})"


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def dumps(value: Any, *, indent: int | None = None) -> str:
    """Strict JSON text (no NaN or Infinity: non-finite floats become null)."""
    separators = (",", ":") if indent is None else (",", ": ")
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent,
                          separators=separators)  # fmt: skip
    except ValueError:  # a non-finite float somewhere: rare, so walk only then
        return json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, indent=indent,
                          separators=separators)  # fmt: skip


class OutOfRange(ValueError):
    """A number JSON allows but a record cannot hold (NaN, Infinity, 1e999)."""


def _constant(name: str) -> Any:
    raise OutOfRange(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise OutOfRange(f"the number {text[:40]} is out of range")
    return value


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` that refuses NaN, Infinity and numbers no float can hold
    (:class:`OutOfRange`, a ``ValueError``)."""
    return json.loads(text, parse_constant=_constant, parse_float=_float)


def read_jsonl(path: Path, damaged: list[Damaged] | None = None) -> Iterator[dict[str, Any]]:
    """Every JSON object line of ``path``; damaged lines are appended to ``damaged``
    (a torn last line, without its newline, is skipped silently: it was never written)."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    with handle:
        number = 0
        for raw in handle:  # binary files split on b"\n" only
            number += 1
            if not raw.endswith(b"\n"):
                return
            if not raw.strip():
                continue
            try:
                value = loads_strict(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                if damaged is not None:
                    damaged.append(Damaged(str(path), number, str(exc)[:200]))
                continue
            if not isinstance(value, dict):
                if damaged is not None:
                    damaged.append(Damaged(str(path), number, "not a JSON object"))
                continue
            yield value


def attempt_key(record: Mapping[str, Any]) -> tuple[str, str, int]:
    """What makes a record one attempt: case, case version, attempt number."""
    try:
        attempt = int(record.get("attempt") or 0)
    except (TypeError, ValueError):
        attempt = 0
    return (str(record.get("case_id")), str(record.get("case_version")), attempt)


def dedup(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record per attempt key: the first written wins (a second runner's copy of an
    attempt that was already recorded is dropped)."""
    seen: set[tuple[str, str, int]] = set()
    out = []
    for record in records:
        key = attempt_key(record)
        if key in seen:
            continue
        seen.add(key)
        out.append(record)
    return out


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def _apply(state: dict[str, Any], change: Mapping[str, Any]) -> None:
    keys = change.get("keys")
    if not isinstance(keys, list) or not keys:
        path = change.get("path")
        if not isinstance(path, str) or not path:
            return
        keys = path.split(".")
    node: Any = state
    for key in keys[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(str(key), {})
        elif isinstance(node, list) and str(key).lstrip("-").isdigit():
            index = int(key)
            if not -len(node) <= index < len(node):
                return
            node = node[index]
        else:
            return
    last = str(keys[-1])
    if change.get("op") == "append":
        if isinstance(node, dict):
            target = node.setdefault(last, [])
        elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
            target = node[int(last)]
        else:
            return
        if isinstance(target, list):
            target.append(_copy(change.get("after")))
        return
    if isinstance(node, dict):
        if change.get("op") == "delete":
            node.pop(last, None)
        else:
            node[last] = _copy(change.get("after"))
    elif isinstance(node, list) and last.lstrip("-").isdigit():
        index = int(last)
        if -len(node) <= index < len(node):
            if change.get("op") == "delete":
                del node[index]
            else:
                node[index] = _copy(change.get("after"))


def _calls(attempt: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = attempt.get("calls")
    return [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list) else []


def state_before(
    attempt: Mapping[str, Any], index: int, initial: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The state as call ``index`` found it, from ``initial`` (the case's initial state;
    default: the attempt's ``initial_state``, see :func:`with_initial_state`); records of
    version 1 kept a copy."""
    calls = _calls(attempt)
    if 0 <= index < len(calls) and isinstance(calls[index].get("state_before"), dict):
        copy: dict[str, Any] = _copy(calls[index]["state_before"])
        return copy
    if initial is None:
        initial = attempt.get("initial_state")
    state: dict[str, Any] = _copy(initial) if isinstance(initial, dict) else {}
    for call in calls[: max(0, index)]:
        for change in call.get("changes") or ():
            if isinstance(change, Mapping):
                _apply(state, change)
    return state


def final_state(
    attempt: Mapping[str, Any], initial: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The state at the end of the attempt: recorded (version 1), else rebuilt from the
    initial state (``initial``, default the attempt's ``initial_state``) and every change;
    None when there is no initial state to start from."""
    recorded = attempt.get("final_state")
    if isinstance(recorded, dict):
        return recorded
    if initial is None and not isinstance(attempt.get("initial_state"), dict):
        return None
    return state_before(attempt, len(_calls(attempt)), initial)
