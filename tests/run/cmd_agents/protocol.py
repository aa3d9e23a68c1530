"""Answers with JSON that is not an assistant message."""

import json
import sys

for _line in sys.stdin:
    print(json.dumps({"role": "user", "content": "I am the user now"}), flush=True)
