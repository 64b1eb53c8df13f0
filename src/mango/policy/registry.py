"""Policy backends by name: the only place that knows the names.

Each factory imports its backend when called, so choosing `expert` never imports websockets,
httpx or torch, and a backend module depends on the configuration only, never on this table.
"""

from __future__ import annotations

from collections.abc import Callable

from mango.control.kinematics import Kinematics
from mango.policy.base import Policy, PolicyBackend
from mango.policy.config import PolicyConfig
from mango.policy.presets import PolicyError


def _expert(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.expert import ExpertBackend

    return ExpertBackend.from_config(cfg)


def _openpi(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.openpi import OpenPIBackend

    return OpenPIBackend.from_config(cfg)


def _openvla(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.openvla import OpenVLABackend

    return OpenVLABackend.from_config(cfg)


def _lerobot(cfg: PolicyConfig) -> PolicyBackend:
    from mango.policy.lerobot import LeRobotBackend

    return LeRobotBackend.from_config(cfg)


BACKENDS: dict[str, Callable[[PolicyConfig], PolicyBackend]] = {
    "expert": _expert, "openpi": _openpi, "openvla": _openvla, "lerobot": _lerobot,
}


def make_backend(cfg: PolicyConfig) -> PolicyBackend:
    factory = BACKENDS.get(cfg.backend)
    if factory is None:
        raise PolicyError(f"unknown policy backend {cfg.backend!r} "
                          f"(known: {', '.join(BACKENDS)})")
    return factory(cfg)


def make_policy(cfg: PolicyConfig, kinematics: Kinematics | None = None) -> Policy:
    return Policy(make_backend(cfg), kinematics)
