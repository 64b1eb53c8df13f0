"""Grasp and place primitives grounded in perception (issue #15): planning from detections
(`planning`), motions as the 8-D chunks a VLA emits (`motion`), one executor over injected
ports (`executor`: detect, execute a chunk, measure) and its ports on the embedded sim
(`runner`). No rclpy: the `primitives_node` gives the executor ROS ports."""

from mango.primitives.executor import (
    Executed,
    GraspOutcome,
    Measurement,
    Perceived,
    PlaceOutcome,
    PrimitiveExecutor,
    PrimitivePorts,
)
from mango.primitives.grasps import plan_grasp
from mango.primitives.planning import PlaceRequest, parse_destination
from mango.primitives.runner import SimPrimitives

__all__ = ["Executed", "GraspOutcome", "Measurement", "Perceived", "PlaceOutcome",
           "PlaceRequest", "PrimitiveExecutor", "PrimitivePorts", "SimPrimitives",
           "parse_destination", "plan_grasp"]
