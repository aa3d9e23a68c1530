#!/usr/bin/env python3
"""A small rule-based English support agent, speaking evalcase's cmd: protocol.

It reads one JSON request per line on stdin (the whole conversation so far, OpenAI chat
shape) and writes one assistant message per line on stdout. It knows nothing about the
test cases: everything it does comes from the conversation (the system prompt, the user's
words, the tool results) and the tools the request offers.

- **Classification**: when the system prompt lists labels ("...one of these labels: a, b,
  c."), it scores the user's message against keywords for each label it knows and answers
  the best label of that list (a label it has no keywords for is never chosen).
- **Policy questions**: when a tool takes a ``query``, it searches with the user's
  question and answers by quoting the returned passage sharing most words with the
  question, with its ``[doc_id/passage_id]``.
- **Orders**: with an order-status tool and a cancellation tool, it looks the order up
  (calling again once after ``rate_limited``), asks for confirmation before cancelling an
  order that has not shipped, cancels after the user confirms, and explains that a shipped
  order must be returned instead.

Weaknesses an evaluation should find: keyword classification misreads indirect wording,
and word overlap picks a passage that shares the question's words, not its meaning.

Run it: ``evalcase run english_support_set`` (the manifest names it) or
``--agent "cmd:{python} examples/english_agent/agent.py"``.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

VERSION = "english_agent/1.0"
ORDER = re.compile(r"ORDER_[0-9]+")
LABELS = re.compile(r"labels?:\s*([a-z_,\s]+?)\.", re.I)
CONFIRM = ("yes", "confirm", "go ahead", "please do", "do it")
# label -> words that point at it (scored by count; ties go to the earlier label)
KEYWORDS: dict[str, tuple[str, ...]] = {
    "complaint": ("rude", "unacceptable", "terrible", "awful", "disappointed", "worst"),
    "cancel_order": ("cancel", "wrong size", "changed my mind", "by mistake"),
    "refund_request": ("money back", "refund", "stopped working", "broken", "reimburse"),
    "order_status": ("where is", "package", "parcel", "arrive", "tracking", "delivered yet"),
    "product_question": ("does the", "does it", "can it", "is it compatible", "how many", "which"),
}


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "agent_version": VERSION}


def call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "agent_version": VERSION,
        "tool_calls": [
            {"id": f"call_{n}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args)}}
        ],
    }  # fmt: skip


def tool_named(tools: list[dict[str, Any]], *words: str) -> str | None:
    for tool in tools:
        name = str(tool["function"]["name"])
        if any(w in name for w in words):
            return name
    return None


def stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def overlap(question: str, passage: str) -> int:
    """Words shared by the question and a passage (first five letters: return, returned)."""
    return len(stems(question) & stems(passage))


def classify(system: str, text: str) -> str | None:
    found = LABELS.search(system)
    if not found:
        return None
    labels = [x.strip().lower() for x in found.group(1).split(",") if x.strip()]
    lowered = text.lower()
    scores = [(sum(w in lowered for w in KEYWORDS.get(label, ())), label) for label in labels]
    best = max((s for s, _ in scores), default=0)
    if best == 0:
        return labels[-1] if labels else None
    return next(label for s, label in scores if s == best)


def answer(request: dict[str, Any]) -> dict[str, Any]:
    messages = request["messages"]
    tools = request.get("tools") or []
    system = next((m["content"] for m in messages if m["role"] == "system"), "") or ""
    last = messages[-1]
    # this turn: everything after the last user message
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    user = str(messages[last_user]["content"])
    results = [json.loads(m["content"]) for m in messages[last_user + 1 :] if m["role"] == "tool"]
    n = sum(1 for m in messages if m["role"] == "assistant") + 1

    if not tools:
        label = classify(system, user)
        return say(label if label else "I am not sure how to help with that.")

    search = next(
        (t["function"]["name"] for t in tools
         if "query" in (t["function"].get("parameters") or {}).get("properties", {})),
        None,
    )  # fmt: skip
    if search:
        if not results:
            return call(n, search, {"query": user})
        passages = results[-1].get("passages") if isinstance(results[-1], dict) else None
        if not passages:
            return say("I could not find this in our policy; let me pass you to a colleague.")
        top = max(passages, key=lambda p: overlap(user, str(p.get("text", ""))))
        return say(f"According to our policy: {top['text']} [{top['doc_id']}/{top['passage_id']}]")

    status_tool = tool_named(tools, "status", "lookup")
    cancel_tool = tool_named(tools, "cancel")
    orders = ORDER.findall(" ".join(str(m["content"]) for m in messages if m["role"] == "user"))
    if not orders or not status_tool:
        return say("Could you tell me your order number (it starts with ORDER_)?")
    order = orders[-1]
    said = user.lower()
    confirming = any(w in said for w in CONFIRM) and "cancel" in system.lower() + said
    if confirming and cancel_tool and not results:
        return call(n, cancel_tool, {"order_id": order, "user_confirmed": True})
    if last["role"] == "user":
        return call(n, status_tool, {"order_id": order})
    result = results[-1]
    error = result.get("error") if isinstance(result, dict) else None
    if error:
        retried = sum(1 for r in results if isinstance(r, dict) and r.get("error"))
        if error.get("code") == "rate_limited" and retried <= 1:
            return call(n, status_tool, {"order_id": order})
        return say(f"Sorry, I could not complete that for {order} ({error.get('message')}).")
    status = result.get("status")
    if status == "cancelled":
        return say(f"Order {order} is now cancelled.")
    items = ", ".join(str(i.get("name")) for i in result.get("items") or [] if isinstance(i, dict))
    if status == "processing":
        return say(
            f"Order {order} ({items}) has not shipped yet, so I can cancel it. "
            "Shall I go ahead? Please confirm."
        )
    if status in ("shipped", "delivered"):
        return say(
            f"Order {order} ({items}) has already shipped, so it can no longer be cancelled. "
            "Once it arrives you can return it within 30 days for a refund."
        )
    return say(f"Order {order} is {status}.")


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except Exception as exc:  # a bug must not look like a hang
            reply = say(f"Sorry, something went wrong on my side ({type(exc).__name__}).")
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
