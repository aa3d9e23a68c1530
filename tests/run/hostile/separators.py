"""Answers with the characters str.splitlines() breaks at but JSON Lines does not."""

from _reply import requests, say

for _request in requests():
    say("a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci")
