"""Walk the README and the documentation pages: every line of their ```bash / ```sh /
```console blocks is run here, page after page in `WALKED_PAGES` order, in a fresh folder (as
a newcomer would, one command after another), and fails on an exit status the page does not
promise or a traceback in the output. A command that several pages show (the README's tour
repeats the pages' commands) is walked once, where it first appears.

`WALK` says how each line is walked: as written, with small concrete arguments in place of the
pages' placeholders (`BAG`, `[--json]`, fewer seeds), in the background while later lines
use it (`mango bringup`, which stays running), or not at all where it cannot run here (a
system ROS 2, colcon), with the reason and a weaker check that can fail. A command missing
from `WALK` fails `test_every_readme_command_is_walked`: add it there.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The pages whose commands are walked, in walking order: a page may use what an earlier one
# made (docs/libero.md generates with the libraries docs/oracles.md wrote). The README comes
# last: its tour shows commands the pages walk already.
WALKED_PAGES: tuple[str, ...] = (
    "docs/getting-started.md", "docs/oracles.md", "docs/libero.md", "docs/orchestration.md",
    "docs/primitives.md", "docs/perception.md", "docs/robot-io.md", "docs/fr3.md", "README.md")
README_MAX_LINES = 200
FENCE = re.compile(r"^```(bash|sh|console)\s*$")
COMMENT = re.compile(r"\s+#\s.*$")


def readme_commands(text: str | None = None) -> list[str]:
    """The command lines of a page's shell blocks (the README's by default): continuation
    lines joined, trailing comments and a console prompt (`$ `) dropped."""
    out: list[str] = []
    inside, pending = False, ""
    for line in (README.read_text() if text is None else text).splitlines():
        if not inside:
            inside = bool(FENCE.match(line))
            continue
        if line.startswith("```"):
            inside, pending = False, ""
            continue
        joined = pending + line.strip()
        if joined.endswith("\\"):
            pending = joined[:-1].rstrip() + " "
            continue
        pending = ""
        command = COMMENT.sub("", joined).strip().removeprefix("$ ")
        if command:
            out.append(command)
    return out


def page_commands(page: str | Path) -> list[str]:
    """The command lines of one markdown page (a path relative to the repository)."""
    return readme_commands((ROOT / page).read_text())


def walked_commands() -> list[str]:
    """Every command of the walked pages, in walking order, each once."""
    return list(dict.fromkeys(c for page in WALKED_PAGES for c in page_commands(page)))


# ----------------------------------------------------------------------------- how to walk


@dataclass(frozen=True)
class Run:
    """One command; `expect` texts must appear in its output, `forbid` texts must not."""

    cmd: str
    expect: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    rc: int = 0


@dataclass(frozen=True)
class Start:
    """A command that stays running (a stack): started, then `ready` awaited in its output."""

    key: str
    cmd: str
    ready: tuple[str, ...]


@dataclass(frozen=True)
class Stop:
    """Waits for `done` in a started command's output, then Ctrl-C: it must exit 0."""

    key: str
    done: tuple[str, ...] = ()


@dataclass(frozen=True)
class NotHere:
    """A command that cannot run here: why, and a weaker check that can still fail."""

    reason: str
    check: Callable[[], None]


def proved_by(test: str, *words: str) -> NotHere:
    """A README command another test of the suite already runs with these words (arguments
    and options, as written there), asserting more than the walk would: not run twice. The
    check fails when that test is gone or stops running them."""
    file, _, name = test.partition("::")

    def check() -> None:
        text = (ROOT / file).read_text()
        assert f"def {name}(" in text, f"{test} is gone"
        missing = [w for w in words if w not in text]
        assert not missing, f"{test} no longer runs {missing}"

    return NotHere(f"run by {test}", check)


Step = Run | Start | Stop | NotHere
AS_WRITTEN: tuple[Step, ...] = ()  # run the README line itself


def _make_recipe(target: str) -> str:
    """The recipe lines of a Makefile rule (make -n would still run the set-up's $(shell))."""
    text = (ROOT / "Makefile").read_text()
    m = re.search(rf"^{target}:.*\n((?:\t.*\n)+)", text, re.M)
    assert m, f"Makefile: no rule '{target}'"
    return m.group(1)


def _check_task_vlm() -> None:
    """The vlm decider and monitor are configurable and their prompt templates load."""
    from mango.orchestrator.config import OrchestratorConfig
    from mango.orchestrator.prompts import PromptTemplates

    OrchestratorConfig(decider="vlm", monitor="vlm")
    PromptTemplates().render("system")


def _check_make_demo() -> None:
    assert "scripts/demo.sh" in _make_recipe("demo")
    assert re.search(r"^exec mango demo ", (ROOT / "scripts/demo.sh").read_text(), re.M)


def _check_make_demo_views() -> None:
    _check_make_demo()
    assert re.search(r"VIEWS.*--record-views", (ROOT / "scripts/demo.sh").read_text())


def _check_estimated_run() -> None:
    text = (ROOT / "test/perception/test_estimated_run.py").read_text()
    assert 'SCENE = "libero10_book_caddy"' in text and '"--seed", "1"' in text
    assert '"--world-state", "estimated"' in text and "check_trace" in text


def _check_make_test() -> None:
    recipe = _make_recipe("test")
    assert "python -m pytest" in recipe and "ruff check src test" in recipe


def _check_ament_package() -> None:
    manifest = ET.parse(ROOT / "package.xml").getroot()
    assert manifest.findtext("name") == "mango_ros"
    assert manifest.findtext("export/build_type") == "ament_cmake"
    assert re.search(r"^project\(mango_ros\b", (ROOT / "CMakeLists.txt").read_text(), re.M)


def _check_ros2_run_oracle_node() -> None:
    # `ros2 run PKG EXE` runs lib/PKG/EXE: CMakeLists installs one launcher per MANGO_NODES
    # entry (ros2/ros2cli: ros2run/ros2run/api/__init__.py, get_executable_path).
    cmake = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"set\(MANGO_NODES([^)]*)\)", cmake)
    assert m and "oracle_node" in m.group(1).split(), "CMakeLists.txt: MANGO_NODES"
    assert (ROOT / "src/mango/nodes/oracle_node.py").is_file()


def _check_gazebo_launch() -> None:
    # `ros2 launch mango_ros X.launch.py a:=b` runs generate_launch_description() of the
    # installed launch/X.launch.py (CMakeLists installs launch/) with the declared arguments
    tree = ast.parse((ROOT / "launch" / "gazebo.launch.py").read_text())
    declared = {c.args[0].value for c in ast.walk(tree) if isinstance(c, ast.Call)
                and getattr(c.func, "id", "") == "DeclareLaunchArgument"}
    assert {"scene", "seed", "world", "gz_args"} <= declared, declared
    assert re.search(r"install\(DIRECTORY[^)]*\blaunch\b", (ROOT / "CMakeLists.txt").read_text())
    stack = yaml.safe_load((ROOT / "config" / "stacks" / "gazebo.yaml").read_text())
    control = next(n for n in stack["nodes"] if n["name"] == "franka_control_node")
    assert control["parameters"]["backend"] == "franka_ros2"


def _check_primitive_actions() -> None:
    # `ros2 action send_goal NAME TYPE GOAL` sends one goal of TYPE to the action NAME
    # (ros2/ros2cli: ros2action/ros2action/verb/send_goal.py); the sim stack runs the node
    # serving /grasp and /place, and test/primitives/test_node*.py send both on that stack
    stack = yaml.safe_load((ROOT / "config" / "stacks" / "sim.yaml").read_text())
    assert "primitives_node" in {n["name"] for n in stack["nodes"]}
    node = (ROOT / "src/mango/nodes/primitives_node.py").read_text()
    assert '(Grasp, "grasp"' in node and '(Place, "place"' in node
    rig = (ROOT / "test/support/primitives_rig.py").read_text()  # the tests' stack
    assert 'load_stack("sim")' in rig and '"primitives_node"' in rig
    for name in ("test_node.py",):
        test = (ROOT / "test/primitives" / name).read_text()
        assert "primitives_stack(" in test and "Grasp.Goal(target=" in test, name
        assert "Place.Goal(destination=" in test, name


def _check_execute_task() -> None:
    # as _check_primitive_actions: the sim and fr3 stacks run the node serving /execute_task
    # (a relative name), and the test sends ExecuteTask goals on the sim stack
    for name in ("sim", "fr3"):
        stack = yaml.safe_load((ROOT / "config" / "stacks" / f"{name}.yaml").read_text())
        assert "orchestrator_node" in {n["name"] for n in stack["nodes"]}, name
    node = (ROOT / "src/mango/nodes/orchestrator_node.py").read_text()
    assert 'ExecuteTask, "execute_task"' in node
    test = (ROOT / "test/orchestrator/test_node.py").read_text()
    assert 'load_stack("sim")' in test and 'rig.send(mode="full", monitor="oracle")' in test


def _check_fr3_launch() -> None:
    # the launch file starts config/stacks/fr3.yaml; the README's files are its parameters
    assert "stack_launch_description(\"fr3\")" in (ROOT / "launch" / "fr3.launch.py").read_text()
    stack = yaml.safe_load((ROOT / "config" / "stacks" / "fr3.yaml").read_text())
    nodes = {n["name"]: n["parameters"] for n in stack["nodes"]}
    assert {"perception_node", "world_state_node", "oracle_node"} <= nodes.keys()
    for key in ("scene", "markers", "extrinsics"):
        path = Path(str(nodes["world_state_node"][key]).replace("$(share)", str(ROOT)))
        assert path.is_file(), path


def _check_fr3_libfranka_launch() -> None:
    # the launch file starts config/stacks/fr3_libfranka.yaml with robot_ip as its argument
    text = (ROOT / "launch" / "fr3_libfranka.launch.py").read_text()
    assert 'stack_launch_description("fr3_libfranka"' in text and '"robot_ip"' in text
    stack = yaml.safe_load((ROOT / "config" / "stacks" / "fr3_libfranka.yaml").read_text())
    control = next(n for n in stack["nodes"] if n["name"] == "franka_control_node")
    assert stack["extends"] == "fr3" and control["parameters"]["backend"] == "libfranka"


SOUP = "config/oracles/libero10_soup_sauce_basket.json"
SOUP_TRACE = "config/traces/soup_sauce_basket_pass.jsonl"
STOVE = "config/oracles/libero10_stove_moka.json"
GEN_ORACLE = (
    'mango generate oracle --instruction "put the black bowl in the bottom drawer of the '
    'cabinet and close it" --scene config/scenes/libero10_bowl_drawer.yaml --libraries libs/ '
    "-o bowl.json")

# page line -> how it is walked (reviewed by hand: every override keeps the command and its
# meaning, with small arguments; `{work}` is the walk's folder).
WALK: dict[str, tuple[Step, ...]] = {
    "make demo": (NotHere("not run from inside the suite; it runs `mango demo`, walked below",
                          _check_make_demo),),
    "make test": (NotHere("this is the suite itself", _check_make_test),),
    "make demo VIEWS=1": (NotHere("not run from inside the suite; `mango demo --record-views` "
                                  "is tested in test/ros/test_views.py", _check_make_demo_views),),
    "mango doctor": (Run("mango doctor", expect=("dds round trip",)),),
    "mango perception markers --ids 0-5 --size-mm 40 -o sheet.pdf [--dictionary "
    "apriltag_36h11] [--dpi 300] [--page a4]": (
        Run("mango perception markers --ids 0-5 --size-mm 40 -o sheet.pdf", expect=("300 DPI",)),
        Run("mango perception markers --ids 0-5 --size-mm 40 -o sheet.png --dictionary "
            "apriltag_36h11 --dpi 150 --page letter", expect=("150 DPI on letter",)),
    ),
    "mango oracle check ORACLE.json TRACE.jsonl [--json] [--exit-code]": (
        # the plain check is the tour's line below, as written
        Run(f"mango oracle check {SOUP} {SOUP_TRACE} --json --exit-code",
            expect=('"verdict": "pass"',)),
    ),
    f"mango oracle check {SOUP} {SOUP_TRACE}": (
        Run(f"mango oracle check {SOUP} {SOUP_TRACE}", expect=("verdict: PASS",)),
    ),
    "mango oracle lint ORACLE.json --scene SCENE.yaml": (
        Run(f"mango oracle lint {STOVE} --scene config/scenes/libero10_stove_moka.yaml",
            expect=("no problems",)),
    ),
    "mango oracle symbolic GOAL TRACE.jsonl": (
        Run(f"mango oracle symbolic {SOUP} {SOUP_TRACE}", expect=("PASS",)),
    ),
    "mango bringup oracle|demo|sim|STACK.yaml [--set NODE.PARAM=VALUE] [--bag DIR]": (
        Start("oracle", "mango bringup oracle --set trace_player.rate_scale=4 "
              "--bag {work}/out/oracle_bag",
              ready=("listening on /world_state",)),
    ),
    "mango record -o BAG [TOPICS…]": (
        Run("mango record -o out/rec --duration 3", expect=("recorded",)),
        Stop("oracle", done=("task verdict: pass", "played 46 states")),
    ),
    "mango replay BAG --oracle ORACLE.json [--json]": (
        # the plain replay is the tour's line below, as written (after the bag commands)
        Run(f"mango replay out/oracle_bag --oracle {SOUP} --json", expect=('"pass"',)),
    ),
    f"mango replay out/oracle_bag --oracle {SOUP}": (
        Run(f"mango replay out/oracle_bag --oracle {SOUP}", expect=("verdict: PASS",)),
    ),
    "mango bag info BAG | bag export BAG [-o T.jsonl] | bag repair BAG [-o NEW]": (
        Run("mango bag info out/oracle_bag", expect=("/world_state",)),
        Run("mango bag export out/oracle_bag", expect=("to out/oracle_bag.jsonl",)),
        Run("mango bag repair out/oracle_bag", expect=("to out/oracle_bag.repaired",)),
        Run(f"mango oracle check {SOUP} out/oracle_bag.jsonl", expect=("verdict: PASS",)),
        Run("mango bag export out/oracle_bag.repaired -o out/", expect=("out/oracle_bag",)),
    ),
    "mango demo [--scene S] [--fault KIND@WHEN]": (
        proved_by("test/ros/test_demo.py::test_demo_localizes_a_fault_and_replays_identically",
                  '"demo"', '"--scene"', '"--fault"', '"oracle agrees"', '"replay"'),
    ),
    'mango perception detect --scene bowl_drawer --seed 2 "the black bowl" "a purple unicorn" '
    '--json': (
        Run('mango perception detect --scene bowl_drawer --seed 2 "the black bowl" '
            '"a purple unicorn" --json', expect=('"entity_id": "akita_black_bowl_1"',
                                                '"unmatched": ["a purple unicorn"]')),
    ),
    'mango primitives pick-place --scene soup_sauce_basket --seed 0 "the alphabet soup" '
    '"in the basket" --json': (
        Run('mango primitives pick-place --scene soup_sauce_basket --seed 0 '
            '"the alphabet soup" "in the basket" --json',
            expect=('"entity_id": "alphabet_soup_1", "grasped": true', '"satisfied": true')),
    ),
    'mango primitives grasp --scene stove_moka "the moka pot"': (
        Run('mango primitives grasp --scene stove_moka "the moka pot"',
            expect=("grasp: succeeded - holding 'moka_pot_1'",)),
    ),
    'mango primitives place --scene mugs_plates --object "the white mug" '
    '"empty space next to the left plate"': (
        Run('mango primitives place --scene mugs_plates --object "the white mug" '
            '"empty space next to the left plate"', expect=("place: succeeded",)),
    ),
    "mango task run --scene soup_sauce_basket --seed 0 --mode full --monitor oracle --fault "
    "wrong_object@1": (
        Run("mango task run --scene soup_sauce_basket --seed 0 --mode full --monitor oracle "
            "--fault wrong_object@1",
            expect=("decide [offline:recovery.wrong_object_in_hand] grasp_tool/grasp",
                    "oracle verdict: pass")),
    ),
    "mango task run --scene stove_moka --mode full --monitor gt --fault drop@0.3 --record "
    "out/task --json": (
        Run("mango task run --scene stove_moka --mode full --monitor gt --fault drop@0.3 "
            "--record out/task --json", expect=('"success": true', '"recovered": 1')),
    ),
    "mango task run --scene soup_sauce_basket --mode full --monitor oracle --fault wrong_object@1 "
    "--decider vlm --model Qwen2.5-VL-7B-Instruct --opt base_url=http://127.0.0.1:8000/v1": (
        NotHere("needs a vision-language model server; test/orchestrator/test_vlm.py runs the "
                "same command against a scripted chat-completions server on loopback",
                _check_task_vlm),
    ),
    "mango task run --scene soup_sauce_basket --mode full --monitor oracle --fault drop@0.5 "
    "--decider local --backend record:out/local-cache@local": (
        # the recorded run of that command, replayed (the CPU model takes minutes a call)
        Run("mango task run --scene soup_sauce_basket --mode full --monitor oracle --fault "
            "drop@0.5 --decider local --backend replay:test/data/orchestrator/local_qwen05b",
            expect=("[local:model qwen2.5-coder-0.5b-instruct-q4_k_m] replan",
                    "the rules' plan: local plan refused")),
    ),
    "mango sim scenes": (Run("mango sim scenes", expect=("libero10_stove_moka",)),),
    "mango sim run --scene libero/libero_spatial/0 --seed 1 --trace out/libero/t.jsonl "
    "--states out/libero/s.npz --json": (
        proved_by("test/sim/test_libero_sim_run.py::test_run_writes_a_trace_whose_states_libero_reproduces",
                  'SCENE = "libero/libero_spatial/0"', '"sim", "run", "--scene", SCENE',
                  '"--seed", 1', '"--trace", trace', '"--states", states', '"--json"'),
    ),
    "mango sim run --scene stove_moka --seed 3 [--fault drop@0.3] --trace out/t.jsonl "
    "[--video out/v.mp4]": (
        Run("mango sim run --scene stove_moka --seed 3 --trace out/t.jsonl --video out/v.mp4",
            expect=("all steps done", "video: out/v.mp4")),
        Run("mango sim run --scene stove_moka --seed 3 --fault drop@0.3 --trace out/t.jsonl",
            expect=("incomplete at step 2.3",)),
    ),
    "mango sim run --scene book_caddy --seed 1 --trace out/est.jsonl --world-state estimated": (
        NotHere("the same run (scene, seed, option) is made through the CLI and its trace "
                "judged in test/perception/test_estimated_run.py", _check_estimated_run),),
    "mango sim eval --seeds 20": (
        Run("mango sim eval --seeds 1", expect=("1/1",), forbid=("0/1",)),
    ),
    "mango oracle check config/oracles/libero10_stove_moka.json out/t.jsonl": (
        Run(f"mango oracle check {STOVE} out/t.jsonl", expect=("verdict: FAIL", "2.3")),
    ),
    # the openpi backend needs a policy server (tested against one in test/policy)
    "mango policy run --scene book_caddy [--backend openpi --host H --port 8000] "
    "[--fault drop@0.3] [--bag OUT] [--json]": (
        proved_by("test/ros/test_robot_io_e2e.py::test_injected_fault_fails_at_the_labelled_step",
                  '"policy", "run"', '"--scene", SCENE', '"--fault", DROP', '"--json"',
                  '"--bag", str(bag)', "BagReader", 'SCENE = "libero10_book_caddy"',
                  'DROP = "drop@0.3"'),
    ),
    "mango policy run --scene book_caddy --bag out/views --record-views": (
        Run("mango policy run --scene book_caddy --bag out/views --record-views",
            expect=("pass",)),
        Run("mango bag info out/views", expect=("/tf_static", "/robot_description",
                                                "/camera/front/image_raw")),
    ),
    "mango bringup sim --scene book_caddy [--bag DIR] [--namespace NS]": (
        proved_by("test/bringup/test_attach.py::test_attach_judges_a_task_on_the_running_stack_and_its_bag_is_where_it_said",
                  '"bringup", "sim", "--scene", SCENE', '"--namespace", NS', '"--bag"',
                  'SCENE = "libero10_book_caddy"'),
    ),
    "mango policy run --attach [--namespace NS] [--scene book_caddy]": (
        proved_by("test/bringup/test_attach.py::test_attach_judges_a_task_on_the_running_stack_and_its_bag_is_where_it_said",
                  '"policy", "run", "--attach", "--namespace", NS', '"--scene", SCENE',
                  'f"bag: {bag}"'),
    ),
    "mango bddl import test/data/bddl/study_single_atom.bddl -o out/bddl/": (
        Run("mango bddl import test/data/bddl/study_single_atom.bddl -o out/bddl/",
            expect=("goal: on(black_book_1, wooden_two_layer_shelf_1_top_side)",
                    "out/bddl/scene.json")),
    ),
    'mango generate oracle --instruction "place the black book on top of the shelf" --scene '
    "out/bddl/scene.json --libraries libs/ -o out/bddl/oracle.json": AS_WRITTEN,
    "mango bddl export out/bddl/oracle.json": (
        Run("mango bddl export out/bddl/oracle.json",
            expect=("(And (On black_book_1 wooden_two_layer_shelf_1_top_side))",)),
    ),
    "mango bddl export config/oracles/libero10_stove_moka.json": (
        Run("mango bddl export config/oracles/libero10_stove_moka.json",
            expect=("(Turnon flat_stove_1)",)),
    ),
    "mango bddl scene test/data/bddl/living_room_basket.bddl -o out/bddl/basket.yaml": (
        Run("mango bddl scene test/data/bddl/living_room_basket.bddl -o out/bddl/basket.yaml",
            expect=("wrote out/bddl/basket.yaml (4 entities, 2 expert steps)",)),
    ),
    "mango sim run --scene out/bddl/basket.yaml --seed 0 --trace out/bddl/basket.jsonl": (
        Run("mango sim run --scene out/bddl/basket.yaml --seed 0 --trace out/bddl/basket.jsonl",
            expect=("bddl_living_room_basket seed 0: all steps done",)),
    ),
    "mango generate library --tasks config/tasks/libero10.json -o libs/": (
        Run("mango generate library --tasks config/tasks/libero10.json -o libs/",
            expect=("libs/atomic_library.json",)),
    ),
    GEN_ORACLE: (Run(GEN_ORACLE, expect=("wrote bowl.json",)),),
    "mango generate all --tasks config/tasks/libero10.json --scenes "
    "config/tasks/libero10_scenes.json -o out/gen/": AS_WRITTEN,
    "mango generate score out/gen/ --truth config/oracles/": (
        Run("mango generate score out/gen/ --truth config/oracles/",
            forbid=("executability not scored",)),
    ),
    "mango generate minimize --tasks config/tasks/libero10.json -o out/min/": (
        Run("mango generate minimize --tasks config/tasks/libero10.json -o out/min/ "
            "--generations 10", expect=("out/min/libero10.minimized.json",)),
    ),
    "python -m mango.nodes.oracle_node --ros-args -p "
    "oracle_file:=config/oracles/libero10_stove_moka.json": (
        Start("oracle_node", "python -m mango.nodes.oracle_node --ros-args -p "
              f"oracle_file:={STOVE}", ready=("listening on /world_state",)),
        Stop("oracle_node"),
    ),
    "mango sim export-sdf --scene stove_moka -o worlds/": (
        Run("mango sim export-sdf --scene stove_moka -o worlds/",
            expect=("wrote worlds/libero10_stove_moka.sdf",)),
    ),
    "ros2 launch mango_ros gazebo.launch.py scene:=stove_moka [seed:=3] [world:=W.sdf] "
    '[gz_args:="-r -s"]': (
        NotHere("needs a system ROS 2 with gz-sim, franka_ros2 and ros_gz; the launch file is "
                "run with stand-ins in test/bringup/test_stacks.py", _check_gazebo_launch),),
    "mango perception markers --ids 0-4 --size-mm 50 -o sheet.pdf": (
        Run("mango perception markers --ids 0-4 --size-mm 50 -o sheet.pdf",
            expect=("300 DPI",)),),
    "ros2 launch mango_ros fr3.launch.py robot_ip:=172.16.0.2": (
        NotHere("needs a system ROS 2 with franka_ros2 and an FR3; the launch file is run with "
                "stand-ins in test/bringup/test_stacks.py", _check_fr3_launch),),
    "mango doctor --robot 172.16.0.2": (
        # the same check on another address where nothing answers: exit 1, said so
        Run("mango doctor --robot 127.0.0.1", expect=("nothing answers at 127.0.0.1:1337",),
            rc=1),
        proved_by("test/control/test_libfranka.py::test_the_doctor_reads_the_robot_through_"
                  "libfranka", '"doctor", "--robot"'),
    ),
    "ros2 launch mango_ros fr3_libfranka.launch.py robot_ip:=172.16.0.2": (
        NotHere("needs a system ROS 2 and an FR3; the launch file is run with stand-ins in "
                "test/bringup/test_stacks.py", _check_fr3_libfranka_launch),),
    "mango bringup libfranka_sim": (
        Start("libfranka_sim", "mango bringup libfranka_sim",
              ready=("simulated FR3 (franky-sim, libfranka protocol) at 127.0.0.2",
                     "backend libfranka, robot fr3", "reading the robot at 127.0.0.2")),
        Stop("libfranka_sim"),
    ),
    "mango bringup sim_estimated": (
        Start("sim_estimated", "mango bringup sim_estimated",
              ready=("estimating scene libero10_mugs_plates", "[oracle_node]",
                     "scene libero10_mugs_plates (seed")),
        Stop("sim_estimated"),
    ),
    'mkdir -p ~/ws/src && ln -s "$PWD" ~/ws/src/mango_ros && cd ~/ws': (
        NotHere("the colcon workspace of a system ROS 2 (none here)", _check_ament_package),),
    "colcon build --packages-select mango_ros && . install/setup.bash": (
        NotHere("needs colcon and ament_cmake from a system ROS 2", _check_ament_package),),
    "ros2 action send_goal /grasp mango_ros/action/Grasp \"{target: 'the alphabet soup'}\" "
    "--feedback": (
        NotHere("needs the ros2 CLI; test/primitives/test_node.py sends Grasp goals to the sim "
                "stack's primitives_node", _check_primitive_actions),),
    "ros2 action send_goal /place mango_ros/action/Place \"{destination: 'in the basket'}\"": (
        NotHere("needs the ros2 CLI; test/primitives/test_node.py sends Place goals to the sim "
                "stack's primitives_node", _check_primitive_actions),),
    "ros2 action send_goal /execute_task mango_ros/action/ExecuteTask "
    "\"{mode: full, monitor: oracle}\" --feedback": (
        NotHere("needs the ros2 CLI; test/orchestrator/test_node.py sends ExecuteTask goals to "
                "the sim stack's orchestrator_node", _check_execute_task),),
    "ros2 run mango_ros oracle_node --ros-args -p oracle_file:=…": (
        NotHere("needs the ros2 CLI; `python -m mango.nodes.oracle_node` is walked instead",
                _check_ros2_run_oracle_node),),
}


# ----------------------------------------------------------------------------- the walker


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Walker:
    """Runs steps in one folder, keeps started commands, and collects what went wrong."""

    def __init__(self, work: Path) -> None:
        self.work = work
        # a ROS domain of its own, as a newcomer's machine has: whatever the rest of this test
        # process left on its domain is not on the README's graph (once, an action server of
        # a type this venv cannot describe; `mango record` of every topic now skips such a
        # topic, test_recording.py)
        domain = (int(os.environ.get("ROS_DOMAIN_ID", "0")) + 50) % 200 + 1
        self.env = dict(os.environ, COLUMNS="200", PYTHONUNBUFFERED="1",
                        ROS_DOMAIN_ID=str(domain))
        self.failures: list[str] = []
        self.started: dict[str, tuple[subprocess.Popen[str], list[str], str]] = {}

    def argv(self, cmd: str) -> list[str]:
        args = shlex.split(cmd.replace("{work}", str(self.work)))
        bindir = Path(sys.executable).parent
        if args[0] == "python":
            args[0] = sys.executable
        elif (bindir / args[0]).exists():
            args[0] = str(bindir / args[0])
        return args

    def fail(self, cmd: str, why: str, output: str) -> None:
        tail = "\n".join(output.splitlines()[-15:])
        self.failures.append(f"$ {cmd}\n  {why}\n{tail}")

    def judge(self, cmd: str, rc: int | None, want_rc: int, output: str,
              expect: tuple[str, ...] = (), forbid: tuple[str, ...] = ()) -> None:
        if rc != want_rc:
            self.fail(cmd, f"exit {rc}, the page promises {want_rc}", output)
        elif "Traceback (most recent call last)" in output:
            self.fail(cmd, "a traceback in the output", output)
        for text in expect:
            if text not in output:
                self.fail(cmd, f"output lacks {text!r}", output)
        for text in forbid:
            if text in output:
                self.fail(cmd, f"output has {text!r}", output)

    def step(self, step: Step) -> None:
        if isinstance(step, Run):
            try:
                done = subprocess.run(self.argv(step.cmd), cwd=self.work, env=self.env,
                                      capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired as exc:
                self.fail(step.cmd, "still running after 120 s", str(exc.stdout or ""))
                return
            self.judge(step.cmd, done.returncode, step.rc, done.stdout + done.stderr,
                       step.expect, step.forbid)
        elif isinstance(step, Start):
            # Ctrl-C as a terminal delivers it: a shell runs a background job (`make test &`)
            # with SIGINT ignored, which its children inherit, and Python then never turns it
            # into KeyboardInterrupt (a run started that way failed "did not stop within 30 s")
            proc = subprocess.Popen(self.argv(step.cmd), cwd=self.work, env=self.env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, start_new_session=True,
                                    preexec_fn=_default_sigint)
            lines: list[str] = []
            threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()
            self.started[step.key] = (proc, lines, step.cmd)
            self.wait_for(step.key, step.ready)
        elif isinstance(step, Stop):
            self.wait_for(step.key, step.done)
            self.stop(step.key)
        else:
            try:
                step.check()
            except AssertionError as exc:
                self.fail(step.reason, f"weaker check failed: {exc}", "")

    def wait_for(self, key: str, texts: tuple[str, ...], timeout: float = 60.0) -> None:
        proc, lines, cmd = self.started[key]
        end = time.monotonic() + timeout
        while time.monotonic() < end and proc.poll() is None:
            output = "".join(lines)
            if all(t in output for t in texts):
                return
            time.sleep(0.2)
        output = "".join(lines)
        missing = [t for t in texts if t not in output]
        if missing:
            self.fail(cmd, f"never printed {missing} (exit {proc.poll()})", output)

    def stop(self, key: str) -> None:
        proc, lines, cmd = self.started.pop(key)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # Ctrl-C, as the README says
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: only what it started
            proc.wait()
            self.fail(cmd, "did not stop within 30 s of Ctrl-C", "".join(lines))
            return
        time.sleep(0.2)  # the reader thread drains the pipe
        self.judge(cmd, proc.returncode, 0, "".join(lines))

    def close(self) -> None:
        for key in list(self.started):
            self.fail(self.started[key][2], "left running by the walk", "")
            self.stop(key)


@pytest.mark.parallel
def test_readme_commands_are_parsed_from_shell_blocks_only() -> None:
    text = ("```bash\nmango a   # c\nmango b \\\n    --x 1\n```\n```python\nmango no\n```\n"
            "```console\n$ mango c\n```\n```\nmango plain\n```\n")
    assert readme_commands(text) == ["mango a", "mango b --x 1", "mango c"]


@pytest.mark.parallel
def test_every_readme_command_is_walked() -> None:
    commands = walked_commands()
    missing = [c for c in commands if c not in WALK]
    stale = [c for c in WALK if c not in commands]
    assert not missing, ("commands of the README or the walked pages missing from WALK in "
                         "test/test_readme.py (add each: as written, with small arguments, or "
                         f"why not here): {missing}")
    assert not stale, f"WALK lines no longer in the README or a walked page: {stale}"


@pytest.mark.parallel
def test_every_page_with_commands_is_walked() -> None:
    """A page of docs/ that shows shell commands is in WALKED_PAGES: none escapes the walk."""
    pages = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md"))
             if page_commands(p)]
    assert not set(pages) - set(WALKED_PAGES), (
        f"pages with commands not in WALKED_PAGES: {sorted(set(pages) - set(WALKED_PAGES))}")
    assert all((ROOT / p).is_file() for p in WALKED_PAGES)


@pytest.mark.parallel
def test_the_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines, at most {README_MAX_LINES}: move the detail to a "
        "page of docs/ and link it")


# what brings up ROS nodes (a stack, a node, a DDS round trip) or reads what they made: walked
# on a quiet machine, the rest on every core (two walks, each in walking order in a folder of
# its own; no command of one reads what the other made)
ROS_COMMANDS = ("mango doctor", "mango bringup", "mango record", "mango replay", "mango bag",
                "mango demo", "mango policy run", "python -m mango.nodes")


def needs_ros(command: str, steps: tuple[Step, ...]) -> bool:
    return command.startswith(ROS_COMMANDS) or any(
        isinstance(s, Start | Stop) or (isinstance(s, Run) and s.cmd.startswith(ROS_COMMANDS))
        for s in steps)


@pytest.mark.parallel
def test_the_two_walks_split_the_readme() -> None:
    """Every walked command is in exactly one walk, and the ROS one has the stacks."""
    walked = {c: WALK[c] for c in walked_commands() if c in WALK}
    ros = [c for c, steps in walked.items() if needs_ros(c, steps)]
    assert any(c.startswith("mango bringup") for c in ros) and "mango doctor" in ros
    assert any(c.startswith("mango oracle check") for c in walked if c not in ros)


@pytest.mark.slow
@pytest.mark.parametrize("ros", [pytest.param(False, id="cli", marks=pytest.mark.parallel),
                                 pytest.param(True, id="ros")])
def test_walk_the_readme(tmp_path: Path, ros: bool) -> None:
    for name in ("config", "test"):  # what the README's paths name, read-only
        (tmp_path / name).symlink_to(ROOT / name)
    walker = Walker(tmp_path)
    timings: list[tuple[float, str]] = []
    try:
        for command in walked_commands():
            steps = WALK.get(command)
            if steps is None:
                continue  # test_every_readme_command_is_walked says so
            if needs_ros(command, steps or ()) != ros:
                continue  # the other walk's
            start = time.monotonic()
            for step in steps or (Run(command),):
                walker.step(step)
            timings.append((time.monotonic() - start, command))
    finally:
        walker.close()
    for took, command in sorted(timings, reverse=True):  # shown with -s / on failure
        print(f"{took:6.1f} s  {command[:90]}")
    slowest = ", ".join(f"{c.split(' [')[0][:40]} {s:.0f} s" for s, c in sorted(timings)[-3:])
    assert not walker.failures, "\n\n".join(walker.failures) + f"\n\n(slowest: {slowest})"


@pytest.mark.parallel
def test_the_walker_catches_a_bad_exit_a_traceback_and_a_missing_text(tmp_path: Path) -> None:
    walker = Walker(tmp_path)
    walker.step(Run("python -c 'raise SystemExit(3)'"))
    walker.step(Run("python -c 'import sys; sys.stderr.write(\"Traceback (most recent call "
                    "last)\\n\")'"))
    walker.step(Run("python -c 'print(1)'", expect=("2",)))
    walker.step(Run("python -c 'print(1)'", expect=("1",)))  # fine
    walker.step(Start("s", "python -c 'import time; print(\"up\", flush=True); time.sleep(60)'",
                      ready=("up",)))
    walker.step(Stop("s"))  # Ctrl-C unhandled: killed by SIGINT
    assert [f.splitlines()[1].strip() for f in walker.failures] == [
        "exit 3, the page promises 0", "a traceback in the output", "output lacks '2'",
        "exit -2, the page promises 0"]
