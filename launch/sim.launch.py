"""Sim + control + VLA policy (expert) + oracle + recorder (config/stacks/sim.yaml)."""

from mango.launch_support import stack_launch_description


def generate_launch_description():
    return stack_launch_description("sim")
