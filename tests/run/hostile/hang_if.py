"""Hangs (stops reading) while FLAG exists; otherwise a well-behaved echo agent."""

import os
import sys
import time

from _reply import requests, say

for request in requests():
    if os.path.exists(sys.argv[1]):
        time.sleep(1000)
    say("echo: " + str(request["messages"][-1]["content"]))
