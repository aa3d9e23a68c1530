"""Agents for benchmarks/run_bench.py (imported by the py: adapter, or run as cmd: agents)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def null(request: dict[str, Any]) -> dict[str, Any]:
    """Answers at once (the runner's overhead is all that is measured)."""
    return {"role": "assistant", "content": "ok"}


def slow50(request: dict[str, Any]) -> dict[str, Any]:
    """Takes 50 ms per reply, like a fast model endpoint."""
    time.sleep(0.05)
    return {"role": "assistant", "content": "ok"}


if __name__ == "__main__":  # the cmd: null agent
    for _line in sys.stdin:
        sys.stdout.write(json.dumps({"role": "assistant", "content": "ok"}) + "\n")
        sys.stdout.flush()
