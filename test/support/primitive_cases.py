"""What the primitives tests ask of each LIBERO-10 scene: every movable object, named as a
user would, and where the scene's expert plan puts it — shared by the embedded executor's
test (`test/primitives/test_scenes.py`) and the one through the ROS actions
(`test/primitives/test_node.py`)."""

from __future__ import annotations

from mango.primitives.planning import GRIPPER_OPEN
from mango.sim.scene import EntitySpec, SceneSpec, list_scenes

SCENES = sorted(p.stem for p in list_scenes() if p.stem.startswith("libero10_"))


def phrase(scene: SceneSpec, eid: str) -> str:
    """The entity as a user names it: its description, else its id's category."""
    e = scene.entity(eid)
    return "the " + (e.description or eid.rsplit("_", 1)[0].replace("_", " "))


def destination(scene: SceneSpec, eid: str) -> str:
    """Where the expert plan puts the object, in VoLo's phrasing; the table otherwise."""
    for k in scene.expert:
        if k.skill == "pick_place" and k.obj == eid and k.target is not None:
            region = next((r for r in scene.regions if r.id == k.target), None)
            dest = region.parent if region is not None else k.target
            if dest and dest != scene.table.id and k.relation in ("in", "on"):
                return f"{k.relation} {phrase(scene, dest)}"
    return "empty space on the table"


def wider_than_the_hand(e: EntitySpec) -> bool:
    """Refused by Grasp with the reason: no top-down grasp closes across it."""
    return min(e.size[0], e.size[1]) > GRIPPER_OPEN - 0.005
