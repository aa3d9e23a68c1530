#!/usr/bin/env python3
"""Oracle: answers every turn without a tool call (evalcase's cmd: protocol).

The do-nothing baseline of docs/tau2-airline.md: tau2's evaluator gives it reward 1
exactly on the tasks whose expected actions leave the database unchanged and that need
nothing communicated; check.py asserts that evalcase's verdicts agree on all 50.
"""

from __future__ import annotations

import json
import sys

VERSION = "tau2_null/1.0"

if __name__ == "__main__":
    for line in sys.stdin:
        if line.strip():
            message = {
                "role": "assistant",
                "content": "I cannot help with that.",
                "agent_version": VERSION,
            }
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()
