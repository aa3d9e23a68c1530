"""Gold mutants: the answer key changed by one call, which the case's graders must fail
(docs/audit.md, "Gold mutants").

Two kinds, each one attempt of the gold oracle (:func:`evalcase.audit.agents.gold`) with
its own answer key, run as the audit's ``mutants`` agent:

- **drop-one** (``drop``): the gold's plan (the first alternative of ``expected_calls``)
  without its call number *n* (1-based), one mutant per expected call. A pass means the
  call is not needed or nothing checks it. A case declares a call redundant by its tool
  (``audit: {redundant_calls: [tool], reason: ...}``): no drop mutant for that tool's calls.
- **foreign write** (``foreign``): the gold plus one write on an entity the case does not
  concern, made right after the gold's own call of that tool (before any call that may
  end the conversation, a transfer say). A pass is **collateral damage**: the graders
  let a write outside the task go unseen (tau2-bench #459). Determined from the contract:

  - a *write tool* is a tool offered to the agent whose fixture declares
    ``side_effect: true``;
  - an *entity* is an entry of a *keyed collection*: a top-level mapping of the initial
    state whose values are all mappings (``users: {u1: {...}, u2: {...}}``); its ID is its
    key;
  - the IDs *the case concerns* are the keys that occur as a value, a mapping key or a
    dotted path segment anywhere in the expected calls (every alternative) or the
    ``final_state_check`` (its ``unchanged`` list aside: what must not change is what the
    case does not concern);
  - a parameter is *ID-like* for a collection when its name is the collection's key
    field (:func:`key_fields`), its schema's ``enum`` holds one of its keys, or its
    ``pattern`` matches every key;
  - a write tool the gold calls: the gold's own first call, its anchor argument (a
    concerned key) moved to an unconcerned key, and every other ID-like or concerned
    argument drawn from that entity (:func:`_related`), the rest kept; placed right
    after the gold's call;
  - a write tool the gold never calls (tau2-bench #459's ``suspend_line``): its required
    parameters drawn from an unconcerned entity, the schema's enum/default/examples and
    the gold's values for the same names; placed first. One that cannot be drawn is a
    warning (:func:`foreign_skips`), never a finding. One mutant per write tool.

  A foreign write the environment refused or that changed nothing proves nothing: the
  mutant's outcome is then ``inconclusive`` (a warning, never a finding).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from evalcase.audit.keys import agent_turns, key_for, plan_turns, staged
from evalcase.audit.schema_values import placeholder
from evalcase.contract.task import Task
from evalcase.pii import strings

SEPARATOR = "~"  # a mutant's case ID: <case_id>~drop3, <case_id>~foreign-<tool>


@dataclass(frozen=True)
class Mutant:
    origin: Task  # the case, as graded
    task: Task  # the case as run: its own case ID and attempt key
    kind: str  # drop | foreign
    tool: str
    index: int = 0  # drop: the dropped call's number in the plan (1-based)
    entity: str = ""  # foreign: collection/key written
    args: Mapping[str, Any] | None = None  # foreign: the write's arguments
    turns: tuple[tuple[Mapping[str, Any], ...], ...] = ()  # both actors' (keys.plan_turns)
    actor: str = "agent"  # drop: who makes the dropped call (two actors: agent or user)

    @property
    def name(self) -> str:
        return f"drop{self.index}" if self.kind == "drop" else f"foreign-{self.tool}"

    def key(self) -> dict[str, Any]:
        """The gold oracle's answer key: the agent's calls only (the user's are scripted)."""
        return {**key_for(self.origin), "turns": agent_turns(self.turns)}

    def describe(self) -> str:
        if self.kind == "drop":
            whose = ", the user's" if self.actor == "user" else ""
            return f"the gold without call {self.index} ({self.tool}{whose})"
        return f"the gold plus {self.tool} on {self.entity}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mutant": self.name, "kind": self.kind, "tool": self.tool}
        if self.kind == "drop":
            out["index"] = self.index
            if self.actor != "agent":
                out["actor"] = self.actor
        else:
            out["entity"] = self.entity
            out["args"] = dict(self.args or {})
        return out


def redundant(task: Task) -> frozenset[str]:
    """The tools whose expected calls the case declares redundant (``audit.redundant_calls``)."""
    audit = (task.judge.raw or {}).get("audit")
    names = audit.get("redundant_calls") if isinstance(audit, Mapping) else None
    return frozenset(str(n) for n in names) if isinstance(names, list) else frozenset()


def _variant(task: Task, name: str, turns: list[list[dict[str, Any]]]) -> Task:
    """The mutant as run: its own case ID and attempt key, its user side staged (two
    actors: the user's calls of ``turns`` scripted, keys.staged)."""
    key = hashlib.blake2b(f"{task.agent.attempt_key}:{name}".encode(), digest_size=12)
    return staged(
        replace(
            task,
            case_id=f"{task.case_id}{SEPARATOR}{name}",
            agent=replace(task.agent, attempt_key=key.hexdigest()),
        ),
        turns,
    )


def _freeze(turns: list[list[dict[str, Any]]]) -> tuple[tuple[Mapping[str, Any], ...], ...]:
    return tuple(tuple(t) for t in turns)


def drops(task: Task) -> list[Mutant]:
    turns = plan_turns(task)
    plans = task.judge.expected_calls.any_of if task.judge.expected_calls else ()
    if not plans or not plans[0].calls:
        return []
    skip = redundant(task)
    out = []
    number = 0
    for t, calls in enumerate(turns):
        for c, call in enumerate(calls):
            if not any(call["tool"] == e.tool for e in plans[0].calls):
                continue  # a search the key adds for gold evidence, not an expected call
            number += 1
            if call["tool"] in skip:
                continue
            mutated = [list(x) for x in turns]
            del mutated[t][c]
            actor = "user" if call.get("actor") == "user" else "agent"
            m = Mutant(task, task, "drop", str(call["tool"]), number, turns=_freeze(mutated))
            m = replace(m, actor=actor)
            out.append(replace(m, task=_variant(task, m.name, mutated)))
    return out


def _words(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _words(k)
            yield from _words(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _words(v)
    elif isinstance(value, str):
        yield value
        yield from value.replace("{", ".").replace("}", ".").replace("'", ".").split(".")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def concerned(task: Task) -> frozenset[str]:
    """Every word of the expected calls and the final_state_check but its ``unchanged``."""
    plans = task.judge.expected_calls.any_of if task.judge.expected_calls else ()
    calls = [{"tool": c.tool, "args": c.args} for p in plans for c in p.calls]
    check = (task.judge.raw or {}).get("final_state_check")
    if isinstance(check, Mapping):  # what must stay unchanged is what the case does not concern
        check = {k: v for k, v in check.items() if k != "unchanged"}
    return frozenset(_words(json.loads(json.dumps([calls, check], default=str))))


def collections(state: Mapping[str, Any]) -> dict[str, list[str]]:
    """Keyed collections of a state: top-level mappings whose values are all mappings."""
    out = {}
    for name, value in state.items():
        if (
            isinstance(value, Mapping)
            and value
            and all(isinstance(v, Mapping) for v in value.values())
        ):
            out[str(name)] = sorted(str(k) for k in value)
    return out


def key_fields(state: Mapping[str, Any]) -> dict[str, str]:
    """Each keyed collection's key field: the field every entry has, equal to its key
    (``users: {u1: {user_id: u1}}``: ``user_id``); the first in sorted order if several."""
    out = {}
    for name in collections(state):
        entries = state[name]
        common = set.intersection(*(set(map(str, e)) for e in entries.values()))
        keyed = sorted(f for f in common if all(str(e[f]) == str(k) for k, e in entries.items()))
        if keyed:
            out[name] = keyed[0]
    return out


CANDIDATES = 50  # unconcerned entities tried per foreign write, in sorted order


class _State:
    """The initial state's collections, key fields and entries' words, each worked out once."""

    def __init__(self, state: Mapping[str, Any]) -> None:
        self.state = state
        self.keyed = collections(state)
        self.fields = key_fields(state)
        self._words: dict[tuple[str, str], frozenset[str]] = {}

    def words(self, collection: str, key: str) -> frozenset[str]:
        if (collection, key) not in self._words:
            self._words[collection, key] = frozenset(_words(self.state[collection][key]))
        return self._words[collection, key]


def users_own(st: _State) -> frozenset[str]:
    """Two actors: the keys of the entities the user's own state names (module doc)."""
    own = {v for name, part in st.state.items() if name not in st.keyed for v in strings(part) if v}
    if not own:
        return frozenset()
    values = {(c, k): set(strings(st.state[c][k])) for c, ids in st.keyed.items() for k in ids}
    found: set[tuple[str, str]] = set()
    for collection, ids in st.keyed.items():
        for value in own:
            holders = [k for k in ids if value in values[collection, k]]
            if len(holders) == 1:  # a value that identifies one entry of the collection
                found.add((collection, holders[0]))
    keys = {k for _, k in found}
    near = {  # one step: what those entries name, and the entries that name them
        k for (c, k), held in values.items() if held & keys or any(k in values[f] for f in found)
    }
    return frozenset(keys | near)


def _id_collection(name: str, schema: Any, st: _State) -> str | None:
    """The collection a parameter names an entity of (module doc), or None."""
    keyed = st.keyed
    for collection, field in sorted(st.fields.items()):
        if field == name:
            return collection
    if not isinstance(schema, Mapping):
        return None
    enum = schema.get("enum")
    if isinstance(enum, list):
        values = {str(v) for v in enum}
        for collection, ids in sorted(keyed.items()):
            if values & set(ids):
                return collection
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error:
            return None
        for collection, ids in sorted(keyed.items()):
            if all(compiled.search(i) for i in ids):
                return collection
    return None


def _found(value: Any, name: str) -> Iterator[Any]:
    """The values under a field ``name`` anywhere in ``value``, in document order."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if str(k) == name:
                yield v
            yield from _found(v, name)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _found(v, name)


def _id_text(value: Any) -> bool:
    """A string, or a non-empty list of strings: what an ID argument can be."""
    if isinstance(value, list):
        return bool(value) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def _related(
    name: str, collection: str | None, anchor: tuple[str, str], st: _State, size: int
) -> Any:
    """An argument drawn from the anchor entity (module doc, steps 1 to 3), or None."""
    home, key = anchor
    if collection == home:
        return key
    record = st.state[home][key]
    if collection is None and not name.endswith(("_id", "_ids")):
        return None  # a value to write (an address, a count), not one that names something
    own = next((v for v in _found(record, name) if _id_text(v)), None)
    if own is not None:  # an ID names: a string or strings, never a count or a record
        return own
    if name.endswith("s") and len(name) > 1:  # item_ids: the entity's own item_id values
        many = [v for v in _found(record, name[:-1]) if isinstance(v, str)]
        if many:
            return many[: max(1, size)]
    if collection is not None:
        ids = st.keyed[collection]
        mentioned = next((i for i in ids if i in st.words(home, key)), None)
        if mentioned is not None:
            return mentioned
        owner = next((i for i in ids if key in st.words(collection, i)), None)
        if owner is not None:
            return owner
    return None


def _gold_values(task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {}
    plans = task.judge.expected_calls.any_of if task.judge.expected_calls else ()
    for plan in plans:
        for call in plan.calls:
            for name, value in (call.args or {}).items():
                out.setdefault(str(name), value)
    return out


def _draw_new(
    task: Task, tool: str, mentioned: frozenset[str], st: _State
) -> tuple[dict[str, Any], str] | str:
    """Arguments for a write tool the gold never calls, and the entity, or why not."""
    keyed = st.keyed
    schema = task.env.tools[tool].parameters or {}
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    required = [str(r) for r in schema.get("required") or []] if isinstance(schema, Mapping) else []
    ids = {p: _id_collection(p, props.get(p), st) for p in required}
    listed = set()  # customer_ids: an array of IDs, drawn as a list of one
    for p in required:
        spec = props.get(p)
        array = isinstance(spec, Mapping) and spec.get("type") == "array"
        if ids[p] is None and p.endswith("s") and array and isinstance(spec, Mapping):
            ids[p] = _id_collection(p[:-1], spec.get("items"), st)
            if ids[p]:
                listed.add(p)
    anchor = next((p for p in required if ids[p]), None)
    if anchor is None:
        return "no required parameter names an entity of the state"
    home = str(ids[anchor])
    free = [k for k in keyed[home] if k not in mentioned][:CANDIDATES]
    if not free:
        return f"every entry of {home} is one the case concerns"
    gold = _gold_values(task)
    drawn: list[tuple[dict[str, Any], str]] = []
    why = ""
    for key in free:
        args: dict[str, Any] = {}
        for p in required:
            found = props.get(p)
            schema_of: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
            value = _related(p, ids[p], (home, key), st, 1)
            if value is None and ids[p] is not None:
                value = next((i for i in keyed[str(ids[p])] if i not in mentioned), None)
            if p in listed and value is not None and not isinstance(value, list):
                value = [value]
            if value is None and isinstance(schema_of.get("enum"), list) and schema_of["enum"]:
                value = schema_of["enum"][0]
            if value is None and "default" in schema_of:
                value = schema_of["default"]
            examples = schema_of.get("examples")
            if value is None and isinstance(examples, list) and examples:
                value = examples[0]
            if value is None:
                value = gold.get(p)
            if value is None:  # a count or a record: the entity's own, as a last resort
                value = next((v for v in _found(st.state[home][key], p) if v is not None), None)
            if value is None and ids[p] is None:  # free text or an amount: a placeholder
                value = placeholder(schema_of)
            if value is None:
                why = why or (
                    f"no value for its required parameter {p} (not an entity's ID or field,"
                    " no enum, default or examples in its schema, no gold call passes it,"
                    " not free text or a number)"
                )
                break
            args[p] = value
        else:
            drawn.append((args, f"{home}/{key}"))
            if not set(_words(args)) & mentioned:
                break  # the first that names nothing of the case's
    if not drawn:
        return why
    clean = [d for d in drawn if not set(_words(d[0])) & mentioned]
    return (clean or drawn)[0]


def _draw_called(
    task: Task, call: Mapping[str, Any], mentioned: frozenset[str], st: _State
) -> tuple[dict[str, Any], str] | None:
    """The gold's own call moved to one unconcerned entity and its related ones."""
    keyed = st.keyed
    gold_args = dict(call["args"])
    schema = task.env.tools[str(call["tool"])].parameters or {}
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    props = props if isinstance(props, Mapping) else {}
    anchor = None
    for name, value in sorted(gold_args.items()):
        home = next(
            (c for c, ids in sorted(keyed.items()) if isinstance(value, str) and value in ids),
            None,
        )
        if home is not None and value in mentioned:
            anchor = (name, home)
            break
    if anchor is None:
        return None
    name, home = anchor
    free = [k for k in keyed[home] if k not in mentioned][:CANDIDATES]
    if not free:
        return None
    options = []
    for key in free:
        args = dict(gold_args)
        args[name] = key
        for p, value in sorted(gold_args.items()):
            if p == name:
                continue
            collection = _id_collection(p, props.get(p), st)
            if collection is None and not p.endswith(("_id", "_ids")):
                continue  # not an ID: the gold's value stays (a value the tool writes)
            size = len(value) if isinstance(value, list) else 1
            new = _related(p, collection, (home, key), st, size)
            if new is not None:
                args[p] = new
        options.append((args, f"{home}/{key}"))
        if not set(_words(args)) & mentioned:
            break  # the first that names nothing of the case's
    clean = [o for o in options if not set(_words(o[0])) & mentioned]
    return (clean or options)[0]


def _foreign_plan(task: Task) -> tuple[list[Mutant], list[str]]:
    offered = {t.name for t in task.agent.tools}
    writes = {n for n, b in task.env.tools.items() if b.side_effect and n in offered}
    st = _State(task.env.initial_state)
    keyed = st.keyed
    if not writes or not keyed:
        return [], []
    mentioned = concerned(task) | (users_own(st) if task.env.user_tools else frozenset())
    turns = plan_turns(task)
    out = []
    skipped: list[str] = []
    done: set[str] = set()
    for at, calls in enumerate(turns):
        for position, call in enumerate(calls):
            tool = str(call["tool"])
            if call.get("actor") == "user":
                continue  # the user's own tools: never a foreign write (module doc)
            if tool not in writes or tool in done or not isinstance(call.get("args"), dict):
                continue
            done.add(tool)
            made = _draw_called(task, call, mentioned, st)
            if made is None:
                continue
            args, entity = made
            mutated = [list(x) for x in turns]
            mutated[at].insert(position + 1, {"tool": tool, "args": args})
            m = Mutant(task, task, "foreign", tool, entity=entity, args=args)
            m = replace(m, turns=_freeze(mutated))
            out.append(replace(m, task=_variant(task, m.name, mutated)))
    for tool in sorted(writes - done):
        drawn = _draw_new(task, tool, mentioned, st)
        if isinstance(drawn, str):
            skipped.append(f"no foreign write with {tool}, which the gold never calls: {drawn}")
            continue
        args, entity = drawn
        mutated = [list(x) for x in turns]
        mutated[0].insert(0, {"tool": tool, "args": args})
        m = Mutant(task, task, "foreign", tool, entity=entity, args=args)
        m = replace(m, turns=_freeze(mutated))
        out.append(replace(m, task=_variant(task, m.name, mutated)))
    return out, skipped


# A task's mutants and skips, by the task object: the audit asks for them four times a
# task (its answer keys, its run, its grading, its warnings), and drawing the foreign
# writes reads the whole state (retail: 0.1 s a task). Tasks are frozen; the object is
# kept with its entry, so an ID is never reused while the entry lives.
_PLANS: dict[int, tuple[Task, tuple[Mutant, ...], tuple[str, ...]]] = {}
_PLANS_KEPT = 4096


def _planned(task: Task) -> tuple[tuple[Mutant, ...], tuple[str, ...]]:
    hit = _PLANS.get(id(task))
    if hit is not None and hit[0] is task:
        return hit[1], hit[2]
    foreign, skipped = _foreign_plan(task)
    made = (*drops(task), *foreign)
    if len(_PLANS) >= _PLANS_KEPT:
        _PLANS.clear()
    _PLANS[id(task)] = (task, made, tuple(skipped))
    return made, tuple(skipped)


def foreigns(task: Task) -> list[Mutant]:
    return [m for m in _planned(task)[0] if m.kind == "foreign"]


def foreign_skips(task: Task) -> list[str]:
    """Why a write tool the gold never calls gets no foreign write (warnings)."""
    return list(_planned(task)[1])


def mutants_for(task: Task) -> list[Mutant]:
    """The drop-one mutants, then the foreign writes (worked out once per task object)."""
    return list(_planned(task)[0])


def origin_id(case_id: str) -> str:
    return case_id.split(SEPARATOR, 1)[0]
