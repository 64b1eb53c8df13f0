"""The node reference lists every parameter each node declares: checked against the nodes'
source, read here independently of the generator, and against a node started with rclpy."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from docgen.nodes import node_executables, nodes_page  # noqa: E402

NODES = ROOT / "src" / "mango" / "nodes"
RCLPY_OWN = {"use_sim_time", "start_type_description_service"}  # every rclpy node has them


def listed(page: str) -> dict[str, set[str]]:
    """The parameters the page lists, per node section (`## \\`name\\``)."""
    out: dict[str, set[str]] = {}
    node = ""
    for line in page.splitlines():
        m = re.match(r"## `(\w+)`", line)
        if m:
            node = m.group(1)
            out[node] = set()
        m = re.match(r"\| `(\w+)` \| ", line)
        if m and node:
            out[node].add(m.group(1))
    return out


def declared(path: Path) -> set[str]:
    """Every parameter name the node's code hands to `declare_parameters` (ours, a dict) or
    rclpy's `declare_parameter` / `declare_parameters`; a declaration this cannot read fails
    the test rather than slip past it."""
    names: set[str] = set()
    for call in ast.walk(ast.parse(path.read_text())):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "declare_parameters" and len(call.args) > 1:
            spec = call.args[1]
            assert isinstance(spec, ast.Dict), f"{path.name}:{call.lineno}: not a dict literal"
            for key in spec.keys:
                assert isinstance(key, ast.Constant), f"{path.name}:{call.lineno}: computed name"
                names.add(str(key.value))
        elif name == "declare_parameter":
            assert isinstance(call.args[0], ast.Constant), f"{path.name}:{call.lineno}"
            names.add(str(call.args[0].value))
    return names


@pytest.mark.parallel
def test_the_reference_lists_every_parameter_each_node_declares() -> None:
    page = listed(nodes_page())
    assert set(page) == set(node_executables())
    for node in node_executables():
        code = declared(NODES / f"{node}.py")
        assert code, f"{node}: declares no parameter?"
        assert page[node] == code, (f"{node}: the reference lists {sorted(page[node])}, the "
                                    f"code declares {sorted(code)}")


def test_the_reference_names_what_a_node_declares_when_it_runs(tmp_path: Path) -> None:
    """The oracle node and the bag recorder, started with rclpy: the parameters they have
    (less rclpy's own) are the ones the reference lists. Serial: the nodes
    take rclpy's default context."""
    import rclpy

    from mango.nodes.bag_recorder import BagRecorder
    from mango.nodes.oracle_node import OracleNode

    page = listed(nodes_page())
    rclpy.init()
    try:
        for name, make in (("oracle_node", OracleNode),
                           ("bag_recorder", lambda: BagRecorder(output=str(tmp_path / "bag")))):
            node = make()
            try:
                have = set(node.list_parameters([], 0).names) - RCLPY_OWN
            finally:
                node.destroy_node()
            assert have == page[name], name
    finally:
        rclpy.shutdown()
