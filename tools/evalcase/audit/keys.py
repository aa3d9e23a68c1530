"""Answer keys for the gold oracle and the parrot: what this trusted code reads from a
case's ``JudgeSpec`` and hands to those two agents, never to the agent under test.

A key is plain JSON, one per case, stored by the audit in its own folder and given to the
agent by path (the ``key_file`` option), looked up by the request's ``attempt_key``:

- ``turns``: for each user turn the agent answers (0 = the opening turn), the expected
  calls to make in it, in order, with their arguments as written (the agent's only:
  :func:`agent_turns`). A call to a tool whose
  ``side_effect_policy`` asks for confirmation waits for the first user turn that confirms
  (``EnvSpec.confirmations``), as a correct agent would; every other call is made as early
  as the order allows. The first alternative of ``expected_calls`` is the plan.
  A case with ``gold_evidence`` and a retrieval tool searches for each gold passage
  (:func:`retrievals`, the passage's words as the query) when its plan has no call at
  all, or none to that tool (and its order is not ``exact``); an expected search that
  names no ``query`` gets the gold passages' words.
- ``answer``: a final answer meant to satisfy the case's deterministic answer checks:
  the ``reference`` (exactly, when ``exact_match`` grades the case), then each required
  phrase of ``must_include`` not already in it (the first choice of an any-of item), the
  required citations of ``gold_evidence`` (``doc#passage``), or the JSON reference of a
  ``json_schema`` case. Without any of these: a neutral closing sentence.
- ``bridge``: what the gold says at the end of a turn before the last one (it asks the
  user to confirm, without promising anything).
- ``first_user``: how many user messages the request holds at the opening turn (the
  history's user turns plus one), so the agent knows which turn it is in.

**Two actors** (docs/audit.md#two-actors): when the plan has calls with ``actor: user``
(the user's own tools, ``user_simulator.tools``), the gold is played by both sides, in
the plan's order: the plan is cut into segments, each the user's calls then the agent's
calls that follow them (:func:`plan_turns`), one user turn per segment. The user's calls
are never in the agent's key; :func:`staged` gives the task as the audit runs it: its
user turns scripted (the case's opening turn, then ``Done.``), each making its segment's
user calls before it is sent, as a replay user would. What the case scripts for the user
otherwise (its later turns, their ``when``) is not played.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from evalcase.contract.task import ExpectedCall, Task
from evalcase.grade.graders._util import text_values
from evalcase.grade.spec import as_list, grader_config, options_of

NEUTRAL = "I have handled your request as described."
USER_DONE = "Done."  # the scripted user's turn after it made its calls (two actors)
BRIDGE = "Before I go on, please confirm that you want me to proceed."


def gold_answer(task: Task) -> str:
    spec = task.judge
    text = spec.text if isinstance(spec.text, Mapping) else {}
    exact = grader_config(spec, "exact_match")
    if exact is not None:
        expected = text_values(spec, options_of(spec, "exact_match"), "expected", "reference")
        first = next((e for e in expected if isinstance(e, str)), None)
        if first is not None:
            return first
    parts: list[str] = []
    reference = text.get("reference")
    if grader_config(spec, "json_schema") is not None and reference is not None:
        return reference if isinstance(reference, str) else json.dumps(reference)
    for item in as_list(reference):
        if isinstance(item, str) and item.strip():
            parts.append(item.strip())
    answer = " ".join(parts)
    required = text_values(spec, options_of(spec, "must_include"), "values", "must_include")
    missing = []
    for item in required:
        choices = [str(c) for c in as_list(item)]
        if choices and not any(c in answer for c in choices):
            missing.append(choices[0])
    missing += [f"[{c}]" for c in _required_citations(spec.rag) if c not in answer]
    return _within_last_sentence(answer, missing) or NEUTRAL


def _within_last_sentence(answer: str, phrases: list[str]) -> str:
    """``answer`` with ``phrases`` added inside its last sentence (before its final
    stop), so a sentence-count constraint the reference meets still holds."""
    if not phrases:
        return answer
    added = "（" + "、".join(phrases) + "）" if _cjk(answer) else " (" + ", ".join(phrases) + ")"
    stripped = answer.rstrip()
    if stripped and stripped[-1] in "。．.!?！？":
        return stripped[:-1] + added + stripped[-1]
    return (stripped + added).strip()


def _cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def _required_citations(rag: Mapping[str, Any]) -> list[str]:
    out = []
    for item in as_list(rag.get("gold_evidence") if isinstance(rag, Mapping) else None):
        if isinstance(item, Mapping) and item.get("required") and item.get("passage_id"):
            doc = item.get("doc_id")
            out.append(f"{doc}#{item['passage_id']}" if doc else str(item["passage_id"]))
    return out


def _confirmed_tools(task: Task) -> frozenset[str]:
    return frozenset(p.tool for p in task.judge.side_effect_policies if p.confirmation_required)


def two_actors(task: Task) -> bool:
    """Whether the plan (the first alternative of ``expected_calls``) has user calls."""
    plans = task.judge.expected_calls.any_of if task.judge.expected_calls else ()
    return bool(plans) and any(c.actor == "user" for c in plans[0].calls)


def _segments(task: Task) -> list[list[dict[str, Any]]]:
    """Two actors: the plan cut into segments, each the user's calls (``actor: user``)
    then the agent's that follow them (the first segment's user calls may be none)."""
    out: list[list[dict[str, Any]]] = [[]]
    for call in task.judge.expected_calls.any_of[0].calls if task.judge.expected_calls else ():
        made = {"tool": call.tool, "args": _jsonable(call.args)}
        if call.actor == "user":
            if any(c.get("actor") != "user" for c in out[-1]):
                out.append([])
            made["actor"] = "user"
        out[-1].append(made)
    return out


def agent_turns(turns: Sequence[Sequence[Mapping[str, Any]]]) -> list[list[dict[str, Any]]]:
    """The agent's calls of each turn: what its answer key holds (no user call)."""
    return [[dict(c) for c in turn if c.get("actor") != "user"] for turn in turns]


def staged(task: Task, turns: Sequence[Sequence[Mapping[str, Any]]]) -> Task:
    """The task as the audit runs it with ``turns`` (the gold's, or a mutant's): with two
    actors, one scripted user turn per turn, each making that turn's user calls before
    it is sent (module doc); a case of one actor as it is."""
    if not two_actors(task):
        return task
    opening = task.agent.user_turns[0] if task.agent.user_turns else USER_DONE
    texts = tuple(opening if i == 0 else USER_DONE for i in range(max(1, len(turns))))
    calls = tuple(
        tuple(
            ExpectedCall(str(c["tool"]), dict(c.get("args") or {}), "user")
            for c in turn
            if c.get("actor") == "user"
        )
        for turn in turns
    )
    env = replace(
        task.env,
        user_calls=calls if any(calls) else (),
        user_conditions=(),
        confirmations=tuple(i for i in task.env.confirmations if i < len(texts)),
    )
    return replace(task, agent=replace(task.agent, user_turns=texts), env=env)


def plan_turns(task: Task) -> list[list[dict[str, Any]]]:
    """The expected calls of the first plan, spread over the user turns (module doc)."""
    if two_actors(task):
        return _segments(task)
    turns = max(1, len(task.agent.user_turns))
    out: list[list[dict[str, Any]]] = [[] for _ in range(turns)]
    plans = task.judge.expected_calls.any_of if task.judge.expected_calls else ()
    searches = retrievals(task)
    if not plans or not plans[0].calls:
        out[0] = searches
        return out
    tool = retrieval_tool(task)
    query = " ".join(str(s["args"]["query"]) for s in searches)
    if searches and plans[0].order != "exact" and all(c.tool != tool for c in plans[0].calls):
        out[0] = list(searches)  # evidence the answer must cite is searched for first
    confirming = sorted(i for i in task.env.confirmations if 0 <= i < turns)
    needs_confirmation = _confirmed_tools(task)
    at = 0
    for call in plans[0].calls:
        if call.tool in needs_confirmation and confirming:
            later = [i for i in confirming if i >= at]
            at = later[0] if later else at
        args = _jsonable(call.args)
        if call.tool == tool and query and isinstance(args, dict) and "query" not in args:
            args["query"] = query  # a search the key leaves open: the gold passages' words
        out[at].append({"tool": call.tool, "args": args})
    return out


def retrieval_tool(task: Task) -> str | None:
    """A tool of the case the built-in retrieval answers (it takes a ``query``)."""
    return next(
        (
            name
            for name, b in sorted(task.env.tools.items())
            if b.default is None
            and isinstance(b.parameters.get("properties"), Mapping)
            and "query" in b.parameters["properties"]
        ),
        None,
    )


def retrievals(task: Task) -> list[dict[str, Any]]:
    """For a case without expected calls but with ``gold_evidence``: one search per gold
    passage with a retrieval tool of the case (a tool the built-in retrieval answers: it
    takes a ``query``), the passage's own words as the query, so the evidence the answer
    rests on is retrieved as a correct agent would."""
    evidence = task.judge.gold_evidence
    tool = retrieval_tool(task)
    if not evidence or tool is None:
        return []
    passages = {(p.doc_id, p.passage_id): p for c in task.env.corpora for p in c.passages}
    out = []
    for item in evidence:
        found = passages.get((str(item.doc_id), str(item.passage_id)))
        if found is None:
            found = next(
                (p for (_, pid), p in passages.items() if pid == str(item.passage_id)), None
            )
        if found is not None:
            out.append({"tool": tool, "args": {"query": f"{found.title} {found.text}".strip()}})
    return out


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def key_for(task: Task) -> dict[str, Any]:
    history_users = sum(1 for turn in task.agent.history if turn.role == "user")
    return {
        "turns": agent_turns(plan_turns(task)),
        "answer": gold_answer(task),
        "bridge": BRIDGE,
        "first_user": history_users + 1,
    }


def keys_for(tasks: Sequence[Task]) -> dict[str, dict[str, Any]]:
    """attempt_key -> key, for every task (the gold and the parrot read this file)."""
    return {task.agent.attempt_key: key_for(task) for task in tasks}
