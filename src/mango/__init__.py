"""mango: fine-grained oracles and a ROS 2 stack for VLA-enabled Franka robots.

The generated ROS interfaces live in the `mango_ros` package; this library is `mango`.
"""

__version__ = "0.1.0"
