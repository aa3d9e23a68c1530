"""The attempt record: what the runner recorded of one attempt, one line of
``outputs/<commit>/<run_id>/attempts.jsonl``. One typed definition, versioned, with a
JSON Schema (``schemas/attempt.schema.json``; its fields are listed in docs/running.md,
generated from the schema).

The runner builds an :class:`AttemptRecord` and writes :meth:`AttemptRecord.to_json`;
everyone who reads a record (grading, reports, ``evalcase runs``, ``--resume``, the
``replay:`` adapter) reads it through :func:`read` (:func:`upgrade` then
:meth:`AttemptRecord.from_json`), so records of earlier versions are brought to the
current one in one place:

- version 1 kept a copy of the state before every call and the final state; version 2
  dropped those and kept ``initial_state``; version 3 (:data:`RECORD_VERSION`) keeps only
  the state's digest (grading rebuilds the state from the case at the run's commit,
  docs/running.md). What an earlier version held that the current one does not is kept in
  :attr:`AttemptRecord.legacy`, where :mod:`evalcase.contract.records` still finds it for a
  case that is no longer known.
- a record without ``record_version`` is version 1.

A record is data anyone with a pull request can write: :meth:`AttemptRecord.from_json`
never raises on a wrong type, it reads what it can (a missing number is 0, a missing text
``""``), as the readers always did; the schema says what the runner writes, and the test
suite checks every record the runner writes against it (:mod:`evalcase.attempt_check`).

A tool call is a :class:`ToolCallRecord` and each of its state changes a
:class:`StateChange`: graders read them by field, never by key. Records of version 1 kept
the state before each call (``state_before``): :meth:`ToolCallRecord.from_json` keeps it
as :attr:`ToolCallRecord.legacy_state_before`, the one place that knows of it. A call's
``actor`` says who made it (``agent``, or ``user`` for a simulated user's own tools); it
is written only when not ``agent``, so records of agent calls are as before.

Other nested parts stay JSON objects (``messages``, ``trace`` events, ``retrieved``,
``state_diff``): their shape is in the schema, and they are read by the graders that
know them (:mod:`evalcase.contract.records` rebuilds states from the calls' changes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# 2: no final_state and no per-call state_before (rebuilt from initial_state and the
# calls' changes: evalcase.contract.records); agent_stderr for cmd: agents.
# 3: no initial_state (the case's, rebuilt at grading from the case at the run's commit),
# only its initial_state_digest: a record's size no longer grows with the state's.
RECORD_VERSION = 3

# Fields of earlier versions that version 3 no longer writes (kept in ``legacy``, with any
# other field the record has that this version does not define).
LEGACY_FIELDS = ("initial_state", "final_state")

Json = Mapping[str, Any]


def _text(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def _opt_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _objects(value: Any) -> tuple[Json, ...]:
    return tuple(v for v in value if isinstance(v, Mapping)) if isinstance(value, list) else ()


@dataclass(frozen=True)
class AttemptError:
    """Why an attempt did not complete: a stable ``kind`` and a message."""

    kind: str
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message}

    @classmethod
    def from_json(cls, raw: Any) -> AttemptError | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(str(raw.get("kind")), str(raw.get("message")))


@dataclass(frozen=True)
class Usage:
    """Tokens and cost, summed over an attempt's model replies; ``other``: any further
    integer counts an adapter reported (cached tokens, reasoning tokens...)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    other: Mapping[str, int] = field(default_factory=dict)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
            **self.other,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Usage:
        if not isinstance(raw, Mapping):
            return cls()
        cost = raw.get("cost")
        known = {"prompt_tokens", "completion_tokens", "cost"}
        return cls(
            _int(raw.get("prompt_tokens")),
            _int(raw.get("completion_tokens")),
            cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
            {
                str(k): v
                for k, v in raw.items()
                if k not in known and isinstance(v, int) and not isinstance(v, bool)
            },
        )


@dataclass(frozen=True)
class ConversationEnd:
    """How a reactive or simulated conversation ended, after how many user turns."""

    ended_by: str | None  # None: the conversation had not ended (the attempt stopped first)
    user_turns: int

    def to_json(self) -> dict[str, Any]:
        return {"ended_by": self.ended_by, "user_turns": self.user_turns}

    @classmethod
    def from_json(cls, raw: Any) -> ConversationEnd | None:
        if not isinstance(raw, Mapping):
            return None
        return cls(_opt_text(raw.get("ended_by")), _int(raw.get("user_turns")))


Actor = Literal["agent", "user"]

# The fields of a call this version defines (any other is kept in ``extra``).
_CALL_FIELDS = frozenset(
    {"step", "id", "tool", "args", "valid", "result", "error", "fault", "denied_by",
     "side_effect", "user_confirmed", "changes", "latency_ms", "ok", "audit", "actor",
     "state_before"}
)  # fmt: skip


@dataclass(frozen=True)
class StateChange:
    """One write of a call: the dotted ``path`` (and its ``keys``, for keys that hold
    dots), the operation, and the value before and after."""

    op: str
    path: str
    keys: tuple[str, ...] | None = None  # None: not recorded (split the path)
    before: Any = None
    after: Any = None

    @property
    def parts(self) -> tuple[str, ...]:
        """The keys the change walks: ``keys`` when recorded, else the path split on dots."""
        if self.keys:
            return self.keys
        return tuple(self.path.split(".")) if self.path else ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.keys is not None:
            out["keys"] = list(self.keys)
        out["before"] = self.before
        out["after"] = self.after
        return out

    @classmethod
    def from_json(cls, raw: Any) -> StateChange | None:
        if not isinstance(raw, Mapping):
            return None
        keys = raw.get("keys")
        return cls(
            _text(raw.get("op"), "set"),
            _text(raw.get("path")),
            tuple(str(k) for k in keys) if isinstance(keys, list) else None,
            raw.get("before"),
            raw.get("after"),
        )


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as the environment answered it (``calls`` of the record)."""

    step: int
    id: str | None
    tool: str
    args: Any  # the parsed arguments (None: not JSON; the trace keeps the raw text)
    valid: bool = True
    result: Any = None
    error: Json | None = None  # the tool's error: code, message (retry_after_ms...)
    fault: str | None = None  # the injected fault's kind
    denied_by: str | None = None  # the permission policy that refused the call
    side_effect: bool = False
    user_confirmed: bool = False
    changes: tuple[StateChange, ...] = ()
    latency_ms: int | float | None = None  # a slow response's or fault's declared latency
    ok: bool | None = None  # None: not recorded (records written before it)
    audit: Json | None = None  # a side-effect tool's audit record
    actor: Actor = "agent"
    legacy_state_before: Json | None = None  # version 1: the state as the call found it
    extra: Json = field(default_factory=dict)  # fields this version does not define

    @property
    def arguments(self) -> Json:
        """The arguments when they are a JSON object, else an empty one."""
        return self.args if isinstance(self.args, Mapping) else {}

    @property
    def succeeded(self) -> bool:
        """Whether the tool answered with a result (no error)."""
        return self.error is None

    def view(self) -> dict[str, Any]:
        """What CEL expressions see of the call in ``calls``: tool, args, ok, error, result,
        and actor (``agent``, or ``user`` for a call of the user's own tools)."""
        return {
            "tool": self.tool,
            "args": self.args,
            "ok": self.error is None,
            "error": self.error,
            "result": self.result,
            "actor": self.actor,
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "id": self.id,
            "tool": self.tool,
            "args": self.args,
            "valid": self.valid,
            "result": self.result,
            "error": None if self.error is None else dict(self.error),
            "fault": self.fault,
            "denied_by": self.denied_by,
            "side_effect": self.side_effect,
            "user_confirmed": self.user_confirmed,
            "changes": [c.to_json() for c in self.changes],
        }
        if self.latency_ms is not None:
            out["latency_ms"] = self.latency_ms
        if self.ok is not None:
            out["ok"] = self.ok
        if self.audit is not None:
            out["audit"] = dict(self.audit)
        if self.actor != "agent":
            out["actor"] = self.actor
        if self.legacy_state_before is not None:
            out["state_before"] = self.legacy_state_before
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, raw: Any) -> ToolCallRecord | None:
        """A call read back (None for what is not an object); never raises."""
        if not isinstance(raw, Mapping):
            return None
        error = raw.get("error")
        audit = raw.get("audit")
        latency = raw.get("latency_ms")
        ok = raw.get("ok")
        before = raw.get("state_before")
        changes = raw.get("changes")
        actor = raw.get("actor")
        return cls(
            step=_int(raw.get("step")),
            id=_opt_text(raw.get("id")),
            tool=_text(raw.get("tool")),
            args=raw.get("args"),
            valid=raw.get("valid") is not False,
            result=raw.get("result"),
            error=error if isinstance(error, Mapping) else None,
            fault=_opt_text(raw.get("fault")),
            denied_by=_opt_text(raw.get("denied_by")),
            side_effect=raw.get("side_effect") is True,
            user_confirmed=raw.get("user_confirmed") is True,
            changes=tuple(
                c for c in (StateChange.from_json(x) for x in changes or ()) if c is not None
            )
            if isinstance(changes, list)
            else (),
            latency_ms=latency
            if isinstance(latency, int | float) and not isinstance(latency, bool)
            else None,
            ok=ok if isinstance(ok, bool) else None,
            audit=audit if isinstance(audit, Mapping) else None,
            actor="user" if actor == "user" else "agent",
            legacy_state_before=before if isinstance(before, Mapping) else None,
            # A null latency (a slow fault that declared none) is kept as it was written.
            extra={
                k: v
                for k, v in raw.items()
                if k not in _CALL_FIELDS or (k == "latency_ms" and v is None)
            },
        )


@dataclass(frozen=True)
class Retrieval:
    """One passage the built-in retrieval returned (``retrieved``), with the trace step of
    the retrieval; ``effective_from`` / ``effective_to`` when the record says."""

    passage_id: Any
    doc_id: Any
    step: int | None = None
    effective_from: Any = None
    effective_to: Any = None

    @classmethod
    def from_json(cls, raw: Json) -> Retrieval:
        step = raw.get("step")
        return cls(
            raw.get("passage_id"),
            raw.get("doc_id"),
            step if isinstance(step, int) and not isinstance(step, bool) else None,
            raw.get("effective_from"),
            raw.get("effective_to"),
        )


def _calls(value: Any) -> tuple[ToolCallRecord, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(c for c in map(ToolCallRecord.from_json, value) if c is not None)


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt as the runner recorded it (``schemas/attempt.schema.json``)."""

    case_id: str
    case_version: str
    attempt: int
    seed: int
    attempt_key: str
    status: str  # "completed" or "error"
    error: AttemptError | None
    output: str | None
    messages: Sequence[Json]
    trace: Sequence[Json]
    calls: tuple[ToolCallRecord, ...]
    retrieved: Sequence[Json]
    initial_state_digest: str | None
    state_diff: Sequence[Json]
    usage: Usage
    latency_ms: float
    agent_version: str | None
    started_at: str
    ended_at: str
    record_version: int = RECORD_VERSION
    prompt: str | None = None  # id@version of the prompt fixture (evalcase.run.prompts)
    truncated: bool | None = None  # None: not recorded (an error record)
    agent_stderr: Json | None = None  # cmd: agents
    conversation: ConversationEnd | None = None
    user_usage: Usage | None = None  # the simulated user's, apart from the agent's
    worker: Json | None = None  # where a Ray worker ran it
    redacted: bool = False  # personal data masked after grading (--redact)
    # An agent-owned loop (loop = "agent", evalcase.run.owned_loop): which loop was
    # measured, every model call through the proxy, and the tool calls the models
    # proposed, each linked to the call that executed it or left unexecuted.
    loop: str | None = None
    model_calls: Sequence[Json] | None = None
    proposals: Sequence[Json] | None = None
    legacy: Json = field(default_factory=dict)  # LEGACY_FIELDS and other fields, as read

    @property
    def key(self) -> tuple[str, str, int]:
        """What makes a record one attempt: case, case version, attempt number (the same
        as :func:`key_of` reads from the record's JSON object)."""
        return (self.case_id, self.case_version, self.attempt)

    @property
    def errored(self) -> bool:
        return self.status == "error"

    def to_json(self) -> dict[str, Any]:
        """The record as written to attempts.jsonl (its fields in a fixed order)."""
        out: dict[str, Any] = {
            "case_id": self.case_id,
            "case_version": self.case_version,
            "attempt": self.attempt,
            "seed": self.seed,
            "attempt_key": self.attempt_key,
        }
        if self.prompt is not None:
            out["prompt"] = self.prompt
        out["status"] = self.status
        out["error"] = self.error.to_json() if self.error else None
        out["output"] = self.output
        if self.truncated is not None:
            out["truncated"] = self.truncated
        out.update(
            {
                "messages": list(self.messages),
                "trace": list(self.trace),
                "calls": [c.to_json() for c in self.calls],
                "retrieved": list(self.retrieved),
                "initial_state_digest": self.initial_state_digest,
                "state_diff": list(self.state_diff),
                "usage": self.usage.to_json(),
                "latency_ms": self.latency_ms,
                "agent_version": self.agent_version,
                "started_at": self.started_at,
                "ended_at": self.ended_at,
                "record_version": self.record_version,
            }
        )
        if self.agent_stderr is not None:
            out["agent_stderr"] = dict(self.agent_stderr)
        if self.conversation is not None:
            out["conversation"] = self.conversation.to_json()
        if self.user_usage is not None:
            out["user_usage"] = self.user_usage.to_json()
        if self.worker is not None:
            out["worker"] = dict(self.worker)
        if self.redacted:
            out["redacted"] = True
        if self.loop is not None:
            out["loop"] = self.loop
        if self.model_calls is not None:
            out["model_calls"] = list(self.model_calls)
        if self.proposals is not None:
            out["proposals"] = list(self.proposals)
        out.update(self.legacy)
        return out

    @classmethod
    def from_json(cls, raw: Json) -> AttemptRecord:
        """A record read back (call :func:`upgrade` first for earlier versions: :func:`read`
        does both). Never raises on a wrong type: see the module's documentation."""
        latency = raw.get("latency_ms")
        truncated = raw.get("truncated")
        stderr = raw.get("agent_stderr")
        worker = raw.get("worker")
        user_usage = raw.get("user_usage")
        return cls(
            case_id=str(raw.get("case_id")),
            case_version=str(raw.get("case_version")),
            attempt=_int(raw.get("attempt")),
            seed=_int(raw.get("seed")),
            attempt_key=_text(raw.get("attempt_key")),
            status=_text(raw.get("status")),
            error=AttemptError.from_json(raw.get("error")),
            output=_opt_text(raw.get("output")),
            messages=_objects(raw.get("messages")),
            trace=_objects(raw.get("trace")),
            calls=_calls(raw.get("calls")),
            retrieved=_objects(raw.get("retrieved")),
            initial_state_digest=_opt_text(raw.get("initial_state_digest")),
            state_diff=_objects(raw.get("state_diff")),
            usage=Usage.from_json(raw.get("usage")),
            latency_ms=latency
            if isinstance(latency, int | float) and not isinstance(latency, bool)
            else 0,
            agent_version=_opt_text(raw.get("agent_version")),
            started_at=_text(raw.get("started_at")),
            ended_at=_text(raw.get("ended_at")),
            record_version=_int(raw.get("record_version"), RECORD_VERSION),
            prompt=_opt_text(raw.get("prompt")),
            truncated=truncated if isinstance(truncated, bool) else None,
            agent_stderr=stderr if isinstance(stderr, Mapping) else None,
            conversation=ConversationEnd.from_json(raw.get("conversation")),
            user_usage=Usage.from_json(user_usage) if isinstance(user_usage, Mapping) else None,
            worker=worker if isinstance(worker, Mapping) else None,
            redacted=raw.get("redacted") is True,
            loop=_opt_text(raw.get("loop")),
            model_calls=_objects(raw["model_calls"]) if "model_calls" in raw else None,
            proposals=_objects(raw["proposals"]) if "proposals" in raw else None,
            legacy={k: v for k, v in raw.items() if k not in _FIELDS},
        )


_FIELDS = frozenset(
    f.name for f in AttemptRecord.__dataclass_fields__.values() if f.name != "legacy"
)


def key_of(raw: Json) -> tuple[str, str, int]:
    """:attr:`AttemptRecord.key` of a record's JSON object, read as
    :meth:`AttemptRecord.from_json` reads those three fields, without reading the rest
    (deduplicating a file's records costs no parse of their calls)."""
    return (str(raw.get("case_id")), str(raw.get("case_version")), _int(raw.get("attempt")))


def upgrade(raw: Json) -> dict[str, Any]:
    """A record of any version in the current version's shape: the one place that knows
    how records of earlier versions differ (see the module's documentation). The fields a
    version lacks get their empty value; what the current version no longer has stays as
    it was (``initial_state``, ``final_state``, per-call ``state_before``), for
    :mod:`evalcase.contract.records` to read when the case is no longer known; the record
    keeps its ``record_version``, so a reader can still tell. No digest is made up for an
    old record: without one, grading takes the case's state, as it always did."""
    out = dict(raw)
    if _int(raw.get("record_version"), 1) < RECORD_VERSION:
        for name in ("messages", "trace", "calls", "retrieved", "state_diff"):
            out.setdefault(name, [])
        out.setdefault("initial_state_digest", None)
        out.setdefault("record_version", 1)
    return out


def read(raw: Json) -> AttemptRecord:
    """A record line, of any version, as the current typed record."""
    return AttemptRecord.from_json(upgrade(raw))
