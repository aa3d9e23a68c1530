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
  one the attempt ran on; :func:`observe` gives graders the attempt (an :class:`Observed`)
  with the case's state. Records of versions 1 and 2 carry ``initial_state``: still readable, but
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

from evalcase.contract.attempt import (
    AttemptRecord,
    Retrieval,
    StateChange,
    ToolCallRecord,
    key_of,
    read,
)
from evalcase.contract.paths import shallow


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


def dumps_readable(value: Any, levels: int = 2) -> str:
    """Strict JSON text with its first ``levels`` levels of objects indented and anything
    deeper on one line: a ``run.json`` with a line per case, written by the C encoder
    (``indent`` makes :mod:`json` fall back to its pure-Python encoder, which cost a
    1,000-case run a tenth of its CPU per write)."""
    return _readable(value, levels, "")


def _readable(value: Any, levels: int, pad: str) -> str:
    if not isinstance(value, dict) or not value or levels <= 0:
        return dumps(value)
    inner = pad + "  "
    items = [f"{inner}{dumps(str(k))}: {_readable(v, levels - 1, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(items) + "\n" + pad + "}"


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


def dedup(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """One record per attempt key: the first written wins (a second runner's copy of an
    attempt that was already recorded is dropped)."""
    seen: set[tuple[str, str, int]] = set()
    out = []
    for record in records:
        key = key_of(record)
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


def _apply(state: dict[str, Any], change: StateChange) -> None:
    keys = change.parts
    if not keys:
        return
    # Path copying: every container on the way is copied (shallowly) before it changes,
    # so the initial state, shared by every attempt of a case, is never changed, and a
    # change costs the size of the containers on its path, not of the state.
    node: Any = state
    for key in keys[:-1]:
        if isinstance(node, dict):
            child = shallow(node.get(str(key), {}))
            node[str(key)] = child
            node = child
        elif isinstance(node, list) and str(key).lstrip("-").isdigit():
            index = int(key)
            if not -len(node) <= index < len(node):
                return
            node[index] = shallow(node[index])
            node = node[index]
        else:
            return
    last = str(keys[-1])
    if change.op == "append":
        if isinstance(node, dict):
            target = node[last] = shallow(node.get(last, []))
        elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
            target = node[int(last)] = shallow(node[int(last)])
        else:
            return
        if isinstance(target, list):
            target.append(_copy(change.after))
        return
    if isinstance(node, dict):
        if change.op == "delete":
            node.pop(last, None)
        else:
            node[last] = _copy(change.after)
    elif isinstance(node, list) and last.lstrip("-").isdigit():
        index = int(last)
        if -len(node) <= index < len(node):
            if change.op == "delete":
                del node[index]
            else:
                node[index] = _copy(change.after)


def _record(attempt: Mapping[str, Any] | AttemptRecord) -> AttemptRecord:
    return attempt if isinstance(attempt, AttemptRecord) else read(attempt)


@dataclass(frozen=True)
class Observed:
    """What a grader receives of one attempt: the typed record and the initial state it
    ran on (the case's, see :func:`observe`), with the states rebuilt from the calls'
    changes. ``initial_state`` is None when there is none to trust; ``initial_state_problem``
    then says why (the record's digest names another state), so a grader that needs the
    state answers ``error``, never a verdict over the wrong state."""

    record: AttemptRecord
    initial_state: Mapping[str, Any] | None = None
    initial_state_problem: str | None = None
    # False for a hand-made record without ``retrieved`` (the runner always writes it).
    retrieval_recorded: bool = True

    @property
    def calls(self) -> tuple[ToolCallRecord, ...]:
        return self.record.calls

    @property
    def output(self) -> str | None:
        return self.record.output

    def contents(self, role: str) -> list[tuple[int, Any]]:
        """The content of every message of ``role`` (``user``, ``assistant``...), with
        the message's index in ``messages``."""
        return [
            (i, m.get("content"))
            for i, m in enumerate(self.record.messages)
            if m.get("role") == role
        ]

    def retrievals(self) -> tuple[Retrieval, ...]:
        """The passages retrieval returned, in order (``retrieved``)."""
        return tuple(Retrieval.from_json(r) for r in self.record.retrieved)

    def events(self, kind: str) -> list[Mapping[str, Any]]:
        """The trace events of type ``kind``, in order."""
        return [e for e in self.record.trace if e.get("type") == kind]

    def has_state_before(self, index: int) -> bool:
        """Whether the state before call ``index`` can be known: an initial state, or
        (version 1) the call's own copy."""
        if isinstance(self.initial_state, Mapping):
            return True
        calls = self.record.calls
        return 0 <= index < len(calls) and calls[index].legacy_state_before is not None

    def state_before(self, index: int) -> dict[str, Any]:
        """The state as call ``index`` found it. The result shares the parts no call
        changed with the initial state: read it, do not change it in place."""
        calls = self.record.calls
        if 0 <= index < len(calls) and calls[index].legacy_state_before is not None:
            copy: dict[str, Any] = _copy(dict(calls[index].legacy_state_before or {}))
            return copy
        initial = self.initial_state
        state: dict[str, Any] = dict(initial) if isinstance(initial, Mapping) else {}
        for call in calls[: max(0, index)]:
            for change in call.changes:
                _apply(state, change)
        return state

    def final_state(self) -> dict[str, Any] | None:
        """The state at the end of the attempt: recorded (version 1), else rebuilt from
        the initial state and every change; None without an initial state."""
        recorded = self.record.legacy.get("final_state")
        if isinstance(recorded, dict):
            return recorded
        if not isinstance(self.initial_state, Mapping):
            return None
        return self.state_before(len(self.record.calls))

    def to_mapping(self) -> dict[str, Any]:
        """The attempt as graders used to receive it, one JSON object: the record's fields
        with ``initial_state`` (and ``initial_state_problem``) added. For grader plugins
        written against the mapping (:mod:`evalcase.plugins`), for one release."""
        out = self.record.to_json()
        if self.initial_state is not None or self.initial_state_problem is not None:
            out["initial_state"] = self.initial_state
        if self.initial_state_problem is not None:
            out["initial_state_problem"] = self.initial_state_problem
        return out

    @classmethod
    def of(cls, attempt: Mapping[str, Any] | AttemptRecord) -> Observed:
        """An attempt with the initial state its record carries (versions 1 and 2; a
        version 3 record has none): for records whose case is not known."""
        record = _record(attempt)
        initial = record.legacy.get("initial_state")
        problem = record.legacy.get("initial_state_problem")
        return cls(
            record,
            initial if isinstance(initial, Mapping) else None,
            problem if isinstance(problem, str) else None,
            isinstance(attempt, AttemptRecord) or "retrieved" in attempt,
        )


def observe(
    attempt: Mapping[str, Any] | AttemptRecord, initial: Mapping[str, Any] | None
) -> Observed:
    """The attempt as graders read it: ``initial_state`` is the case's (``initial``, from
    the case at the run's commit), never the record's own; without ``initial`` (the case
    is not known), the record's own (versions 1 and 2). When the record's digest names
    another state, there is no initial state and ``initial_state_problem`` says why."""
    record = _record(attempt)
    if initial is None:
        return Observed.of(attempt)
    retrieval = isinstance(attempt, AttemptRecord) or "retrieved" in attempt
    recorded = record.initial_state_digest
    if isinstance(recorded, str) and recorded != _cached_digest(initial):
        return Observed(
            record,
            None,
            "the attempt ran on another initial state than the case's at the run's commit "
            f"(record {recorded[:19]}..., case {_cached_digest(initial)[:19]}...)",
            retrieval,
        )
    return Observed(record, initial, None, retrieval)


def with_initial_state(
    attempt: Mapping[str, Any] | AttemptRecord, initial: Mapping[str, Any] | None
) -> tuple[dict[str, Any], str | None]:
    """:func:`observe` as the mapping view (:meth:`Observed.to_mapping`) and why the state
    could not be given (None when it could)."""
    observed = observe(attempt, initial)
    return observed.to_mapping(), observed.initial_state_problem


def state_before(
    attempt: Mapping[str, Any] | AttemptRecord,
    index: int,
    initial: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The state as call ``index`` found it, from ``initial`` (the case's initial state;
    default: the record's own, versions 1 and 2): :meth:`Observed.state_before`."""
    observed = Observed.of(attempt)
    if initial is not None:
        observed = Observed(observed.record, initial)
    return observed.state_before(index)


def final_state(
    attempt: Mapping[str, Any] | AttemptRecord, initial: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The state at the end of the attempt (:meth:`Observed.final_state`), from ``initial``
    (default: the record's own initial state); None when there is none to start from."""
    observed = Observed.of(attempt)
    if initial is not None:
        observed = Observed(observed.record, initial)
    return observed.final_state()
