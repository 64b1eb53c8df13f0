"""`mango bddl scene`: a BDDL task as a sim scene, the expert run on it, and what cannot be built.

LIBERO's frames (Lifelong-Robot-Learning/LIBERO): a region's ranges are in the table's frame
(`envs/problems/libero_living_room_tabletop_manipulation.py`: centre + workspace offset
(0, 0, 0.41)); the robot base sits at x = -0.16 - L/2 of it with L = 0.70 for the living-room
table (`envs/robots/mounted_panda.py`, `base_xpos_offset`), so a range centred at x = 0 is
0.51 m in front of the robot; our robot base is at x = -0.56 (`mango.sim.scene.RobotSpec`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from mango.bddl.parser import read_bddl
from mango.bddl.scene import sim_scene
from mango.cli.main import app
from mango.sim.scene import load_scene

DATA = Path(__file__).resolve().parents[1] / "data" / "bddl"
BASKET = DATA / "living_room_basket.bddl"
runner = CliRunner()


def test_layout_becomes_placements_relative_to_the_robot() -> None:
    result = sim_scene(read_bddl(BASKET), "t")
    assert result.missing == [] and result.scene is not None
    sc = result.scene
    assert sc.table.id == "living_room_table"
    # the problem class travels with the scene: a LIBERO preset reads its arena from it
    assert sc.libero_problem == "LIBERO_Living_Room_Tabletop_Manipulation"
    basket = sc.entity("basket_1")
    # range centre (0.0, 0.21): 0.51 m ahead of LIBERO's robot, so 0.51 ahead of ours
    assert basket.position == pytest.approx((0.0 + 0.51 - 0.56, 0.21))
    assert basket.jitter == pytest.approx((0.01, 0.01))  # half the range
    assert basket.shape == "basket" and basket.description == "basket"
    assert sc.region("basket_1_contain_region").parent == "basket_1"
    steps = [(k.skill, k.obj, k.target, k.offset) for k in sc.expert]
    assert steps == [
        ("pick_place", "tomato_sauce_1", "basket_1_contain_region", pytest.approx((0, -0.057))),
        ("pick_place", "butter_1", "basket_1_contain_region", pytest.approx((0, 0.057))),
    ]
    assert sc.goal == "in(tomato_sauce_1, basket_1_contain_region) and " \
        "in(butter_1, basket_1_contain_region)"


def test_what_the_sim_cannot_build_is_named() -> None:
    result = sim_scene(read_bddl(DATA / "kitchen_every_section.bddl"), "k")
    assert result.scene is None
    text = "\n".join(result.missing)
    # a bowl on the plate and the cabinet's drawers are built, but one slides per cabinet
    assert result.missing[0].startswith("wooden_cabinet_1: the task opens or closes 2 of its "
                                        "drawers (wooden_cabinet_1_middle_region, ")
    assert "goal (open ...): the expert has no such skill" in text and len(result.missing) == 2
    from mango.bddl.parser import parse_bddl

    assert sim_scene(read_bddl(DATA / "study_single_atom.bddl"), "s").scene is not None
    fridge = (DATA / "study_single_atom.bddl").read_text().replace(
        "wooden_two_layer_shelf_1 - wooden_two_layer_shelf",
        "wooden_two_layer_shelf_1 - short_fridge")
    result = sim_scene(parse_bddl(fridge), "f")
    assert result.missing[0] == ("category 'short_fridge' (wooden_two_layer_shelf_1): the sim "
                                 "builds no such entity")


def test_cli_scene_and_an_expert_run_passing_the_bddl_goal(tmp_path: Path) -> None:
    out = tmp_path / "scene.yaml"
    res = runner.invoke(app, ["bddl", "scene", str(BASKET), "-o", str(out)])
    assert res.exit_code == 0, res.stderr
    assert yaml.safe_load(out.read_text())["name"] == "bddl_living_room_basket"
    assert load_scene(out).entity("milk_1").description == "milk"
    trace = tmp_path / "t.jsonl"
    run = runner.invoke(app, ["sim", "run", "--scene", str(out), "--seed", "1", "--trace",
                              str(trace)])
    assert run.exit_code == 0, run.stderr
    goal = load_scene(out).goal
    sym = runner.invoke(app, ["oracle", "symbolic", goal, str(trace), "--json"])
    assert sym.exit_code == 0, sym.stderr
    assert json.loads(sym.stdout)["verdict"] == "pass"


def test_cli_scene_refuses_with_the_list_and_exit_1(tmp_path: Path) -> None:
    res = runner.invoke(app, ["bddl", "scene", str(DATA / "kitchen_every_section.bddl"), "-o",
                              str(tmp_path / "k.yaml")])
    assert res.exit_code == 1
    assert res.stderr.startswith("error: ") and "cannot build this task" in res.stderr
    assert "  - goal (open ...)" in res.stderr
    assert not (tmp_path / "k.yaml").exists()


MICROWAVE = """(define (problem LIBERO_Kitchen_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the mug in the microwave and close it)
  (:regions
    (microwave_init_region (:target kitchen_table) (:ranges ((-0.01 0.29 0.01 0.31))))
    (mug_init_region (:target kitchen_table) (:ranges ((-0.06 -0.06 -0.04 -0.04))))
    (heating_region (:target microwave_1)))
  (:fixtures kitchen_table - kitchen_table microwave_1 - microwave)
  (:objects white_yellow_mug_1 - white_yellow_mug)
  (:init (On microwave_1 kitchen_table_microwave_init_region)
         (On white_yellow_mug_1 kitchen_table_mug_init_region)
         (Open microwave_1))
  (:goal (And (In white_yellow_mug_1 microwave_1_heating_region) (Close microwave_1)))
)
"""


def test_init_states_and_facing_of_an_articulated_fixture() -> None:
    from mango.bddl.parser import parse_bddl

    shipped = load_scene(Path(__file__).resolve().parents[2] / "config" / "scenes"
                         / "libero10_mug_microwave.yaml").entity("microwave_1")
    sc = sim_scene(parse_bddl(MICROWAVE), "m").scene
    assert sc is not None
    mw = sc.entity("microwave_1")
    assert mw.joint is not None and mw.joint.id == "microwave_1"
    assert mw.joint.q_init == min(mw.joint.range)  # Open: fully open (LIBERO: up to -2.094)
    # LIBERO puts it left of the centre line (+y), the shipped scene right: mirrored facing
    assert shipped.position[1] < 0 < mw.position[1] and mw.yaw == -shipped.yaw
    assert [k.skill for k in sc.expert] == ["pick_place", "close"]
    assert sc.expert[0].grasp == "side"  # how the shipped scene reaches into a microwave
    closed = parse_bddl(MICROWAVE.replace("(Open microwave_1)", "(Close microwave_1)"))
    mw2 = sim_scene(closed, "m2").scene.entity("microwave_1")  # type: ignore[union-attr]
    assert mw2.joint.q_init == mw2.joint.q_closed  # type: ignore[union-attr]


def test_an_object_others_go_onto_moves_first() -> None:
    from mango.bddl.parser import parse_bddl

    text = (DATA / "living_room_basket.bddl").read_text().replace(
        "(And (In tomato_sauce_1 basket_1_contain_region) (In butter_1 basket_1_contain_region))",
        "(And (On butter_1 tomato_sauce_1) (In tomato_sauce_1 basket_1_contain_region))")
    sc = sim_scene(parse_bddl(text), "stack").scene
    assert sc is not None
    assert [(k.obj, k.target) for k in sc.expert] == [
        ("tomato_sauce_1", "basket_1_contain_region"), ("butter_1", "tomato_sauce_1")]


# --- LIBERO's other kitchens: categories built from primitive geometry, stacked starts ----
# Sizes from LIBERO's assets (Lifelong-Robot-Learning/LIBERO, libero/libero/assets/):
# stable_scanned_objects/glazed_rim_porcelain_ramekin/glazed_rim_porcelain_ramekin.xml (walls
# at r ~ 0.040, 0.042 tall), turbosquid_objects/wine_rack/wine_rack.xml (stand ~0.19 x 0.13,
# top_region 0.22 up), articulated_objects/wooden_cabinet.xml (0.24 wide, 0.19 deep, 0.22
# tall, three drawers top/middle/bottom_region sliding 0.16, a top_side site on top).
DRAWER_TASK = DATA / "kitchen_bowl_in_top_drawer.bddl"
RACK_TASK = DATA / "kitchen_wine_rack.bddl"


def test_libero_sizes_of_the_built_categories() -> None:
    sc = sim_scene(read_bddl(DRAWER_TASK), "d").scene
    assert sc is not None
    ramekin = sc.entity("glazed_rim_porcelain_ramekin_1")
    assert ramekin.shape == "bowl" and ramekin.size == pytest.approx((0.082, 0.082, 0.042))
    cab = sc.entity("wooden_cabinet_1")
    assert cab.shape == "drawer_cabinet" and cab.size == pytest.approx((0.19, 0.24, 0.22))
    assert cab.drawers == 3 and cab.joint is not None
    assert cab.joint.range == pytest.approx((-0.16, 0.0)) and cab.joint.q_open == -0.14
    rack = sim_scene(read_bddl(RACK_TASK), "r").scene.entity("wine_rack_1")  # type: ignore[union-attr]
    assert rack.kind == "fixture" and rack.size[2] == pytest.approx(0.2)


def test_the_drawer_the_task_fills_slides_and_every_drawer_is_a_region() -> None:
    sc = sim_scene(read_bddl(DRAWER_TASK), "d").scene
    assert sc is not None
    cab = sc.entity("wooden_cabinet_1")
    assert cab.drawer == 2 and cab.joint.id == "wooden_cabinet_1_top_region"  # type: ignore[union-attr]
    assert cab.joint.q_init == -0.16  # type: ignore[union-attr]  # (Open ...): fully open
    parts = {r.id: r.part for r in sc.regions if r.parent == "wooden_cabinet_1"}
    assert parts == {"wooden_cabinet_1_top_region": "drawer",
                     "wooden_cabinet_1_middle_region": "base",
                     "wooden_cabinet_1_bottom_region": "base",
                     "wooden_cabinet_1_top_side": "base"}
    bowl = sc.entity("akita_black_bowl_1")
    assert bowl.on == "wooden_cabinet_1_top_region" and bowl.jitter == (0.0, 0.0)
    assert sc.entity("akita_black_bowl_2").on == "cookies_1"


def test_stacked_starts_rest_on_their_support_for_every_seed() -> None:
    from mango.oracle.symbolic import SymbolicOracle
    from mango.sim.env import SimEnv

    sc = sim_scene(read_bddl(DRAWER_TASK), "d").scene
    assert sc is not None
    in_drawer = SymbolicOracle("in(akita_black_bowl_1, wooden_cabinet_1_top_region)")
    on_box = SymbolicOracle("on(akita_black_bowl_2, cookies_1)")
    env = SimEnv(sc, cameras=())
    for seed in (0, 3):
        ws = env.reset(seed)
        box, bowl2 = ws.objects["cookies_1"], ws.objects["akita_black_bowl_2"]
        assert bowl2.position[:2] == pytest.approx(box.position[:2], abs=0.01)
        bottom = bowl2.position[2] - bowl2.size[2] / 2
        assert bottom == pytest.approx(box.position[2] + box.size[2] / 2, abs=0.005)
        assert in_drawer.holds(ws) and on_box.holds(ws)
        bowl1 = ws.objects["akita_black_bowl_1"]
        assert bowl1.position[2] > ws.objects["wooden_cabinet_1"].position[2]  # the top level
        assert ws.joints["wooden_cabinet_1_top_region"].openness >= 1.0


def test_a_support_that_is_unknown_or_circular_is_refused() -> None:
    from mango.sim.scene import SceneSpec

    base = {"name": "s", "instruction": "i", "goal": "true", "expert": [],
            "entities": [{"id": "a", "shape": "box", "size": [0.05, 0.05, 0.05],
                          "position": [0, 0], "on": "nowhere"}]}
    with pytest.raises(ValueError, match="'on' names unknown 'nowhere'"):
        SceneSpec.model_validate(base)
    base["entities"] = [
        {"id": "a", "shape": "box", "size": [0.05] * 3, "position": [0, 0], "on": "b"},
        {"id": "b", "shape": "box", "size": [0.05] * 3, "position": [0, 0], "on": "a"}]
    with pytest.raises(ValueError, match="circle"):
        SceneSpec.model_validate(base)


@pytest.mark.parametrize("task,seed", [(DRAWER_TASK, 0), (RACK_TASK, 1)])
def test_libero_kitchens_run_to_the_bddl_goal(task: Path, seed: int) -> None:
    """libero_spatial (a bowl out of an open top drawer onto the plate, beside a bowl on the
    cookie box) and libero_goal (the wine bottle onto the rack) run to their goal."""
    from mango.oracle.symbolic import SymbolicOracle
    from mango.sim.runner import run_episode

    result = sim_scene(read_bddl(task), task.stem)
    assert result.scene is not None, result.missing
    run = run_episode(result.scene, seed)
    assert run.error is None and run.success
    assert SymbolicOracle(result.scene.goal).check(run.states).verdict == "pass"


def test_a_closed_drawer_is_opened_first_and_a_plate_is_pushed() -> None:
    """A put into the top drawer (closed at the start) plans an open first; the plate, wider
    than the hand opens, is pushed into its table region; the run reaches the goal."""
    from mango.oracle.symbolic import SymbolicOracle
    from mango.sim.runner import run_episode

    sc = sim_scene(read_bddl(DATA / "kitchen_drawer_and_plate.bddl"), "dp").scene
    assert sc is not None
    assert [(k.skill, k.obj, k.target, k.joint) for k in sc.expert] == [
        ("open", None, None, "wooden_cabinet_1_top_region"),
        ("pick_place", "akita_black_bowl_1", "wooden_cabinet_1_top_region", None),
        ("push", "plate_1", "kitchen_table_front_region", None)]
    # LIBERO's yaw pi turns the cabinet's drawers towards +y (its handles are on its -y side)
    assert sc.entity("wooden_cabinet_1").yaw == -90.0
    run = run_episode(sc, 0)
    assert run.error is None and run.success, run.labels["milestones"]
    assert SymbolicOracle(sc.goal).check(run.states).verdict == "pass"
    assert run.labels["milestones"][0]["kind"] == "open"


SHELF = """(define (problem LIBERO_Study_Tabletop_Manipulation)
  (:domain robosuite)
  (:language put the book on the shelf and the bowl on top of the cabinet)
  (:regions
    (shelf_region (:target study_table) (:ranges ((-0.01 0.25 0.01 0.27)))
      (:yaw_rotation ((3.141592653589793 3.141592653589793))))
    (cabinet_region (:target study_table) (:ranges ((-0.01 -0.25 0.01 -0.23))))
    (book_region (:target study_table) (:ranges ((-0.11 -0.01 -0.09 0.01))))
    (bowl_region (:target study_table) (:ranges ((-0.11 0.09 -0.09 0.11))))
    (top_region (:target wooden_two_layer_shelf_1))
    (bottom_region (:target wooden_two_layer_shelf_1))
    (top_side (:target white_cabinet_1))
    (top_region (:target white_cabinet_1))
    (bottom_region (:target white_cabinet_1)))
  (:fixtures study_table - study_table wooden_two_layer_shelf_1 - wooden_two_layer_shelf
    white_cabinet_1 - white_cabinet)
  (:objects black_book_1 - black_book white_bowl_1 - white_bowl)
  (:init (On wooden_two_layer_shelf_1 study_table_shelf_region)
         (On white_cabinet_1 study_table_cabinet_region)
         (On black_book_1 study_table_book_region) (On white_bowl_1 study_table_bowl_region)
         (Open white_cabinet_1_top_region))
  (:goal (And (In black_book_1 wooden_two_layer_shelf_1_top_region)
              (On white_bowl_1 white_cabinet_1_top_side)))
)
"""


def test_a_shelf_a_second_drawer_and_any_fixture_top() -> None:
    """The two-layer shelf (LIBERO's wooden_two_layer_shelf.xml: 0.33 x 0.19 x 0.21, a board
    a third up), a one-drawer cabinet whose top drawer the task names gets two, and a fixture's
    `top_side` is a region on its top face."""
    from mango.bddl.parser import parse_bddl

    sc = sim_scene(parse_bddl(SHELF), "shelf").scene
    assert sc is not None
    shelf = sc.entity("wooden_two_layer_shelf_1")
    assert shelf.shape == "shelf" and shelf.size == pytest.approx((0.19, 0.33, 0.21))
    top, bottom = (sc.region(f"wooden_two_layer_shelf_1_{n}_region") for n in ("top", "bottom"))
    assert bottom.offset[2] < 0 < top.offset[2] and top.size[2] > bottom.size[2]
    assert sc.expert[0].skill == "pick_place" and sc.expert[0].grasp == "side"
    cab = sc.entity("white_cabinet_1")
    assert cab.drawers == 2 and cab.drawer == 1 and cab.joint is not None
    assert cab.joint.id == "white_cabinet_1_top_region"
    side = sc.region("white_cabinet_1_top_side")
    assert side.offset[2] == pytest.approx(cab.size[2] / 2 + 0.025)
    two = SHELF.replace("(Open white_cabinet_1_top_region)",
                        "(Open white_cabinet_1_top_region) (Close white_cabinet_1_bottom_region)")
    missing = sim_scene(parse_bddl(two), "two").missing
    assert any("opens or closes 2 of its drawers" in m for m in missing)
