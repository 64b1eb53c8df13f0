"""Blocking Python API over the running stack (like nav2_simple_commander): bring a stack up,
call its services, follow the oracle's verdicts. Used by `mango demo` and `mango policy run`."""

from mango.client.session import StackSession, VerdictFollower

__all__ = ["StackSession", "VerdictFollower"]
