"""Calls TOOL once with ARGS (JSON), then answers "done"."""

import json
import sys

from _reply import call, requests, say

for request in requests():
    if request["messages"][-1]["role"] == "tool":
        say("done")
    else:
        call((sys.argv[1], json.loads(sys.argv[2])))
