"""Policy backends against servers on loopback that speak the real protocols.

openpi: a websockets server that sends msgpack metadata on connect and answers msgpack
observations with `actions`, packing ndarrays with openpi's bin-keyed `__ndarray__` maps;
errors as text frames. OpenVLA: an HTTP server decoding the body with the real `json_numpy`
package and answering a json-numpy array.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import json_numpy
import msgpack
import numpy as np
import pytest
from websockets.sync.server import ServerConnection, serve

from mango.control import load_robot
from mango.policy import Observation, Policy, PolicyConfig, PolicyError, make_backend
from mango.policy.kinematics import make_kinematics
from mango.policy.openpi import OpenPIBackend, OpenPIClient
from mango.policy.openvla import OpenVLABackend
from mango.policy.presets import get_preset

ROBOT = load_robot("fr3")
KIN = make_kinematics(ROBOT)


def _openpi_pack(obj: Any) -> Any:  # openpi_client.msgpack_numpy.pack_array
    if isinstance(obj, np.ndarray):
        return {b"__ndarray__": True, b"data": obj.tobytes(), b"dtype": obj.dtype.str,
                b"shape": obj.shape}
    return obj


def _openpi_unpack(obj: dict) -> Any:  # openpi_client.msgpack_numpy.unpack_array
    if b"__ndarray__" in obj:
        return np.ndarray(buffer=obj[b"data"], dtype=np.dtype(obj[b"dtype"]),
                          shape=obj[b"shape"])
    return obj


class FakeOpenPI:
    """A policy server following openpi's websocket_policy_server."""

    def __init__(self, horizon: int = 10, dim: int = 7) -> None:
        self.horizon, self.dim = horizon, dim
        self.requests: list[dict] = []
        self.connections = 0
        self.drop_next = False
        self.server = serve(self._handler, "127.0.0.1", 0, compression=None, max_size=None)
        self.port = self.server.socket.getsockname()[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self, ws: ServerConnection) -> None:
        self.connections += 1
        ws.send(msgpack.packb({"policy": "fake_pi0", "action_horizon": self.horizon},
                              default=_openpi_pack))
        for raw in ws:
            obs = msgpack.unpackb(raw, object_hook=_openpi_unpack)
            self.requests.append(obs)
            if self.drop_next:
                self.drop_next = False
                ws.close()
                return
            try:
                if obs["prompt"] == "explode":
                    raise ValueError("model exploded")
                actions = np.tile(np.linspace(0.0, 1.0, self.dim), (self.horizon, 1))
                ws.send(msgpack.packb({"actions": actions.astype(np.float32),
                                       "server_timing": {"infer_ms": 1.0}},
                                      default=_openpi_pack))
            except Exception:
                ws.send(traceback.format_exc())  # a text frame: the error

    def close(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=2)


@pytest.fixture
def openpi() -> Iterator[FakeOpenPI]:
    srv = FakeOpenPI()
    try:
        yield srv
    finally:
        srv.close()


def _obs(instruction: str = "put the soup in the basket") -> Observation:
    rng = np.random.default_rng(0)
    return Observation(
        images={"front": rng.integers(0, 255, (480, 640, 3), dtype=np.uint8),
                "wrist": rng.integers(0, 255, (224, 224, 3), dtype=np.uint8)},
        joint_positions=np.asarray(ROBOT.home), gripper_width=0.08, instruction=instruction)


def test_openpi_metadata_request_layout_and_chunk(openpi: FakeOpenPI) -> None:
    client = OpenPIClient("127.0.0.1", openpi.port, timeout=5)
    assert client.connect() == {"policy": "fake_pi0", "action_horizon": 10}
    backend = OpenPIBackend(client, get_preset("libero"), KIN)
    policy = Policy(backend, KIN)
    step = policy.act(_obs())
    req = openpi.requests[-1]
    assert set(req) == {"observation/image", "observation/wrist_image", "observation/state",
                        "prompt"}
    img = req["observation/image"]
    assert img.shape == (224, 224, 3) and img.dtype == np.uint8
    assert req["observation/state"].shape == (8,) and req["observation/state"].dtype == np.float32
    assert req["prompt"] == "put the soup in the basket"
    # the chunk length comes from the reply; LIBERO deltas became joint targets
    assert step.raw.shape == (10, 7) and step.chunk.shape[1] == 8
    assert 1 <= len(step.chunk) <= 10
    p0, _ = KIN.fk(ROBOT.home)
    p1, _ = KIN.fk(step.chunk[0, :7])
    expected = np.linspace(0.0, 1.0, 7)[:3] * 0.05
    assert np.allclose(p1 - p0, expected, atol=2e-3)
    assert step.chunk[0, 7] == 0.0  # +1 closes in LIBERO's convention
    client.close()


def test_openpi_text_frame_is_an_error(openpi: FakeOpenPI) -> None:
    backend = make_backend(PolicyConfig(backend="openpi", port=openpi.port, preset="joint",
                                        timeout=5))
    backend.reset("explode")
    with pytest.raises(PolicyError, match="model exploded"):
        backend.infer(_obs("explode"))
    backend.close()


def test_openpi_reconnects_after_a_dropped_connection(openpi: FakeOpenPI) -> None:
    openpi.dim = 8
    backend = make_backend(PolicyConfig(backend="openpi", port=openpi.port, preset="joint",
                                        timeout=5))
    backend.reset("x")
    first = backend.infer(_obs())
    openpi.drop_next = True
    second = backend.infer(_obs())
    assert openpi.connections == 2
    assert np.array_equal(first, second)
    backend.close()


def test_openpi_unreachable_server_is_a_clear_error() -> None:
    client = OpenPIClient("127.0.0.1", 1, timeout=2)
    with pytest.raises(PolicyError, match="unreachable"):
        client.connect()


class _VLAHandler(BaseHTTPRequestHandler):
    bodies: ClassVar[list[dict]] = []
    fail = False

    def do_POST(self) -> None:
        if self.path != "/act":
            self.send_error(404)
            return
        body = json_numpy.loads(self.rfile.read(int(self.headers["content-length"])))
        type(self).bodies.append(body)
        if type(self).fail:
            out = json.dumps("error")
        else:
            out = json_numpy.dumps(np.array([0.01, 0.0, -0.02, 0.0, 0.0, 0.1, 1.0]))
        data = out.encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def openvla() -> Iterator[str]:
    _VLAHandler.bodies, _VLAHandler.fail = [], False
    server = ThreadingHTTPServer(("127.0.0.1", 0), _VLAHandler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/act"
    finally:
        server.shutdown()
        t.join(timeout=2)


def test_openvla_json_numpy_body_and_action(openvla: str) -> None:
    backend = OpenVLABackend(openvla, get_preset("openvla"), timeout=5, kinematics=KIN)
    step = Policy(backend, KIN).act(_obs())
    body = _VLAHandler.bodies[-1]
    assert isinstance(body["image"], np.ndarray)
    assert body["image"].shape == (224, 224, 3) and body["image"].dtype == np.uint8
    assert body["instruction"] == "put the soup in the basket"
    assert body["unnorm_key"] == "bridge_orig"
    assert step.chunk.shape == (1, 8)
    p0, _ = KIN.fk(ROBOT.home)
    p1, _ = KIN.fk(step.chunk[0, :7])
    assert np.allclose(p1 - p0, [0.01, 0.0, -0.02], atol=1e-3)
    assert step.chunk[0, 7] == pytest.approx(0.08)  # 1 = open in OpenVLA's convention


def test_openvla_error_reply_is_a_clear_error(openvla: str) -> None:
    _VLAHandler.fail = True
    backend = make_backend(PolicyConfig(backend="openvla", url=openvla, timeout=5))
    with pytest.raises(PolicyError, match="returned 'error'"):
        backend.infer(_obs())
    backend.close()


def test_openvla_unreachable() -> None:
    backend = make_backend(PolicyConfig(backend="openvla", url="http://127.0.0.1:1/act",
                                        timeout=2))
    with pytest.raises(PolicyError, match="unreachable"):
        backend.infer(_obs())


def test_unknown_backend_and_preset_name_the_choices() -> None:
    with pytest.raises(PolicyError, match="known: expert, openpi, openvla, lerobot"):
        make_backend(PolicyConfig(backend="nope"))
    with pytest.raises(PolicyError, match="unknown observation preset 'nope'"):
        make_backend(PolicyConfig(backend="openvla", preset="nope"))
