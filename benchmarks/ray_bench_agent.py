"""The CPU-bound agent of benchmarks/ray_bench.py: ``WORK_MS`` of computation per reply.

As ``py:benchmarks.ray_bench_agent:reply`` it computes in the runner's process (a local
pool thread, or a Ray worker); run as a script it is the same agent behind ``cmd:``, one
process per attempt. The work is measured in CPU time of the computing thread, so a busy
machine stretches the wall time but not the amount of work.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from typing import Any

WORK_MS = float(os.environ.get("WORK_MS", "200"))


def compute(ms: float) -> str:
    end = time.thread_time() + ms / 1000
    digest = b"evalcase"
    while time.thread_time() < end:
        for _ in range(200):
            digest = hashlib.sha256(digest).digest()
    return digest.hex()[:12]


def reply(request: dict[str, Any]) -> dict[str, Any]:
    ms = float(request.get("context", {}).get("work_ms", WORK_MS))
    if ms <= 0:
        return {"role": "assistant", "content": "ok"}
    compute(ms)  # the answer does not depend on how fast the machine was
    return {"role": "assistant", "content": "done"}


if __name__ == "__main__":
    for line in sys.stdin:
        print(json.dumps(reply(json.loads(line))), flush=True)
