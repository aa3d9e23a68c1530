"""CEL implementations: import time and time per evaluation, as evalcase uses them.

For each implementation that is installed (``cel-expr-python``, which evalcase uses;
``common-expression-language`` (``import cel``) and ``cel-python`` (``import celpy``) for
comparison), it measures in fresh processes:

1. the import (median of several fresh interpreters);
2. compile + evaluate the seed precondition
   ``orders.ORDER_2001.owner_user_id == session.current_user_id`` over a small state;
3. evaluate the compiled expression again over variables prepared once;
4. for cel-expr-python through evalcase.contract.cel: the same, plus ``analyze`` (syntax
   and free names, what lint runs once per expression text);
5. the first environment, plain and with the extensions evalcase enables (bindings,
   lists, math, optional, sets, strings, two-variable comprehensions, ``list.sum()``).

Usage (from the repository root)::

    python benchmarks/cel_bench.py              # 5 fresh imports, 2,000 evaluations
    python benchmarks/cel_bench.py --runs 9 --n 5000
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPR = "orders.ORDER_2001.owner_user_id == session.current_user_id"
STATE = (
    "{'orders': {'ORDER_2001': {'owner_user_id': 'USER_A', 'status': 'processing'}},"
    " 'session': {'current_user_id': 'USER_A'}}"
)

IMPORTS = {
    "cel-expr-python": "from cel_expr_python import cel",
    "common-expression-language": "import cel",
    "cel-python": "import celpy",
}
MODULES = {
    "cel-expr-python": "cel_expr_python",
    "common-expression-language": "cel",
    "cel-python": "celpy",
}

EVAL = {
    "cel-expr-python": """
env = cel.NewEnv()
def once():
    return env.compile(EXPR, disable_check=True).eval(data=STATE).plain_value()
program = env.compile(EXPR, disable_check=True)
act = env.Activation(data=STATE)
def again():
    return program.eval(act).plain_value()
""",
    "common-expression-language": """
def once():
    return cel.evaluate(EXPR, STATE)
program = cel.compile(EXPR)
ctx = cel.Context(STATE)
def again():
    return program.execute(ctx)
""",
    "cel-python": """
env = celpy.Environment()
act = celpy.json_to_cel(STATE)
def once():
    return env.program(env.compile(EXPR)).evaluate(celpy.json_to_cel(STATE))
program = env.program(env.compile(EXPR))
def again():
    return program.evaluate(act)
""",
    "evalcase.contract.cel": """
from evalcase.contract import cel as ec
def once():
    ec.compile.cache_clear(); ec.analyze.cache_clear()
    return ec.evaluate(EXPR, STATE)
scope = ec.scope(STATE)
def again():
    return ec.evaluate(EXPR, scope)
def lint_once():
    ec.analyze.cache_clear()
    return ec.analyze(EXPR)
""",
}

TIMER = """
import time
EXPR = {expr!r}
STATE = {state}
{imp}
{body}
assert bool(once()) and bool(again())
def per(fn, n):
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1000
lint = per(lint_once, {n} // 10) if "lint_once" in dir() else -1
print(per(once, max(1, {n} // 10)), per(again, {n}), lint)
"""


def python(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "tools"), "PATH": "/usr/bin:/bin"},
    ).stdout.strip()


def import_ms(statement: str, runs: int) -> float:
    code = (
        f"import time\nt = time.perf_counter()\n{statement}\n"
        "print((time.perf_counter() - t) * 1000)"
    )
    return statistics.median(float(python(code)) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per import")
    parser.add_argument("--n", type=int, default=2000, help="evaluations per measurement")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}; expression: {EXPR}")
    print(
        f"{'implementation':28} {'import ms':>10} {'compile+eval ms':>16} {'eval ms':>10}"
        f" {'analyze ms':>11}"
    )
    for name, statement in IMPORTS.items():
        if importlib.util.find_spec(MODULES[name]) is None:
            print(f"{name:28} not installed")
            continue
        imp = import_ms(statement, args.runs)
        once, again, _ = python(
            TIMER.format(expr=EXPR, state=STATE, imp=statement, body=EVAL[name], n=args.n)
        ).split()
        print(f"{name:28} {imp:10.1f} {float(once):16.3f} {float(again):10.4f} {'':>11}")
    # The environment: cel-cpp's first environment pays the library's one-time set-up;
    # a second one shows what the extensions evalcase enables add (EXTENSIONS, sum()).
    code = (
        "import time\nfrom cel_expr_python import cel\nimport evalcase.contract.cel as ec\n"
        "t = time.perf_counter(); cel.NewEnv(); first = time.perf_counter() - t\n"
        "t = time.perf_counter(); cel.NewEnv(); plain = time.perf_counter() - t\n"
        "t = time.perf_counter(); ec._env(); ext = time.perf_counter() - t\n"
        "print(first * 1000, plain * 1000, ext * 1000)"
    )
    runs = [[float(x) for x in python(code).split()] for _ in range(args.runs)]
    first, plain, extended = (statistics.median(r[i] for r in runs) for i in range(3))
    print(
        f"environment: first (library set-up) {first:.1f} ms; then plain {plain:.2f} ms, "
        f"with evalcase's extensions and list.sum() {extended:.2f} ms"
    )
    imp = import_ms("import evalcase.contract.cel as ec; ec._cel()", args.runs)
    once, again, lint = python(
        TIMER.format(expr=EXPR, state=STATE, imp="", body=EVAL["evalcase.contract.cel"], n=args.n)
    ).split()
    print(
        f"{'evalcase.contract.cel':28} {imp:10.1f} {float(once):16.3f} {float(again):10.4f}"
        f" {float(lint):11.3f}"
    )


if __name__ == "__main__":
    main()
