"""ROS 2 nodes: thin adapters from topics, services and parameters to the core."""
