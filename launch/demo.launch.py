"""Sim + oracle node + recorder (config/stacks/demo.yaml)."""

from mango.launch_support import stack_launch_description


def generate_launch_description():
    return stack_launch_description("demo")
