"""A simulated FR3 on the stack's graph: franky-sim's server (`mango.sim.franky_server`), which
speaks libfranka's TCP/UDP protocol on a loopback `address`, for `franka_control_node`'s
`libfranka` backend to drive as it would drive a real FR3's control box. The robot itself is
not on ROS: its state reaches the graph through the control node, as a real FR3's does.
Parameters: `address` (127.0.0.0/8; "" picks a free one, said in the log).
"""

from __future__ import annotations

from rclpy.node import Node

from mango.nodes.common import declare_parameters, run_node
from mango.sim.franky_server import FrankySimServer, free_loopback_address


class FrankySimNode(Node):
    def __init__(self) -> None:
        super().__init__("franky_sim_node")
        p = declare_parameters(self, {"address": ""})
        self.server = FrankySimServer(p["address"] or free_loopback_address()).start()
        self.get_logger().info(f"simulated FR3 (franky-sim, libfranka protocol) at "
                               f"{self.server.address}")

    def destroy_node(self) -> None:
        self.server.close()
        super().destroy_node()


def main(args: list[str] | None = None) -> None:
    run_node(FrankySimNode, args, threads=1)


if __name__ == "__main__":
    main()
