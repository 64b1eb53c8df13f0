"""Scripted expert: a scene's task plan composed from motion primitives and fixture skills.

`ExpertPolicy.act(world_state, joint_positions)` returns the next action chunk (H x 8: seven
joint targets + gripper width), so the same planner drives `SimEnv` directly and, through
the ROS `vla_node`, a robot that publishes `/world_state`. The plan re-reads the world state
at sync points (after a grasp, a release, a push) to verify what happened and retry a failed
grasp. A fault (`mango.sim.faults`) changes the plan where it strikes, and the milestones
record which task effect it prevented (the run's ground truth).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

import numpy as np

from mango.errors import InputError
from mango.ik import BRANCH_CAP
from mango.oracle.world_state import WorldState
from mango.sim.build import build_robot
from mango.sim.expert import fixtures, motions, pushing
from mango.sim.expert.arm import CLOSED, OPEN, SYNC, ChunkStream, ExpertError, PlannedArm
from mango.sim.expert.milestones import Milestone, TaskProgress
from mango.sim.expert.motions import SkillContext
from mango.sim.faults import Fault, FaultInjector, FaultRecord, parse_fault
from mango.sim.ik import IKSolver
from mango.sim.scene import SceneSpec, SkillSpec, as_scene

log = logging.getLogger(__name__)


class ExpertPolicy:
    """A scripted policy for one scene's task (optionally with an injected fault)."""

    def __init__(
        self,
        scene: SceneSpec | str | Path,
        fault: Fault | str | None = None,
        *,
        chunk_size: int = 8,
        travel_speed: float = 0.3,
        approach_speed: float = 0.15,
    ) -> None:
        self.scene = as_scene(scene)
        self.fault = parse_fault(fault) if isinstance(fault, str) else fault
        self.chunk_size = chunk_size
        self.travel_speed = travel_speed
        self.approach_speed = approach_speed
        kin = build_robot(self.scene)
        joint_ids = [int(kin.model.actuator_trnid[a, 0]) for a in kin.arm_actuators]
        # the expert follows paths only: every answer stays on its seed's branch
        self.ik = IKSolver(kin.model, kin.hand_site, kin.arm_qpos, kin.arm_dof, joint_ids,
                           max_jump=BRANCH_CAP)
        self.faults = FaultInjector(self.scene, self.fault)
        self.reset()

    # ------------------------------------------------------------------ public API
    def reset(self, steps: Sequence[int] | None = None, *, new_episode: bool = True) -> None:
        """Start the scene's whole plan, or only its expert `steps` (0-based, in the order
        given: a subgoal). `new_episode=False` keeps the episode's milestones and a fault that
        already struck (an orchestrator's next subgoal in the same world)."""
        n = len(self.scene.expert)
        plan = tuple(range(n)) if steps is None else tuple(int(k) for k in steps)
        bad = [k + 1 for k in plan if not 0 <= k < n]
        if bad:
            raise InputError(f"expert step {bad[0]} does not exist (the plan has {n})",
                             field="steps")
        self.plan = plan
        self.whole_plan = steps is None
        self._ctx: SkillContext | None = None
        self._stream: ChunkStream | None = None
        self.done = False
        self.error: str | None = None
        self.faults.reset(new_episode=new_episode)
        if new_episode or not hasattr(self, "progress"):
            self.progress = TaskProgress(self.scene)

    @property
    def fault_record(self) -> FaultRecord | None:
        return self.faults.record

    @property
    def milestones(self) -> list[Milestone]:
        return self.progress.milestones

    def act(self, state: WorldState, joint_positions: Sequence[float]) -> np.ndarray:
        """The next action chunk (at most `chunk_size` rows of 7 joint targets + width)."""
        if self._ctx is not None:
            self._ctx.state = state
        self.review([state])  # effects seen between the plan's own checks count too
        q = np.asarray(joint_positions, float)
        if self._ctx is None or self._stream is None:
            width = self._start_width(state)
            arm = PlannedArm(self.ik, q.copy(), float(width), travel_speed=self.travel_speed,
                             approach_speed=self.approach_speed,
                             travel_z=motions.travel_height(self.scene))
            self._ctx = SkillContext(self.scene, arm, state)
            self._stream = ChunkStream(self._script(), self.chunk_size, np.r_[q, width])
        if self.faults.stalls(state.t):
            self.done = True
            return np.tile(self._stream.last_row, (self.chunk_size, 1))
        chunk = self._stream.next_chunk()
        self.done, self.error = self._stream.done, self._stream.error
        return chunk

    def _start_width(self, state: WorldState) -> float:
        """The gripper width the plan starts from. A hand that already holds an object (a
        grasp primitive took it before this instruction) keeps squeezing it: the width closed
        fingers measure is the object's, and commanding that to a position-servoed gripper
        leaves no grip force, so the object slips out during the carry."""
        if any(v for k, v in state.facts.items() if k.startswith("grasped(")):
            return CLOSED
        g = state.gripper
        return g.width if g is not None and g.width else OPEN

    def ground_truth(
        self, monitored: Callable[[Milestone], bool] | None = None
    ) -> dict[str, object]:
        """The first milestone the run failed (plan order) and when; None when all held.

        `monitored` filters the milestones an oracle actually watches (e.g. no `approach`).
        """
        fr = self.fault_record
        return self.progress.ground_truth(fr.t if fr is not None else None, monitored)

    def review(self, states: Sequence[WorldState]) -> None:
        """Settle unachieved milestones from the recorded physics (see `TaskProgress`)."""
        self.progress.review(states)

    # ------------------------------------------------------------------ the script
    def _state(self) -> WorldState:
        assert self._ctx is not None
        return self._ctx.state

    def _achieve(self, m: Milestone) -> None:
        self.progress.achieve(m, self._state().t)

    def _approached(self, obj: str) -> Callable[[], None]:
        return lambda: self.progress.approached(obj, self._state().t)

    def _script(self) -> Iterator[object]:
        yield SYNC
        for k in self.plan:
            skill = self.scene.expert[k]
            if self.faults.skips(k, self._state().t):
                continue
            if skill.skill == "pick_place":
                yield from self._pick_place(k, skill)
            elif skill.skill == "close":
                yield from self._close(k, skill)
            elif skill.skill == "open":
                yield from self._open(k, skill)
            elif skill.skill == "push":
                yield from self._push(k, skill)
            else:
                yield from self._turn_on(k, skill)
        ctx = self._ctx
        assert ctx is not None
        if not self.whole_plan:  # a subgoal ends where it ends: the next one starts there
            yield SYNC
            return
        try:  # park the arm; the task is over whether or not this succeeds
            yield from ctx.arm.travel_to(np.array([-0.2, 0.0, self.scene.table.height + 0.3]))
        except ExpertError as exc:
            log.info("not parking the arm: %s", exc)
        yield SYNC

    def _placed(self, k: int) -> bool:
        return self.progress.holds(self.progress.find("place", k), self._state())

    def _pick_place(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ctx = self._ctx
        assert ctx is not None
        faults = self.faults
        obj = faults.object_for(k, skill, self._state().t)
        pick = self.progress.find("pick", k)
        place = self.progress.find("place", k)
        side = skill.grasp == "side"
        d = motions.cavity_direction(ctx, skill.target or "") if side else None
        held = self._held_offset(obj)
        if held is not None:  # handed over with the object in the hand: place it
            offset: float | None = held
        elif d is not None:
            offset = yield from motions.grasp_side(ctx, obj, d, self._approached(obj))
        else:
            offset = yield from motions.grasp(ctx, obj, self._approached(obj))
        if offset is None:
            return
        if obj == pick.subject:
            self._achieve(pick)
        xy, support, tyaw = motions.place_point(ctx, skill.target or "", skill.offset)
        wrong_place = faults.misplaces(k)
        if wrong_place:
            xy = motions.beside(ctx, skill.target or "", obj)
            support = self.scene.table.height
        drop_at = faults.drop_fraction(k)
        on_drop = None if drop_at is None else partial(
            faults.note, k, f"released {obj} at {drop_at:.0%} of the transport")
        on_release = (partial(faults.note, k, f"released {obj} beside {skill.target}")
                      if wrong_place else None)
        if d is not None:
            yield from motions.place_side(ctx, xy, support + offset + 0.015, d,
                                          drop_at=drop_at, on_drop=on_drop,
                                          on_release=on_release)
        else:
            quat = motions.carry_quat(ctx, obj, tyaw)
            yield from motions.place(ctx, xy, support + offset + 0.012, quat, drop_at=drop_at,
                                     on_drop=on_drop, on_release=on_release, held=obj)
        if obj == place.subject and self._placed(k):
            self._achieve(place)
        if not side and faults.knocks_out(k) and place.achieved:
            yield from self._knock_out(k, skill, obj)

    def _held_offset(self, obj: str) -> float | None:
        """The hand's height above `obj`'s bottom when the hand already holds it (a grasp
        primitive took it before this instruction), else None."""
        st = self._state()
        if not st.fact(f"grasped({obj})") or "robot_hand" not in st.objects:
            return None
        o = st.objects[obj]
        return float(st.objects["robot_hand"].position[2] - (o.position[2] - o.size[2] / 2))

    def _knock_out(self, k: int, skill: SkillSpec, obj: str) -> Iterator[object]:
        """Take the placed object out of its target again and put it down beside it."""
        ctx = self._ctx
        assert ctx is not None
        place = self.progress.find("place", k)
        offset = yield from motions.grasp(ctx, obj, self._approached(obj))
        if offset is None:
            self.faults.no_effect(f"could not take {obj} out of {skill.target} (no effect)")
            return
        if not self._placed(k):
            place.lost_t = self._state().t
            self.faults.note(k, f"took {obj} out of {skill.target}", place.lost_t)
        xy = motions.beside(ctx, skill.target or "", obj)
        yield from motions.put_down(ctx, xy, self.scene.table.height + offset + 0.012)

    def _close(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ctx = self._ctx
        assert ctx is not None
        yield from fixtures.close_joint(ctx, skill.joint or "")
        joint = self.scene.joint_owner(skill.joint or "").joint
        assert joint is not None
        if self._state().joints[joint.id].openness <= 0.05:
            self._achieve(self.progress.find("close", k))

    def _open(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ctx = self._ctx
        assert ctx is not None
        yield from fixtures.open_joint(ctx, skill.joint or "")
        joint = self.scene.joint_owner(skill.joint or "").joint
        assert joint is not None
        if self._state().joints[joint.id].openness >= 1.0:
            self._achieve(self.progress.find("open", k))

    def _push(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ctx = self._ctx
        assert ctx is not None
        obj = skill.obj or ""
        for _attempt in range(4):  # the object lags the fingers: push again from where it is
            goal = pushing.push_spot(ctx, obj, skill.target or "")
            for point in pushing.push_route(ctx, obj, goal):
                yield from pushing.push_to(ctx, obj, point, self._approached(obj))
            if self._placed(k):
                self._achieve(self.progress.find("place", k))
                return

    def _turn_on(self, k: int, skill: SkillSpec) -> Iterator[object]:
        ctx = self._ctx
        assert ctx is not None
        yield from fixtures.turn_on(ctx, skill.device or "")
        dev = self._state().devices.get(skill.device or "")
        if dev is not None and dev.on:
            self._achieve(self.progress.find("turnon", k))
