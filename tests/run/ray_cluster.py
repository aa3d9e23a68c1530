"""A real Ray cluster on 127.0.0.1 for tests and benchmarks: a head and worker nodes.

Each node is a separate raylet with its own worker processes (``ray.cluster_utils``
starts them as ``ray start`` would); the head offers no CPU, so attempts run on the
workers only. Every Ray port listens on loopback: the nodes' IP is 127.0.0.1, and
clients must resolve it the same way, which :data:`CLIENT_ENV` arranges (Ray otherwise
replaces 127.0.0.1 by the machine's address). No dashboard, no usage statistics.

The cluster lives in its own process (and session, so its process group is all of Ray):
``python -m tests.run.ray_cluster DIR WORKERS CPUS`` prints one JSON line
(``address``, ``workers``: node id and raylet pid of each worker node) and serves until
its standard input closes. :func:`local_cluster` starts it, waits for that line within a
bound, and on exit, whatever happened, stops it and kills its whole process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

REPO_ROOT = Path(__file__).resolve().parents[2]
# Ray resolves "127.0.0.1" to the machine's address unless it believes it cannot form
# multi-node clusters; with this, drivers and workers keep to loopback.
CLIENT_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # the minimum Ray accepts; attempts are small
START_TIMEOUT_S = 240.0
# A killed node's raylet refuses the head's health checks at once; Ray declares it dead
# after five failed checks, three seconds apart by default (15 s a kill). One second
# apart (each still waits up to Ray's default 10 s for an answer, so a busy machine's
# live node is not declared dead): about 5 s.
HEALTH_CHECKS = {"health_check_period_ms": 1000}


@dataclass(frozen=True)
class Worker:
    node_id: str
    raylet_pid: int


@dataclass(frozen=True)
class LocalCluster:
    address: str
    workers: tuple[Worker, ...]
    env: dict[str, str]  # the environment a driver process connecting to it needs

    def kill_worker_node(self, index: int) -> None:
        """SIGKILL one worker node: its raylet and every worker process it started."""
        raylet = self.workers[index].raylet_pid
        victims = [raylet, *_children(raylet)]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command may contain spaces and parentheses: the ppid follows the last ")"
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(entry.name))
            out.extend(_children(int(entry.name)))
    return out


def _serve(temp_dir: str, workers: int, cpus: float) -> None:
    os.environ.update(CLIENT_ENV)
    import ray._private.utils
    from ray.cluster_utils import Cluster

    # Cluster writes its address to /tmp/ray for ray.init("auto"); that file is shared by
    # everyone on the machine, so this private cluster does not advertise itself.
    ray._private.utils.write_ray_address = lambda *args, **kwargs: None
    common: dict[str, Any] = {
        "node_ip_address": "127.0.0.1",
        "object_store_memory": OBJECT_STORE_BYTES,
    }
    cluster = Cluster(
        initialize_head=True,
        head_node_args={
            **common,
            "num_cpus": 0,
            "include_dashboard": False,
            "temp_dir": temp_dir,
            "_system_config": HEALTH_CHECKS,
        },
    )
    try:
        nodes = [cluster.add_node(**common, num_cpus=cpus) for _ in range(workers)]
        cluster.wait_for_nodes(timeout=START_TIMEOUT_S)
        info = {
            "address": cluster.address,
            "workers": [
                {"node_id": n.node_id, "raylet_pid": n.all_processes["raylet"][0].process.pid}
                for n in nodes
            ],
        }
        print(json.dumps(info), flush=True)
        sys.stdin.read()
    finally:
        cluster.shutdown()


@contextlib.contextmanager
def local_cluster(workers: int = 2, cpus: float = 1) -> Iterator[LocalCluster]:
    # Unix socket paths are short: keep the session folder near the root of /tmp.
    temp_dir = tempfile.mkdtemp(prefix="ecray-", dir="/tmp")
    env = {
        **os.environ,
        **CLIENT_ENV,
        "PYTHONPATH": f"{REPO_ROOT / 'tools'}{os.pathsep}{REPO_ROOT}",
    }
    log = open(Path(temp_dir) / "cluster.log", "w+")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.run.ray_cluster", temp_dir, str(workers), str(cpus)],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        start_new_session=True,
    )
    try:
        line = _read_line(proc, log, START_TIMEOUT_S)
        info = json.loads(line)
        yield LocalCluster(
            info["address"],
            tuple(Worker(w["node_id"], w["raylet_pid"]) for w in info["workers"]),
            {k: v for k, v in env.items() if k in CLIENT_ENV or k == "PYTHONPATH"},
        )
    finally:
        _stop(proc)
        log.close()
        shutil.rmtree(temp_dir, ignore_errors=True)


def _read_line(proc: subprocess.Popen[str], log: IO[str], timeout: float) -> str:
    box: list[str] = []
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not box or not box[0].strip():
        log.seek(0)
        err = log.read()[-3000:]
        raise RuntimeError(f"the local Ray cluster did not start within {timeout:g} s\n{err}")
    return box[0]


def _stop(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError):
        if proc.stdin is not None:
            proc.stdin.close()  # asks for an orderly shutdown
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=60)
    # Whatever is left of the session (raylets, workers, agents they started) goes now.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    if proc.stdout is not None:
        proc.stdout.close()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
