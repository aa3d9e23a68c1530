"""Answers with numbers JSON records cannot hold: NaN (ARG nan) or 1e999 (ARG big)."""

import sys

from _reply import requests

for _request in requests():
    if sys.argv[1] == "nan":
        print('{"role": "assistant", "content": "x", "usage": {"prompt_tokens": NaN}}', flush=True)
    else:
        print('{"role": "assistant", "content": "x", "usage": {"cost": 1e999}}', flush=True)
