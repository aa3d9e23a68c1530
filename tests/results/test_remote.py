"""Runs published to and pulled from a real S3-compatible server on 127.0.0.1 (moto's
server mode, started by the tests), through the real `evalcase push` / `pull` processes:
append-only, content-addressed, safe against concurrent publishers and hostile manifests,
and no credential written anywhere."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run
from tests.helpers import GIT_ENV, REPO_ROOT, invoke

moto_server = pytest.importorskip("moto.server")
boto3 = pytest.importorskip("boto3")

SECRET = "s3cr3t-key-never-written-9f2a"
BUCKET = "team-evals"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """A real S3 server on a free loopback port, and the environment a user sets."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "team-access-key",
        "AWS_SECRET_ACCESS_KEY": SECRET,
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ALLOW_HTTP": "true",
    }
    client = boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )
    client.create_bucket(Bucket=BUCKET)
    try:
        yield env
    finally:
        server.stop()


def _client(env: dict[str, str]) -> Any:
    return boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=SECRET,
        region_name="us-east-1",
    )


def _keys(env: dict[str, str], prefix: str) -> dict[str, bytes]:
    client = _client(env)
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            out[item["Key"]] = client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read()
    return out


def _repo_with_runs(tmp: Path, prefix: str, run_ids: list[str]) -> tuple[Path, str]:
    repo, commit = refund_repo(tmp)
    (repo / "evalcase.toml").write_text(f'[results]\nremote = "s3://{BUCKET}/{prefix}"\n', "utf-8")
    for n, run_id in enumerate(run_ids):
        write_run(repo, commit, run_id, [check_008(True, 1), duplicate_003(n % 2 == 0, 1)])
        graded = invoke("grade", run_id, cwd=repo)
        assert graded.returncode in (0, 1), graded.stderr
    return repo, commit


def _clone(source: Path, target: Path, prefix: str) -> Path:
    """Another machine's checkout of the same repository (same commits), with the remote
    configured."""
    git_env = {**_base_env(), **GIT_ENV}
    subprocess.run(["git", "clone", "-q", str(source), str(target)], check=True, env=git_env)
    (target / "evalcase.toml").write_text(f'[results]\nremote = "s3://{BUCKET}/{prefix}"\n')
    return target


def _files(root: Path, commit: str, run_id: str) -> dict[str, bytes]:
    out = {}
    for folder in ("outputs", "reports"):
        base = root / folder / commit / run_id
        for path in sorted(base.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                out[path.relative_to(root).as_posix()] = path.read_bytes()
    return out


@pytest.mark.slow
def test_push_pull_round_trip(s3: dict[str, str], tmp_path: Path) -> None:
    laptop, commit = _repo_with_runs(tmp_path / "laptop", "rt", ["run-a", "run-b"])
    pushed = invoke("push", "run-a", "run-b", cwd=laptop, env=s3)
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.stdout.count("published run-") == 2

    # Publishing again sends nothing and adds nothing: the same content has the same name.
    before = _keys(s3, "rt/")
    again = invoke("push", "--all", cwd=laptop, env=s3)
    assert again.returncode == 0, again.stderr
    assert "already published run-a: 12 file(s), 0 object(s) uploaded" in again.stdout
    assert _keys(s3, "rt/") == before
    objects = [k for k in before if k.startswith("rt/objects/")]
    for key, body in before.items():
        if key.startswith("rt/objects/"):
            assert key.endswith(hashlib.sha256(body).hexdigest()), "content-addressed"
    manifests = [k for k in before if k.startswith("rt/runs/")]
    assert len(manifests) == 2 and len(objects) >= 8

    # A second machine lists without downloading, then pulls byte-identical folders.
    ci = _clone(laptop, tmp_path / "ci", "rt")
    listed = invoke("pull", "--list", "--format", "json", cwd=ci, env=s3)
    assert listed.returncode == 0, listed.stderr
    rows = {row["run_id"]: row for row in json.loads(listed.stdout)}
    assert set(rows) == {"run-a", "run-b"}
    assert rows["run-a"]["dataset"] == "refund_regression_set"
    assert rows["run-a"]["report"]["attempts"] == 2
    assert not (ci / "outputs").exists(), "--list downloads nothing"

    pulled = invoke("pull", cwd=ci, env=s3)
    assert pulled.returncode == 0, pulled.stderr
    for run_id in ("run-a", "run-b"):
        assert _files(ci, commit, run_id) == _files(laptop, commit, run_id)
    # The pulled runs are ordinary local runs: they grade.
    assert invoke("grade", "run-a", cwd=ci).returncode in (0, 1)
    second = invoke("pull", cwd=ci, env=s3)
    assert "0 file(s) fetched" in second.stdout

    # No credential was written anywhere: not in the repositories, not on the remote.
    for root in (laptop, ci):
        for path in root.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                assert SECRET.encode() not in path.read_bytes(), path
    assert all(SECRET.encode() not in body for body in _keys(s3, "rt/").values())


@pytest.mark.slow
def test_concurrent_publishers_never_overwrite(s3: dict[str, str], tmp_path: Path) -> None:
    """Four processes publish at once (two of the same run, as two CI retries would):
    every publication lands, no object is written twice with different content."""
    repo, commit = _repo_with_runs(tmp_path / "repo", "cc", ["run-1", "run-2", "run-3"])
    env = {**s3, **GIT_ENV, "PYTHONPATH": str(REPO_ROOT / "tools")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "evalcase", "push", run_id],
            cwd=repo,
            env={**_base_env(), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for run_id in ("run-1", "run-2", "run-3", "run-1")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    keys = _keys(s3, "cc/")
    assert len([k for k in keys if k.startswith("cc/runs/")]) == 3
    for key, body in keys.items():
        if key.startswith("cc/objects/"):
            assert key.endswith(hashlib.sha256(body).hexdigest())
    # A resumed run (one more attempt) and a new grading are new publications beside the
    # first; pulling gives the newest, longest copy.
    run_dir = repo / "outputs" / commit / "run-1"
    extra = json.dumps({**check_008(True, 2), "case_version": "v1"}, ensure_ascii=False)
    with (run_dir / "attempts.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(extra + "\n")
    assert invoke("push", "run-1", cwd=repo, env=s3).returncode == 0
    assert len([k for k in _keys(s3, "cc/runs/run-1/")]) == 2
    other = _clone(repo, tmp_path / "other", "cc")
    assert invoke("pull", "run-1", cwd=other, env=s3).returncode == 0
    pulled = (other / "outputs" / commit / "run-1" / "attempts.jsonl").read_bytes()
    assert pulled == (run_dir / "attempts.jsonl").read_bytes()


def _base_env() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.slow
def test_hostile_manifests_are_refused(s3: dict[str, str], tmp_path: Path) -> None:
    """A manifest is data from anyone who can write the bucket: a path outside the run's
    folders, or an object that does not match its digest, is refused, never written."""
    client = _client(s3)
    body = b'{"secret": "planted"}\n'
    digest = hashlib.sha256(body).hexdigest()
    client.put_object(Bucket=BUCKET, Key=f"hx/objects/{digest[:2]}/{digest}", Body=body)
    wrong = hashlib.sha256(b"something else").hexdigest()
    client.put_object(Bucket=BUCKET, Key=f"hx/objects/{wrong[:2]}/{wrong}", Body=body)

    def manifest(run_id: str, path: str, sha: str) -> None:
        data = {
            "manifest_version": 1,
            "run_id": run_id,
            "commit": "c0ffee",
            "published_at": "2026-12-01T00:00:00Z",
            "publisher": "",
            "summary": {},
            "files": [{"path": path, "sha256": sha, "size": len(body)}],
        }
        client.put_object(
            Bucket=BUCKET, Key=f"hx/runs/{run_id}/{'0' * 64}.json", Body=json.dumps(data)
        )

    manifest("escape", "outputs/c0ffee/escape/../../../evalcase.toml", digest)
    manifest("elsewhere", "datasets/refund_regression_set/dataset.yaml", digest)
    manifest("forged", "outputs/c0ffee/forged/attempts.jsonl", wrong)
    repo, _ = _repo_with_runs(tmp_path / "repo", "hx", [])
    config_before = (repo / "evalcase.toml").read_bytes()
    manifest_before = (repo / "datasets/refund_regression_set/dataset.yaml").read_bytes()
    pulled = invoke("pull", cwd=repo, env=s3)
    assert pulled.returncode == 1, pulled.stdout + pulled.stderr
    assert "skipped runs/escape/" in pulled.stderr, pulled.stderr
    assert "skipped runs/elsewhere/" in pulled.stderr
    assert "does not match its digest" in pulled.stderr
    assert "Traceback" not in pulled.stderr
    assert (repo / "evalcase.toml").read_bytes() == config_before
    assert (repo / "datasets/refund_regression_set/dataset.yaml").read_bytes() == manifest_before
    assert not (repo / "outputs" / "c0ffee" / "forged" / "attempts.jsonl").exists()


def test_no_remote_configured_is_a_clear_error(tmp_path: Path) -> None:
    repo, _ = refund_repo(tmp_path)
    proc = invoke("push", "--all", cwd=repo)
    assert proc.returncode == 2
    assert "no results remote" in proc.stderr and "Traceback" not in proc.stderr


def test_unreachable_remote_is_a_clear_error(tmp_path: Path) -> None:
    repo, commit = refund_repo(tmp_path)
    write_run(repo, commit, "run-x", [check_008(True, 1)])
    env = {
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "us-east-1",
        # A port nothing listens on (port 9 is discard, closed on loopback).
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ALLOW_HTTP": "true",
    }
    proc = invoke("push", "run-x", "--remote", "s3://nowhere/p", cwd=repo, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot write" in proc.stderr and "Traceback" not in proc.stderr


def test_file_remote_round_trip(tmp_path: Path) -> None:
    """A shared folder works as a remote too (file:///...), with the same layout."""
    repo, commit = refund_repo(tmp_path / "a")
    write_run(repo, commit, "run-f", [check_008(True, 1)])
    url = f"file://{tmp_path / 'shared'}"
    assert invoke("push", "run-f", "--remote", url, cwd=repo).returncode == 0
    other, _ = refund_repo(tmp_path / "b")
    proc = invoke("pull", "--remote", url, cwd=other)
    assert proc.returncode == 0, proc.stderr
    assert _files(other, commit, "run-f") == _files(repo, commit, "run-f")


@pytest.mark.slow
def test_run_publish(s3: dict[str, str], tmp_path: Path) -> None:
    """`evalcase run --publish`: the run and its grading land on the remote as one
    publication; without a remote configured the run refuses before it starts."""
    from tests.helpers import bundled_repo

    repo = bundled_repo(tmp_path / "repo", ignored=("/outputs/", "/reports/", ".evalcase_cache/"))
    args = ("run", "refund_regression_set", "--select", "tool_refund_check_008", "--publish")
    refused = invoke(*args, cwd=repo, env=s3)
    assert refused.returncode == 2 and "no results remote" in refused.stderr
    assert not (repo / "outputs").exists(), "nothing ran"
    with (repo / "evalcase.toml").open("a", encoding="utf-8") as handle:
        handle.write(f'\n[results]\nremote = "s3://{BUCKET}/pub"\n')
    subprocess.run(
        ["git", "commit", "-qam", "remote"], cwd=repo, check=True, env={**_base_env(), **GIT_ENV}
    )
    proc = invoke(*args, cwd=repo, env=s3)
    assert proc.returncode in (0, 1), proc.stderr
    assert "published " in proc.stdout
    keys = _keys(s3, "pub/runs/")
    assert len(keys) == 1
    manifest = json.loads(next(iter(keys.values())))
    paths = {f["path"].rsplit("/", 1)[-1] for f in manifest["files"]}
    assert {"run.json", "attempts.jsonl", "report.json", "grades.jsonl"} <= paths
    assert manifest["summary"]["dataset"] == "refund_regression_set"


@pytest.mark.slow
def test_questions_across_runs_read_the_remote_index_only(
    s3: dict[str, str], tmp_path: Path
) -> None:
    """`history`, `flaky` and `trend --from-remote` on a machine with no local run answer
    exactly as the publisher's local store does, from run.json, grading.json and
    report.json only: no attempt record is fetched. A second question reads nothing
    again; a new grading published later is seen; a forged index file is left out."""
    laptop, commit = _repo_with_runs(tmp_path / "laptop", "ix", [])
    for n, run_id in enumerate(["run-a", "run-b", "run-c"]):
        write_run(laptop, commit, run_id, [check_008(n != 1, 1), duplicate_003(False, 1)])
        assert invoke("grade", run_id, cwd=laptop).returncode in (0, 1)
    assert invoke("push", "--all", cwd=laptop, env=s3).returncode == 0
    ci = _clone(laptop, tmp_path / "ci", "ix")
    questions = (
        ["history", "tool_refund_check_008"],
        ["flaky"],
        ["trend", "refund_regression_set"],
    )
    answers = {}
    for question in questions:
        local = invoke(*question, "--format", "json", cwd=laptop)
        remote = invoke(*question, "--format", "json", "--from-remote", cwd=ci, env=s3)
        assert local.returncode == 0 and remote.returncode == 0, local.stderr + remote.stderr
        answers[question[0]] = json.loads(remote.stdout)
        assert answers[question[0]] == json.loads(local.stdout), question
        assert "3 published run(s)" in remote.stderr
    # The answers are not empty: the check case passed in run-a and run-c, failed in b.
    verdicts = [row["verdicts"] for row in answers["history"]["history"]]
    assert sorted(verdicts) == [["fail"], ["pass"], ["pass"]]
    assert [f["case_id"] for f in answers["flaky"]["flaky"]] == ["tool_refund_check_008"]
    assert not (ci / "outputs").exists() and not (ci / "reports").exists()
    mirror = next((ci / ".evalcase_cache" / "remote").iterdir())
    fetched = {p.name for p in (mirror / "outputs").rglob("*") if p.is_file()}
    fetched |= {p.name for p in (mirror / "reports").rglob("*") if p.is_file()}
    assert fetched == {"run.json", "grading.json", "report.json"}, fetched

    again = invoke("history", "tool_refund_check_008", "--from-remote", cwd=ci, env=s3)
    assert again.returncode == 0, again.stderr
    assert "fetched 0 manifest(s) and 0 index file(s)" in again.stderr
    assert again.stdout.count("run-") == 3

    # A new grading of run-a published later is a new manifest: two new index files.
    assert invoke("grade", "run-a", cwd=laptop).returncode in (0, 1)
    assert invoke("push", "run-a", cwd=laptop, env=s3).returncode == 0
    later = invoke(
        "history", "tool_refund_check_008", "--format", "json", "--from-remote",
        cwd=ci, env=s3,
    )  # fmt: skip
    assert "fetched 1 manifest(s) and 2 index file(s)" in later.stderr, later.stderr
    assert len(json.loads(later.stdout)["history"]) == 4

    # A forged run: its run.json does not match the digest its manifest names.
    client = _client(s3)
    body = json.dumps({"run_id": "run-forged", "dataset": {"id": "refund_regression_set"}})
    wrong = hashlib.sha256(b"not this").hexdigest()
    client.put_object(Bucket=BUCKET, Key=f"ix/objects/{wrong[:2]}/{wrong}", Body=body)
    forged = {
        "manifest_version": 1, "run_id": "run-forged", "commit": commit,
        "published_at": "2026-12-02T00:00:00Z", "publisher": "", "summary": {},
        "files": [{"path": f"outputs/{commit}/run-forged/run.json", "sha256": wrong,
                   "size": len(body)}],
    }  # fmt: skip
    client.put_object(
        Bucket=BUCKET, Key=f"ix/runs/run-forged/{'1' * 64}.json", Body=json.dumps(forged)
    )
    flagged = invoke("trend", "refund_regression_set", "--from-remote", cwd=ci, env=s3)
    assert flagged.returncode == 0, flagged.stderr
    assert "left out outputs/" in flagged.stderr and "does not match its digest" in flagged.stderr
    assert not (mirror / "outputs" / commit / "run-forged").exists()
    assert "Traceback" not in flagged.stderr


def test_publications_in_the_same_instant_order_by_what_they_hold() -> None:
    """A run published, resumed and published again within one clock tick: the later
    publication (more bytes: a resumed run only appends; more files: a new grading) wins,
    whatever the manifests' names."""
    from evalcase.results.remote import Manifest, RemoteFile, merged_files

    def manifest(key: str, size: int, extra: int = 0) -> Manifest:
        files = [RemoteFile("outputs/c/r/attempts.jsonl", key[0] * 64, size)]
        files += [RemoteFile(f"reports/c/r/gradings/g{i}/report.json", "e" * 64, 9)
                  for i in range(extra)]  # fmt: skip
        return Manifest("r", "c", "2026-12-02T07:10:35Z", "", {}, tuple(files), key)

    for first, later in ((manifest("a", 100), manifest("b", 180)),
                         (manifest("f", 100), manifest("0", 180)),
                         (manifest("f", 180), manifest("0", 180, extra=1))):  # fmt: skip
        for order in ((first, later), (later, first)):
            merged = merged_files(order)
            assert merged["outputs/c/r/attempts.jsonl"] == later.files[0]


@pytest.mark.slow
def test_view_from_remote_fetches_a_transcript_when_its_page_opens(
    s3: dict[str, str], tmp_path: Path
) -> None:
    """`evalcase view --from-remote` on a machine with no local run: the team's runs are
    listed from their index files alone; opening a transcript fetches that run's attempt
    records (and its grading's grades), no other run's; a published file that does not
    match its digest is an error page, never written."""
    from tests.results.viewer_process import http_get, start_view

    laptop, commit = _repo_with_runs(tmp_path / "laptop", "vw", [])
    write_run(laptop, commit, "run-good", [check_008(True, 1), duplicate_003(True, 1)])
    write_run(laptop, commit, "run-bad", [check_008(False, 1), duplicate_003(False, 1)])
    for run_id in ("run-good", "run-bad"):
        assert invoke("grade", run_id, cwd=laptop).returncode in (0, 1)
    assert invoke("push", "--all", cwd=laptop, env=s3).returncode == 0
    ci = _clone(laptop, tmp_path / "ci", "vw")
    # run-bad's attempt records, replaced on the remote by other bytes under their digest
    local = laptop / "outputs" / commit / "run-bad" / "attempts.jsonl"
    digest = hashlib.sha256(local.read_bytes()).hexdigest()
    _client(s3).put_object(Bucket=BUCKET, Key=f"vw/objects/{digest[:2]}/{digest}", Body=b"{}\n")

    env = {**_base_env(), **s3, "PYTHONPATH": str(REPO_ROOT / "tools")}
    proc, base, before = start_view(ci, env, "--from-remote")
    try:
        assert "2 published run(s)" in "".join(before), before

        def get(path: str) -> tuple[int, str]:
            status, body, _headers = http_get(base + path)
            return status, body

        status, runs = get("")
        assert status == 200 and "run-good" in runs and "run-bad" in runs, runs
        mirror = next((ci / ".evalcase_cache" / "remote").iterdir())
        assert not list(mirror.rglob("attempts.jsonl"))
        status, page = get("attempt?run=run-good&case=tool_refund_check_008&attempt=1")
        assert status == 200, page
        assert "已超过七天无理由时效" in page and "refund_eligibility_check" in page
        assert [p.relative_to(mirror).as_posix() for p in mirror.rglob("attempts.jsonl")] == [
            f"outputs/{commit}/run-good/attempts.jsonl"
        ]
        assert list(mirror.rglob("grades.jsonl")), "the grading's grades were not fetched"
        status, page = get("attempt?run=run-bad&case=tool_refund_check_008&attempt=1")
        assert status == 400 and "does not match its digest" in page, page
        assert not (mirror / "outputs" / commit / "run-bad" / "attempts.jsonl").exists()
        assert not (ci / "outputs").exists()  # the checkout's own folders stay untouched
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert "Traceback" not in (proc.stderr.read() if proc.stderr else "")


@pytest.mark.slow
def test_a_first_push_says_what_it_sent_not_already_there(
    s3: dict[str, str], tmp_path: Path
) -> None:
    laptop, commit = _repo_with_runs(tmp_path / "laptop", "first", ["run-a"])
    files = _files(laptop, commit, "run-a")
    distinct = {hashlib.sha256(body).hexdigest() for body in files.values()}
    # A run's files share content (the same bytes in outputs/ and reports/, each grading
    # beside the earlier ones): stored once, as one content-addressed object.
    assert len(distinct) < len(files)
    pushed = invoke("push", "run-a", cwd=laptop, env=s3)
    assert pushed.returncode == 0, pushed.stderr
    line = pushed.stdout.strip()
    assert line.startswith(
        f"published run-a: {len(files)} file(s), {len(distinct)} object(s) uploaded "
        f"({len(files) - len(distinct)} file(s) the same as another of this run, stored once)"
    ), line
    assert "already" not in line
    # What an earlier publication stored is said as such.
    again = invoke("push", "run-a", cwd=laptop, env=s3)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        f"already published run-a: {len(files)} file(s), 0 object(s) uploaded "
        f"({len(files) - len(distinct)} file(s) the same as another of this run, stored "
        f"once), {len(distinct)} already stored by an earlier push"
    ), again.stdout
