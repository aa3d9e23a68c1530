"""Answers with KB kilobytes of text, under the reply limit: the record grows past a cap."""

import sys

from _reply import requests, say

for _request in requests():
    say("z" * (1024 * int(sys.argv[1])))
