"""``http://HOST/PATH``: a served agent. Each request is POSTed as JSON; the response
body is the reply. Stateless: every request carries the whole conversation.

Passing: a service answering ``{"role": "assistant", "content": "..."}`` with 200.
Failing (recorded): a non-2xx status (``agent_exit``), a body that is not JSON
(``bad_json``), no answer before the deadline (``timeout``), the service unreachable
(``adapter``).
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalcase.run.protocol import AgentFault, Reply, parse_reply_text

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob


class HttpSession:
    def __init__(self, url: str, headers: Mapping[str, str], limit: int) -> None:
        self.url = url
        self.headers = {"Content-Type": "application/json", **headers}
        self.limit = limit

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AgentFault("timeout", "no reply before the attempt's deadline")
        body = json.dumps(request, ensure_ascii=False).encode("utf-8")
        req = urllib.request.Request(self.url, data=body, headers=self.headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=remaining) as response:
                data = response.read(self.limit + 1)
        except urllib.error.HTTPError as exc:
            raise AgentFault("agent_exit", f"the agent answered HTTP {exc.code}") from None
        except TimeoutError:
            raise AgentFault("timeout", "no reply before the attempt's deadline") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError | socket.timeout):
                raise AgentFault("timeout", "no reply before the attempt's deadline") from None
            raise AgentFault("adapter", f"cannot reach {self.url}: {reason}") from None
        return parse_reply_text(data, self.limit)

    def close(self) -> None:
        return None


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> HttpSession:
    url = target if "://" in target else target.lstrip("/")
    if not url.startswith(("http://", "https://")):
        url = "http://" + url
    headers = {str(k): str(v) for k, v in dict(options.get("headers") or {}).items()}
    return HttpSession(url, headers, job.limits.max_reply_bytes)
