"""A small real repository for prompt tests: an intent dataset whose cases share prompt
fixtures, and an honest keyword agent that answers with a label its system prompt offers
(so a prompt that leaves a label out makes it fail the cases that need that label)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import commit_all, init_repo

AGENT = '''
"""Picks the label of the system prompt's list whose keywords the message contains."""
import re

KEYWORDS = {"refund": ("refund", "money back"), "shipping": ("parcel", "delivery"),
            "other": ()}


def reply(request):
    system = next((m["content"] for m in request["messages"] if m["role"] == "system"), "")
    found = re.search(r"Labels: ([a-z_, ]+)", system)
    labels = [x.strip() for x in found.group(1).split(",")] if found else []
    text = request["messages"][-1]["content"].lower()
    for label in labels:
        if any(k in text for k in KEYWORDS.get(label, ())):
            return {"role": "assistant", "content": label}
    return {"role": "assistant", "content": "other" if "other" in labels else "unknown"}
'''

PROMPT = """fixture_id: {id}
fixture_version: v1
kind: prompt
description: Routes a customer message to one intent label.
source: synthetic
desensitized: true
data:
  system: >-
    Classify the message. Labels: {{{{ data.labels | join(', ') }}}}.
    Answer with the label only.
  user: "Message ({{{{ context.channel }}}}): {{{{ turn }}}}"
  generation_config: {{temperature: 0, max_tokens: 8}}
  variables:
    labels: [{labels}]
"""

CASE = """case_id: intent_route_{n:03d}
case_version: v1
dataset_id: intents
dataset_version: v1
title: Route a message to its intent
scenario: intent routing
user_task: route the message
ability_tags: [intent]
risk_level: P2
difficulty: Easy
source: synthetic
case_types: [llm]
input: "{text}"
context:
  channel: app
reference: {label}
constraints:
  format: one label
generation_config: {{temperature: 0.5, max_tokens: 16}}
expected_behavior:
  - Answers with the intent label.
negative_behavior:
  - Answers with another label.
rubric: [The answer is the intent label alone.]
evaluator_config:
  graders:
    - {{type: exact_match}}
metadata:
  dataset_role: iteration
  owner: tests
  tags: [intent]
  review_status: draft
  usage_rights_status: approved_for_evaluation
"""

MANIFEST = """dataset_id: intents
dataset_version: v1
title: Intent routing
description: Routes customer messages to intents.
owner: tests
agent: intent_agent
prompts: [intent_full, intent_narrow]
"""

CASES = (
    ("I want a refund for the mug", "refund"),
    ("Where is my parcel? The delivery is late", "shipping"),
    ("Can I have my money back", "refund"),
    ("Do you sell gift cards", "other"),
)


def write_prompt_repo(root: Path) -> Path:
    (root / "datasets" / "intents" / "cases").mkdir(parents=True)
    (root / "fixtures" / "prompt").mkdir(parents=True)
    (root / "evalcase.toml").write_text(
        '[run.agents]\nintent_agent = { spec = "py:intent_agent:reply" }\n', "utf-8"
    )
    (root / "intent_agent.py").write_text(AGENT, "utf-8")
    (root / ".gitignore").write_text("/outputs/\n/reports/\n__pycache__/\n", "utf-8")
    (root / "datasets" / "intents" / "dataset.yaml").write_text(MANIFEST, "utf-8")
    for prompt_id, labels in (
        ("intent_full", "refund, shipping, other"),
        ("intent_narrow", "refund, other"),
    ):
        (root / "fixtures" / "prompt" / f"{prompt_id}.yaml").write_text(
            PROMPT.format(id=prompt_id, labels=labels), "utf-8"
        )
    for n, (text, label) in enumerate(CASES, 1):
        (root / "datasets" / "intents" / "cases" / f"intent_route_{n:03d}.yaml").write_text(
            CASE.format(n=n, text=text, label=label), "utf-8"
        )
    init_repo(root)
    commit_all(root, "intent dataset with two prompts")
    return root
