"""A prompt template that exceeds a rendering limit.

Prompt templates are data, and Jinja2 is a programming language: a loop over a loop,
``lipsum(50000000)`` or ``'a' * 3000000000`` would hold a run for hours or take
gigabytes. Templates are rendered under limits (docs/untrusted-input.md, "Prompt
templates"): ``range()`` gives at most 10,000 items and ``lipsum()`` at most 100
paragraphs; no string or list built in a template, and no rendered text, is longer than
1,000,000 characters; a render takes at most 1,000,000 steps (loop iterations, calls,
filters, operators) and stops at the attempt's deadline. A run refuses a prompt that
exceeds one, before its first attempt. Lint renders each template with the prompt's own
``variables`` (the case's variables undefined: empty) for at most 5 seconds and reports
one that exceeds a limit at the template line where it stopped.

Passing::

    data:
      system: |
        Answer with one label of: {{ data.labels | join(", ") }}.
        {% for example in data.examples %}Example: {{ example }}
        {% endfor %}

Failing::

    data:
      system: |
        {% for a in range(100000) %}{% for b in range(100000) %}.{% endfor %}{% endfor %}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.facts import PROMPT
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import fixture_kind
from evalcase.model import Finding, Severity

CODE = "EC342"
NAME = "prompt-template-unbounded"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    focus = index.focus
    for fixture in index.fixtures:
        if (focus is not None and fixture.path not in focus) or fixture_kind(fixture) != PROMPT:
            continue
        for field, message, line, col in fixture.prompt_limits:
            yield report(
                fixture.path,
                line,
                col,
                f"the {field} template exceeds a rendering limit: {message}; a run refuses "
                'this prompt (see docs/untrusted-input.md, "Prompt templates")',
            )
