"""What every hostile agent shares: read one request line, write one reply line."""

import json
import sys


def requests():
    for line in sys.stdin:
        yield json.loads(line)


def say(content, **extra):
    print(json.dumps({"role": "assistant", "content": content, **extra}), flush=True)


def call(*calls):
    """A reply with tool calls: (name, arguments dict) pairs."""
    tool_calls = [
        {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for i, (name, args) in enumerate(calls)
    ]
    print(json.dumps({"role": "assistant", "content": None, "tool_calls": tool_calls}), flush=True)
