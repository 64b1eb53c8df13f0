"""Campaigns on Ray: a local head on 127.0.0.1 (every Ray listener on loopback), one task per
episode, results streamed into the same store and equal to the local workers' run."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mango.evaluation.campaign import load_campaign
from mango.evaluation.runner import STORE_FILE, run_campaign
from mango.evaluation.store import Store

TINY = Path(__file__).resolve().parents[1] / "data" / "sim" / "tiny_basket.yaml"
RAY = str(Path(sys.executable).with_name("ray"))
LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    port = _free_port()
    env = dict(os.environ, **LOOPBACK_ENV)
    # a short temp folder: Ray's unix sockets live under it (108-byte path limit)
    with tempfile.TemporaryDirectory(prefix="ray", dir="/tmp") as tmp:
        subprocess.run([RAY, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}",
                        "--dashboard-host=127.0.0.1", "--include-dashboard=false",
                        "--disable-usage-stats", "--num-cpus=2",
                        "--object-store-memory=200000000", f"--temp-dir={tmp}"],
                       env=env, check=True, capture_output=True, timeout=120)
        try:
            yield f"127.0.0.1:{port}"
        finally:
            subprocess.run([RAY, "stop", "--force"], env=env, capture_output=True, timeout=60)


def _ray_listeners() -> list[str]:
    out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines()
            if any(n in line for n in ("gcs_server", "raylet", "ray::", "plasma"))]


def test_ray_tasks_give_the_local_results_and_listen_on_loopback_only(
        ray_head: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in LOOPBACK_ENV.items():
        monkeypatch.setenv(k, v)
    path = tmp_path / "c.yaml"
    path.write_text(f"""name: ray
systems: [{{name: expert, kind: policy}}]
tasks: [{TINY}]
seeds: {{start: 0, count: 1}}
faults: [none, drop@0.5]
""")
    on_ray = run_campaign(load_campaign(path), tmp_path / "ray", ray_address=ray_head)
    local = run_campaign(load_campaign(path), tmp_path / "local", workers=2)
    assert (on_ray.ran, on_ray.errors, local.ran) == (2, 0, 2)  # a nominal and a faulted run

    def outcomes(out: Path) -> dict[str, tuple]:
        with Store(out / STORE_FILE) as s:
            return {r["episode"]: (r["success"], r["error"], r["labels"]["expected_verdict"],
                                   r["labels"]["failed_step"], r["symbolic"]["verdict"])
                    for r in s.results()}

    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")
    for eid in outcomes(tmp_path / "ray"):  # the files came back with the results
        assert (tmp_path / "ray" / "episodes" / eid / "trace.jsonl").stat().st_size > 0
    listeners = _ray_listeners()
    assert listeners, "no Ray listener found (is ss showing processes?)"
    for line in listeners:
        local_addr = line.split()[3]
        assert local_addr.startswith(("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")), line


def test_an_unreachable_cluster_is_an_error_naming_the_option(tmp_path: Path) -> None:
    from mango.errors import InputError

    path = tmp_path / "c.yaml"
    path.write_text(f"name: ray\nsystems: [{{name: expert, kind: policy}}]\ntasks: [{TINY}]\n"
                    "seeds: {count: 1}\n")
    with pytest.raises(InputError) as err:
        run_campaign(load_campaign(path), tmp_path / "out",
                     ray_address=f"127.0.0.1:{_free_port()}")
    assert err.value.field == "--ray-address" and "cannot join the Ray cluster" in str(err.value)
