"""Calls a tool the case does not offer."""

import json
import sys

for _line in sys.stdin:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "drop_database", "arguments": "{}"},
    }
    print(json.dumps({"role": "assistant", "content": None, "tool_calls": [call]}), flush=True)
