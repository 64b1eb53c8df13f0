"""Adapters between the core's models and ROS messages (no rclpy import here).

These import the generated `mango_ros` interfaces and standard message packages only, so
bags, nodes and tools share one conversion.
"""
