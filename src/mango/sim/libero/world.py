"""A spec §3 world state from LIBERO's simulation facts (`LiberoClient.facts`).

Ids are LIBERO's: objects and fixtures (`akita_black_bowl_1`, `wooden_cabinet_1`), its sites
as regions (`wooden_cabinet_1_top_region`, parent = the fixture), articulated fixtures' joints
(keyed by the region that names the joint, else by LIBERO's joint name, so `open(fixture)`
reads them all), the stove as a device.

- An entity's `position` is LIBERO's reference point (`body_xpos`, what its predicates read);
  `size` is twice the largest distance of its collision geometry from that point along each
  body axis, so the box holds the geometry.
- A region is LIBERO's site itself: its own box (twice the site's `size`) and its
  orientation; `libero_in` / `libero_on` read it as `SiteObject.in_box` / `under` do.
- Joints: `q` is LIBERO's joint position; `q_closed` = 0 and `q_open` = the far end of the
  class's `default_open_ranges` (`default_turnon_ranges` for the stove's knob), so openness
  times `q_open` is LIBERO's q; `open_frac` / `closed_frac` are the class's own `is_open` /
  `is_close` thresholds (`envs/objects/articulated_objects.py`) on that scale.
- `grasped(x)` facts are robosuite's finger-pad rule (`ManipulationEnv._check_grasp`: both
  finger pads touch the object); contacts are LIBERO's `check_contact` pairs (every MuJoCo
  contact between two entities' `contact_geoms`) plus the fingers and the rest of the gripper.
"""

from __future__ import annotations

from typing import Any

from mango.oracle.world_state import WorldState, parse_world_state


def _fractions(art: dict[str, list[float]]) -> tuple[float, float, float] | None:
    """(q_open, open_frac, closed_frac) on q_closed = 0 from a class's articulation ranges."""
    opening = art.get("default_open_ranges") or []
    if opening:
        q_open = max(opening, key=abs)
        neg = q_open < 0
        # is_open: q < max(open) (opening towards negative q) or q > min(open)
        t_open = max(opening) if neg else min(opening)
        closing = art.get("default_close_ranges") or [0.0]
        # is_close: q > min(close) (negative) or q < max(close)
        t_close = min(closing) if neg else max(closing)
        return q_open, t_open / q_open, t_close / q_open
    turning = art.get("default_turnon_ranges") or []
    if turning:
        q_on = max(turning, key=abs)
        # FlatStove.turn_on: q >= min(turnon); turn_off: q < max(turnoff)
        t_off = max(art.get("default_turnoff_ranges") or [0.0])
        return q_on, min(turning) / q_on, t_off / q_on
    return None


def world_state(
    facts: dict[str, Any], articulation: dict[str, dict[str, list[Any]]], t: float | None = None
) -> WorldState:
    """The spec §3 state of one LIBERO simulator state; validated by `WorldState`."""
    objects: dict[str, dict[str, Any]] = {}
    for name, o in facts["objects"].items():
        objects[name] = {
            "position": o["position"],
            "orientation": o["orientation"],
            "size": [2 * h for h in o["half_extent"]],
            "kind": "fixture" if o["fixture"] else "object",
        }
    joint_key: dict[str, str] = {}
    for name, r in facts["regions"].items():
        objects[name] = {
            "position": r["position"],
            # the site's own box, turned by its orientation (LIBERO's predicates read a site in
            # its own frame: `libero_predicates`)
            "orientation": r["orientation"],
            "size": [2 * h for h in r["size"]],
            "kind": "region",
            **({"parent": r["parent"]} if r["parent"] in objects else {}),
        }
        for j in r["joints"]:
            joint_key.setdefault(j, name)
    joints: dict[str, dict[str, float]] = {}
    for jname, j in facts["joints"].items():
        art = articulation.get(j["fixture"])
        fr = _fractions(art) if art else None
        if fr is None:
            continue
        q_open, open_frac, closed_frac = fr
        joints[joint_key.get(jname, jname)] = {
            "q": j["q"],
            "q_open": q_open,
            "q_closed": 0.0,
            "open_frac": open_frac,
            "closed_frac": closed_frac,
        }
    g = facts["gripper"]
    objects["robot_hand"] = {"position": g["position"], "kind": "robot"}
    record = {
        "t": facts["time"] if t is None else t,
        "objects": objects,
        "joints": joints,
        "devices": facts["devices"],
        "gripper": {"width": g["width"], "closed": g["closed"]},
        "contacts": [list(p) for p in facts["contacts"]],
        "facts": {f"grasped({n})": v for n, v in facts["grasped"].items()},
    }
    return parse_world_state(record)
