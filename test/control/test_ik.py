"""The IK ladder (VoLo App. B.2) on the real FR3's kinematics: answers meet the pose within
the stated tolerances, stay inside the joint limits, respect the branch cap, and an
unreachable pose is refused with the reason."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mango.control import FR3Kinematics, load_robot
from mango.errors import UnreachableError
from mango.geometry import mat_to_quat
from mango.ik import BRANCH_CAP, LadderSettings, pose_error

FR3 = load_robot("fr3")
KIN = FR3Kinematics(FR3)
HOME = np.asarray(FR3.home, float)


def test_jacobian_is_the_derivative_of_the_pose() -> None:
    q = HOME + np.array([0.3, -0.2, 0.1, 0.2, -0.4, 0.3, 0.5])
    p, r, jac = KIN.pose_jacobian(q)
    for j in range(7):
        dq = q.copy()
        dq[j] += 1e-7
        p2, r2 = KIN.pose_matrix(dq)
        assert np.allclose(pose_error(p2, r2, p, r) / 1e-7, jac[:, j], atol=1e-5)


def test_ladder_meets_reachable_poses_within_tolerance_and_limits() -> None:
    rng = np.random.default_rng(7)
    s = LadderSettings()
    solved = 0
    for _ in range(40):
        q = rng.uniform(KIN.lower + 0.1, KIN.upper - 0.1)
        pos, rot = KIN.pose_matrix(q)
        sol = KIN.ladder.solve(pos, rot, HOME)
        if not sol.ok:
            continue
        solved += 1
        p, r = KIN.pose_matrix(sol.q)
        err = pose_error(pos, rot, p, r)
        assert np.linalg.norm(err[:3]) < s.accept_pos
        assert np.linalg.norm(err[3:]) < s.accept_rot
        assert np.all(sol.q >= KIN.lower) and np.all(sol.q <= KIN.upper)
    assert solved >= 36  # bench/bench_ik.py measures the rate on 1,000 poses


def test_ik_keeps_the_protocol_and_refuses_an_unreachable_pose() -> None:
    p, quat = KIN.fk(HOME)
    target = p + np.array([0.05, 0.05, -0.1])
    q = KIN.ik(target, quat, HOME)
    assert np.linalg.norm(KIN.fk(q)[0] - target) < LadderSettings().pos_tol
    with pytest.raises(UnreachableError, match=r"pose unreachable: position \[1.5, 0.0, 0.5\]"):
        KIN.ik([1.5, 0.0, 0.5], quat, HOME)


def test_branch_cap_refuses_a_solution_on_another_branch() -> None:
    # the pose of joint 7 turned by a half turn (the hand's frame turned about its axis):
    # reachable, but only by swinging joint 7 far from the seed
    q_far = HOME.copy()
    q_far[6] -= math.pi * 0.9
    pos, rot = KIN.pose_matrix(q_far)
    assert KIN.ladder.solve(pos, rot, HOME).ok
    sol = KIN.ladder.solve(pos, rot, HOME, max_jump=0.5)
    assert not sol.ok and "no continuous joint path" in sol.message
    with pytest.raises(UnreachableError, match="jumps a joint"):
        KIN.ik(pos, mat_to_quat(rot), HOME, max_jump=0.5)


def test_ladder_uses_later_starts_when_the_seed_is_stuck() -> None:
    # a seed pinned at joint limits far from the target: the first descent does not get
    # there, a later rung of the ladder does
    seed = np.clip(np.array([2.7, 1.7, 2.8, -0.2, 2.7, 0.6, 3.0]), KIN.lower, KIN.upper)
    pos, rot = KIN.pose_matrix(HOME + np.array([0.0, 0.2, 0.0, 0.3, 0.0, -0.2, 0.0]))
    sol = KIN.ladder.solve(pos, rot, seed)
    assert sol.ok and sol.starts > 1


# A seed near joint 4's lower limit and a pose 2.6 cm / 7 degrees from its hand pose (the FK of
# joints 0.08 rad from the seed): the seed's own descent stalls, the "joint 7 + pi" start
# meets the pose on the other wrist branch - the flip behind a CI failure, where a policy
# chunk's first point asked joint 7 for 22.9 rad/s (test/bringup/test_attach.py).
FLIP_SEED = np.array([0.9478, -0.3378, 1.5174, -2.9422, -2.2524, 3.2081, 2.8376])
FLIP_NEAR = np.array([0.9468, -0.3187, 1.4878, -2.9766, -2.1736, 3.2823, 2.78])


def test_branch_cap_refuses_the_flipped_start_a_path_step_would_take() -> None:
    pos, rot = KIN.pose_matrix(FLIP_NEAR)
    free = KIN.ladder.solve(pos, rot, FLIP_SEED)
    assert free.ok and free.starts == 2  # the seed failed, the flipped start answered
    assert abs(free.q[6] - FLIP_SEED[6]) > math.pi / 2  # ... on the other branch
    capped = KIN.ladder.solve(pos, rot, FLIP_SEED, max_jump=BRANCH_CAP)
    assert not capped.ok and "no continuous joint path" in capped.message
    with pytest.raises(UnreachableError, match=r"jumps a joint by more than 0\.50 rad"):
        KIN.ik(pos, mat_to_quat(rot), FLIP_SEED, max_jump=BRANCH_CAP)


def test_branch_cap_is_below_a_branch_change_and_above_a_step_the_limits_allow() -> None:
    # one control step (15 Hz) at the fastest joint's limit stays under the cap; the wrist
    # flip moves joint 7 by far more than it
    assert np.max(FR3.vmax) / 15.0 < BRANCH_CAP < math.pi / 2
