"""`mango.control` is pure Python: no module in it imports rclpy or a ROS message package,
not even inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import mango.control

FORBIDDEN = {"rclpy", "mango_ros", "builtin_interfaces", "control_msgs", "franka_msgs",
             "geometry_msgs", "sensor_msgs", "std_msgs", "trajectory_msgs", "mango.nodes",
             "mango.ros"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_control_imports_no_ros() -> None:
    root = Path(mango.control.__file__).parent
    found = {
        f"{p.relative_to(root)}: {name}"
        for p in sorted(root.rglob("*.py")) for name in _imports(p)
        if any(name == f or name.startswith(f"{f}.") for f in FORBIDDEN)
    }
    assert not found, sorted(found)
