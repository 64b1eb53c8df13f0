"""Scene files: the ten LIBERO-10 scenes load with LIBERO's ids; bad files name the field."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mango.errors import InputError
from mango.sim.scene import SCENES_DIR, list_scenes, load_scene, resolve_scene

DATA = Path(__file__).resolve().parents[1] / "data" / "sim"

SLUGS = [
    "soup_sauce_basket", "cheese_butter_basket", "stove_moka", "bowl_drawer", "mugs_plates",
    "book_caddy", "mug_pudding_plate", "soup_cheese_basket", "two_moka_stove", "mug_microwave",
]

# ids each task's goal and oracle refer to (LIBERO's names)
NEEDED = {
    0: {"alphabet_soup_1", "tomato_sauce_1", "basket_1", "basket_1_contain_region"},
    1: {"cream_cheese_1", "butter_1", "basket_1", "basket_1_contain_region"},
    2: {"flat_stove_1", "moka_pot_1", "flat_stove_1_cook_region"},
    3: {"white_cabinet_1", "akita_black_bowl_1", "white_cabinet_1_bottom_region"},
    4: {"porcelain_mug_1", "white_yellow_mug_1", "plate_1", "plate_2"},
    5: {"black_book_1", "desk_caddy_1", "desk_caddy_1_back_contain_region"},
    6: {"porcelain_mug_1", "plate_1", "chocolate_pudding_1",
        "living_room_table_plate_right_region"},
    7: {"alphabet_soup_1", "cream_cheese_1", "basket_1", "basket_1_contain_region"},
    8: {"moka_pot_1", "moka_pot_2", "flat_stove_1", "flat_stove_1_cook_region"},
    9: {"white_yellow_mug_1", "microwave_1", "microwave_1_heating_region"},
}


def test_all_ten_libero_scenes_load_with_libero_ids() -> None:
    scenes = {load_scene(p).task_index: load_scene(p) for p in list_scenes()}
    assert sorted(i for i in scenes if i is not None) == list(range(10))
    for index, slug in enumerate(SLUGS):
        sc = scenes[index]
        assert sc.name == f"libero10_{slug}"
        assert sc.oracle == f"config/oracles/libero10_{slug}.json"
        ids = {e.id for e in sc.entities} | {r.id for r in sc.regions}
        assert NEEDED[index] <= ids, NEEDED[index] - ids
        assert sc.instruction and sc.goal and sc.expert


def test_kinds_and_articulations_follow_libero() -> None:
    stove = load_scene(SCENES_DIR / "libero10_stove_moka.yaml").entity("flat_stove_1")
    assert stove.kind == "device" and stove.device is not None
    drawer = load_scene(SCENES_DIR / "libero10_bowl_drawer.yaml")
    cab = drawer.entity("white_cabinet_1")
    assert cab.joint is not None and cab.joint.id == "white_cabinet_1_bottom_region"
    # the drawer starts open: openness u >= 1
    u = (cab.joint.q_init - cab.joint.q_closed) / (cab.joint.q_open - cab.joint.q_closed)
    assert u >= 1
    assert drawer.region("white_cabinet_1_bottom_region").part == "drawer"
    mw = load_scene(SCENES_DIR / "libero10_mug_microwave.yaml").entity("microwave_1")
    assert mw.joint is not None and mw.joint.id == "microwave_1"
    assert mw.joint.q_init < mw.joint.q_open  # open (LIBERO: open if q < -1.3)


def test_resolve_by_slug_name_and_path() -> None:
    assert resolve_scene("stove_moka") == SCENES_DIR / "libero10_stove_moka.yaml"
    assert resolve_scene("libero10_stove_moka") == SCENES_DIR / "libero10_stove_moka.yaml"
    assert resolve_scene(str(DATA / "tiny_basket.yaml")) == DATA / "tiny_basket.yaml"
    with pytest.raises(InputError, match="unknown scene 'nope'"):
        resolve_scene("nope")
    with pytest.raises(InputError, match="not found"):
        resolve_scene(str(DATA / "missing.yaml"))


def _write(tmp_path: Path, data: dict) -> Path:
    p = tmp_path / "scene.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    return p


def _tiny() -> dict:
    return yaml.safe_load((DATA / "tiny_basket.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (lambda d: d.pop("instruction"), "instruction", "Field required"),
        (lambda d: d["entities"][1].update(size=[0.05, -0.05, 0.09]), "entities[1].size[1]",
         "can_1"),
        (lambda d: d["entities"][0].update(shape="teapot"), "entities[0].shape", "basket_1"),
        (lambda d: d["entities"][1].update(mass="heavy"), "entities[1].mass", "number"),
        (lambda d: d["expert"][0].update(obj="can_9"), None, "unknown id 'can_9'"),
        (lambda d: d.update(goal="in(can_1, nowhere_region)"), None, "unknown entity"),
        (lambda d: d["entities"].append(dict(d["entities"][1])), None, "duplicate ids: can_1"),
        (lambda d: d["entities"][1].update(colour=[1, 0, 0, 1]), "entities[1].colour",
         "Extra inputs"),
    ],
)
def test_bad_scene_names_the_field(tmp_path: Path, mutate, field, message) -> None:
    data = _tiny()
    mutate(data)
    p = _write(tmp_path, data)
    with pytest.raises(InputError) as err:
        load_scene(p)
    assert err.value.file == str(p)
    if field is not None:
        assert err.value.field == field
    assert message in str(err.value)


def test_articulated_fixture_needs_a_joint(tmp_path: Path) -> None:
    data = _tiny()
    data["entities"].append({"id": "white_cabinet_1", "kind": "fixture",
                             "shape": "drawer_cabinet", "size": [0.24, 0.26, 0.26],
                             "position": [0.2, 0.2]})
    with pytest.raises(InputError, match="needs a 'joint'") as err:
        load_scene(_write(tmp_path, data))
    assert err.value.field == "entities[3]"


def test_region_with_unknown_parent_and_broken_yaml() -> None:
    with pytest.raises(InputError, match="unknown parent 'basket_9'"):
        load_scene(DATA / "bad_region_parent.yaml")
    with pytest.raises(InputError, match="invalid YAML") as err:
        load_scene(DATA / "bad_yaml.yaml")
    assert err.value.line is not None


@pytest.mark.parametrize(("mutate", "field", "message"), [
    (lambda d: d["entities"][2].update(size=[1e20, 0.09, 0.04]), "entities[2].size[0]",
     "(entity 'box_1') Input should be less than or equal to 10"),
    (lambda d: d.update(table={"size": [1e20, 1.2]}), "table.size[0]",
     "less than or equal to 10"),
    (lambda d: d.update(cameras=[{"name": "front", "pos": [1, 0, 1.5], "lookat": [0, 0, 0.9],
                                  "fovy": 1e20}]), "cameras[0].fovy", "less than 180"),
    # a count: 10,000 entities took 23 s to load before the bound
    (lambda d: d.update(entities=d["entities"] * 101), "entities",
     "List should have at most 200 items"),
])
def test_sizes_and_angles_past_their_bounds_name_the_field(tmp_path: Path, mutate, field,
                                                           message) -> None:
    """A box of 1e20 m built and ran for minutes; a field of view of 1e20 degrees was a MuJoCo
    traceback. Both are bounded in the scene model (issue #41, class 2)."""
    data = _tiny()
    mutate(data)
    with pytest.raises(InputError) as err:
        load_scene(_write(tmp_path, data))
    assert err.value.field == field and message in str(err.value), str(err.value)


@settings(max_examples=25, deadline=None)
@given(side=st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                      st.floats(min_value=1e-12, max_value=1e-3)),
       fovy=st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                      st.floats(min_value=1e-9, max_value=179.9)))
def test_a_scene_either_builds_or_is_one_input_error(side: float, fovy: float) -> None:
    """Property: whatever a box's side and a camera's field of view, the scene loads and builds,
    or one `InputError` says why (the model's bound, or what MuJoCo's compiler refused, such as
    a body too light for its inertia) - never MuJoCo's ValueError."""
    from mango.sim.build import build_scene

    data = _tiny()
    data["entities"][2]["size"] = [side, 0.09, 0.04]
    data["cameras"] = [{"name": "front", "pos": [1, 0, 1.5], "lookat": [0, 0, 0.9], "fovy": fovy}]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            build_scene(load_scene(_write(Path(tmp), data)))
        except InputError as exc:
            assert "\n" not in str(exc)
            return
    assert 0 < side <= 10 and 0 < fovy < 180


def test_what_mujoco_refuses_is_an_input_error_naming_the_scene(tmp_path: Path) -> None:
    from mango.sim.build import build_scene

    data = _tiny()
    data["entities"][2]["size"] = [1e-9, 1e-9, 1e-9]  # inertia below MuJoCo's mjMINVAL
    with pytest.raises(InputError) as err:
        build_scene(load_scene(_write(tmp_path, data)))
    said = str(err.value)
    assert said.startswith("scene 'tiny_basket': MuJoCo cannot build it: mass and inertia of "
                           "moving bodies must be larger than mjMINVAL Element name 'box_1'")
