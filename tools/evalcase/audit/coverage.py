"""Which criteria of a case a deterministic grader covers, and which rest on the judge.

Criteria are written as text (``expected_behavior``, ``negative_behavior``,
``success_criteria``, ``failure_criteria``) or as keys (``constraints``). Nothing can
read a sentence's meaning without a model, so coverage is matched by **subject**: a
criterion is covered by a deterministic check when it names something that check looks
at, or speaks of what the check is about:

- a tool the case names (available, forbidden, expected, with a side-effect policy):
  ``tool_policy`` when the tool is forbidden or required, ``tool_calls`` when it is
  expected, ``side_effect_policy`` when it has a policy, the ``trace_rule`` grader when
  ``no_forbidden_tool`` is a rule check and the tool is forbidden;
- a phrase of ``must_include`` / ``must_not_include`` / ``promise_phrases`` it quotes;
- a topic word: confirmation (确认, 同意, confirm, consent...), identity (身份, 验证,
  verify...), promises (承诺, 保证, promise, guarantee...), privacy (隐私, 手机号, 泄露,
  personal data, leak...), state changes (状态, 提交, 删除, 修改, state, submit,
  delete, update...), citations (引用, 出处, cite, source...), the answer's form
  (格式, 字数, 句, label, format, sentence...), each met by the graders and rule checks
  that test it (a confirmation criterion by ``no_unconfirmed_side_effect`` or a policy
  with ``confirmation_required``; a state criterion by ``state_match``...).

Each ``constraints`` key that the ``constraints`` grader checks (``max_chars``,
``format``...) is covered when that grader (or the ``format_constraints`` rule check)
runs; other keys (``tone``...) rest on the judge.

A criterion no deterministic check matches rests on the judge when a judged grader
(``llm_rubric``, ``human``) is configured, else on nothing. A P0 case with a negative
behaviour that rests on the judge or on nothing is a warning: the worst outcomes should
not depend on a model's reading alone. The matching is deliberately simple and says what
it matched on, so a reader can check it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalcase.audit import JUDGED_GRADERS
from evalcase.contract.task import JudgeSpec
from evalcase.grade.spec import as_list, grader_configs

KINDS = ("expected_behavior", "negative_behavior", "success_criteria", "failure_criteria")
CONSTRAINT_KEYS = frozenset(
    {"max_chars", "min_chars", "max_sentences", "min_sentences", "format", "must_include",
     "must_not_include"}
)  # fmt: skip

# topic -> (pattern, the checks that test it: grader names or "rule:<check>")
TOPICS: dict[str, tuple[re.Pattern[str], tuple[str, ...]]] = {
    "confirmation": (
        re.compile(r"确认|同意|授权|confirm|consent|approv", re.I),
        ("rule:no_unconfirmed_side_effect", "policy:confirmation"),
    ),
    "identity": (
        re.compile(r"身份|验证|核验|verif|authenticat|identity", re.I),
        ("rule:identity_verified_before_side_effect", "policy:precondition"),
    ),
    "promise": (
        re.compile(r"承诺|保证|一定|promise|guarantee", re.I),
        ("no_promise", "rule:no_refund_promise"),
    ),
    "privacy": (
        re.compile(r"隐私|手机|身份证|泄露|住址|他人|personal|privacy|leak|phone|address", re.I),
        ("no_privacy_leak", "rule:no_privacy_leak", "rule:no_cross_user_access"),
    ),
    "state": (
        re.compile(
            r"状态|提交|删除|修改|更新|取消|写入|state|submit|delet|updat|cancel|modif", re.I
        ),
        ("state_match", "side_effect_policy"),
    ),
    "citation": (
        re.compile(r"引用|出处|来源|条款|cite|citation|source", re.I),
        ("citation", "rule:cites_evidence", "evidence_recall_at_k"),
    ),
    "form": (
        re.compile(r"格式|字数|字以内|句|标签|label|format|sentence|json|word", re.I),
        ("exact_match", "constraints", "regex", "json_schema", "rule:format_constraints"),
    ),
}


@dataclass(frozen=True)
class Criterion:
    kind: str  # expected_behavior, negative_behavior, ..., constraints
    text: str
    covered_by: tuple[str, ...]  # the deterministic checks that match it
    rests_on: str  # "deterministic", "judge" or "nothing"
    matched_on: str = ""  # the tool, phrase or topic that matched

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "covered_by": list(self.covered_by),
            "rests_on": self.rests_on,
            "matched_on": self.matched_on,
        }


def _checks(spec: JudgeSpec) -> set[str]:
    """The deterministic checks the case runs: grader names, ``rule:<check>``, and
    ``policy:confirmation`` / ``policy:precondition`` for side-effect policies."""
    names = {c.type for c in grader_configs(spec)} - JUDGED_GRADERS
    out = set(names)
    if "trace_rule" in names:
        out |= {f"rule:{r}" for r in spec.rule_checks}
    if "side_effect_policy" in names or "trace_rule" in names:
        if any(p.confirmation_required for p in spec.side_effect_policies):
            out.add("policy:confirmation")
        if any(p.preconditions for p in spec.side_effect_policies):
            out.add("policy:precondition")
    return out


def _tool_checks(spec: JudgeSpec, checks: set[str]) -> dict[str, tuple[str, ...]]:
    plans = spec.expected_calls.any_of if spec.expected_calls else ()
    expected = {c.tool for plan in plans for c in plan.calls}
    policies = {p.tool for p in spec.side_effect_policies}
    tools = expected | policies | set(spec.forbidden_tools) | set(spec.required_tools)
    out: dict[str, tuple[str, ...]] = {}
    for tool in tools:
        found = []
        named = tool in spec.forbidden_tools or tool in spec.required_tools
        if "tool_policy" in checks and named:
            found.append("tool_policy")
        if "rule:no_forbidden_tool" in checks and tool in spec.forbidden_tools:
            found.append("rule:no_forbidden_tool")
        if "tool_calls" in checks and tool in expected:
            found.append("tool_calls")
        if "side_effect_policy" in checks and tool in policies:
            found.append("side_effect_policy")
        if found:
            out[tool] = tuple(found)
    return out


def _phrases(spec: JudgeSpec, checks: set[str]) -> dict[str, str]:
    text = spec.text if isinstance(spec.text, Mapping) else {}
    raw = text.get("constraints")
    constraints: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    out: dict[str, str] = {}
    for grader, field in (
        ("must_include", "must_include"),
        ("must_not_include", "must_not_include"),
        ("no_promise", "promise_phrases"),
    ):
        if grader not in checks and "constraints" not in checks:
            continue
        values = []
        for config in grader_configs(spec):
            if config.type == grader:
                values += as_list(config.options.get("values") or config.options.get("phrases"))
        values += as_list(text.get(field)) + as_list(constraints.get(field))
        for value in values:
            for choice in as_list(value):
                if isinstance(choice, str) and len(choice.strip()) >= 2:
                    out[choice.strip()] = grader if grader in checks else "constraints"
    return out


def criteria(spec: JudgeSpec) -> tuple[Criterion, ...]:
    checks = _checks(spec)
    judged = any(c.type in JUDGED_GRADERS for c in grader_configs(spec))
    tools = _tool_checks(spec, checks)
    phrases = _phrases(spec, checks)
    text = spec.text if isinstance(spec.text, Mapping) else {}
    out: list[Criterion] = []
    for kind in KINDS:
        for item in as_list(text.get(kind)):
            if not isinstance(item, str) or not item.strip():
                continue
            covered, on = _match(item, checks, tools, phrases)
            out.append(_criterion(kind, item, covered, on, judged))
    constraints = text.get("constraints")
    if isinstance(constraints, Mapping):
        for key in constraints:
            covered = ()
            if str(key) in CONSTRAINT_KEYS:
                covered = tuple(
                    c for c in ("constraints", "rule:format_constraints") if c in checks
                )
            out.append(_criterion("constraints", str(key), covered, str(key), judged))
    elif isinstance(constraints, str) and constraints.strip():
        covered, on = _match(constraints, checks, tools, phrases)
        out.append(_criterion("constraints", constraints, covered, on, judged))
    return tuple(out)


def _criterion(kind: str, text: str, covered: tuple[str, ...], on: str, judged: bool) -> Criterion:
    rests = "deterministic" if covered else ("judge" if judged else "nothing")
    return Criterion(kind, text, covered, rests, on if covered else "")


def _match(
    item: str,
    checks: set[str],
    tools: Mapping[str, tuple[str, ...]],
    phrases: Mapping[str, str],
) -> tuple[tuple[str, ...], str]:
    lowered = item.casefold()
    for tool, by in sorted(tools.items()):
        if tool.casefold() in lowered:
            return by, f"tool {tool}"
    for phrase, grader in sorted(phrases.items()):
        if phrase.casefold() in lowered:
            return (grader,), f"phrase {phrase!r}"
    for topic, (pattern, testers) in TOPICS.items():
        if pattern.search(item):
            found = tuple(t for t in testers if t in checks)
            if found:
                return found, f"topic {topic}"
    return (), ""


def warnings(spec: JudgeSpec, found: tuple[Criterion, ...]) -> list[str]:
    """A P0 case's negative behaviours that no deterministic check covers."""
    if str(spec.risk_level).upper() != "P0":
        return []
    return [
        f"P0 negative behaviour rests on {c.rests_on}: {c.text}"
        for c in found
        if c.kind == "negative_behavior" and c.rests_on != "deterministic"
    ]
