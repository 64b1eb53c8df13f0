"""Grasp and place primitives grounded in perception (issue #15): planning from detections
(`planning`), motions as the 8-D chunks a VLA emits (`motion`), and measured outcomes in the
embedded sim (`runner`). No rclpy: the node layer adapts these."""

from mango.primitives.planning import PlaceRequest, parse_destination, plan_grasp
from mango.primitives.runner import GraspOutcome, PlaceOutcome, SimPrimitives

__all__ = ["GraspOutcome", "PlaceOutcome", "PlaceRequest", "SimPrimitives", "parse_destination",
           "plan_grasp"]
