"""The environment of one attempt: fresh state, tools as their fixtures declare, injected
faults, permission policies, audit records, built-in retrieval, and the trace.

The agent never reports its own tool calls or final state: this module observes them.
One ``Environment`` serves one attempt and is then thrown away, so no state is ever
shared between attempts (pass@k needs independent attempts): each has a copy on write
of the initial state, parsed once per spec, whose cost follows the attempt's writes, not
the state's size. What they share is read-only: the initial document, and the CEL
workers' converted copy of an unchanged key (its token names its content: the initial
state's digest and key).

A tool call goes through, in order:

1. the tool must be one the case offers (else the attempt ends: ``unknown_tool``);
2. the arguments must be JSON and valid against the tool's parameter schema, else the
   agent gets ``{"code": "invalid_arguments", "message": ...}`` as a real API would answer;
3. permission policies naming the tool: a false ``condition`` refuses the call with the
   policy's error (trace ``permission_denied``);
4. the first fault whose ``when`` matches this call (trace ``fault``);
5. the tool's behaviour: ``handler``, else the first matching ``responses`` entry
   (``when`` as a subset match on the arguments or a CEL string), else ``default``; else,
   in a case with a corpus, a tool taking a ``query`` is answered by the runner's built-in
   retrieval over the corpus passages in effect at ``effective_at``; else the recorded
   error ``no_matching_response``.

A matching response is answered in this order: its ``let`` bindings (evaluated once, in
order, each seeing the earlier ones); its ``error`` (``message_from`` computed); else
its ``state_change`` steps (each with an optional ``when``; ``foreach`` repeats its
``do`` steps per element of a list; ``fail`` answers the call with an error); then
``result_from`` over the state *after* the change, else ``result``. State changes are
atomic: when any step fails (or a handler raises after writing), every write of the call
is undone, its ``state_change`` trace events are dropped, and the agent gets the error;
the undo keeps only what each write replaced, so its cost is that of the writes, not of
the state. A response with ``ends_conversation: true`` sets
:attr:`Environment.conversation_ended` once its result is delivered; the runner then
stops asking the agent.

Budgets (``[run]`` settings, recorded errors of kind ``budget``): at most
``max_tool_calls`` calls per attempt (default 256), and a state that stays under
``max_state_bytes`` (default 32 MiB, the initial state's JSON plus every value written).
Each call's ``changes`` are diffs (path, keys, before, after), never a copy of the state;
tool work stops at the attempt's deadline (``timeout``).

The CEL scope is kept for the whole attempt (:class:`evalcase.contract.cel.Scopes`): a
state key is converted to CEL once, and again only after a change to it, however many
expressions a call evaluates. Every change of the state goes through
:meth:`Environment.change`, which tells the scope what changed.

A side-effect tool leaves an audit record (operator, time, tool, arguments, whether the
user had confirmed, whether identity was verified, whether a timeout hid the result).
"""

from __future__ import annotations

import importlib
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evalcase.contract import paths
from evalcase.contract.attempt import Actor, StateChange, ToolCallRecord
from evalcase.contract.cel import Scopes, content_token
from evalcase.contract.records import OutOfRange, loads_strict, state_digest, state_text
from evalcase.run.executors.base import Limits
from evalcase.run.expr import ExprError, apply_op, evaluate, get_path, scoped, split_path, truthy
from evalcase.run.protocol import AgentFault
from evalcase.run.spec import EnvSpec, Fault, Passage, Response, StateOp, ToolBehaviour, ToolError

AGENT: Actor = "agent"  # who makes a call unless told (the user: ``user_simulator.tools``)
RESERVED = frozenset({"args", "call", "calls", "state", "initial", "trace", "output"})
FAULT_MESSAGES = {
    "timeout": "upstream request timed out",
    "rate_limited": "too many requests",
    "permission_denied": "permission denied",
    "error": "upstream error",
}


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON-like value (several times faster than copy.deepcopy)."""
    if isinstance(value, dict):
        return {k: copy_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [copy_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: copy_json(v) for k, v in value.items()}
    return value


def state_diff(before: Any, after: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Path-level differences; mappings are walked, anything else compared whole."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[dict[str, Any]] = []
        for key in sorted(set(before) | set(after), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in after:
                out.append({"path": path, "before": before[key], "after": None, "op": "delete"})
            elif key not in before:
                out.append({"path": path, "before": None, "after": after[key], "op": "set"})
            else:
                out.extend(state_diff(before[key], after[key], path))
        return out
    if before != after:
        return [{"path": prefix, "before": before, "after": after, "op": "set"}]
    return []


_ABSENT = object()


def _at(document: Any, parts: tuple[str, ...]) -> Any:
    node = document
    for part in parts:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif (
            isinstance(node, list)
            and part.lstrip("-").isdigit()
            and -len(node) <= int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            return _ABSENT
    return node


@dataclass(frozen=True)
class _Initial:
    """A spec's initial state, prepared once for every attempt on it."""

    digest: str
    size: int  # its UTF-8 length (the start of ``max_state_bytes``)
    document: dict[str, Any]  # parsed once and shared: read it, never change it


_STATE_TEXT: dict[int, tuple[Any, _Initial]] = {}


def _initial(state: Mapping[str, Any]) -> _Initial:
    """The initial state's digest, size and parsed document, once per spec: every
    attempt's state is a copy on write of the document (Environment.state)."""
    hit = _STATE_TEXT.get(id(state))
    if hit is not None and hit[0] is state:
        return hit[1]
    text = state_text(state)
    if len(_STATE_TEXT) > 4096:
        _STATE_TEXT.clear()
    made = _Initial(state_digest(text), len(text.encode("utf-8")), json.loads(text))
    _STATE_TEXT[id(state)] = (state, made)
    return made


@dataclass
class _Draft:
    """A call while the environment answers it (mutable; private): :meth:`Environment.answer`
    turns it into the :class:`ToolCallRecord` it returns, once."""

    step: int
    id: str
    tool: str
    args: Any
    side_effect: bool
    user_confirmed: bool
    valid: bool = True
    result: Any = None
    error: dict[str, Any] | None = None
    fault: str | None = None
    denied_by: str | None = None
    changes: list[StateChange] = field(default_factory=list)
    latency_ms: int | float | None = None
    latency_set: bool = False
    audit: dict[str, Any] | None = None
    ends_conversation: bool = False
    rolled_back: int = 0
    actor: Actor = AGENT

    def done(self) -> ToolCallRecord:
        # A slow fault that declared no latency writes a null one, as records always had.
        null_latency = self.latency_set and self.latency_ms is None
        return ToolCallRecord(
            step=self.step, id=self.id, tool=self.tool, args=self.args, valid=self.valid,
            result=self.result, error=self.error, fault=self.fault, denied_by=self.denied_by,
            side_effect=self.side_effect, user_confirmed=self.user_confirmed,
            changes=tuple(self.changes), latency_ms=self.latency_ms, ok=self.error is None,
            audit=self.audit, extra={"latency_ms": None} if null_latency else {},
            actor=self.actor,
        )  # fmt: skip


class StepFailed(Exception):
    """A ``fail`` step was reached: the call answers with this error, undone."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", ""))
        self.error = error


class HandlerError(Exception):
    """Raised by a tool ``handler`` to answer with an error instead of a result."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(message or code)
        self.code = code
        self.message = message


class Recorder:
    """The trace of one attempt: every event with its step number and time."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.trace: list[dict[str, Any]] = []

    def event(self, kind: str, /, **fields: Any) -> int:
        step = len(self.trace)
        self.trace.append(
            {
                "step": step,
                "t_ms": round((time.perf_counter() - self.t0) * 1000, 3),
                "type": kind,
                **fields,
            }
        )
        return step


class StateHandle:
    """What a tool ``handler`` gets: read and change the state, every change recorded."""

    def __init__(self, env: Environment, variables: Mapping[str, Any]) -> None:
        self._env = env
        self._variables = variables
        self.changes: list[StateChange] = []

    def get(self, path: str) -> Any:
        return copy_json(get_path(self._env.state, split_path(path, self._variables)))

    def _op(self, op: str, path: str, value: Any = None) -> None:
        self.changes.append(self._env.change(op, path, value, self._variables))

    def set(self, path: str, value: Any) -> None:
        self._op("set", path, value)

    def append(self, path: str, value: Any) -> None:
        self._op("append", path, value)

    def increment(self, path: str, by: float = 1) -> None:
        self._op("increment", path, by)

    def delete(self, path: str) -> None:
        self._op("delete", path)


class Environment:
    """One attempt's world. ``call`` answers one tool call and records it."""

    def __init__(
        self,
        spec: EnvSpec,
        recorder: Recorder,
        operator: str = "agent",
        limits: Limits | None = None,
        deadline: float | None = None,
    ) -> None:
        self.spec = spec
        self.recorder = recorder
        self.operator = operator
        self.limits = limits or Limits()
        self.deadline = deadline
        initial = _initial(spec.initial_state)
        self.initial_digest = initial.digest
        # Shared by every attempt on this spec (final_diff copies what it takes of it).
        self.initial_state: Mapping[str, Any] = initial.document
        self._state: dict[str, Any] | None = None  # made on first read (see state)
        self._owned: dict[int, Any] = {}  # the state's own containers (paths.own)
        self.state_bytes = initial.size
        self.calls: list[ToolCallRecord] = []
        self._call_view: list[dict[str, Any]] = []  # what CEL sees as ``calls``, kept as we go
        self.retrieved: list[dict[str, Any]] = []
        self._counts: dict[str, int] = {}
        self._started = datetime.now(UTC)
        # The open call's undo journal: (top-level state key written, what undoes it).
        self._undo: list[tuple[str, Callable[[], None]]] | None = None
        # Set once a response with ends_conversation: true has been delivered.
        self.conversation_ended = False
        self.scopes = Scopes()  # CEL conversions kept across evaluations and calls

    @property
    def state(self) -> dict[str, Any]:
        """This attempt's state, made when first read: the initial document's top level and
        top-level containers copied shallow (a call's CEL scope binds them), the rest shared
        until a write reaches it (:func:`evalcase.contract.paths.own`): change it by change."""
        if self._state is None:
            self._state = state = {k: paths.shallow(v) for k, v in self.initial_state.items()}
            self._owned = {id(c): c for c in (state, *state.values()) if isinstance(c, dict | list)}
            # Every attempt on this initial state parses the same content: its keys get
            # the same CEL worker tokens, so a worker converts an unchanged key once for
            # all of them (a change invalidates the name, and the key gets a new token).
            self.scopes.pin("state", state, content_token(self.initial_digest, ""))
            for key, value in state.items():
                if key not in RESERVED:
                    self.scopes.pin(key, value, content_token(self.initial_digest, "." + key))
        return self._state

    def final_diff(self) -> list[dict[str, Any]]:
        """:func:`state_diff` of the initial and the current state, walking only the
        places the calls changed (not a 3 MB state for a change of one seat count)."""
        touched: set[tuple[str, ...]] = set()
        for record in self.calls:
            for change in record.changes:
                keys = tuple(str(k) for k in change.keys or ())
                if keys:
                    touched.add(keys)
        roots = sorted(p for p in touched if not any(p[:n] in touched for n in range(1, len(p))))
        out: list[dict[str, Any]] = []
        for parts in roots:
            # A copy: the initial document is shared with the other attempts.
            before = copy_json(_at(self.initial_state, parts))
            after = copy_json(_at(self.state, parts))  # may hold parts of the shared one
            where = ".".join(parts)
            if before is _ABSENT and after is _ABSENT:
                continue
            if before is _ABSENT:
                out.append({"path": where, "before": None, "after": after, "op": "set"})
            elif after is _ABSENT:
                out.append({"path": where, "before": before, "after": None, "op": "delete"})
            else:
                out.extend(state_diff(before, after, where))
        return out

    # -- variables -----------------------------------------------------------------------
    def _vars(self, args: Any, call: Mapping[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in self.state.items() if k not in RESERVED}
        out.update(
            args=args,
            call=dict(call),
            state=self.state,
            calls=self._call_view,
        )
        return out

    def change(self, op: str, path: str, value: Any, variables: Mapping[str, Any]) -> StateChange:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise AgentFault("timeout", "the attempt's deadline passed during tool work")
        parts = split_path(path, variables)
        value = copy_json(value)
        self.state_bytes += len(json.dumps(value, ensure_ascii=False, default=str))
        if self.state_bytes > self.limits.max_state_bytes:
            raise AgentFault(
                "budget",
                f"the state grew beyond max_state_bytes ({self.limits.max_state_bytes} bytes)",
            )
        paths.own(self.state, parts, self._owned)  # copy on write: see state
        undo = _undoer(self.state, op, parts)
        self.scopes.invalidate(("state", parts[0]) if parts else ("state",))
        before, after = apply_op(self.state, op, parts, value)
        if self._undo is not None:
            self._undo.append((parts[0] if parts else "", undo))
        # Copies: a later change to the same place must not rewrite this record.
        before, after = copy_json(before), copy_json(after)
        where = ".".join(parts)
        self.recorder.event("state_change", op=op, path=where, before=before, after=after)
        return StateChange(op, where, tuple(parts), before, after)

    # -- one call ------------------------------------------------------------------------
    def call(
        self, call_id: str, name: str, arguments: str, *, user_confirmed: bool, actor: Actor = AGENT
    ) -> dict[str, Any]:
        """Answer one tool call: the agent's ``tool`` message (the record: ``calls[-1]``)."""
        ok = user_confirmed
        return tool_message(self.answer(call_id, name, arguments, user_confirmed=ok, actor=actor))

    def answer(
        self, call_id: str, name: str, arguments: str, *, user_confirmed: bool,
        actor: Actor = AGENT, unknown_ends: bool = True,
    ) -> ToolCallRecord:  # fmt: skip
        """Answer one tool call and return its record (also appended to :attr:`calls`).
        Raises :class:`AgentFault` for what ends the attempt (an unknown tool, a budget,
        the deadline); the unknown tool's call is recorded first. The user's calls (``actor``
        ``user``) are answered from ``user_simulator.tools`` only. ``unknown_ends`` False
        (the simulated user's own calls): an unknown tool is the call's ``unknown_tool``
        error result, recorded, and the attempt goes on."""
        with scoped(self.scopes):
            ok, ends = user_confirmed, unknown_ends
            return self._call(call_id, name, arguments, user_confirmed=ok, actor=actor, ends=ends)

    def _call(
        self, call_id: str, name: str, arguments: str, *, user_confirmed: bool, actor: Actor,
        ends: bool = True,
    ) -> ToolCallRecord:  # fmt: skip
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise AgentFault("timeout", "the attempt's deadline passed during tool work")
        if len(self.calls) >= self.limits.max_tool_calls:
            raise AgentFault(
                "budget", f"more than max_tool_calls ({self.limits.max_tool_calls}) tool calls"
            )
        try:
            args: Any = loads_strict(arguments) if arguments.strip() else {}
        except OutOfRange as exc:
            raise AgentFault("protocol", f"tool call {call_id!r} arguments: {exc}") from None
        except ValueError:
            args = None
        who = {"actor": actor} if actor != "agent" else {}
        shown = args if args is not None else arguments
        step = self.recorder.event("tool_call", id=call_id, tool=name, args=shown, **who)
        behaviour = (self.spec.user_tools if actor == "user" else self.spec.tools).get(name)
        n = self._counts.get(name, 0) + 1
        self._counts[name] = n
        call_info = {"tool": name, "n": n, "index": len(self.calls)}
        side_effect = bool(behaviour and behaviour.side_effect)
        record = _Draft(step, call_id, name, args, side_effect, user_confirmed, actor=actor)
        if behaviour is None:
            record.valid = False
            record.error = {"code": "unknown_tool", "message": f"no tool named {name!r}"}
            if not ends:
                return self._finish(record, record.error)
            self._finish(record, None)
            if actor == "user":
                raise AgentFault("user_script", f"the user called {name!r}: not a user tool")
            raise AgentFault("unknown_tool", f"called {name!r}, which this case does not offer")
        if record.side_effect:  # for the audit only; the record keeps diffs
            self._session_before: Any = copy_json(self.state.get("session"))
        problem = self._validate(behaviour, args, arguments)
        if problem is not None:
            record.valid = False
            return self._finish(record, {"code": "invalid_arguments", "message": problem})
        variables = self._vars(args, call_info)
        denied = self._permission(name, variables)
        if denied is not None:
            policy, error = denied
            record.denied_by = policy
            self.recorder.event(
                "permission_denied", id=call_id, tool=name, policy=policy, error=error
            )
            return self._finish(record, error)
        fault = self._fault(name, args, call_info)
        if fault is not None:
            record.fault = fault.kind
            self.recorder.event(
                "fault", id=call_id, tool=name, kind=fault.kind, applied=fault.applied
            )
            blocked = self._apply_fault(fault, behaviour, record, variables)
            if blocked is not None:
                return self._finish(record, blocked)
        else:
            self._execute(behaviour, record, variables)
        return self._finish(record, record.error)

    def _validate(self, behaviour: ToolBehaviour, args: Any, raw: str) -> str | None:
        if args is None:
            return f"arguments are not valid JSON: {raw[:200]!r}"
        if not isinstance(args, dict):
            return "arguments must be a JSON object"
        validator = _validator(behaviour.parameters or {"type": "object"})
        if validator is None or validator.is_valid(args):
            return None
        error = next(iter(validator.iter_errors(args)))
        where = ".".join(str(p) for p in error.instance_path)
        return f"{where}: {error.message}" if where else str(error.message)

    def _permission(
        self, tool: str, variables: Mapping[str, Any]
    ) -> tuple[str, dict[str, Any]] | None:
        for permission in self.spec.permissions:
            if tool not in permission.tools:
                continue
            try:
                allowed = truthy(permission.condition, variables)
            except ExprError as exc:
                # A policy that cannot be evaluated grants nothing and decides nothing:
                # the case is broken, and the attempt says so (never "permission denied").
                raise AgentFault(
                    "case_expression", f"permission {permission.name!r}'s condition: {exc}"
                ) from None
            if not allowed:
                return permission.name, _error(permission.error, "permission denied")
        return None

    def _fault(self, tool: str, args: Any, call: Mapping[str, Any]) -> Fault | None:
        n = int(call["n"])
        for fault in self.spec.faults:
            if fault.tool != tool:
                continue
            when = fault.when
            if when.every or n in when.calls or (when.first is not None and n <= when.first):
                return fault
            if when.condition:
                try:
                    if truthy(when.condition, {"args": args, "call": dict(call)}):
                        return fault
                except ExprError as exc:
                    raise AgentFault(
                        "case_expression", f"fault on {tool!r}: its when: {exc}"
                    ) from None
        return None

    def _apply_fault(
        self,
        fault: Fault,
        behaviour: ToolBehaviour,
        record: _Draft,
        variables: Mapping[str, Any],
    ) -> dict[str, Any] | None:
        """The error the agent sees, or None when the call goes on (slow, dirty_data, empty)."""
        kind = fault.kind
        if kind in {"slow", "dirty_data", "empty_result"} or (kind == "timeout" and fault.applied):
            self._execute(behaviour, record, variables)
        if kind == "slow":
            record.latency_ms, record.latency_set = fault.latency_ms, True
            return None
        if kind == "dirty_data":
            if record.error is None:
                record.result = _overlay(record.result, fault.data)
            return None
        if kind == "empty_result":
            if record.error is None:
                record.result = fault.data if fault.data is not None else {}
            return None
        record.result = None
        error: dict[str, Any] = {
            "code": fault.code or kind,
            "message": fault.message or FAULT_MESSAGES.get(kind, kind),
        }
        if fault.retry_after_ms is not None:
            error["retry_after_ms"] = fault.retry_after_ms
        return error

    def _execute(
        self, behaviour: ToolBehaviour, record: _Draft, variables: Mapping[str, Any]
    ) -> None:
        """Answer the call, atomically: an error after some writes undoes them all."""
        journal: list[tuple[str, Callable[[], None]]] = []
        self._undo = journal
        mark, size = len(self.recorder.trace), self.state_bytes
        try:
            self._execute_steps(behaviour, record, variables)
        except BaseException:  # a budget or the deadline: the attempt ends, state as before
            self._rollback(journal, record, mark, size)
            raise
        finally:
            self._undo = None
        if record.error is not None and journal:
            self._rollback(journal, record, mark, size)

    def _rollback(
        self,
        journal: list[tuple[str, Callable[[], None]]],
        record: _Draft,
        mark: int,
        size: int,
    ) -> None:
        for _key, undo in reversed(journal):
            undo()
        # The undo writes in place, not through change(): a CEL scope cache kept across
        # evaluations (tau2-perf's Scopes) must forget what it converted of these keys.
        scopes = getattr(self, "scopes", None)
        if scopes is not None:
            scopes.invalidate(("state", *{key for key, _ in journal if key}))
        self.state_bytes = size
        record.changes = []
        record.rolled_back = len(journal)
        trace = self.recorder.trace
        kept = [e for e in trace[mark:] if e["type"] != "state_change"]
        for i, event in enumerate(kept, start=mark):
            event["step"] = i
        trace[mark:] = kept

    def _execute_steps(
        self, behaviour: ToolBehaviour, record: _Draft, variables: Mapping[str, Any]
    ) -> None:
        try:
            if behaviour.handler:
                self._run_handler(behaviour.handler, record, variables)
                return
            entry = self._match(behaviour, record.args, variables)
            if entry is None:
                if self.spec.corpora and _is_retrieval(behaviour):
                    record.result = self._retrieve(record)
                    return
                record.error = {
                    "code": "no_matching_response",
                    "message": f"{behaviour.name!r} has no sandbox response for these arguments",
                }
                return
            self._answer(entry, record, variables)
        except ExprError as exc:
            record.error = {"code": "environment_error", "message": str(exc)}
        except StepFailed as failed:
            record.error = failed.error

    def _match(
        self, behaviour: ToolBehaviour, args: Any, variables: Mapping[str, Any]
    ) -> Response | None:
        for entry in behaviour.responses:
            when = entry.when
            if when is None:
                return entry
            if isinstance(when, Mapping):
                if all(_subset(get_path(args, str(k).split(".")), v) for k, v in when.items()):
                    return entry
            elif isinstance(when, str) and _holds(when, variables, behaviour.name):
                return entry
        return behaviour.default

    def _answer(self, entry: Response, record: _Draft, variables: Mapping[str, Any]) -> None:
        scope = dict(variables)
        bound: dict[str, Any] = {}
        for name, source in entry.let:
            bound[name] = scope[name] = evaluate(source, scope)
        if entry.error is not None:
            record.error = _error(entry.error, entry.error.code, scope)
            return
        if entry.state_change:
            self._steps(entry.state_change, record, scope)
            # result_from reads the state after the change: a written top-level key is a
            # new object, so the top-level names are taken again (not the whole state).
            scope = {**self._vars(record.args, variables["call"]), **bound}
        if entry.result_from:
            record.result = copy_json(evaluate(entry.result_from, scope))
        else:
            record.result = copy_json(entry.result)
        if entry.latency_ms is not None:
            record.latency_ms, record.latency_set = entry.latency_ms, True
        if entry.ends_conversation:
            record.ends_conversation = True

    def _steps(self, ops: Sequence[StateOp], record: _Draft, scope: Mapping[str, Any]) -> None:
        for op in ops:
            if op.when is not None and not _holds(op.when, scope, str(record.tool)):
                continue
            if op.op == "fail":
                error = op.value if isinstance(op.value, ToolError) else ToolError("failed")
                raise StepFailed(_error(error, error.code, scope))
            if op.op == "foreach":
                items = evaluate(op.value_from or "[]", scope)
                if not isinstance(items, list):
                    raise ExprError(
                        f"foreach {op.value_from!r} gives {type(items).__name__}, not a list"
                    )
                for item in items:
                    self._steps(op.do, record, {**scope, op.as_: item})
                continue
            if op.value_from:
                value = evaluate(op.value_from, scope)
            elif op.op == "increment":
                value = evaluate(op.by_from, scope) if op.by_from else op.by
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ExprError(
                        f"by_from {op.by_from!r} gives {type(value).__name__}, not a number"
                    )
            else:
                value = op.value
            record.changes.append(self.change(op.op, op.path, value, scope))

    def _run_handler(self, ref: str, record: _Draft, variables: Mapping[str, Any]) -> None:
        module_name, _, attr = ref.partition(":")
        try:
            func: Callable[..., Any] = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            record.error = {"code": "environment_error", "message": f"handler {ref!r}: {exc}"}
            return
        handle = StateHandle(self, variables)
        try:
            record.result = copy_json(func(copy_json(record.args), handle))
        except HandlerError as exc:
            record.error = {"code": exc.code, "message": exc.message or exc.code}
        except AgentFault:  # a budget or the deadline, reached by a write: the attempt ends
            raise
        except Exception as exc:  # a broken handler is the case's bug, recorded, not a crash
            record.error = {
                "code": "environment_error",
                "message": f"handler {ref!r} raised {exc!r}",
            }
        record.changes.extend(handle.changes)

    def _retrieve(self, record: _Draft) -> dict[str, Any]:
        args = record.args or {}
        query = str(args.get("query") or next((v for v in args.values() if isinstance(v, str)), ""))
        top_k = int(args["top_k"]) if isinstance(args.get("top_k"), int) else 5
        passages = retrieve(self.spec.corpora, query, top_k, self.spec.effective_at)
        step = self.recorder.event("retrieval", id=record.id, query=query, passages=[
            {"doc_id": p.doc_id, "passage_id": p.passage_id} for p, _ in passages
        ])  # fmt: skip
        self.retrieved.extend(
            {"passage_id": p.passage_id, "doc_id": p.doc_id, "step": step} for p, _ in passages
        )
        return {
            "passages": [
                {"doc_id": p.doc_id, "passage_id": p.passage_id, "text": p.text,
                 "effective_date": p.effective_date, "score": round(s, 4)}
                for p, s in passages
            ]
        }  # fmt: skip

    def _finish(self, record: _Draft, error: Mapping[str, Any] | None) -> ToolCallRecord:
        record.error = None if error is None else dict(error)
        if record.error is not None:
            record.result = None
        if record.side_effect:
            record.audit = self._audit(record)
            self.recorder.event("audit", id=record.id, tool=record.tool, audit=record.audit)
        ends = record.ends_conversation and record.error is None
        if record.error is not None:
            extra = {"rolled_back": record.rolled_back} if record.rolled_back else {}
            self.recorder.event(
                "tool_error", id=record.id, tool=record.tool, error=record.error, **extra
            )
        else:
            self.recorder.event("tool_result", id=record.id, tool=record.tool, result=record.result)
        if ends:
            self.conversation_ended = True
        done = record.done()
        self.calls.append(done)
        self._call_view.append(done.view())
        self.scopes.invalidate(("calls",))
        return done

    def _audit(self, record: _Draft) -> dict[str, Any]:
        raw_session = self.state.get("session")
        session: dict[str, Any] = raw_session if isinstance(raw_session, dict) else {}
        raw_before = getattr(self, "_session_before", None)
        before_session: dict[str, Any] = raw_before if isinstance(raw_before, dict) else {}
        args = record.args if isinstance(record.args, dict) else {}
        return {
            "operator": self.operator,
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "tool": record.tool,
            "tool_args": args,
            "user_confirmation": record.user_confirmed,
            "identity_verification_result": bool(
                before_session.get("user_authenticated", session.get("user_authenticated", False))
            ),
            "idempotency_key": args.get("idempotency_key"),
            "timeout_event": record.fault == "timeout",
            "executed": bool(record.changes) or (record.error is None and record.fault is None),
        }


def tool_message(record: ToolCallRecord) -> dict[str, Any]:
    """The ``tool`` message the agent gets for a call: its result, or ``{"error": ...}``."""
    body = {"error": dict(record.error)} if record.error is not None else record.result
    return {
        "role": "tool",
        "tool_call_id": record.id,
        "content": json.dumps(body, ensure_ascii=False),
    }


def _holds(when: str, variables: Mapping[str, Any], tool: str) -> bool:
    """Whether a response's ``when`` holds. One that cannot be evaluated (a key this case's
    state lacks, a type error) is no answer at all: the attempt ends with a recorded
    ``case_expression`` error naming the expression, never a quiet "does not hold" that
    lets the next response answer (write ``args.id in orders && ...`` to test first)."""
    try:
        return truthy(when, variables)
    except ExprError as exc:
        raise AgentFault("case_expression", f"tool {tool!r}: a when: {exc}") from None


def _is_retrieval(behaviour: ToolBehaviour) -> bool:
    """A tool the built-in retrieval answers (when none of its own responses match): one
    that takes a ``query`` and declares no default answer."""
    properties = behaviour.parameters.get("properties")
    return behaviour.default is None and isinstance(properties, Mapping) and "query" in properties


def _error(
    error: ToolError, fallback: str, scope: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The error the agent sees; ``message_from`` is computed over ``scope``."""
    if error.message_from and scope is not None:
        message = evaluate(error.message_from, scope)
        return {"code": error.code, "message": message if isinstance(message, str) else
                json.dumps(message, ensure_ascii=False, default=str)}  # fmt: skip
    return {"code": error.code, "message": error.message or fallback}


def _noop() -> None:
    return None


def _undoer(state: dict[str, Any], op: str, parts: Sequence[str]) -> Callable[[], None]:
    """What undoes ``op`` at ``parts``, taken before it applies: only the place it writes
    is remembered (the value it replaces, a list's length, a key's position), never a
    copy of the state. Called in reverse order, the undos of a call restore the state."""
    container: Any = state
    key = ""
    found: Any = paths.MISSING
    for depth, key in enumerate(parts):
        found = paths.get(container, [key])
        if found is paths.MISSING:
            if isinstance(container, dict):  # the write creates from here: remove it
                made, name = container, key
                return lambda: made.pop(name, None) and None
            return _noop  # a missing list index: the operation fails, nothing changes
        if depth < len(parts) - 1:
            if not isinstance(found, dict | list):
                return _noop
            container = found
    old = found
    if op == "append" and isinstance(old, list):
        length = len(old)

        def shorten() -> None:
            del old[length:]

        return shorten
    if isinstance(container, dict):
        if op != "delete":
            return lambda: container.__setitem__(key, old)
        position = list(container).index(key)  # a delete restores the key where it was

        def reinsert() -> None:
            items = list(container.items())
            items.insert(position, (key, old))
            container.clear()
            container.update(items)

        return reinsert
    if not isinstance(container, list) or not key.isdigit():
        return _noop
    index = int(key)
    if op == "delete":
        return lambda: container.insert(index, old)
    return lambda: container.__setitem__(index, old)


def _subset(actual: Any, expected: Any) -> bool:
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            _subset(actual.get(k), v) for k, v in expected.items()
        )
    return bool(actual == expected and type(actual) is type(expected)) or (
        isinstance(actual, int | float) and isinstance(expected, int | float)
        and not isinstance(actual, bool) and not isinstance(expected, bool) and actual == expected
    )  # fmt: skip


def _overlay(base: Any, data: Any) -> Any:
    if isinstance(base, dict) and isinstance(data, Mapping):
        out = dict(base)
        for k, v in data.items():
            out[k] = _overlay(base.get(k), v)
        return out
    return copy_json(data)


_validators: dict[str, Any] = {}


def _validator(schema: Mapping[str, Any]) -> Any:
    """A compiled validator per parameter schema (the Rust one: cheap to import and run).
    A schema that does not compile validates nothing; lint reports it."""
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _validators:
        import jsonschema_rs

        try:
            _validators[key] = jsonschema_rs.validator_for(json.loads(key))
        except Exception:
            _validators[key] = None
    return _validators[key]


_WORD = re.compile(r"[A-Za-z0-9_]+|[^\sA-Za-z0-9_]")


def _grams(text: str) -> set[str]:
    """Words for Latin text, characters and character pairs for CJK."""
    tokens = [t.lower() for t in _WORD.findall(text) if not t.isspace()]
    grams = {t for t in tokens if len(t) > 1 or t.isalnum() or ord(t) > 0x2E7F}
    grams.update(a + b for a, b in itertools.pairwise(tokens) if ord(a[0]) > 0x2E7F)
    return grams


def retrieve(
    corpora: Any, query: str, top_k: int, effective_at: str | None
) -> list[tuple[Passage, float]]:
    """The passages in effect at ``effective_at`` that best overlap the query."""
    wanted = _grams(query)
    scored: list[tuple[float, int, Passage]] = []
    order = 0
    for corpus in corpora:
        for passage in corpus.passages:
            order += 1
            if effective_at and passage.effective_date and passage.effective_date > effective_at:
                continue
            have = _grams(passage.title + " " + passage.text)
            if not wanted or not have:
                continue
            score = len(wanted & have) / len(wanted)
            if score > 0:
                scored.append((-score, order, passage))
    scored.sort(key=lambda x: (x[0], x[1]))
    return [(p, -s) for s, _, p in scored[: max(1, top_k)]]
