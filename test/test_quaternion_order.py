"""Quaternions are [w, x, y, z] (spec §3, `mango.geometry`; MuJoCo's order too), while ROS
messages (geometry_msgs/Quaternion) and scipy are x, y, z, w. Identity is [1, 0, 0, 0]; a
literal [0, 0, 0, 1] in one of our fields is a 180° turn about z — almost always the xyzw
identity written in the wrong order. This finds that slip anywhere in the tree."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

from mango.geometry import quat_to_mat
from mango.nodes.doctor_probe import PING_RECORD
from mango.oracle.world_state import parse_world_state

REPO = Path(__file__).resolve().parents[1]
QUAT_KEYS = {"orientation", "quat", "quaternion", "rotation", "q_wxyz"}
XYZW_IDENTITY = (0.0, 0.0, 0.0, 1.0)
_TEXT_LITERAL = re.compile(
    r"""["']?(orientation|quat|quaternion|rotation)["']?\s*[:=]\s*[\[(]\s*0(\.0*)?\s*,\s*0(\.0*)?"""
    r"""\s*,\s*0(\.0*)?\s*,\s*1(\.0*)?\s*[\])]""")


def _constant(node: ast.AST) -> tuple[float, ...] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
            isinstance(e, ast.Constant) and isinstance(e.value, (int, float)) for e in node.elts):
        return tuple(float(e.value) for e in node.elts)  # type: ignore[union-attr]
    return None


def _python_slips(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        pairs: list[tuple[str, ast.AST]] = []
        if isinstance(node, ast.Dict):
            pairs = [(k.value, v) for k, v in zip(node.keys, node.values, strict=True)
                     if isinstance(k, ast.Constant) and isinstance(k.value, str)]
        elif isinstance(node, ast.Call):
            pairs = [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            pairs = [(t.id, node.value) for t in targets
                     if isinstance(t, ast.Name) and node.value is not None]
        for key, value in pairs:
            if key.lower() in QUAT_KEYS and _constant(value) == XYZW_IDENTITY:
                where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
                out.append(f"{where}:{value.lineno}: {key}")
    return out


def test_the_doctor_ping_record_is_upright() -> None:
    state = parse_world_state(PING_RECORD)
    rot = quat_to_mat(state.objects["alphabet_soup_1"].orientation)
    assert np.allclose(rot, np.eye(3))


def test_no_xyzw_identity_in_a_wxyz_field_anywhere() -> None:
    slips: list[str] = []
    for folder in ("src", "test", "bench", "scripts", "launch"):
        for path in sorted((REPO / folder).rglob("*.py")):
            slips += _python_slips(path)
    for folder in ("config", "test/data", "bench", "scripts"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix not in (".json", ".jsonl", ".yaml", ".yml") or not path.is_file():
                continue
            for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if _TEXT_LITERAL.search(line):
                    slips.append(f"{path.relative_to(REPO)}:{i}")
    assert not slips, "[0, 0, 0, 1] in a [w, x, y, z] field (a 180° turn): " + ", ".join(slips)


def test_the_scan_finds_the_slip(tmp_path: Path) -> None:
    """The scan is not blind: it reports each way the slip can be written."""
    probe = tmp_path / "probe.py"
    probe.write_text('A = {"orientation": [0.0, 0.0, 0.0, 1.0]}\n'
                     "f(quat=(0, 0, 0, 1))\norientation = [0, 0, 0, 1]\n"
                     'ok = {"orientation": [1, 0, 0, 0]}\n')
    assert len(_python_slips(probe)) == 3
    assert _TEXT_LITERAL.search('{"orientation": [0, 0, 0, 1.0]}')
    assert not _TEXT_LITERAL.search('{"orientation": [1, 0, 0, 0]}')
