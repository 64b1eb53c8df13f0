"""What each ROS node declares, read from its source: its parameters (the dict it hands to
`declare_parameters`), the topics it publishes and subscribes, the services and actions it
serves and calls. Read with `ast`, not by starting the node: the reference is built without
ROS running, a simulator or a robot, and cannot drift from the code it is read from."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NODES_DIR = ROOT / "src" / "mango" / "nodes"

# call -> (section, position of the interface type among the positional arguments)
ENDPOINTS: dict[str, tuple[str, int]] = {
    "create_publisher": ("publishes", 0),
    "create_subscription": ("subscribes", 0),
    "create_service": ("services", 0),
    "create_client": ("service clients", 0),
    "action_server": ("actions", 1),
    "ActionClient": ("action clients", 1),
}
SECTIONS = ("publishes", "subscribes", "services", "service clients", "actions", "action clients")


@dataclass(frozen=True)
class Parameter:
    name: str
    default: str  # as written in the code
    constraint: str = ""


@dataclass(frozen=True)
class Endpoint:
    section: str
    type: str
    name: str  # the name, or where it comes from (`parameter x`)


@dataclass
class NodeInfo:
    executable: str  # the module's name: `ros2 run mango_ros <executable>`
    node_name: str
    summary: str
    parameters: list[Parameter] = field(default_factory=list)
    endpoints: list[Endpoint] = field(default_factory=list)
    camera_inputs: bool = False


def node_executables(root: Path = ROOT) -> list[str]:
    """The nodes `CMakeLists.txt` installs (`MANGO_NODES`): the list `ros2 run` knows."""
    m = re.search(r"set\(MANGO_NODES([^)]*)\)", (root / "CMakeLists.txt").read_text())
    assert m, "CMakeLists.txt: no MANGO_NODES"
    return m.group(1).split()


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")


def _literal(node: ast.expr) -> str:
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        return _literal(node.values[-1])  # `output or ""`: the default when none is given
    try:
        return repr(ast.literal_eval(node))
    except ValueError:
        return ast.unparse(node)


def _parameter(name: str, value: ast.expr, local: dict[str, ast.expr],
               module: dict[str, ast.expr]) -> Parameter:
    if isinstance(value, ast.Name) and value.id in local:
        value = local[value.id]
    if isinstance(value, ast.Call) and value.args:
        helper, args = _call_name(value), value.args
        default = _literal(args[0])
        if helper == "Param":
            must = next((a for a in args[2:3]), None) or next(
                (k.value for k in value.keywords if k.arg == "must"), None)
            return Parameter(name, default, _text(must, module) if must is not None else "")
        if helper == "positive":
            upper = f" and at most {_literal(args[1])}" if len(args) > 1 else ""
            return Parameter(name, default, "positive" + upper)
        if helper == "at_least":
            return Parameter(name, default, f"at least {_literal(args[1])}")
        if helper == "rate_param":
            off = any(k.arg == "off_allowed" for k in value.keywords)
            return Parameter(name, default, ("0 (off) or " if off else "") + "0.01 to 1000 Hz")
    return Parameter(name, _literal(value))


def _text(node: ast.expr, module: dict[str, ast.expr]) -> str:
    """A message as the user reads it: an f-string's `{', '.join(NAMES)}` over a module-level
    table becomes its keys."""
    if isinstance(node, ast.Constant):
        return str(node.value)
    if not isinstance(node, ast.JoinedStr):
        return ast.unparse(node)
    out = []
    for part in node.values:
        if isinstance(part, ast.Constant):
            out.append(str(part.value))
            continue
        expr = part.value if isinstance(part, ast.FormattedValue) else part
        table = module.get(getattr(getattr(expr, "args", [None])[0], "id", ""))
        if isinstance(expr, ast.Call) and _call_name(expr) == "join" and isinstance(
                table, ast.Dict | ast.Tuple | ast.List | ast.Set):
            keys = table.keys if isinstance(table, ast.Dict) else table.elts
            out.append(", ".join(str(k.value) for k in keys if isinstance(k, ast.Constant)))
        else:
            out.append("{" + ast.unparse(expr) + "}")
    return "".join(out)


def _param_ref(node: ast.expr) -> str | None:
    """`p["x"]` / `self.params["x"]`: the value of parameter x."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        base = ast.unparse(node.value)
        if base == "p" or base.endswith("params"):
            return str(node.slice.value)
    return None


def _render_name(node: ast.expr, bound: dict[str, ast.expr], params: dict[str, Parameter]) -> str:
    key = ast.unparse(node)
    if key in bound:
        node = bound[key]
    if isinstance(node, ast.Constant):
        return f"`{node.value}`"
    ref = _param_ref(node)
    if ref is not None:
        default = params[ref].default if ref in params else "?"
        return f"parameter `{ref}` (default {default})"
    if isinstance(node, ast.JoinedStr):
        return f"`{_text(node, {})}`"
    return f"`<{ast.unparse(node)}>` (computed at run time)"


def _loop_bindings(tree: ast.AST) -> dict[int, list[dict[str, ast.expr]]]:
    """For each call inside `for a, b in ((A, "a"), (B, "b")):`, the values of a and b per
    round, so `action_server(self, kind, name, ...)` reads as the actions it serves."""
    out: dict[int, list[dict[str, ast.expr]]] = {}
    for loop in ast.walk(tree):
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Tuple)
                and isinstance(loop.iter, ast.Tuple | ast.List)):
            continue
        names = [getattr(t, "id", "") for t in loop.target.elts]
        rounds = [dict(zip(names, row.elts, strict=False)) for row in loop.iter.elts
                  if isinstance(row, ast.Tuple)]
        for stmt in loop.body:
            for call in ast.walk(stmt):
                if isinstance(call, ast.Call):
                    out[id(call)] = rounds
    return out


def _assignments(scope: ast.AST) -> dict[str, ast.expr]:
    """`x = ...` and `self.x = ...` in a function (or a module), by the target as written."""
    return {ast.unparse(t): a.value for a in ast.walk(scope) if isinstance(a, ast.Assign)
            for t in a.targets if isinstance(t, ast.Name | ast.Attribute)}


def read_node(path: Path) -> NodeInfo:
    tree = ast.parse(path.read_text(), str(path))
    module = {ast.unparse(t): a.value for a in tree.body if isinstance(a, ast.Assign)
              for t in a.targets if isinstance(t, ast.Name)}
    module |= {ast.unparse(a.target): a.value for a in tree.body
               if isinstance(a, ast.AnnAssign) and a.value is not None}
    node_name = path.stem
    for call in ast.walk(tree):  # super().__init__("name")
        if (isinstance(call, ast.Call) and _call_name(call) == "__init__" and call.args
                and isinstance(call.args[0], ast.Constant)):
            node_name = str(call.args[0].value)
    doc = ast.get_docstring(tree) or ""
    info = NodeInfo(path.stem, node_name, doc.split("\n\n")[0].replace("\n", " "))
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        local = _assignments(fn)
        for call in ast.walk(fn):
            if (isinstance(call, ast.Call) and _call_name(call) == "declare_parameters"
                    and len(call.args) > 1 and isinstance(call.args[1], ast.Dict)):
                for key, value in zip(call.args[1].keys, call.args[1].values, strict=True):
                    if isinstance(key, ast.Constant):
                        info.parameters.append(_parameter(str(key.value), value, local, module))
    params = {p.name: p for p in info.parameters}
    loops = _loop_bindings(tree)
    scope: dict[int, dict[str, ast.expr]] = {}  # call -> its function's assignments
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef):
            names = _assignments(fn)
            for call in ast.walk(fn):
                scope[id(call)] = names  # inner functions come later in the walk
    seen: set[Endpoint] = set()
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        if _call_name(call) == "CameraInputs":
            info.camera_inputs = True
        kind = ENDPOINTS.get(_call_name(call))
        if kind is None or len(call.args) < kind[1] + 2:
            continue
        section, at = kind
        for bound in loops.get(id(call), [{}]):
            names = {**scope.get(id(call), {}), **bound}
            typ = call.args[at]
            typ = names.get(ast.unparse(typ), typ)
            ep = Endpoint(section, ast.unparse(typ) if isinstance(typ, ast.Name | ast.Attribute)
                          else "(per topic)", _render_name(call.args[at + 1], names, params))
            if ep not in seen:
                seen.add(ep)
                info.endpoints.append(ep)
    return info


def read_nodes(root: Path = ROOT) -> list[NodeInfo]:
    return [read_node(root / "src" / "mango" / "nodes" / f"{name}.py")
            for name in node_executables(root)]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def node_markdown(info: NodeInfo) -> str:
    lines = [f"## `{info.executable}`", "", info.summary, "",
             f"Node name `{info.node_name}`; run it with `ros2 run mango_ros {info.executable}` "
             f"or `python -m mango.nodes.{info.executable}` (`--ros-args -p NAME:=VALUE`).", ""]
    if info.parameters:
        lines += ["| parameter | default | must be |", "|---|---|---|"]
        lines += [f"| `{p.name}` | `{_cell(p.default)}` | {_cell(p.constraint)} |"
                  for p in info.parameters]
        lines.append("")
    for section in SECTIONS:
        eps = [e for e in info.endpoints if e.section == section]
        if eps:
            lines += [f"**{section.capitalize()}**", ""]
            lines += [f"- {_cell(e.name)}: `{e.type}`" for e in eps]
            lines.append("")
    if info.camera_inputs:
        lines += ["Camera input (`mango.nodes.camera_inputs.CameraInputs`): "
                  "`camera/<name>/image_raw`, `depth`, `camera_info`, `tf`, `tf_static` and "
                  "`joint_states` for camera poses.", ""]
    return "\n".join(lines)


def nodes_page(root: Path = ROOT) -> str:
    nodes = read_nodes(root)
    head = ["# Nodes", "",
            "Generated from the nodes' source (`src/mango/nodes/`) when the site is built: the "
            "parameters each node hands to `declare_parameters`, with their defaults and "
            "checks, and every topic, service and action it creates. Names are relative (they "
            "follow the node's namespace) unless they start with `/`; `~/x` is the node's own. "
            "Every node also takes rclpy's `use_sim_time`. The interface types are on "
            "[Interfaces](interfaces.md).", ""]
    return "\n".join(head + [node_markdown(n) for n in nodes])
