"""Campaign episodes as Ray tasks (`mango campaign run --ray-address auto|HOST:PORT`): one task
per episode, at most two per CPU in flight, results (and their files) streamed back to the
campaign's one writer as they finish.

Ray binds the machine's external address unless `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` is in
the environment of both the head (`ray start`) and the driver; the driver sets it here, the
README says it for `ray start`, and the tests check every listener is on 127.0.0.1.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from typing import Any

from mango.errors import InputError
from mango.evaluation.campaign import EpisodeSpec
from mango.evaluation.episodes import execute_episode


def _check_reachable(address: str, timeout: float = 5.0) -> None:
    """A HOST:PORT nobody listens on is said at once: `ray.init` would retry for minutes."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto", "local", "ray://..." : Ray resolves those itself
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)),
                                 timeout=timeout).close()
    except OSError as exc:
        raise InputError(f"cannot join the Ray cluster at '{address}': {exc.strerror or exc}",
                         field="--ray-address") from None


class RayEpisodes:
    def __init__(self, address: str) -> None:
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        try:
            import ray
        except ImportError:
            raise InputError("--ray-address needs the ray package (pip install ray==2.60.0)"
                             ) from None
        self._ray = ray
        _check_reachable(address)
        try:
            ray.init(address=address, log_to_driver=False, ignore_reinit_error=True)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot join the Ray cluster at '{address}': "
                             f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                             field="--ray-address") from None
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._task = ray.remote(num_cpus=1, max_retries=1)(execute_episode)

    def run(self, specs: list[tuple[EpisodeSpec, dict[str, Any]]]
            ) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
        ray = self._ray
        queue = iter(specs)
        pending = []
        for spec, system in queue:
            pending.append(self._task.remote(spec, system))
            if len(pending) >= 2 * self.slots:
                break
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield ray.get(done[0])
            nxt = next(queue, None)
            if nxt is not None:
                pending.append(self._task.remote(*nxt))

    def close(self) -> None:
        self._ray.shutdown()
