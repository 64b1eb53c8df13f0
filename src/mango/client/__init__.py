"""Blocking Python API over the running stack (like nav2_simple_commander): `Robot` sends the
stack's tools (chunks, motions, policies, oracle services) and waits for their outcomes;
`StackSession` brings a stack up. Used by `mango demo`, `mango policy run` and the tests."""

from mango.client.robot import (
    ActionTask,
    OracleLoaded,
    Outcome,
    Reply,
    Robot,
    RobotNames,
    TaskResult,
    verdict_report,
)
from mango.client.session import StackSession, VerdictFollower

__all__ = ["ActionTask", "OracleLoaded", "Outcome", "Reply", "Robot", "RobotNames",
           "StackSession", "TaskResult", "VerdictFollower", "verdict_report"]
