"""Questions across runs on real runs: a scripted flaky agent and a scripted regressing
agent (real cmd: agents, tests/results/scripted_agent.py) run the English intent cases
with --repeat 4 in a real git repository; the results store is a real DuckDB file.

``flaky`` names exactly the flaky cases; ``compare --fail-on-regression`` fails on the
real regression and not on the flaky ones, which are "changed within noise"; ``history``
marks a change of the case's content; a re-grade adds a grading beside the first."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import bundled_repo, commit_all, git, invoke

pytestmark = pytest.mark.slow

DATASET = "english_support_set"
CANCEL = "llm_intent_cancel_order_003"
COMPLAINT = "llm_intent_complaint_005"
STATUS = "llm_intent_order_status_002"
AGENTS = """
scripted_v1 = { spec = "cmd:{python} agents/scripted_agent.py v1 examples/english_agent/agent.py" }
scripted_v2 = { spec = "cmd:{python} agents/scripted_agent.py v2 examples/english_agent/agent.py" }
"""


def run(repo: Path, agent: str) -> str:
    proc = invoke(
        "run", DATASET, "--select", "llm_intent_*", "--repeat", "4", "--agent", agent,
        "--progress", "none", cwd=repo,
    )  # fmt: skip
    # Exit 1: the dataset's gates do not pass on these agents (the run itself completed).
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    found = re.search(r"^run (\S+): 20 attempts", proc.stdout, re.M)
    assert found, proc.stdout
    return found.group(1)


def cli_json(repo: Path, *args: str, status: int = 0) -> Any:
    proc = invoke(*args, "--format", "json", cwd=repo)
    assert proc.returncode == status, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = bundled_repo(tmp_path_factory.mktemp("across") / "repo", ("/outputs/", "/reports/",
                        "/.evalcase_cache/"))  # fmt: skip
    (root / "agents").mkdir()
    shutil.copy(Path(__file__).with_name("scripted_agent.py"), root / "agents")
    toml = root / "evalcase.toml"
    toml.write_text(toml.read_text("utf-8").replace("[run.agents]\n", "[run.agents]" + AGENTS, 1))
    commit = commit_all(root, "scripted agents")
    runs = [run(root, "scripted_v1"), run(root, "scripted_v1"), run(root, "scripted_v2")]
    yield {"root": root, "runs": runs, "commit": commit}


def test_flaky_names_exactly_the_flaky_cases(repo: dict[str, Any]) -> None:
    found = cli_json(repo["root"], "flaky")["flaky"]
    assert {row["case_id"] for row in found} == {CANCEL, COMPLAINT}
    by = {(row["case_id"], row["agent_version"]): row for row in found}
    v1 = by[(CANCEL, "scripted/v1")]  # two runs of v1, 3 of 4 each
    assert (v1["passes"], v1["attempts"], v1["pass_rate"]) == (6, 8, 0.75)
    low, high = v1["interval"]
    assert 0.3 < low < 0.75 < high < 1.0
    assert (v1["runs"], v1["last_run"]) == (2, max(repo["runs"][:2]))
    assert (by[(CANCEL, "scripted/v2")]["passes"], by[(CANCEL, "scripted/v2")]["attempts"]) == (
        2,
        4,
    )
    assert (
        by[(COMPLAINT, "scripted/v2")]["passes"],
        by[(COMPLAINT, "scripted/v2")]["attempts"],
    ) == (3, 4)
    assert (COMPLAINT, "scripted/v1") not in by  # 8 of 8 under v1: not flaky there
    text = invoke("flaky", "--fail-on-flaky", cwd=repo["root"])
    assert text.returncode == 1 and CANCEL in text.stdout and STATUS not in text.stdout


def test_compare_fails_on_the_real_regression_only(repo: dict[str, Any]) -> None:
    v1_second, v2 = repo["runs"][1], repo["runs"][2]
    result = cli_json(repo["root"], "compare", v1_second, v2, "--fail-on-regression", status=1)
    assert [c.split(" [")[0] for c in result["regressed"]] == [STATUS]
    assert sorted(c.split(" [")[0] for c in result["changed_within_noise"]) == [CANCEL, COMPLAINT]
    noise = {k.split(" [")[0]: v for k, v in result["noise"].items()}
    assert noise[STATUS]["base"] == "4/4" and noise[STATUS]["new"] == "0/4"
    assert noise[STATUS]["p"] <= 0.05 < noise[COMPLAINT]["p"]
    assert noise[COMPLAINT]["base"] == "4/4" and noise[COMPLAINT]["new"] == "3/4"
    # Two runs of the flaky v1: nothing regressed, the gate lets it through.
    same = invoke("compare", repo["runs"][0], v1_second, "--fail-on-regression", cwd=repo["root"])
    assert same.returncode == 0, same.stdout + same.stderr
    assert "regressed (0)" in same.stdout
    # Run references: latest is the v2 run, latest~1 the second v1 run.
    text = invoke("compare", "latest~1", "latest", "--fail-on-regression", cwd=repo["root"])
    assert text.returncode == 1
    assert f"regressed (1): {STATUS}" in text.stdout
    assert "changed within noise (2)" in text.stdout


def test_run_references(repo: dict[str, Any]) -> None:
    first, second, third = repo["runs"]
    root = repo["root"]

    def base_of(ref: str) -> str:
        return str(cli_json(root, "compare", ref, third)["base"]["run_id"])

    assert base_of("latest~2") == first
    assert base_of("latest~1") == second
    # DATASET, DATASET@v1, main and the commit all name the newest run, third itself:
    # a run compared with itself is refused; REF:AGENT narrows to one agent's runs.
    for ref in (DATASET, f"{DATASET}@v1", "main", repo["commit"][:9]):
        proc = invoke("compare", ref, third, cwd=root)
        assert proc.returncode == 2 and f"are the same run, {third}" in proc.stderr, ref
    assert base_of(f"{DATASET}@v1:scripted_v1") == second
    assert base_of("main:scripted_v1") == second
    assert base_of(f"{repo['commit'][:9]}:scripted_v1") == second
    proc = invoke("compare", "latest~9", "latest", cwd=root)
    assert proc.returncode == 2 and "no run 9 before the newest" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = invoke("compare", "no-such-branch", "latest", cwd=root)
    assert proc.returncode == 2 and "not a run ID, latest[~N]" in proc.stderr


def test_trend_per_agent_and_commit(repo: dict[str, Any]) -> None:
    rows = cli_json(repo["root"], "trend", DATASET, "--by", "agent", "--slice", "prompt")
    by = {r["key"]: r for r in rows["trend"]}
    assert set(by) == {"scripted_v1", "scripted_v2"}
    assert by["scripted_v1"]["runs"] == 2
    assert by["scripted_v1"]["pass@1"] == pytest.approx(19 / 20)
    assert by["scripted_v2"]["pass@1"] == pytest.approx(13 / 20)
    assert by["scripted_v2"]["pass^k"] == pytest.approx(2 / 5)
    assert by["scripted_v1"]["slices"] == {"intent_labels_en@v1": pytest.approx(19 / 20)}
    commits = cli_json(repo["root"], "trend", DATASET)["trend"]
    assert [r["runs"] for r in commits] == [3]


def test_regrading_adds_a_grading_and_history_marks_case_changes(repo: dict[str, Any]) -> None:
    root = repo["root"]
    first = repo["runs"][0]
    assert invoke("grade", first, cwd=root).returncode in (0, 1)
    folder = next(root.glob(f"reports/*/{first}"))
    gradings = sorted(p.name for p in (folder / "gradings").iterdir())
    assert len(gradings) == 2
    report = json.loads((folder / "report.json").read_text("utf-8"))
    assert report["grading"]["grading_id"] == gradings[-1]
    assert report["grading"]["earlier"] == gradings[:1]
    # The case's content changes (a new version), then v1 runs it again.
    case = root / "datasets" / DATASET / "cases" / f"{STATUS}.yaml"
    text = case.read_text("utf-8")
    case.write_text(text.replace("Where is my", "Where's my", 1), "utf-8")
    assert "Where's my" in case.read_text("utf-8")
    assert invoke("bump", cwd=root).returncode == 0
    commit_all(root, "order status case reworded")
    changed = run(root, "scripted_v1")
    rows = cli_json(root, "history", STATUS)["history"]
    assert [r["run_id"] for r in rows if r["newest"]] == [*repo["runs"], changed]
    older = [r for r in rows if not r["newest"]]
    assert [r["run_id"] for r in older] == [first]  # the first grading of the first run
    assert [r["case_changed"] for r in rows].count(True) == 1
    assert rows[-1]["case_changed"] and rows[-1]["passes"] == 4
    assert rows[-2]["passes"] == 0  # v2's regression, before the change
    # The store is a real file, rebuilt from the folders to the same rows.
    before = cli_json(root, "history", STATUS)
    rebuilt = cli_json(root, "store", "rebuild")
    assert rebuilt["runs"] == 4 and rebuilt["gradings"] == 5 and rebuilt["attempts"] == 80
    assert Path(rebuilt["path"]).is_file()
    assert cli_json(root, "history", STATUS) == before
    text = invoke("history", STATUS, cwd=root).stdout
    assert "-- case changed" in text
    assert git(root, "status", "--porcelain").strip() == ""  # the store is git-ignored
