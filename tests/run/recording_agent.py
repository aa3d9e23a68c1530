"""A py: agent that appends every request it receives to the file named by
EVALCASE_RECORD_TO (the view-leak test reads them back), then answers briefly."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

_LOCK = threading.Lock()


def agent(request: dict[str, Any]) -> dict[str, Any]:
    with _LOCK, open(os.environ["EVALCASE_RECORD_TO"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(request, ensure_ascii=False) + "\n")
    return {"role": "assistant", "content": "noted"}


def gc_state(request: dict[str, Any]) -> dict[str, Any]:
    """Reports whether the cyclic garbage collector is on in the running process."""
    import gc

    return {"role": "assistant", "content": f"gc enabled: {gc.isenabled()}"}
