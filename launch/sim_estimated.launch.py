"""The sim judged on the estimated world state (config/stacks/sim_estimated.yaml)."""

from mango.launch_support import stack_launch_description


def generate_launch_description():
    return stack_launch_description("sim_estimated")
