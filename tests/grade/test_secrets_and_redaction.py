"""Keys from the environment appear in no file a grading run writes; --redact masks
personal data in reports and outputs; masked outputs are never graded as leak-free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalcase.report.pipeline import redact_outputs
from tests.grade.attempts import attempt
from tests.grade.judge_server import Script, judge_server, top_marks
from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run
from tests.helpers import invoke

KEY = "sk-live-judge-0123456789abcdef-SECRET"
OTHER = "ghp_unrelatedTokenValue987654321"
LEAK = "13912345678"  # USER_B's mobile number, not the current user's
# The same detectors (evalcase.pii) for every region and every way of writing digits.
LEAKS = [LEAK, "+1 415 555 0134", "１３９８７６５４３２１"]


def leaky(n: int = 1, leak: str = LEAK) -> dict[str, object]:
    a = check_008(False, n)  # failing, so the report shows its conversation
    text = f"已为您查询。另一位用户的电话是 {leak}，邮箱 li@shop-mail.cn。"
    return {
        **a,
        "output": text,
        "messages": [
            {"role": "user", "content": "帮我看看这个订单能不能退"},
            {"role": "assistant", "content": text},
        ],
    }


def every_file(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts]


@pytest.mark.slow
def test_keys_never_written(tmp_path: Path) -> None:
    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-k", [check_008(True), duplicate_003(True)])
    # A judge that echoes whatever it is sent: the key must not travel into the prompt.
    script = Script(responder=top_marks)
    with judge_server(script) as url:
        env = {
            "EVALCASE_JUDGE_BASE_URL": url,
            "EVALCASE_JUDGE_MODEL": "judge-test",
            "EVALCASE_JUDGE_API_KEY": KEY,
            "SOME_SERVICE_TOKEN": OTHER,
            "EVALCASE_JUDGE_CACHE_DIR": str(tmp_path / "judge-cache"),
        }
        proc = invoke("grade", "run-k", cwd=repo, env=env)
    assert proc.returncode in (0, 1), proc.stderr
    assert script.requests, "the judge was called"
    assert script.headers[0]["authorization"] == f"Bearer {KEY}"  # sent only as the header
    assert all(KEY not in json.dumps(r) for r in script.requests)
    files = every_file(repo) + every_file(tmp_path / "judge-cache")  # the cache is outside
    assert any(p.name == "report.html" for p in files)
    assert any("judge-cache" in p.parts for p in files), "the judge cache was written"
    for path in files:
        data = path.read_bytes()
        assert KEY.encode() not in data, path
        assert OTHER.encode() not in data, path
    assert KEY not in proc.stdout + proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("leak", LEAKS)
def test_redact_masks_personal_data_in_reports(tmp_path: Path, leak: str) -> None:
    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-r", [leaky(leak=leak)])
    proc = invoke("grade", "run-r", "--redact", cwd=repo)
    assert proc.returncode in (0, 1), proc.stderr
    report_dir = repo / "reports" / commit / "run-r"
    # Every file of every grading (gradings/<id>/ and the newest's copies at the top).
    for path in (p for p in report_dir.rglob("*") if p.is_file()):
        text = path.read_text("utf-8")
        assert leak not in text, path.name
        assert "li@shop-mail.cn" not in text, path.name
    report = json.loads((report_dir / "report.json").read_text("utf-8"))
    assert report["run"]["redacted"] is True
    unredacted = invoke("grade", "run-r", "--no-redact", cwd=repo)
    assert unredacted.returncode in (0, 1)
    assert leak in (report_dir / "report.html").read_text("utf-8")  # the check can fail


@pytest.mark.parametrize("leak", LEAKS)
def test_privacy_grader_catches_the_leak_and_redacted_outputs_are_not_leak_free(
    tmp_path: Path, leak: str
) -> None:
    from evalcase.grade.graders import no_privacy_leak
    from evalcase.grade.spec import judge_spec_from_case

    spec = judge_spec_from_case(
        {"case_id": "x", "evaluator_config": {"graders": [{"type": "no_privacy_leak"}]}}
    )
    assert no_privacy_leak.grade(spec, leaky(leak=leak)).verdict == "fail"
    phone_only = {**leaky(leak=leak), "output": f"电话是 {leak}", "messages": []}
    grade = no_privacy_leak.grade(spec, phone_only)
    assert grade.verdict == "fail" and "phone" in grade.reason, grade.reason

    repo, commit = refund_repo(tmp_path)
    run_dir = write_run(repo, commit, "run-o", [leaky(leak=leak), attempt("好的。")])
    redact_outputs(run_dir)
    written = (run_dir / "attempts.jsonl").read_text("utf-8")
    assert leak not in written and "li@shop-mail.cn" not in written
    assert json.dumps(leak)[1:-1] not in written  # nor its JSON escape
    records = [json.loads(x) for x in written.splitlines()]
    assert all(r["redacted"] for r in records)
    assert json.loads((run_dir / "run.json").read_text("utf-8"))["redacted"] is True
    assert no_privacy_leak.grade(spec, records[0]).verdict == "error"
