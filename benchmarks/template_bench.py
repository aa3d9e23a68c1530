"""Prompt templates under limits: in process (evalcase.contract.template_limits) against
a killable worker process (the CEL worker pool, evalcase.run.celworker), and how soon
each of issue 32's probes ends.

It measures:

1. a typical prompt (system + a user turn): compiling it, and rendering it compiled
   (evalcase keeps the last 256 compiled templates), in Jinja's plain sandbox and in the
   bounded environment evalcase uses;
2. the cost a worker process adds, taken from the CEL worker pool: starting a worker
   (a fresh interpreter importing evalcase's CEL module) and one round trip of a trivial
   evaluation (``1 + 1``) through it, the least a render sent to a worker would cost;
3. each probe, in process: the time until its limit error.

Usage (from the repository root)::

    python benchmarks/template_bench.py            # 200 renders, 50 round trips
    python benchmarks/template_bench.py --n 1000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from evalcase.contract import template_limits as limits
from evalcase.contract.prompt import PromptError, render_text
from evalcase.run import celworker

SYSTEM = (
    "Classify the message. Labels: {{ data.labels | join(', ') }}.\n"
    "{% for e in data.examples %}Example {{ loop.index }}: {{ e.text }} -> {{ e.label }}\n"
    "{% endfor %}{% if now %}Today is {{ now }}.{% endif %} Answer with the label only."
)
USER = "Message ({{ context.channel }}): {{ turn }}"
VALUES = {
    "data": {
        "labels": ["refund", "shipping", "other"],
        "examples": [{"text": f"example message {i}", "label": "refund"} for i in range(10)],
    },
    "context": {"channel": "app"},
    "turn": "Where is my parcel?",
    "now": "2026-07-01",
    "locale": None,
    "turns": ["Where is my parcel?"],
}
PROBES = {
    "range(100000) in range(100000)": "{% for a in range(100000) %}"
    "{% for b in range(100000) %}.{% endfor %}{% endfor %}",
    "range(10000) in range(10000)": "{% for a in range(10000) %}"
    "{% for b in range(10000) %}{% endfor %}{% endfor %}",
    "lipsum(50000000)": "{{ lipsum(50000000) }}",
    "'a' * 3000000000": "{{ 'a' * 3000000000 }}",
}


def _median_us(fn: object, n: int) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--trips", type=int, default=50)
    args = parser.parse_args()

    plain = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
    bounded = limits.BoundedEnvironment(undefined=StrictUndefined, autoescape=False)

    compiled = (plain.from_string(SYSTEM), plain.from_string(USER))

    def plain_render() -> None:
        for template in compiled:
            template.render(**VALUES)

    def bounded_render() -> None:
        with limits.budget(time.monotonic() + 60):
            limits.render(bounded, SYSTEM, VALUES)  # compiled once, then cached
            limits.render(bounded, USER, VALUES)

    def plain_compile() -> None:
        plain.from_string(SYSTEM)
        plain.from_string(USER)

    def bounded_compile() -> None:
        bounded.from_string(SYSTEM)
        bounded.from_string(USER)

    print(f"typical prompt, system + user (median of {args.n}):")
    print(f"  compile, Jinja sandbox {_median_us(plain_compile, args.n // 10 or 1):9.0f} us")
    print(f"  compile, bounded       {_median_us(bounded_compile, args.n // 10 or 1):9.0f} us")
    print(f"  render, Jinja sandbox  {_median_us(plain_render, args.n):9.0f} us")
    print(f"  render, bounded        {_median_us(bounded_render, args.n):9.0f} us")

    start = time.perf_counter()
    worker = celworker.Worker(celworker.DEFAULT_MEMORY_MB)
    worker.evaluate("1 + 1", {}, time.monotonic() + 60)
    spawn = time.perf_counter() - start
    trip = _median_us(lambda: worker.evaluate("1 + 1", {}, time.monotonic() + 60), args.trips)
    worker.kill()
    print("a worker process (the CEL pool's):")
    print(f"  start + first answer   {spawn * 1e6:9.0f} us")
    print(f"  round trip (1 + 1)     {trip:9.0f} us (median of {args.trips})")

    print("probes, in process, until the error:")
    for name, template in PROBES.items():
        start = time.perf_counter()
        try:
            render_text(template, {}, "probe", time.monotonic() + 5)
            outcome = "rendered?!"
        except PromptError as exc:
            outcome = str(exc).split(": ", 1)[1][:70]
        print(f"  {name:32s} {time.perf_counter() - start:7.3f} s  {outcome}")


if __name__ == "__main__":
    main()
