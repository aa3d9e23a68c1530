"""Asks for a transfer to a human whenever the last message is the user's; after a tool
result it answers in text (which a transfer that ends the conversation never asks for)."""

import json
import sys

for n, line in enumerate(sys.stdin):
    request = json.loads(line)
    last = request["messages"][-1]
    if last["role"] == "tool":
        print(json.dumps({"role": "assistant", "content": "Done."}), flush=True)
        continue
    args = json.dumps({"summary": last["content"]})
    call = {"id": f"c{n}", "type": "function",
            "function": {"name": "transfer_to_human_agents", "arguments": args}}  # fmt: skip
    print(json.dumps({"role": "assistant", "content": "Transferring you.",
                      "tool_calls": [call]}), flush=True)  # fmt: skip
