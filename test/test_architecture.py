"""The library's layers (docs/architecture.md): imports go downward only, no module takes part
in an import cycle, and only the node layer and the tools above it import rclpy.

Every import counts, also one inside a function: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

# Lowest first. A package may import its own modules and any package of a lower layer; packages
# that share a layer are peers and import neither each other.
LAYERS: list[set[str]] = [
    {"errors"},  # the error users see (file, line, field)
    {"json_files", "yaml_files", "geometry", "imaging", "torch_support"},  # readers, math, images
    {"oracle", "ik"},  # predicate language, tracker, symbolic oracle; the one IK ladder
    {"bags"},  # rosbag2 files, CDR decoding, judging bags
    {"control", "sim"},  # controller core; the MuJoCo world
    {"llm"},  # model backends
    {"generation", "camera"},  # MANGO modules I-III; camera sources
    {"policy"},  # VLA policies; the expert reads its instruction with generation's parser
    {"perception", "bddl"},  # RGB-D -> detections; LIBERO BDDL files <-> scenes, goals
    {"primitives"},  # grasp/place planned from detections, run and measured (no rclpy)
    {"orchestrator"},  # plan, act through interruptible tools, monitor, halt, recover
    {"ros"},  # core <-> ROS message adapters (no rclpy)
    {"stack"},  # stack files: which nodes, with which parameters
    {"bringup", "launch_support"},  # bringing a stack up as processes / from ros2 launch
    {"nodes"},  # one file per ROS node: adapters only
    {"client", "doctor", "evaluation"},  # API over a stack; install check; campaigns, stats
    {"cli"},  # the `mango` command
]
RCLPY_ALLOWED = {"nodes", "client", "cli", "doctor"}
ROOT_MODULES = {"__init__", "__main__"}


def layer_of(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise KeyError(package)


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the imported module (or package), dotted
    file: Path
    line: int


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, src: Path, known: set[str]) -> list[Import]:
    """Every `mango` import in a file, resolved to the module it names where one exists
    (`from mango.oracle import expr` names the module `mango.oracle.expr`)."""
    me = module_name(path, src)
    package = me if path.name == "__init__.py" else me.rsplit(".", 1)[0]
    out: list[Import] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            for alias in node.names:
                sub = f"{base_name}.{alias.name}"
                targets.append(sub if sub in known else base_name)
        for t in dict.fromkeys(targets):
            if t == "mango" or t.startswith("mango."):
                out.append(Import(me, t, path, node.lineno))
    return out


def scan(src: Path) -> list[Import]:
    files = sorted((src / "mango").rglob("*.py"))
    known = {module_name(f, src) for f in files}
    return [imp for f in files for imp in imports_of(f, src, known)]


def top_package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_violations(src: Path) -> list[str]:
    """Upward imports and imports between peers, as `file:line: a -> b (why)`."""
    problems = []
    for imp in scan(src):
        a, b = top_package(imp.module), top_package(imp.target)
        if a == b or a in ROOT_MODULES or b == "":
            continue
        try:
            la, lb = layer_of(a), layer_of(b)
        except KeyError as exc:
            problems.append(f"{imp.file}:{imp.line}: package {exc} is in no layer "
                            "(add it to LAYERS and docs/architecture.md)")
            continue
        if lb > la:
            problems.append(f"{imp.file}:{imp.line}: {imp.module} -> {imp.target} "
                            f"(upward: {a} is layer {la}, {b} is layer {lb})")
        elif lb == la:
            problems.append(f"{imp.file}:{imp.line}: {imp.module} -> {imp.target} "
                            f"(peers {a} and {b} share layer {la})")
    return problems


def import_cycles(src: Path) -> list[list[str]]:
    """Strongly connected groups of modules (Tarjan), a package's `__init__` re-exports left
    out: importing `mango.x.y` runs `mango.x` first, which is no dependency of `y`'s code."""
    graph: dict[str, set[str]] = {}
    for imp in scan(src):
        if imp.target.startswith(imp.module + "."):
            continue  # a package's __init__ importing its own modules
        graph.setdefault(imp.module, set()).add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def rclpy_outside_nodes(src: Path) -> list[str]:
    out = []
    for f in sorted((src / "mango").rglob("*.py")):
        package = top_package(module_name(f, src))
        if package in RCLPY_ALLOWED:
            continue
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == "rclpy" or n.startswith("rclpy.") for n in names):
                out.append(f"{f}:{node.lineno}: imports rclpy outside the node layer")
    return out


def test_every_package_is_in_a_layer() -> None:
    packages = {p.stem if p.is_file() else p.name for p in (SRC / "mango").iterdir()
                if (p.suffix == ".py" or (p / "__init__.py").exists())}
    missing = sorted(packages - ROOT_MODULES - set().union(*LAYERS))
    assert not missing, f"packages in no layer: {missing}"


def test_imports_go_downward_only() -> None:
    assert layer_violations(SRC) == []


def test_no_module_takes_part_in_an_import_cycle() -> None:
    assert import_cycles(SRC) == []


def test_only_nodes_and_tools_import_rclpy() -> None:
    assert rclpy_outside_nodes(SRC) == []


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the library to break on purpose."""
    shutil.copytree(SRC / "mango", tmp_path / "mango")
    return tmp_path


def _append(path: Path, text: str) -> int:
    """Append a function holding `text` (a lazy import); returns the line it is on."""
    body = path.read_text()
    path.write_text(body + f"\n\ndef _probe() -> None:\n    {text}\n")
    return body.count("\n") + 4


def _new_problems(tree: Path) -> list[str]:
    """What the broken copy adds to the real tree's problems (none, once it is clean)."""
    before = {p.replace(str(SRC), str(tree)) for p in layer_violations(SRC)}
    return [p for p in layer_violations(tree) if p not in before]


def test_an_upward_import_is_caught(tree: Path) -> None:
    line = _append(tree / "mango/oracle/expr.py", "from mango.nodes.common import run_node")
    problems = _new_problems(tree)
    assert len(problems) == 1
    assert f"oracle/expr.py:{line}: mango.oracle.expr -> mango.nodes.common (upward" in \
        problems[0]


def test_an_import_between_peers_is_caught(tree: Path) -> None:
    _append(tree / "mango/control/robot.py", "import mango.sim.scene")
    problems = _new_problems(tree)
    assert len(problems) == 1 and "(peers control and sim share layer 4)" in problems[0]


def test_a_cycle_inside_a_package_is_caught(tree: Path) -> None:
    _append(tree / "mango/oracle/world_state.py", "from mango.oracle.tracker import StepTracker")
    assert any({"mango.oracle.tracker", "mango.oracle.world_state"} <= set(group)
               for group in import_cycles(tree))


def test_rclpy_in_the_core_is_caught(tree: Path) -> None:
    _append(tree / "mango/sim/scene.py", "import rclpy")
    assert [p for p in rclpy_outside_nodes(tree) if "sim/scene.py" in p]
