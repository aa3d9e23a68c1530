"""A well-behaved cmd: agent: answers each request with the last user message."""

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    text = request["messages"][-1]["content"]
    print(
        json.dumps({"role": "assistant", "content": f"echo: {text}", "agent_version": "echo-1"}),
        flush=True,
    )
