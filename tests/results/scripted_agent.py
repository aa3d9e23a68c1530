#!/usr/bin/env python3
"""A scripted agent for the tests across runs, speaking evalcase's cmd: protocol.

It answers as ``examples/english_agent`` does (the file its second argument names: in
the sandbox an agent sees the files its command line names, not their folders), then,
by its version (the first argument), changes some answers by the attempt number the
request carries, the way a real agent's luck or a real regression would:

- ``v1``: a classification answered ``cancel_order`` is answered ``refund_request`` on
  attempt 4 (flaky: 3 of 4 attempts right).
- ``v2``: ``cancel_order`` is answered ``refund_request`` on attempts 2 and 4 (flaky:
  2 of 4), ``complaint`` is answered ``refund_request`` on attempt 3 (flaky: 3 of 4), and
  every ``order_status`` answer becomes ``product_question`` (a real regression).

It sees only the request, like every agent: never a case ID or an answer key.
"""

from __future__ import annotations

import json
import runpy
import sys
from typing import Any

ENGLISH = runpy.run_path(sys.argv[2])
VERSION = sys.argv[1] if len(sys.argv) > 1 else "v1"
WRONG = {
    "v1": {("cancel_order", 4)},
    "v2": {("cancel_order", 2), ("cancel_order", 4), ("complaint", 3)},
}


def reply(request: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = ENGLISH["answer"](request)
    label = str(out.get("content") or "").strip()
    attempt = int(request.get("attempt") or 1)
    if (label, attempt) in WRONG[VERSION]:
        out["content"] = "refund_request"
    elif VERSION == "v2" and label == "order_status":
        out["content"] = "product_question"
    out["agent_version"] = f"scripted/{VERSION}"
    return out


for line in sys.stdin:
    if line.strip():
        sys.stdout.write(json.dumps(reply(json.loads(line))) + "\n")
        sys.stdout.flush()
