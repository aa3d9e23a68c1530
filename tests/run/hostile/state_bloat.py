"""Grows the state without end: every reply asks a side-effect tool to store 800 KB more."""

from _reply import call, requests

for _request in requests():
    call(*[("note_add", {"text": "y" * 200_000}) for _ in range(4)])
