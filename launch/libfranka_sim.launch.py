"""The nodes of config/stacks/libfranka_sim.yaml."""

from mango.launch_support import stack_launch_description


def generate_launch_description():
    return stack_launch_description("libfranka_sim")
