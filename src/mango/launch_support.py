"""Build a launch description from a stack file (used by `launch/*.launch.py`).

launch and launch_ros exist only on a system ROS 2; they are imported here, inside the
function, so the rest of the library never needs them.
"""

from __future__ import annotations

from typing import Any

from mango.stack import PACKAGE, load_stack


def stack_launch_description(stack_name: str,
                             overrides: dict[str, dict[str, Any]] | None = None) -> Any:
    """The stack's nodes as launch_ros Nodes; `overrides` sets parameters per node name (a
    launch argument's `LaunchConfiguration`, say)."""
    from ament_index_python.packages import get_package_share_directory
    from launch.actions import EmitEvent
    from launch.events import Shutdown
    from launch_ros.actions import Node

    from launch import LaunchDescription

    stack = load_stack(stack_name, get_package_share_directory(PACKAGE))
    actions = []
    for n in stack.nodes:
        actions.append(Node(
            package=n.package,
            executable=n.executable,
            name=n.name,
            namespace=n.namespace or "",
            parameters=[{**n.parameters, **(overrides or {}).get(n.name, {})}],
            remappings=list(n.remappings.items()),
            output="screen",
            # A required node that exits ends the whole launch, as `mango bringup` does.
            on_exit=[EmitEvent(event=Shutdown(reason=f"{n.name} exited"))] if n.required
            else None,
        ))
    return LaunchDescription(actions)
