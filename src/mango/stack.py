"""Stack files (`config/stacks/*.yaml`): which nodes run, with which parameters and remappings.

One source of truth for bringing a system up: `launch/*.launch.py` turn a stack into launch_ros
`Node` actions on a system ROS 2, and `mango bringup` starts the same nodes as processes where
launch_ros does not exist. `$(share)` in a string parameter is the package share directory
(the repository root in a checkout), so paths work in both places.

`use_sim_time: true` on a stack gives every node that parameter (rclpy's standard one: the
node's clock follows `/clock`) unless the node sets it itself, so all stamps the stack makes
come from the simulator's clock. Under a namespace (`in_namespace`) such a stack also moves
`/clock` into it: two simulations on one ROS domain then keep their own time.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mango.errors import InputError
from mango.yaml_files import load_yaml_model

PACKAGE = "mango_ros"
CLOCK_TOPIC = "/clock"  # rclpy's TimeSource subscribes to this absolute name
RECORDER = "bag_recorder"  # the executable that records a stack's bag
REPO_ROOT = Path(__file__).resolve().parents[2]
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ParamValue = bool | int | float | str | list[bool] | list[int] | list[float] | list[str]


def absolute_namespace(v: str) -> str:
    """`a/b`, `/a/b/` -> `/a/b`; "" stays "" (the root); `ValueError` for a bad name."""
    parts = [p for p in v.strip().split("/") if p]
    bad = [p for p in parts if not _NAME.match(p)]
    if bad:
        raise ValueError(f"{v!r} is not a valid ROS namespace ({bad[0]!r})")
    return "/" + "/".join(parts) if parts else ""


class StackNode(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    executable: str
    package: str = PACKAGE
    namespace: str = ""
    parameters: dict[str, ParamValue] = Field(default_factory=dict)
    remappings: dict[str, str] = Field(default_factory=dict)
    required: bool = True  # if it dies, the whole stack stops
    description: str = ""

    @field_validator("name", "executable")
    @classmethod
    def _ros_name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"{v!r} is not a valid ROS node/executable name")
        return v

    @field_validator("namespace")
    @classmethod
    def _absolute_namespace(cls, v: str) -> str:
        """Absolute: a node process takes `-r __ns:=...`, which rcl refuses when relative
        (`camera/front` killed both camera nodes of the FR3 stack at start)."""
        return absolute_namespace(v)


class Stack(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    # another stack this one starts from: its nodes, less `drop`, with a node of the same
    # namespace and name here replacing the base's whole and the others added
    extends: str = ""
    drop: list[str] = []
    optional: list[str] = []  # base nodes that may exit without stopping the stack
    use_sim_time: bool = False
    nodes: list[StackNode]

    @field_validator("nodes")
    @classmethod
    def _unique(cls, v: list[StackNode]) -> list[StackNode]:
        seen: set[str] = set()
        for n in v:
            key = f"{n.namespace}/{n.name}"
            if key in seen:
                raise ValueError(f"node {key} appears twice")
            seen.add(key)
        if not v:
            raise ValueError("a stack needs at least one node")
        return v

    @model_validator(mode="after")
    def _sim_time(self) -> Stack:
        if self.use_sim_time:
            for n in self.nodes:
                n.parameters.setdefault("use_sim_time", True)
        return self

    def resolved(self, share: str | Path) -> Stack:
        """A copy with `$(share)` replaced in every string parameter."""
        def sub(v: Any) -> Any:
            if isinstance(v, str):
                return v.replace("$(share)", str(share))
            if isinstance(v, list):
                return [sub(x) for x in v]
            return v

        return self.model_copy(update={"nodes": [
            n.model_copy(update={"parameters": {k: sub(v) for k, v in n.parameters.items()}})
            for n in self.nodes]})

    def in_namespace(self, namespace: str) -> Stack:
        """A copy with every node under `namespace` (before its own), so two stacks can share
        a ROS graph. A recorder's `topics` are full graph names: they move with it, and so
        does a sim-time stack's `/clock`."""
        ns = absolute_namespace(namespace)
        if not ns:
            return self

        def moved(n: StackNode) -> StackNode:
            params = dict(n.parameters)
            topics = params.get("topics")
            if n.executable == RECORDER and isinstance(topics, list):
                params["topics"] = [f"{ns}{t}" if str(t).startswith("/") else t
                                    for t in topics]
            remappings = dict(n.remappings)
            if self.use_sim_time:  # the clock's source and its readers move together
                remappings.setdefault(CLOCK_TOPIC, f"{ns}{CLOCK_TOPIC}")
            return n.model_copy(update={"namespace": ns + n.namespace, "parameters": params,
                                        "remappings": remappings})

        return self.model_copy(update={"nodes": [moved(n) for n in self.nodes]})

    def recorder(self) -> StackNode | None:
        """The stack's bag recorder node, if it has one."""
        return next((n for n in self.nodes if n.executable == RECORDER), None)


def stack_path(name_or_path: str | Path, share: str | Path = REPO_ROOT) -> Path:
    """A stack by file path, or by name in `config/stacks/`."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        return p
    return Path(share) / "config" / "stacks" / f"{name_or_path}.yaml"


def load_stack(name_or_path: str | Path, share: str | Path = REPO_ROOT,
               _seen: tuple[str, ...] = ()) -> Stack:
    """Read and validate a stack file (and the one it `extends`); errors name the file and
    field."""
    path = stack_path(name_or_path, share)
    stack = load_yaml_model(path, Stack, "stack")
    if stack.extends:
        key = str(path.resolve())
        if key in _seen:
            raise InputError(f"stacks extend each other in a loop: {' -> '.join(_seen)}",
                             file=str(path), field="extends")
        base = load_stack(stack.extends, share, (*_seen, key))
        stack = _extended(base, stack, path)
    return stack.resolved(share)


def _extended(base: Stack, child: Stack, path: Path) -> Stack:
    def key(n: StackNode) -> str:
        return f"{n.namespace}/{n.name}"

    for field, names in (("drop", child.drop), ("optional", child.optional)):
        unknown = sorted(set(names) - {n.name for n in base.nodes})
        if unknown:
            raise InputError(f"{field}: {', '.join(unknown)}, which {base.name} does not have",
                             file=str(path), field=field)
    mine = {key(n): n for n in child.nodes}
    nodes = [mine.pop(key(n), n.model_copy(update={"required": False})
                      if n.name in child.optional else n)
             for n in base.nodes if n.name not in child.drop]
    nodes += list(mine.values())
    try:
        return Stack(name=child.name, description=child.description or base.description,
                     use_sim_time=child.use_sim_time or base.use_sim_time, nodes=nodes)
    except ValueError as exc:
        raise InputError(str(exc), file=str(path), field="nodes") from None


def ros_args(node: StackNode, params_file: Path | None = None) -> list[str]:
    """The `--ros-args` of a node process: name, namespace, parameters file, remappings."""
    args = ["--ros-args", "-r", f"__node:={node.name}"]
    if node.namespace:
        args += ["-r", f"__ns:={node.namespace}"]
    if params_file is not None:
        args += ["--params-file", str(params_file)]
    for src, dst in node.remappings.items():
        args += ["-r", f"{src}:={dst}"]
    return args


def params_document(node: StackNode) -> dict[str, Any]:
    """The node's parameters in the ROS 2 parameters-file layout."""
    return {"/**": {"ros__parameters": dict(node.parameters)}}
