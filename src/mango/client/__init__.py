"""Blocking Python API over the running stack (like nav2_simple_commander): `Robot` sends the
stack's tools (chunks, motions, policies, oracle services) and waits for their outcomes;
`StackSession` brings a stack up. Used by `mango demo`, `mango policy run` and the tests."""

from mango.client.robot import (
    OracleLoaded,
    Reply,
    Robot,
    RobotNames,
    SceneReset,
    verdict_report,
)
from mango.client.session import StackSession, VerdictFollower
from mango.client.tasks import ActionTask, Outcome, TaskResult

__all__ = ["ActionTask", "OracleLoaded", "Outcome", "Reply", "Robot", "RobotNames",
           "SceneReset", "StackSession", "TaskResult", "VerdictFollower", "verdict_report"]
