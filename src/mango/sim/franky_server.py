"""A simulated FR3 that speaks libfranka's own TCP/UDP protocol: franky-sim's server (MuJoCo
Menagerie's FR3 and Franka Hand at 1 kHz) on one loopback address.

libfranka connects to fixed ports of an address (a real FR3's control box), so each simulated
robot gets an address of its own in 127.0.0.0/8 (`free_loopback_address`). Everything stays on
loopback: the server refuses any other address.
"""

from __future__ import annotations

import ipaddress
import random
import socket
import subprocess
from types import TracebackType
from typing import Any

from mango.errors import InputError

LIBFRANKA_PORT = 1337  # libfranka's robot service (include/franka/robot.h: kCommandPort)


def check_loopback(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise InputError(f"{address!r} is not an IPv4 address", field="address") from None
    if not ip.is_loopback or ip.version != 4:
        raise InputError(f"{address} is not a loopback address (127.0.0.0/8): the simulated "
                         "FR3 never listens beyond this machine", field="address")
    return address


def free_loopback_address(rng: random.Random | None = None) -> str:
    """A 127.x.y.z address nothing listens on at libfranka's port."""
    rng = rng or random.SystemRandom()
    for _ in range(100):
        address = f"127.{rng.randint(1, 254)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((address, LIBFRANKA_PORT))
            except OSError:
                continue
        return address
    raise RuntimeError("no free loopback address for a simulated FR3")


class FrankySimServer:
    """franky-sim's FR3 served at `address` in a thread of this process (its 1 kHz loop)."""

    def __init__(self, address: str) -> None:
        self.address = check_loopback(address)
        self._sim: Any = None
        self._server: Any = None

    def start(self) -> FrankySimServer:
        import franky_sim
        from franky_sim.mujoco_simulator import MujocoSimulator

        self._sim = MujocoSimulator(enable_visualization=False).__enter__()
        self._sim.add_robot()
        self._server = franky_sim.SimulationServer(self._sim, hostname_candidates=[self.address])
        self._server.init()
        self._server.run_async()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._sim is not None:
            self._sim.__exit__(None, None, None)
            self._sim = None

    def __enter__(self) -> FrankySimServer:
        return self.start()

    def __exit__(self, _t: type[BaseException] | None, _e: BaseException | None,
                 _tb: TracebackType | None) -> None:
        self.close()


def spawn(address: str, timeout: float = 60.0) -> subprocess.Popen[str]:
    """The simulated FR3 at `address` in a process of its own (its 1 kHz loop is Python: in
    the caller's process it would share one interpreter lock with the client), once ready."""
    import select
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "mango.sim.franky_server",
                             check_loopback(address)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else ""
    if line.strip() != f"ready {address}":
        proc.kill()
        rest = proc.stdout.read() if ready else ""
        raise RuntimeError(f"the simulated FR3 did not start at {address}: {line}{rest}")
    return proc


def main(argv: list[str] | None = None) -> None:
    """`python -m mango.sim.franky_server [ADDRESS]`: serve until killed; prints the address."""
    import sys
    import threading

    args = sys.argv[1:] if argv is None else argv
    with FrankySimServer(args[0] if args else free_loopback_address()) as server:
        print(f"ready {server.address}", flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main()
