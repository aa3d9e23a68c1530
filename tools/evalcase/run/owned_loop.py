"""One attempt of an agent that runs its own loop (``[run.agents.NAME] loop = "agent"``).

The runner's own loop asks the agent for one assistant message at a time and executes
its calls; an agent-owned loop (a framework, a coding CLI) decides itself which proposed
call runs. Per attempt the runner serves it, and ends with the attempt
(:mod:`evalcase.run.attempt_host`):

- the case's tools over MCP (streamable HTTP), answered by the attempt's
  ``Environment`` exactly as in the runner's loop;
- an OpenAI-compatible model proxy forwarding to ``upstream``, holding the key and
  recording every model call (:mod:`evalcase.run.model_proxy`).

The agent is a ``cmd:`` program, isolated as any ``cmd:`` agent (a fresh directory, a
minimal environment, the sandbox where bubblewrap works), with these variables:
``OPENAI_BASE_URL`` (the proxy), ``OPENAI_API_KEY`` (the attempt's token, never a real
key), ``EVALCASE_MCP_URL`` (the MCP endpoint), ``EVALCASE_MCP_STDIO`` (the command line of
a stdio shim to the same endpoint, :mod:`evalcase.run.mcp_stdio`, for agents that take
only stdio servers) and, when ``upstream.model`` is set, ``OPENAI_MODEL``. Sandboxed,
the network is off and both servers are reached at the same kind of
``http://127.0.0.1:PORT`` URLs through a relay inside the sandbox
(:mod:`evalcase.run.relay`) to a unix socket in the attempt's folder.

Turns go over stdin and stdout as for any ``cmd:`` agent: one request line per user turn
(:func:`evalcase.run.protocol.build_request`: the system prompt, context, params, tool
cards, and the conversation so far as system, user and assistant messages), one reply
line ``{"role": "assistant", "content": ...}`` when the agent's turn ends. A reply with
``tool_calls`` is a ``protocol`` error: tools are called over MCP. The runner's
conversation logic drives the turns (:class:`evalcase.run.conversation.Conversation`):
scripted and reactive turns, the simulated user, ``confirms: true`` (a call made after a
confirming turn was sent is ``user_confirmed``), ``ends_conversation``.

While it waits for the agent's reply the attempt's thread answers the servers' requests
(a queue and a wake-up pipe beside the agent's output), so the ``Environment`` stays on
one thread under the attempt's deadline and CEL bounds.

What is recorded: ``loop: "agent"``; ``model_calls`` (each model call through the
proxy); ``proposals`` (each tool call a model proposed, linked to the call that
executed it: by the tool-call id when the client sent one in the MCP request's
``_meta``, else by tool name and arguments, the earliest unlinked proposal, with the
ambiguity stated when identical proposals were open at once); ``calls`` are the calls
the agent made through MCP, nothing else. A proposal no call answers (a guardrail, an
approval, an interrupt refused it) stays a proposal: in the trace (``proposal_unexecuted``),
the report and the viewer, never executed, never counted as a call.
"""

from __future__ import annotations

import contextlib
import json
import selectors
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcase import keys
from evalcase.run import isolation
from evalcase.run.adapters.cmd import CmdSession
from evalcase.run.attempt_host import AttemptHost, Item
from evalcase.run.environment import Environment, Recorder
from evalcase.run.mcp_server import ToolAnswer
from evalcase.run.model_proxy import Budget, Upstream, proposals_of, reply_text
from evalcase.run.protocol import AgentFault, Reply, parse_reply_text, tool_specs

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob

LOOP = "agent"
RELAY = Path(__file__).with_name("relay.py")
STDIO_SHIM = Path(__file__).with_name("mcp_stdio.py")
RELAY_PORT = 8765  # the relay's port on the sandbox's own loopback (a private namespace)
AGENT_VARIABLES = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "EVALCASE_MCP_URL",
    "EVALCASE_MCP_STDIO",
    "OPENAI_MODEL",
)


def is_owned(options: Mapping[str, Any]) -> bool:
    return options.get("loop") == LOOP


@dataclass(frozen=True)
class LoopSettings:
    upstream: Upstream
    key_env: str | None
    budget: Budget


def _positive(value: Any, name: str, kind: type) -> str | None:
    if value is None:
        return None
    ok = isinstance(value, int | float) if kind is float else isinstance(value, int)
    if isinstance(value, bool) or not ok or value <= 0:
        return f"budget.{name} must be a positive {'number' if kind is float else 'integer'}"
    return None


def settings_problem(spec: str, options: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``loop = "agent"`` entry, or None (before the run)."""
    loop = options.get("loop")
    if loop is None or loop == "runner":
        return None
    if loop != LOOP:
        return f'loop must be "agent" or "runner", not {loop!r}'
    if not spec.startswith("cmd:"):
        return 'loop = "agent" works with cmd: agents (a program that owns its loop)'
    upstream = options.get("upstream")
    if not isinstance(upstream, Mapping):
        return (
            'loop = "agent" needs upstream = { base_url = "http://.../v1", api_key_env = '
            '"NAME" }: where the model proxy forwards the agent\'s model calls'
        )
    base = upstream.get("base_url")
    if not isinstance(base, str) or not base.startswith(("http://", "https://")):
        return f"upstream.base_url must be an http:// or https:// URL, not {base!r}"
    extra = set(upstream) - {"base_url", "api_key_env", "model"}
    if extra:
        return f"upstream has unknown keys {sorted(extra)}: base_url, api_key_env, model"
    key_env = upstream.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not key_env):
        return "upstream.api_key_env must name an environment variable"
    if isinstance(key_env, str) and not keys.get(key_env):
        return f"upstream.api_key_env names {key_env}, which is not set (export {key_env}=...)"
    budget = options.get("budget") or {}
    if not isinstance(budget, Mapping):
        return "budget must be a table: { model_calls = N, tokens = N, cost = X }"
    extra = set(budget) - {"model_calls", "tokens", "cost"}
    if extra:
        return f"budget has unknown keys {sorted(extra)}: model_calls, tokens, cost"
    for name, kind in (("model_calls", int), ("tokens", int), ("cost", float)):
        found = _positive(budget.get(name), name, kind)
        if found:
            return found
    from evalcase.run import mcp_server

    return mcp_server.missing()


def settings(options: Mapping[str, Any]) -> LoopSettings:
    upstream = dict(options.get("upstream") or {})
    key_env = upstream.get("api_key_env")
    budget = dict(options.get("budget") or {})
    return LoopSettings(
        Upstream(
            str(upstream["base_url"]).rstrip("/"),
            keys.get(str(key_env)) if key_env else None,
            str(upstream["model"]) if upstream.get("model") else None,
        ),
        str(key_env) if key_env else None,
        Budget(budget.get("model_calls"), budget.get("tokens"), budget.get("cost")),
    )


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments


class Ledger:
    """Model calls and proposals, and which call executed which proposal."""

    def __init__(self) -> None:
        self.model_calls: list[dict[str, Any]] = []
        self.proposals: list[dict[str, Any]] = []

    def add_model_call(self, entry: Mapping[str, Any]) -> list[dict[str, Any]]:
        index = len(self.model_calls)
        self.model_calls.append({"index": index, **entry})
        added = []
        for raw in proposals_of(str(entry.get("endpoint")), entry.get("response")):
            try:
                args: Any = json.loads(raw["arguments"] or "{}")
            except ValueError:
                args = raw["arguments"]
            proposal = {
                "index": len(self.proposals),
                "model_call": index,
                "id": raw["id"],
                "tool": raw["tool"],
                "args": args,
                "executed": False,
                "call": None,
                "link": None,
                "ambiguity": None,
                "_key": (raw["tool"], _canonical(raw["arguments"])),
            }
            self.proposals.append(proposal)
            added.append(proposal)
        return added

    def link(self, tool: str, arguments: str, meta_id: str | None) -> dict[str, Any] | None:
        """The proposal a call answers (marked executed), or None (a call no model
        proposed through the proxy)."""
        open_ = [p for p in self.proposals if not p["executed"]]
        if meta_id is not None:
            for p in open_:
                if p["id"] == meta_id and p["tool"] == tool:
                    p.update(executed=True, link="id")
                    return p
        key = (tool, _canonical(arguments))
        same = [p for p in open_ if p["_key"] == key]
        if not same:
            return None
        chosen = same[0]
        chosen.update(executed=True, link="name_args")
        twins = [p for p in same if p["model_call"] == chosen["model_call"]]
        if len(twins) > 1:
            chosen["ambiguity"] = (
                f"{len(twins)} identical proposals of {tool} in model call "
                f"{chosen['model_call']}: linked to the first open one"
            )
        return chosen

    def proposals_json(self) -> list[dict[str, Any]]:
        return [{k: v for k, v in p.items() if k != "_key"} for p in self.proposals]


class OwnedSession(CmdSession):
    """A ``cmd:`` session whose reply waits also serve the attempt's servers."""

    def __init__(
        self,
        argv: list[str],
        workdir: Path,
        limit: int,
        env: Mapping[str, str],
        host: AttemptHost,
        serve: Callable[[Item], None],
    ) -> None:
        super().__init__(argv, workdir, limit, env)
        self.host = host
        self.serve = serve
        self.serving = True
        self.selector.register(host.wake_r, selectors.EVENT_READ, "wake")

    def _drain(self, which: str) -> bool:
        if which != "wake":
            return super()._drain(which)
        self.host.drain_wake()
        if self.serving:
            for item in self.host.pending():
                self.serve(item)
        return True

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        self.serve_pending()
        return super().reply(request, deadline)

    def send_line(self, line: bytes, deadline: float) -> None:
        self._write(line, deadline)

    def read_reply_line(self, deadline: float) -> bytes:
        return self._read_line(deadline)

    def serve_pending(self) -> None:
        if self.serving:
            for item in self.host.pending():
                self.serve(item)

    def close(self) -> None:
        self.serving = False
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(self.host.wake_r)
        super().close()


class OwnedLoop:
    """The servers, the agent and the ledger of one attempt (see the module doc)."""

    def __init__(self, job: AttemptJob, env: Environment, recorder: Recorder, deadline: float):
        self.job = job
        self.env = env
        self.recorder = recorder
        self.deadline = deadline
        self.ledger = Ledger()
        self.confirmed = False
        self.usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": None}
        self.budget_spent: str | None = None
        self.host: AttemptHost | None = None
        self.session: OwnedSession | None = None
        self.late = 0

    # -- what the servers hand the attempt's thread ----------------------------------
    def serve(self, item: Item) -> None:
        if item.kind == "tool":
            self._tool(item)
        elif item.kind == "model_call":
            self._model_call(item.fields)
        elif item.kind == "budget":
            self.recorder.event("budget", message=item.fields.get("message"))
            self.budget_spent = str(item.fields.get("message"))
        else:
            self._refused(item)

    def _refused(self, item: Item) -> None:
        """A request the servers refused (a wrong token, an oversized body...)."""
        if item.kind == "mcp_refused":
            self.recorder.event("mcp_refused", **dict(item.fields))
        else:
            self.recorder.event("proxy_refused", **dict(item.fields))

    def _model_call(self, entry: Mapping[str, Any]) -> None:
        added = self.ledger.add_model_call(entry)
        index = len(self.ledger.model_calls) - 1
        usage = entry.get("usage") or {}
        for name in ("prompt_tokens", "completion_tokens"):
            value = usage.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                self.usage[name] += value
        cost = usage.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            self.usage["cost"] = (self.usage["cost"] or 0) + cost
        self.recorder.event(
            "model_call",
            index=index,
            endpoint=entry.get("endpoint"),
            stream=entry.get("stream"),
            model=entry.get("model"),
            status=entry.get("status"),
            finish_reason=entry.get("finish_reason"),
            usage=dict(usage),
            latency_ms=entry.get("latency_ms"),
            error=entry.get("error"),
        )
        if entry.get("status") == 200:
            self.recorder.event(
                "assistant",
                content=reply_text(str(entry.get("endpoint")), entry.get("response")),
                tool_calls=[{"id": p["id"], "tool": p["tool"]} for p in added],
                finish_reason=entry.get("finish_reason"),
                model_call=index,
            )

    def _tool(self, item: Item) -> None:
        fields = item.fields
        name, arguments = str(fields["tool"]), str(fields["arguments"])
        proposal = self.ledger.link(name, arguments, fields.get("meta_id"))
        call_id = (
            str(proposal["id"]) if proposal and proposal["id"] else f"mcp_{len(self.env.calls) + 1}"
        )
        try:
            message = self.env.call(call_id, name, arguments, user_confirmed=self.confirmed)
        except AgentFault as fault:
            if fault.kind == "unknown_tool" and self.env.calls:
                self._linked(proposal)
                refused = self.env.calls[-1].error
                text = json.dumps({"error": dict(refused or {})}, ensure_ascii=False)
                item.resolve(ToolAnswer(text, True))
                return
            item.resolve(ToolAnswer(fault.message, True))
            raise
        self._linked(proposal)
        record = self.env.calls[-1]
        item.resolve(ToolAnswer(str(message["content"]), not record.valid))

    def _linked(self, proposal: dict[str, Any] | None) -> None:
        if proposal is not None:
            proposal["call"] = len(self.env.calls) - 1
            if proposal["ambiguity"]:
                self.recorder.event(
                    "link_ambiguous", call=proposal["call"], note=proposal["ambiguity"]
                )

    def check(self) -> None:
        """Raise the attempt's error the servers found (a spent budget)."""
        if self.budget_spent is not None:
            raise AgentFault("budget", self.budget_spent)

    # -- the agent ----------------------------------------------------------------------
    def open(self) -> OwnedSession:
        job = self.job
        options = job.adapter_options
        found = settings_problem(job.adapter, options)
        if found is not None:
            raise AgentFault("adapter", found)
        config = settings(options)
        _, target = job.adapter.split(":", 1)
        argv = shlex.split(target)
        if not argv:
            raise AgentFault("adapter", "cmd: needs a program, as in cmd:python agent.py")
        argv = isolation.resolve_argv(argv, Path(str(options.get("cwd") or ".")))
        workdir = Path(tempfile.mkdtemp(prefix="evalcase-agent-")).resolve()
        sandboxed = bool(options.get("sandbox"))
        if sandboxed:
            problem = isolation.sandbox_problem()
            if problem is not None:
                if options.get("require_sandbox"):
                    shutil.rmtree(workdir, ignore_errors=True)
                    raise AgentFault(
                        "adapter", f"the sandbox is required and cannot work: {problem}"
                    )
                sandboxed = False
        try:
            cards = [
                {
                    "name": t["function"]["name"],
                    "description": t["function"]["description"],
                    "parameters": t["function"]["parameters"],
                }
                for t in tool_specs(job.agent)
            ]
            host = AttemptHost(
                cards,
                config.upstream,
                config.budget,
                job.limits.max_reply_bytes,
                self.deadline,
                workdir / ".evalcase.sock" if sandboxed else None,
            )
            self.host = host
            host.start()
            env = isolation.agent_env(
                workdir, options.get("env"), [str(n) for n in options.get("secret_env") or ()]
            )
            for name in AGENT_VARIABLES:
                env.pop(name, None)
            base, mcp = host.urls(RELAY_PORT if sandboxed else None)
            env.update(OPENAI_BASE_URL=base, OPENAI_API_KEY=host.token, EVALCASE_MCP_URL=mcp)
            env["EVALCASE_MCP_STDIO"] = shlex.join([sys.executable, "-I", "-S", str(STDIO_SHIM)])
            if config.upstream.model:
                env["OPENAI_MODEL"] = config.upstream.model
            if sandboxed:
                relay = [
                    sys.executable,
                    "-I",
                    "-S",
                    str(RELAY),
                    str(host.socket_path),
                    str(RELAY_PORT),
                    "--",
                ]
                root = options.get("root")
                argv = isolation.sandbox_argv(
                    relay + argv,
                    workdir,
                    None if root is None else Path(str(root)),
                    False,
                    [str(STDIO_SHIM), *(str(p) for p in options.get("sandbox_paths") or ())],
                )
            isolation.protect_runner()
            self.recorder.event("loop", loop=LOOP, sandboxed=sandboxed)
            self.session = OwnedSession(
                argv, workdir, job.limits.max_reply_bytes, env, host, self.serve
            )
            return self.session
        except BaseException:
            if self.host is not None:
                self.host.stop()
            shutil.rmtree(workdir, ignore_errors=True)
            raise

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        assert self.session is not None
        self.check()
        line = (json.dumps(request, ensure_ascii=False) + "\n").encode("utf-8")
        self.session.send_line(line, deadline)
        while True:
            try:
                text = self.session.read_reply_line(deadline)
            except AgentFault:
                # An agent that gave up because its budget was spent (a client raising
                # on the 429) ends with the budget as its error, not its exit.
                self.session.serve_pending()
                self.check()
                raise
            self.check()
            reply = parse_reply_text(text, self.session.limit)
            if reply.tool_calls:
                raise AgentFault(
                    "protocol",
                    'a loop = "agent" reply carries tool_calls: tools are called over MCP '
                    "(EVALCASE_MCP_URL); reply with the turn's final message only",
                )
            self.session.serve_pending()
            self.check()
            return reply

    def close(self) -> None:
        """End the attempt: from now on every request is refused (and recorded) while
        the agent is ended; then the servers stop and what they saw is recorded."""
        session, host = self.session, self.host
        if host is not None:
            host.end()
            self._late(host)  # a call waiting now is answered, not left to time out
        if session is not None:
            session.serving = False
            with contextlib.suppress(Exception):
                session.close()
        if host is not None:
            host.stop()
            self._late(host)
        self.unexecuted()

    def _late(self, host: AttemptHost) -> None:
        """What the servers handed over after the attempt's last turn: recorded; a tool
        call is answered with an error, never executed."""
        for item in host.pending():
            if item.kind == "tool":
                self.late += 1
                self.recorder.event(
                    "late_call", tool=item.fields.get("tool"), reason="the attempt had ended"
                )
                item.resolve(ToolAnswer("the attempt has ended", True))
            else:  # a model call, a refusal, a spent budget: recorded as ever
                self.serve(item)

    def unexecuted(self) -> None:
        """Each proposal no call answered, in the trace (after the servers stopped)."""
        for p in self.ledger.proposals:
            if not p["executed"]:
                self.recorder.event(
                    "proposal_unexecuted",
                    proposal=p["index"],
                    model_call=p["model_call"],
                    id=p["id"],
                    tool=p["tool"],
                    args=p["args"],
                )

    def stderr_record(self) -> dict[str, Any] | None:
        return self.session.stderr_record() if self.session is not None else None
