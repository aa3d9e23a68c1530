"""A manifest's ``agent`` that names no ``[run.agents]`` entry.

``evalcase run DATASET`` runs the agent the manifest names, and a manifest may only name
an agent ``evalcase.toml`` defines (``[run.agents]``): the configuration, reviewed as
code, says how it starts. A name it does not define (a typo, an agent not configured
yet) makes ``evalcase run`` stop without ``--agent``. Reported when the configuration
defines agents at all: a repository that has not configured running yet is told so by
``evalcase run``.

Passing::

    agent: refund_agent        # evalcase.toml: [run.agents] refund_agent = { spec = "..." }

Failing::

    agent: refund_agnet        # not defined in [run.agents]
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, did_you_mean
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.trust import agent_problem, configured_agents, is_name

CODE = "EC331"
NAME = "agent-not-configured"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.MANIFEST)
    if data is None:
        return
    agent = data.get("agent")
    run = ctx.config.raw.get("run")
    run = run if isinstance(run, dict) else {}
    names = configured_agents(run)
    if not isinstance(agent, str) or not is_name(agent) or not names:
        return
    problem = agent_problem(agent, run)
    if problem is not None:
        yield report(doc.path, *doc.locate(("agent",)), problem + did_you_mean(agent, names))
