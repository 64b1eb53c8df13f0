"""OpenVLA REST backend: `POST /act` with a json-numpy body, one 7-D action back.

json-numpy encodes an ndarray as `{"__numpy__": <base64 bytes>, "dtype": <dtype.str>,
"shape": [...]}`; the reference server (`vla-scripts/deploy.py`) patches `json` with it, so the
reply is an encoded array (or a plain list), and a failure comes back as the string "error".
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from mango.policy.config import PolicyConfig, preset_for
from mango.policy.presets import Observation, ObservationPreset, PolicyError


def _encode(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        a = np.ascontiguousarray(obj)
        return {"__numpy__": base64.b64encode(a.tobytes()).decode("ascii"),
                "dtype": a.dtype.str, "shape": list(a.shape)}
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot encode {type(obj).__name__}")


def _decode(dct: dict[str, Any]) -> Any:
    if "__numpy__" in dct:
        data = base64.b64decode(dct["__numpy__"])
        return np.frombuffer(data, dtype=np.dtype(dct["dtype"])).reshape(dct["shape"])
    return dct


def dumps(obj: Any) -> str:
    """JSON with numpy arrays in json-numpy's encoding."""
    return json.dumps(obj, default=_encode)


def loads(text: str | bytes) -> Any:
    return json.loads(text, object_hook=_decode)


class OpenVLABackend:

    def __init__(self, url: str, preset: ObservationPreset, timeout: float = 30.0,
                 unnorm_key: str | None = None, kinematics: Any = None) -> None:
        import httpx

        self.url, self.preset, self.kinematics = url, preset, kinematics
        self.unnorm_key = unnorm_key
        self._http = httpx.Client(timeout=timeout)

    @classmethod
    def from_config(cls, cfg: PolicyConfig, kinematics: Any = None) -> OpenVLABackend:
        return cls(cfg.url, preset_for(cfg, "openvla"), cfg.timeout, cfg.unnorm_key,
                   kinematics)

    def reset(self, instruction: str) -> None:
        pass

    def infer(self, obs: Observation) -> np.ndarray:
        import httpx

        body = self.preset.encode(obs, self.kinematics)
        if self.unnorm_key:
            body["unnorm_key"] = self.unnorm_key
        try:
            r = self._http.post(self.url, content=dumps(body),
                                headers={"content-type": "application/json"})
        except httpx.HTTPError as exc:
            raise PolicyError(f"OpenVLA server {self.url} unreachable: {exc}") from None
        if r.status_code != 200:
            raise PolicyError(f"OpenVLA server {self.url} answered HTTP {r.status_code}: "
                              f"{r.text[:200]}")
        try:
            reply = loads(r.content)
        except (ValueError, KeyError, TypeError) as exc:
            raise PolicyError(f"OpenVLA reply is not json-numpy: {exc}") from None
        if isinstance(reply, str):
            raise PolicyError(f"OpenVLA server returned {reply!r} (see the server's log)")
        action = np.asarray(reply, float)
        if action.ndim == 1:
            action = action[None, :]
        return action

    @property
    def done(self) -> bool:
        return False

    def close(self) -> None:
        self._http.close()
