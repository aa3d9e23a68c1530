"""Hangs (stops reading) while FLAG exists; otherwise a well-behaved echo agent."""

import sys
import time
from pathlib import Path

from _reply import requests, say

for request in requests():
    if Path(sys.argv[1]).exists():
        time.sleep(1000)
    say("echo: " + str(request["messages"][-1]["content"]))
