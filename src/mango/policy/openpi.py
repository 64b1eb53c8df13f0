"""openpi websocket client (own implementation of the openpi-client protocol).

`openpi-client` is on PyPI (0.1.2) but pins `numpy<2`, which this project's stack (ROS 2
Kilted wheels, MuJoCo) does not run on, so this speaks the protocol directly: on connect the
server sends msgpack metadata; each request is a msgpack observation, each reply a msgpack
dict with `actions` (H x D); a *text* frame is the server's error (a traceback). A dropped
connection is re-opened once per request.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from mango.policy import msgpack_numpy
from mango.policy.config import PolicyConfig, preset_for
from mango.policy.presets import Observation, ObservationPreset, PolicyError

log = logging.getLogger(__name__)


class OpenPIClient:
    """Blocking client for an openpi policy server (`ws://host:port`)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8000, timeout: float = 30.0,
                 api_key: str | None = None) -> None:
        self.uri = host if host.startswith("ws") else f"ws://{host}:{port}"
        self.timeout = timeout
        self.api_key = api_key
        self.metadata: dict[str, Any] = {}
        self._conn: Any = None

    def connect(self) -> dict[str, Any]:
        """Open the connection and read the server's metadata."""
        from websockets.exceptions import WebSocketException
        from websockets.sync.client import connect

        headers = {"Authorization": f"Api-Key {self.api_key}"} if self.api_key else None
        try:
            # a long-lived connection: entered here, closed by close()
            self._conn = connect(self.uri, compression=None, max_size=None,
                                 open_timeout=self.timeout, additional_headers=headers)
            self._conn.__enter__()
            first = self._conn.recv(timeout=self.timeout)
        except (OSError, TimeoutError, WebSocketException) as exc:
            self._conn = None
            raise PolicyError(f"openpi server {self.uri} unreachable: {exc}") from None
        if isinstance(first, str):
            raise PolicyError(f"openpi server {self.uri} sent an error instead of metadata:\n"
                              f"{first}")
        self.metadata = msgpack_numpy.unpackb(first)
        return self.metadata

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        """One request/reply; reconnects once if the connection was lost."""
        from websockets.exceptions import ConnectionClosed

        payload = msgpack_numpy.packb(obs)
        for attempt in (1, 2):
            if self._conn is None:
                self.connect()
            try:
                self._conn.send(payload)
                reply = self._conn.recv(timeout=self.timeout)
                break
            except ConnectionClosed:
                self._conn = None
                if attempt == 2:
                    raise PolicyError(f"openpi server {self.uri} closed the connection") from None
                log.warning("openpi connection lost; reconnecting")
            except TimeoutError:
                self.close()
                raise PolicyError(f"openpi server {self.uri} did not answer within "
                                  f"{self.timeout:g} s") from None
        if isinstance(reply, str):
            raise PolicyError(f"openpi server error:\n{reply}")
        out = msgpack_numpy.unpackb(reply)
        if not isinstance(out, dict):
            raise PolicyError("openpi reply is not a map")
        return out

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class OpenPIBackend:

    def __init__(self, client: OpenPIClient, preset: ObservationPreset,
                 kinematics: Any = None) -> None:
        self.client, self.preset, self.kinematics = client, preset, kinematics
        self.instruction = ""

    @classmethod
    def from_config(cls, cfg: PolicyConfig, kinematics: Any = None) -> OpenPIBackend:
        return cls(OpenPIClient(cfg.host, cfg.port, cfg.timeout), preset_for(cfg, "libero"),
                   kinematics)

    def reset(self, instruction: str) -> None:
        self.instruction = instruction
        if self.client._conn is None:
            self.client.connect()

    def infer(self, obs: Observation) -> np.ndarray:
        reply = self.client.infer(self.preset.encode(obs, self.kinematics))
        if "actions" not in reply:
            raise PolicyError(f"openpi reply has no 'actions' (keys: {sorted(reply)})")
        return np.asarray(reply["actions"], float)

    @property
    def done(self) -> bool:
        return False

    def close(self) -> None:
        self.client.close()
