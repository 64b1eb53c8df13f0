"""Write the LIBERO-10 example traces (`libero/*.jsonl`) and their expected verdicts.

A tiny kinematic script stands in for a run: the hand centre moves in straight lines, a
grasped object follows it with both fingers in contact, released objects rest on what is
below them, drawers and doors move their joint and the region they carry. Geometry follows
LIBERO's layouts (table top at z = 0.9 m, so a ground-relative "up" would misfire). The
expected outcome of each scenario is written down here by intent, not computed by the oracle
engine, and `test_libero.py` checks the engine against it.

Run from the repository root: `python test/data/oracle/make_libero_traces.py`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

OUT = Path(__file__).resolve().parent / "libero"
DT = 0.2
TABLE_TOP = 0.9
HAND_START = (-0.25, 0.0, 1.2)
Vec = tuple[float, float, float]


@dataclass
class Ent:
    pos: list[float]
    size: tuple[float, float, float]
    kind: str = "object"
    parent: str | None = None


@dataclass
class World:
    """Entities, joints, devices, the hand and what it holds; `emit` records one state."""

    ents: dict[str, Ent]
    joints: dict[str, dict[str, float]] = field(default_factory=dict)
    devices: dict[str, bool] = field(default_factory=dict)
    # region -> (joint, fixed part of its position, axis it slides along per unit of q)
    carried_by_joint: dict[str, tuple[str, Vec, Vec]] = field(default_factory=dict)
    hand: list[float] = field(default_factory=lambda: list(HAND_START))
    closed: bool = False
    held: str | None = None
    riders: dict[str, str] = field(default_factory=dict)  # object -> region it moves with
    states: list[dict] = field(default_factory=list)
    t: float = 0.0

    # ------------------------------------------------------------------ recording
    def emit(self) -> None:
        objects = {}
        for name, e in self.ents.items():
            rec = {"position": [round(c, 4) for c in e.pos], "size": list(e.size), "kind": e.kind}
            if e.parent:
                rec["parent"] = e.parent
            objects[name] = rec
        objects["robot_hand"] = {"position": [round(c, 4) for c in self.hand], "kind": "robot"}
        contacts = []
        if self.held:
            contacts += [[self.held, "robot_left_finger"], [self.held, "robot_right_finger"]]
        for name, e in self.ents.items():
            if e.kind != "object" or name == self.held:
                continue
            below = self.resting_on(name)
            if below:
                contacts.append([name, below])
        self.states.append(
            {
                "t": round(self.t, 3),
                "objects": objects,
                "joints": {k: dict(v) for k, v in self.joints.items()},
                "devices": {k: {"on": v} for k, v in self.devices.items()},
                "gripper": {
                    "width": 0.03 if self.closed and self.held else (0.0 if self.closed else 0.08),
                    "closed": self.closed,
                },
                "contacts": contacts,
            }
        )
        self.t += DT

    def resting_on(self, name: str) -> str | None:
        e = self.ents[name]
        bottom = e.pos[2] - e.size[2] / 2
        for other, o in self.ents.items():
            if other == name or o.kind == "region":
                continue
            top = o.pos[2] + o.size[2] / 2
            inside = all(abs(e.pos[i] - o.pos[i]) <= o.size[i] / 2 for i in range(2))
            if inside and abs(bottom - top) < 0.005:
                return other
            floor = o.pos[2] - o.size[2] / 2
            if inside and o.kind == "object" and abs(bottom - floor - 0.005) < 0.006:
                return other  # on a container's floor
        return None

    # ------------------------------------------------------------------ motions
    def move(self, target: tuple[float, float, float], steps: int) -> None:
        start = list(self.hand)
        for k in range(1, steps + 1):
            f = k / steps
            self.hand = [start[i] + (target[i] - start[i]) * f for i in range(3)]
            if self.held:
                h = self.ents[self.held]
                h.pos = [self.hand[0], self.hand[1], self.hand[2] - 0.02]
            self.emit()

    def above(self, name: str, dz: float = 0.08) -> tuple[float, float, float]:
        e = self.ents[name]
        return (e.pos[0], e.pos[1], e.pos[2] + e.size[2] / 2 + dz)

    def at(self, name: str) -> tuple[float, float, float]:
        e = self.ents[name]
        return (e.pos[0], e.pos[1], e.pos[2] + 0.02)

    def grasp(self, name: str | None) -> None:
        """Close the gripper; it holds `name` (None: a miss, closing on nothing)."""
        self.closed = True
        self.held = name
        self.riders.pop(name or "", None)
        self.emit()

    def release_onto(self, z_bottom: float, rider_of: str | None = None) -> None:
        """Open the gripper; the held object settles with its bottom at `z_bottom`."""
        assert self.held is not None
        h = self.ents[self.held]
        h.pos = [h.pos[0], h.pos[1], z_bottom + h.size[2] / 2]
        if rider_of:
            self.riders[self.held] = rider_of
        self.held = None
        self.closed = False
        self.emit()

    def place_in(self, region: str, rider: bool = False) -> None:
        r = self.ents[region]
        h = self.ents[self.held]  # type: ignore[index]
        floor = r.pos[2] - r.size[2] / 2
        self.move((r.pos[0], r.pos[1], floor + h.size[2] + 0.03), 4)
        self.move((r.pos[0], r.pos[1], floor + h.size[2] + 0.005), 2)
        self.release_onto(floor + 0.005, region if rider else None)
        self.move((r.pos[0], r.pos[1], floor + 0.3), 3)

    def place_on(self, support: str, offset: tuple[float, float] = (0.0, 0.0)) -> None:
        s = self.ents[support]
        h = self.ents[self.held]  # type: ignore[index]
        top = s.pos[2] + s.size[2] / 2
        x, y = s.pos[0] + offset[0], s.pos[1] + offset[1]
        self.move((x, y, top + h.size[2] + 0.05), 4)
        self.move((x, y, top + h.size[2] + 0.002), 2)
        self.release_onto(top)
        self.move((x, y, top + 0.3), 3)

    def pick(self, name: str) -> None:
        self.move(self.above(name), 5)
        self.move(self.at(name), 2)
        self.grasp(name)
        self.move(self.above(name, 0.2), 3)

    def drop(self) -> None:
        """The object slips out and falls onto the table."""
        self.release_onto(TABLE_TOP)

    def set_joint(self, joint: str, q: float, steps: int, push: tuple[float, float, float]) -> None:
        """Move a joint (the hand pushes from `push`), carrying regions and their contents."""
        self.move(push, 3)
        q0 = self.joints[joint]["q"]
        for k in range(1, steps + 1):
            self.joints[joint]["q"] = round(q0 + (q - q0) * k / steps, 4)
            for region, (j, base, axis) in self.carried_by_joint.items():
                if j != joint:
                    continue
                r = self.ents[region]
                new = [base[i] + axis[i] * self.joints[joint]["q"] for i in range(3)]
                delta = [new[i] - r.pos[i] for i in range(3)]
                r.pos = new
                self.hand[0] += delta[0]  # the hand pushes the drawer front
                for obj, reg in self.riders.items():
                    if reg == region:
                        o = self.ents[obj]
                        o.pos = [o.pos[i] + delta[i] for i in range(3)]
            self.emit()

    def switch(self, device: str, on: bool, at: tuple[float, float, float]) -> None:
        self.move(at, 4)
        self.devices[device] = on
        self.emit()
        self.move((at[0] - 0.1, at[1], at[2] + 0.15), 2)

    def wait(self, steps: int) -> None:
        for _ in range(steps):
            self.emit()


def resting(x: float, y: float, size: tuple[float, float, float], on: float = TABLE_TOP) -> Ent:
    return Ent([x, y, on + size[2] / 2], size)


def table() -> dict[str, Ent]:
    return {"main_table": Ent([0.0, 0.0, TABLE_TOP - 0.025], (1.0, 1.4, 0.05), "surface")}


# --------------------------------------------------------------------------- task scenes


def basket_world() -> World:
    ents = table()
    ents["alphabet_soup_1"] = resting(0.05, -0.15, (0.07, 0.07, 0.1))
    ents["tomato_sauce_1"] = resting(0.12, 0.05, (0.07, 0.07, 0.11))
    ents["cream_cheese_1"] = resting(-0.08, -0.28, (0.1, 0.06, 0.04))
    ents["basket_1"] = resting(0.0, 0.3, (0.25, 0.18, 0.08))
    ents["basket_1_contain_region"] = Ent(
        [0.0, 0.3, 0.96], (0.21, 0.14, 0.12), "region", "basket_1"
    )
    return World(ents)


def stove_world() -> World:
    ents = table()
    ents["moka_pot_1"] = resting(0.1, -0.15, (0.1, 0.1, 0.15))
    ents["flat_stove_1"] = Ent([0.0, 0.25, 0.92], (0.25, 0.25, 0.04), "device")
    ents["flat_stove_1_cook_region"] = Ent(
        [0.0, 0.25, 0.9425], (0.15, 0.15, 0.005), "region", "flat_stove_1"
    )
    return World(ents, devices={"flat_stove_1": False})


DRAWER_BASE = (0.18, -0.3, 0.96)  # drawer region centre when closed (q = 0)


def drawer_world() -> World:
    ents = table()
    ents["akita_black_bowl_1"] = resting(0.05, 0.15, (0.12, 0.12, 0.06))
    ents["white_cabinet_1"] = Ent([0.25, -0.3, 1.1], (0.3, 0.3, 0.4), "fixture")
    q0 = -0.16  # starts open, as in LIBERO
    ents["white_cabinet_1_bottom_region"] = Ent(
        [DRAWER_BASE[0] + q0, DRAWER_BASE[1], DRAWER_BASE[2]],
        (0.16, 0.2, 0.1),
        "region",
        "white_cabinet_1",
    )
    w = World(
        ents, joints={"white_cabinet_1_bottom_region": {"q": q0, "q_open": -0.16, "q_closed": 0.0}}
    )
    w.carried_by_joint["white_cabinet_1_bottom_region"] = (
        "white_cabinet_1_bottom_region",
        DRAWER_BASE,
        (1.0, 0.0, 0.0),
    )
    return w


def microwave_world() -> World:
    ents = table()
    ents["white_yellow_mug_1"] = resting(0.0, 0.15, (0.09, 0.09, 0.1))
    ents["porcelain_mug_1"] = resting(-0.1, 0.3, (0.09, 0.09, 0.1))
    ents["microwave_1"] = Ent([0.15, -0.25, 1.05], (0.3, 0.3, 0.3), "fixture")
    ents["microwave_1_heating_region"] = Ent(
        [0.15, -0.25, 0.99], (0.22, 0.2, 0.14), "region", "microwave_1"
    )
    return World(ents, joints={"microwave_1": {"q": -1.5, "q_open": -1.5, "q_closed": 0.0}})


# ------------------------------------------------------------------------------ scenarios

BASKET = "basket_1_contain_region"


def soup_sauce(kind: str) -> World:
    w = basket_world()
    w.wait(2)
    if kind == "fail_early":  # the arm wanders off and never reaches anything
        w.move((-0.3, -0.5, 1.25), 6)
        w.move((-0.35, 0.5, 1.3), 6)
        return w
    first, second = (
        ("tomato_sauce_1", "alphabet_soup_1")
        if kind == "reverse"
        else ("alphabet_soup_1", "tomato_sauce_1")
    )
    w.pick(first)
    w.place_in(BASKET)
    if kind == "fail_mid":  # closes the gripper beside the sauce: nothing is held
        s = w.ents[second]
        w.move(w.above(second), 5)
        w.move((s.pos[0] - 0.06, s.pos[1], s.pos[2] + 0.02), 2)
        w.grasp(None)
        w.move((s.pos[0] - 0.06, s.pos[1], s.pos[2] + 0.25), 3)
        return w
    w.pick(second)
    if kind == "fail_late":  # carries the sauce towards the basket and drops it on the way
        w.move((0.05, 0.18, 1.1), 3)
        w.drop()
        w.wait(3)
        return w
    if kind in ("regression", "restored"):  # the arm knocks the soup out of the basket
        soup = w.ents[first]
        soup.pos = [0.0, 0.47, TABLE_TOP + soup.size[2] / 2]
    w.place_in(BASKET)
    if kind == "restored":  # ... notices, and puts it back
        w.pick(first)
        w.place_in(BASKET)
    w.wait(2)
    return w


def stove_moka(kind: str) -> World:
    w = stove_world()
    w.wait(2)
    if kind == "fail_early":
        w.move((-0.3, -0.4, 1.25), 8)
        return w
    w.switch("flat_stove_1", True, (-0.14, 0.25, 0.93))
    m = w.ents["moka_pot_1"]
    if kind == "fail_mid":  # misses the handle
        w.move(w.above("moka_pot_1"), 5)
        w.move((m.pos[0], m.pos[1] + 0.08, m.pos[2]), 2)
        w.grasp(None)
        w.move((m.pos[0], m.pos[1] + 0.08, m.pos[2] + 0.25), 3)
        return w
    w.pick("moka_pot_1")
    if kind == "fail_late":  # puts the pot down next to the stove
        w.place_on("main_table", (0.2, 0.25))
        return w
    w.place_on("flat_stove_1_cook_region")
    w.wait(2)
    return w


def bowl_drawer(kind: str) -> World:
    w = drawer_world()
    w.wait(2)
    drawer = "white_cabinet_1_bottom_region"
    if kind == "fail_early":  # hovers far from the bowl
        w.move((-0.2, 0.4, 1.35), 8)
        return w
    if kind == "out_of_order":  # shuts the drawer first, then cannot put the bowl in it
        w.set_joint(drawer, 0.0, 4, (-0.05, -0.3, 0.97))
        w.move((-0.1, -0.1, 1.2), 3)
        w.pick("akita_black_bowl_1")
        w.place_on("main_table", (-0.1, -0.1))
        return w
    w.pick("akita_black_bowl_1")
    if kind == "fail_mid":  # drops the bowl on the way to the drawer
        w.move((0.0, -0.1, 1.1), 3)
        w.drop()
        w.wait(3)
        return w
    w.place_in(drawer, rider=True)
    if kind == "fail_late":  # pushes the drawer only half-way
        w.set_joint(drawer, -0.08, 3, (-0.05, -0.3, 0.97))
        w.wait(2)
        return w
    w.set_joint(drawer, 0.0, 5, (-0.05, -0.3, 0.97))
    w.move((-0.2, -0.3, 1.2), 3)
    return w


def mug_microwave(kind: str) -> World:
    w = microwave_world()
    w.wait(2)
    region = "microwave_1_heating_region"
    if kind == "fail_early":  # goes for the wrong mug and stops there
        w.move(w.above("porcelain_mug_1", 0.12), 6)
        w.wait(3)
        return w
    mug = w.ents["white_yellow_mug_1"]
    if kind == "fail_mid":  # closes the gripper above the mug
        w.move(w.above("white_yellow_mug_1"), 5)
        w.move((mug.pos[0], mug.pos[1], mug.pos[2] + 0.09), 2)
        w.grasp(None)
        w.move(w.above("white_yellow_mug_1", 0.25), 3)
        return w
    w.pick("white_yellow_mug_1")
    w.place_in(region)
    w.move((-0.1, -0.45, 1.05), 3)
    if kind == "fail_late":  # nudges the door but leaves it open
        w.set_joint("microwave_1", -1.0, 3, (-0.05, -0.42, 1.05))
        w.wait(2)
        return w
    w.set_joint("microwave_1", 0.0, 6, (-0.05, -0.42, 1.05))
    w.move((-0.25, 0.0, 1.2), 3)
    return w


# (task slug, scenario) -> expected verdict, failed step and events (kind, path); by intent.
EXPECTED: dict[tuple[str, str], dict] = {
    ("soup_sauce_basket", "pass"): {"verdict": "pass", "failed_step": None, "events": []},
    ("soup_sauce_basket", "reverse"): {"verdict": "pass", "failed_step": None, "events": []},
    ("soup_sauce_basket", "fail_early"): {"verdict": "fail", "failed_step": "1.1", "events": []},
    ("soup_sauce_basket", "fail_mid"): {"verdict": "fail", "failed_step": "2.2", "events": []},
    ("soup_sauce_basket", "fail_late"): {"verdict": "fail", "failed_step": "2.3", "events": []},
    # knocked out and left there: the goal state 1.3 was undone, so the task fails there
    ("soup_sauce_basket", "regression"): {
        "verdict": "fail",
        "failed_step": "1.3",
        "events": [["regression", "1.3"]],
    },
    # knocked out and put back: the regression is reported, the task passes once restored
    ("soup_sauce_basket", "restored"): {
        "verdict": "pass",
        "failed_step": None,
        "events": [["regression", "1.3"]],
    },
    ("stove_moka", "pass"): {"verdict": "pass", "failed_step": None, "events": []},
    ("stove_moka", "fail_early"): {"verdict": "fail", "failed_step": "1.1", "events": []},
    ("stove_moka", "fail_mid"): {"verdict": "fail", "failed_step": "2.2", "events": []},
    ("stove_moka", "fail_late"): {"verdict": "fail", "failed_step": "2.3", "events": []},
    ("bowl_drawer", "pass"): {"verdict": "pass", "failed_step": None, "events": []},
    ("bowl_drawer", "fail_early"): {"verdict": "fail", "failed_step": "1.1", "events": []},
    ("bowl_drawer", "fail_mid"): {"verdict": "fail", "failed_step": "1.3", "events": []},
    ("bowl_drawer", "fail_late"): {"verdict": "fail", "failed_step": "2.1", "events": []},
    ("bowl_drawer", "out_of_order"): {
        "verdict": "fail",
        "failed_step": "1.3",
        "events": [["out_of_order", "2.1"]],
    },
    ("mug_microwave", "pass"): {"verdict": "pass", "failed_step": None, "events": []},
    ("mug_microwave", "fail_early"): {"verdict": "fail", "failed_step": "1.1", "events": []},
    ("mug_microwave", "fail_mid"): {"verdict": "fail", "failed_step": "1.2", "events": []},
    ("mug_microwave", "fail_late"): {"verdict": "fail", "failed_step": "2.1", "events": []},
}

SCRIPTS = {
    "soup_sauce_basket": soup_sauce,
    "stove_moka": stove_moka,
    "bowl_drawer": bowl_drawer,
    "mug_microwave": mug_microwave,
}


def build(out: Path = OUT) -> list[Path]:
    """Write every trace and `expected.json` under `out`; returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    expected = {}
    for (slug, scenario), exp in EXPECTED.items():
        world = SCRIPTS[slug](scenario)
        name = f"{slug}_{scenario}.jsonl"
        path = out / name
        with path.open("w", encoding="utf-8") as fh:
            for s in world.states:
                fh.write(json.dumps(s, separators=(",", ":")) + "\n")
        written.append(path)
        expected[name] = {"oracle": f"config/oracles/libero10_{slug}.json", **exp}
    exp_path = out / "expected.json"
    exp_path.write_text(json.dumps(expected, indent=1) + "\n", encoding="utf-8")
    written.append(exp_path)
    return written


if __name__ == "__main__":
    for p in build():
        print(p)
