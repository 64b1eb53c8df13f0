"""The IK ladder under control's name: it lives in `mango.ik`, below control and sim, so both
solve with the one ladder; this module only re-exports it for control's callers."""

from mango.ik import BRANCH_CAP, ArmModel, IKLadder, IKSolution, LadderSettings, pose_error

__all__ = ["BRANCH_CAP", "ArmModel", "IKLadder", "IKSolution", "LadderSettings", "pose_error"]
