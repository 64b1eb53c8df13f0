"""Policy backends by name: the only place that knows the names.

Each factory imports its backend when called, so choosing `expert` never imports websockets,
httpx or torch, and a backend module depends on the configuration only, never on this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mango.control.kinematics import Kinematics
from mango.policy.base import Policy, PolicyBackend
from mango.policy.config import PolicyConfig
from mango.policy.presets import PolicyError


def _expert(cfg: PolicyConfig, _kinematics: Kinematics | None) -> PolicyBackend:
    from mango.policy.expert import ExpertBackend

    return ExpertBackend.from_config(cfg)


def _openpi(cfg: PolicyConfig, kinematics: Kinematics | None) -> PolicyBackend:
    from mango.policy.openpi import OpenPIBackend

    return OpenPIBackend.from_config(cfg, kinematics)


def _openvla(cfg: PolicyConfig, kinematics: Kinematics | None) -> PolicyBackend:
    from mango.policy.openvla import OpenVLABackend

    return OpenVLABackend.from_config(cfg, kinematics)


def _lerobot(cfg: PolicyConfig, _kinematics: Kinematics | None) -> PolicyBackend:
    from mango.policy.lerobot import LeRobotBackend

    return LeRobotBackend.from_config(cfg)


@dataclass(frozen=True)
class BackendEntry:
    """How to make a backend, and what the stack around it must know without making one."""

    # Made from the configuration and the robot's kinematics: a preset with end-effector
    # state fields encodes its request with them.
    make: Callable[[PolicyConfig, Kinematics | None], PolicyBackend]
    # Reads `Observation.world_state` instead of camera images (the scripted expert): the
    # vla_node subscribes to the world state and to no camera, a sim stack renders none.
    reads_world_state: bool = False
    injects_faults: bool = False  # takes a `fault` (KIND@WHEN) to inject into its own run
    # Each chunk is the next step of the backend's own plan, to be played whole before the
    # next query (the scripted expert moves on in its plan at every query): the vla_node runs
    # it synchronously whatever its `chunk_threshold`.
    plays_chunks_whole: bool = False


BACKENDS: dict[str, BackendEntry] = {
    "expert": BackendEntry(_expert, reads_world_state=True, injects_faults=True,
                           plays_chunks_whole=True),
    "openpi": BackendEntry(_openpi), "openvla": BackendEntry(_openvla),
    "lerobot": BackendEntry(_lerobot),
}


def backend_entry(name: str) -> BackendEntry:
    entry = BACKENDS.get(name)
    if entry is None:
        raise PolicyError(f"unknown policy backend {name!r} (known: {', '.join(BACKENDS)})")
    return entry


def make_backend(cfg: PolicyConfig, kinematics: Kinematics | None = None) -> PolicyBackend:
    return backend_entry(cfg.backend).make(cfg, kinematics)


def make_policy(cfg: PolicyConfig, kinematics: Kinematics | None = None) -> Policy:
    entry = backend_entry(cfg.backend)
    return Policy(entry.make(cfg, kinematics), kinematics,
                  needs_world_state=entry.reads_world_state,
                  plays_chunks_whole=entry.plays_chunks_whole)
