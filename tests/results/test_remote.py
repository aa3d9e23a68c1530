"""Runs published to and pulled from a real S3-compatible server on 127.0.0.1 (moto's
server mode, started by the tests), through the real `evalcase push` / `pull` commands (in
the test process, tests.helpers.invoke; the concurrent publishers as processes):
append-only, content-addressed, safe against concurrent publishers and hostile manifests,
and no credential written anywhere."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.grade.runs import check_008, duplicate_003, refund_repo, write_run
from tests.helpers import GIT_ENV, REPO_ROOT, commit_all, invoke

# Found, not imported: moto and boto3 (0.3 s) are imported by the tests that start the
# server, not by every worker that collects this file.
if importlib.util.find_spec("moto") is None or importlib.util.find_spec("boto3") is None:
    pytest.skip("moto and boto3 (the test extra) are not installed", allow_module_level=True)

SECRET = "s3cr3t-key-never-written-9f2a"
BUCKET = "team-evals"


@pytest.fixture(scope="module")
def s3() -> Iterator[dict[str, str]]:
    """A real S3 server on a free loopback port, and the environment a user sets."""
    from moto import server as moto_server

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
    _client(env).create_bucket(Bucket=BUCKET)
    try:
        yield env
    finally:
        server.stop()


def _client(env: dict[str, str]) -> Any:
    import boto3

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


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """An S3 endpoint on 127.0.0.1 that accepts every connection and never answers."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:  # the listening socket was closed: the test is over
                return
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept()
        server.close()
        thread.join(timeout=10)
        for connection in held:
            connection.close()


def test_an_endpoint_that_never_answers_ends_with_the_timeout_named(
    silent_endpoint: str, tmp_path: Path
) -> None:
    """`pull --list` against a service that accepts and never answers: with `[results]
    request_timeout = 1` it ends (exit 2) with an error naming the endpoint and the
    setting, not after the client's default three minutes of retries. The bound on the
    process only catches a hang; the test asserts the outcome, never the time."""
    repo, _ = refund_repo(tmp_path)
    (repo / "evalcase.toml").write_text(
        '[results]\nremote = "s3://team-evals/slow"\n'
        "connect_timeout = 1\nrequest_timeout = 1\nmax_retries = 0\nretry_timeout = 1\n",
        "utf-8",
    )
    env = {
        **_base_env(),
        **GIT_ENV,
        "PYTHONPATH": str(REPO_ROOT / "tools"),
        "AWS_ACCESS_KEY_ID": "k",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": silent_endpoint,
        "AWS_ALLOW_HTTP": "true",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "evalcase", "pull", "--list"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "cannot list runs/" in proc.stderr
    assert f"{silent_endpoint} did not answer in time" in proc.stderr, proc.stderr
    assert "[results] request_timeout = 1 s" in proc.stderr, proc.stderr


def test_remote_settings_come_from_the_results_table(tmp_path: Path) -> None:
    """The defaults bound a request in seconds; `[results]` sets each; a misspelt or
    out-of-range key is a configuration error naming it, not a setting silently lost."""
    from evalcase.config import load_config
    from evalcase.model import FatalError
    from evalcase.results.remote import RemoteSettings

    default = RemoteSettings()
    assert (default.connect_timeout, default.request_timeout) == (5.0, 30.0)
    assert (default.max_retries, default.retry_timeout) == (2, 30.0)
    (tmp_path / "evalcase.toml").write_text(
        '[results]\nremote = "s3://b/p"\nconnect_timeout = 2\nrequest_timeout = 7.5\n'
        "max_retries = 0\nretry_timeout = 3\n",
        "utf-8",
    )
    section = load_config(tmp_path).raw["results"]
    assert RemoteSettings.of(section) == RemoteSettings(2.0, 7.5, 0, 3.0)
    for bad, said in (
        ("request_timout = 5", "'request_timout' was unexpected"),
        ("request_timeout = 0", "results.request_timeout: 0 is less than or equal"),
        ("max_retries = 99", "results.max_retries: 99 is greater than the maximum of 10"),
    ):
        (tmp_path / "evalcase.toml").write_text(f"[results]\n{bad}\n", "utf-8")
        with pytest.raises(FatalError, match=r"invalid configuration in evalcase\.toml") as caught:
            load_config(tmp_path)
        assert said in str(caught.value), caught.value


@pytest.mark.slow
def test_a_key_with_a_dotdot_segment_stops_no_listing(s3: dict[str, str], tmp_path: Path) -> None:
    """Anyone who can write the bucket can add a key the client cannot even list
    (`runs/x/../y.json`: obstore fails the whole listing page holding it). Such keys, one
    in a folder of its own and one in a published run's own folder, are skipped with a
    warning naming them; both runs still list and pull, and the questions across runs
    still see them (exit 0: nothing published was lost)."""
    laptop, commit = _repo_with_runs(tmp_path / "laptop", "dd", ["run-a", "run-b"])
    assert invoke("push", "run-a", "run-b", cwd=laptop, env=s3).returncode == 0
    client = _client(s3)
    bad = ["runs/planted/../x.json", "runs/run-a/../x.json"]
    for key in bad:
        client.put_object(Bucket=BUCKET, Key=f"dd/{key}", Body=b"{}")
    ci = _clone(laptop, tmp_path / "ci", "dd")

    listed = invoke("pull", "--list", "--format", "json", cwd=ci, env=s3)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert {row["run_id"] for row in json.loads(listed.stdout)} == {"run-a", "run-b"}
    for key in bad:
        assert f"skipped key '{key}' (a '..' path segment): no run's key" in listed.stderr
    assert "Traceback" not in listed.stderr and "cannot list" not in listed.stderr

    one = invoke("pull", "--list", "run-a", cwd=ci, env=s3)
    assert one.returncode == 0 and "run-a" in one.stdout, one.stdout + one.stderr
    assert "skipped key 'runs/run-a/../x.json'" in one.stderr

    pulled = invoke("pull", cwd=ci, env=s3)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert "skipped key 'runs/planted/../x.json'" in pulled.stderr
    for run_id in ("run-a", "run-b"):
        assert _files(ci, commit, run_id) == _files(laptop, commit, run_id)

    trend = invoke("trend", "refund_regression_set", "--from-remote", cwd=ci, env=s3)
    assert trend.returncode == 0, trend.stderr
    assert "2 published run(s)" in trend.stderr
    assert "left out key 'runs/run-a/../x.json'" in trend.stderr, trend.stderr


class InvalidPathError(Exception):
    """What obstore raises for a listing page holding a key it cannot parse (its name is
    what evalcase looks at; the message is obstore 0.12's, key escaped as Rust does)."""


def _rust_debug(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\n\r\t":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{{{ord(char):x}}}")
        else:
            out.append(char)
    return "".join(out)


class PagedStore:
    """obstore's listing as an S3 service gives it: keys in order, pages of ``page``
    keys, and a page holding a key the client refuses fails whole, naming that key (with
    the remote's prefix); a one-level listing fails when one of its entries is refused."""

    def __init__(self, keys: list[str], page: int = 3, prefix: str = "team/") -> None:
        self.keys = sorted(keys)
        self.page = page
        self.prefix = prefix
        self.calls: list[tuple[str, str, str | None]] = []

    @staticmethod
    def refused(key: str) -> bool:
        parts = key.split("/")
        if key.endswith("/"):
            parts.pop()
        return any(
            p in ("", ".", "..") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in p) for p in parts
        )

    def fail(self, key: str) -> InvalidPathError:
        full = self.prefix + key
        return InvalidPathError(
            f'Encountered object with invalid path: Error parsing Path "{full}": '
            f'Encountered illegal character sequence ".."\n\nDebug source:\nInvalidPath {{\n'
            f'    source: BadSegment {{\n        path: "{_rust_debug(full)}",\n'
            f'        source: InvalidPart {{\n            segment: "..",\n        }},\n    }},\n}}'
        )

    def list(self, _store: Any, prefix: str, offset: str | None = None) -> Iterator[list[Any]]:
        self.calls.append(("list", prefix, offset))
        keys = [k for k in self.keys if k.startswith(prefix) and (offset is None or k > offset)]
        for start in range(0, len(keys), self.page):
            chunk = keys[start : start + self.page]
            for key in chunk:
                if self.refused(key):
                    raise self.fail(key)
            yield [{"path": key} for key in chunk]

    def list_with_delimiter(self, _store: Any, prefix: str) -> dict[str, Any]:
        self.calls.append(("level", prefix, None))
        objects, folders = [], []
        for key in self.keys:
            if not key.startswith(prefix):
                continue
            head, slash, _rest = key[len(prefix) :].partition("/")
            entry = prefix + head + slash
            if self.refused(entry):
                raise self.fail(entry)
            if slash:
                folders.append(prefix + head) if prefix + head not in folders else None
            else:
                objects.append({"path": key})
        return {"objects": objects, "common_prefixes": folders}


def _paged_remote(tmp_path: Path, keys: list[str], page: int = 3) -> tuple[Any, PagedStore]:
    from evalcase.results.remote import Remote

    remote = Remote(f"file://{tmp_path / 'shared'}")
    store = PagedStore(keys, page)
    remote.url = "s3://bucket/team"  # the keys carry the URL's prefix, as S3's do
    remote._obstore = store
    return remote, store


M = ["0" * 64 + ".json", "5" * 64 + ".json", "a" * 64 + ".json", "f" * 64 + ".json"]


@pytest.mark.parametrize(
    ("bad", "listed"),
    [
        (["runs/planted/../x.json", "runs/run-a/../x.json"], {"run-a", "run-b", "run-c"}),
        (["runs/../x.json", "runs//y.json", "runs/./z"], {"run-a", "run-b", "run-c"}),
        (["runs/run-b//x.json", 'runs/run-b/\x01"q\\/x.json', "runs/run-c/."],
         {"run-a", "run-b", "run-c"}),
        (["runs/run-a/sub/../x.json", "runs/\tx/y.json"], {"run-a", "run-b", "run-c"}),
    ],
)  # fmt: skip
def test_unreadable_keys_are_skipped_and_every_run_still_lists(
    tmp_path: Path, bad: list[str], listed: set[str]
) -> None:
    """Keys the client refuses, at every depth and of every kind (`..`, `.`, empty
    segments, control characters, quotes and backslashes in the name), in listing pages
    of three keys: each is skipped and named, every manifest of every run is found, and
    nothing is said to be missing."""
    from evalcase.results.remote_keys import run_keys

    good = [f"runs/{run}/{name}" for run in ("run-a", "run-b", "run-c") for name in M]
    remote, _store = _paged_remote(tmp_path, good + bad)
    found = run_keys(remote)
    assert sorted(found.keys) == sorted(good)
    assert {key.split("/")[1] for key in found.keys} == listed
    for key in bad:
        named = key if "/sub/" not in key else "runs/run-a/sub/"
        assert any(line.startswith(repr(named)) for line in found.skipped), (key, found)
    assert found.incomplete == ()
    # Asked for one run only, its folder alone is listed.
    one = run_keys(remote, ["run-b"])
    assert sorted(one.keys) == sorted(k for k in good if k.startswith("runs/run-b/"))


def test_a_healthy_remote_is_listed_in_one_pass(tmp_path: Path) -> None:
    from evalcase.results.remote_keys import run_keys

    good = [f"runs/run-{n}/{name}" for n in range(5) for name in M]
    remote, store = _paged_remote(tmp_path, [*good, "runs/run-1/notes.txt"])
    found = run_keys(remote)
    assert sorted(found.keys) == sorted(good)
    assert store.calls == [("list", "runs/", None)]
    assert found.skipped == ("'runs/run-1/notes.txt' (not a manifest's name (<sha256>.json))",)


def test_a_refused_key_that_may_hide_manifests_says_the_run_may_be_incomplete(
    tmp_path: Path,
) -> None:
    """A key refused after manifests of the same run folder (`zz\\x01`, sorting after
    hex names): the failed page held manifests the client never returned. The run's
    folder is said to be possibly incomplete (a damaged listing: exit 1), never silently
    short."""
    from evalcase.results.remote import list_manifests
    from evalcase.results.remote_keys import run_keys

    good = [f"runs/run-a/{name}" for name in M]
    remote, _store = _paged_remote(tmp_path, [*good, "runs/run-a/zz\x01.json"], page=10)
    found = run_keys(remote)
    assert found.incomplete and found.incomplete[0].startswith("runs/run-a/: "), found
    assert "'runs/run-a/zz\\x01.json' (a control character)" in found.skipped
    listing = list_manifests(remote)
    assert any(d.startswith("runs/run-a/: ") for d in listing.damaged)


def test_a_listing_that_cannot_move_past_unreadable_keys_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More unreadable keys than the bound (each costs a request to list past it), or a
    refusal whose key cannot be read back from the client's error: a clear error
    (FatalError: exit 2), never a loop or a listing silently short."""
    from evalcase.model import FatalError
    from evalcase.results import remote_keys as remote_module

    monkeypatch.setattr(remote_module, "MAX_UNREADABLE_KEYS", 3)
    # One restart lists past every key under one refused segment: five folders, five.
    keys = [f"runs/run-a/{name}" for name in M] + [f"runs/run-{n}/../x" for n in range(5)]
    remote, _store = _paged_remote(tmp_path, keys)
    with pytest.raises(FatalError, match=r"over 3 keys the client cannot read"):
        remote_module.run_keys(remote)

    remote, store = _paged_remote(tmp_path, [f"runs/run-a/{M[0]}"])

    def garbled(*_args: Any, **_kwargs: Any) -> Any:
        raise InvalidPathError("Encountered object with invalid path: (no debug section)")

    store.list = garbled  # type: ignore[method-assign]
    with pytest.raises(FatalError, match=r"cannot list runs/: Encountered object"):
        remote_module.run_keys(remote)


@pytest.mark.slow
def test_pull_never_writes_through_a_committed_link(s3: dict[str, str], tmp_path: Path) -> None:
    """outputs/ and reports/ are data (issue 41.3): a clone that commits
    `outputs/<commit> -> outside` (or a run's folder as a link) and pulls writes nothing
    outside; the refusal names the link, and the other runs still pull."""
    laptop, commit = _repo_with_runs(tmp_path / "laptop", "ln", ["run-a", "run-b"])
    assert invoke("push", "run-a", "run-b", cwd=laptop, env=s3).returncode == 0

    # The probe: the commit's whole folder is a link, in outputs/ and in reports/.
    trap = _clone(laptop, tmp_path / "trap", "ln")
    outside = tmp_path / "outside"
    (outside / "outputs").mkdir(parents=True)
    (outside / "reports").mkdir()
    for folder in ("outputs", "reports"):
        (trap / folder).mkdir()
        (trap / folder / commit).symlink_to(outside / folder)
    commit_all(trap, "hostile links")
    pulled = invoke("pull", cwd=trap, env=s3)
    assert pulled.returncode == 1, pulled.stdout + pulled.stderr
    assert f"outputs/{commit} is a symbolic link" in pulled.stderr, pulled.stderr
    assert "Traceback" not in pulled.stderr and "internal error" not in pulled.stderr
    assert [p for p in outside.rglob("*") if p.is_file()] == []

    # One run's folder a link: that run is refused, the other pulls whole.
    ci = _clone(laptop, tmp_path / "ci", "ln")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ci / "outputs" / commit).mkdir(parents=True)
    (ci / "outputs" / commit / "run-a").symlink_to(elsewhere)
    commit_all(ci, "a hostile link")
    pulled = invoke("pull", cwd=ci, env=s3)
    assert pulled.returncode == 1, pulled.stdout + pulled.stderr
    assert f"outputs/{commit}/run-a is a symbolic link" in pulled.stderr, pulled.stderr
    assert list(elsewhere.iterdir()) == []
    assert _files(ci, commit, "run-b") == _files(laptop, commit, "run-b")


def test_push_never_publishes_what_a_committed_report_link_points_at(tmp_path: Path) -> None:
    """`reports/<commit>/<run> -> ~/.aws` committed beside a real run: push refuses (exit 2,
    naming the link) and the remote holds none of what the link points at."""
    repo, commit = refund_repo(tmp_path / "a")
    write_run(repo, commit, "run-p", [check_008(True, 1)])
    secrets = tmp_path / "aws"
    secrets.mkdir()
    (secrets / "credentials").write_text("aws_secret_access_key = hunter2", "utf-8")
    (repo / "reports" / commit).mkdir(parents=True)
    (repo / "reports" / commit / "run-p").symlink_to(secrets)
    shared = tmp_path / "shared"
    proc = invoke("push", "run-p", "--remote", f"file://{shared}", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"reports/{commit}/run-p is a symbolic link" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert all(b"hunter2" not in p.read_bytes() for p in shared.rglob("*") if p.is_file())
