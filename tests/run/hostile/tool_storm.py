"""Answers with N tool calls in one reply."""

import sys

from _reply import call, requests, say

for request in requests():
    if request["messages"][-1]["role"] == "tool":
        say("done")
    else:
        call(*[("order_lookup", {"order_id": f"ORDER_{i}"}) for i in range(int(sys.argv[1]))])
