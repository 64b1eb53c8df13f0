"""The LIBERO worker: one LIBERO task in its own process, run by `.venv-libero/bin/python`.

LIBERO pins MuJoCo 3.3.2 and the main venv has MuJoCo 4, so LIBERO runs here, behind a
process boundary, and answers JSON-lines requests on stdin/stdout. This file is standalone on
purpose: it imports only LIBERO, robosuite, numpy and the standard library (never `mango`).
`mango.sim.libero.client.LiberoClient` drives it.

Protocol: one JSON object per line each way. A request is `{"op": NAME, ...}`; the answer is
`{"ok": RESULT}` or `{"error": MESSAGE, "kind": "input" | "runtime"}`. LIBERO prints to
stdout, so the protocol runs on a private copy of the stdout descriptor and fd 1 goes to
stderr.
"""

from __future__ import annotations

import ctypes
import inspect
import json
import os
import signal
import sys
import traceback
from typing import Any

SUITES = ("libero_10", "libero_goal", "libero_spatial", "libero_object", "libero_90")
LEFT_FINGER = "robot_left_finger"
RIGHT_FINGER = "robot_right_finger"
GRIPPER = "robot_gripper"


class RequestError(Exception):
    """A request the caller got wrong (unknown task, bad action): reported as kind `input`,
    naming the request's argument at fault (`arg`) so the caller can name its own field."""

    def __init__(self, message: str, arg: str | None = None) -> None:
        super().__init__(message)
        self.arg = arg


def _die_with_parent() -> None:
    # Linux: SIGTERM when the parent dies, so a crashed driver never leaves a LIBERO behind.
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() == 1:
        sys.exit(0)


class Worker:
    """One open LIBERO task (or none) and the requests on it."""

    def __init__(self) -> None:
        self.env: Any = None
        self.suite: Any = None
        self.task_index = -1
        self.last_gripper = -1.0
        self.geom_owner: dict[int, str] = {}
        self.body_geoms: dict[str, list[int]] = {}
        self.part_geoms: dict[str, list[int]] = {}
        self.render_owner: list[str] | None = None  # geom id -> entity, made at a render

    # --------------------------------------------------------------------------- tasks

    def op_tasks(self, suite: str) -> list[dict[str, Any]]:
        bench = self._suite(suite)
        return [
            {"index": i, "name": t.name, "stem": os.path.splitext(t.bddl_file)[0],
             "language": t.language}
            for i, t in enumerate(bench.tasks)
        ]

    def _suite(self, suite: str) -> Any:
        from libero.libero import benchmark

        if suite not in SUITES:
            raise RequestError(f"unknown LIBERO suite '{suite}' (one of {', '.join(SUITES)})",
                               arg="suite")
        return benchmark.get_benchmark_dict()[suite]()

    def _task(self, suite: str, task: int | str) -> tuple[Any, int, list[str]]:
        """(the suite's benchmark, the task's index, every task's BDDL stem)."""
        bench = self._suite(suite)
        stems = [os.path.splitext(t.bddl_file)[0] for t in bench.tasks]
        if isinstance(task, str):
            if task not in stems:
                raise RequestError(f"suite {suite} has no task '{task}' (no such BDDL file)",
                                   arg="task")
            return bench, stems.index(task), stems
        if not 0 <= task < len(stems):
            raise RequestError(
                f"suite {suite} has tasks 0..{len(stems) - 1}, not {task}", arg="task"
            )
        return bench, task, stems

    def op_task(self, suite: str, task: int | str) -> dict[str, Any]:
        """One task without building it: what a caller checks a request against first."""
        bench, index, stems = self._task(suite, task)
        t = bench.get_task(index)
        return {"index": index, "name": t.name, "stem": stems[index], "language": t.language,
                "n_init_states": len(bench.get_task_init_states(index))}

    def op_open(self, suite: str, task: int | str, init: int) -> dict[str, Any]:
        from libero.libero import get_libero_path
        from libero.libero.envs.env_wrapper import ControlEnv

        bench, index, stems = self._task(suite, task)
        states = bench.get_task_init_states(index)
        if not 0 <= init < len(states):
            raise RequestError(
                f"task {suite}/{index} has init states 0..{len(states) - 1}, not {init}",
                arg="init",
            )
        self.op_close()
        t = bench.get_task(index)
        bddl = os.path.join(get_libero_path("bddl_files"), t.problem_folder, t.bddl_file)
        # LIBERO's harness builds OffScreenRenderEnv; ControlEnv is its base with the same
        # task, robot and controller, without cameras (rendering is a later consumer's).
        self.env = ControlEnv(
            bddl_file_name=bddl,
            use_camera_obs=False,
            has_renderer=False,
            has_offscreen_renderer=False,
        )
        self.env.seed(0)
        self.env.reset()
        self.env.set_init_state(states[init])
        self.suite, self.task_index, self.last_gripper = bench, index, -1.0
        self._index_geoms()
        inner = self.env.env
        return {
            "suite": suite,
            "index": index,
            "name": t.name,
            "stem": stems[index],
            "bddl": bddl,
            "language": t.language,
            "init": init,
            "n_init_states": len(states),
            "goal": [list(map(str, atom)) for atom in inner.parsed_problem["goal_state"]],
            "state_size": len(self.env.get_sim_state()),
            "articulation": self._articulation(),
        }

    def _index_geoms(self) -> None:
        """Geom id -> LIBERO entity (or robot part), the way `env.check_contact` groups them:
        an object's `contact_geoms`; the gripper's fingers from robosuite's important geoms."""
        inner = self.env.env
        model = inner.sim.model
        owner: dict[int, str] = {}
        body_geoms: dict[str, list[int]] = {}
        for name, obj in {**inner.fixtures_dict, **inner.objects_dict}.items():
            ids = [model.geom_name2id(g) for g in obj.contact_geoms]
            for gid in ids:
                owner[gid] = name
            body_geoms[name] = ids
        gripper = inner.robots[0].gripper
        for gname in gripper.contact_geoms:
            owner[model.geom_name2id(gname)] = GRIPPER
        for part, key in ((LEFT_FINGER, "left_finger"), (RIGHT_FINGER, "right_finger")):
            for gname in gripper.important_geoms[key]:
                owner[model.geom_name2id(gname)] = part
        self.geom_owner, self.body_geoms = owner, body_geoms
        self.part_geoms = {
            j: self._part_geoms(model.joint_name2id(j))
            for obj in inner.fixtures_dict.values() for j in getattr(obj, "joints", None) or []
        }

    def _articulation(self) -> dict[str, dict[str, list[float]]]:
        out = {}
        for name, obj in self.env.env.fixtures_dict.items():
            art = getattr(obj, "object_properties", {}).get("articulation")
            if art and obj.joints:
                out[name] = {
                    "class": [type(obj).__name__],
                    **{k: [float(x) for x in v] for k, v in art.items()},
                }
        return out

    def _need_env(self) -> Any:
        if self.env is None:
            raise RequestError("no LIBERO task is open (send 'open' first)")
        return self.env

    # ------------------------------------------------------------------------- stepping

    def op_step(self, action: list[float], n: int = 1) -> dict[str, Any]:
        env = self._need_env()
        if len(action) != 7 or not all(isinstance(a, (int, float)) for a in action):
            raise RequestError(
                f"a LIBERO action is 7 numbers (OSC deltas + gripper), got {action!r}"
            )
        if env.env.done:
            raise RequestError(
                f"the episode ended at robosuite's horizon ({env.env.horizon} steps): "
                "open the task again"
            )
        done, steps = False, 0
        while steps < n and not done:
            _obs, _reward, done, _info = env.step(action)
            steps += 1
        self.last_gripper = float(action[6])
        return {"done": bool(done), "steps": steps}

    def op_get_state(self) -> list[float]:
        return [float(x) for x in self._need_env().get_sim_state()]

    def op_observe(self) -> dict[str, Any]:
        """The facts and LIBERO's simulator state of the same instant, in one request (a trace
        records both every control step)."""
        return {"facts": self.op_facts(), "state": self.op_get_state()}

    def op_set_state(self, state: list[float]) -> None:
        import numpy as np

        env = self._need_env()
        want = len(env.get_sim_state())
        if len(state) != want:
            raise RequestError(
                f"a simulator state of this task has {want} numbers, got {len(state)}"
            )
        env.set_init_state(np.asarray(state, dtype=np.float64))

    def op_check_success(self) -> bool:
        return bool(self._need_env().check_success())

    def op_goal_values(self, atoms: list[list[str]] | None = None) -> list[bool]:
        """LIBERO's own value of each atom (`_eval_predicate`, `base_predicates`)."""
        inner = self._need_env().env
        atoms = atoms if atoms is not None else inner.parsed_problem["goal_state"]
        out = []
        for atom in atoms:
            for name in atom[1:]:
                if name not in inner.object_states_dict:
                    raise RequestError(f"'{name}' is not an object of this LIBERO task")
            out.append(bool(inner._eval_predicate([atom[0].lower(), *atom[1:]])))
        return out

    def op_pose_goal(self, settle: int = 10) -> None:
        """Move the scene towards its goal by hand (a test-state generator, not a policy):
        each goal atom's object is put at its target, each joint at the far end of its
        range; then `settle` no-op steps of physics."""
        import numpy as np

        inner = self._need_env().env
        data = inner.sim.data
        for atom in inner.parsed_problem["goal_state"]:
            pred, args = atom[0].lower(), atom[1:]
            if pred in ("in", "on") and args[0] in inner.objects_dict:
                obj = inner.objects_dict[args[0]]
                target = args[1]
                if target in inner.object_sites_dict:
                    pos = np.array(data.get_site_xpos(target))
                    pos[2] += 0.02 if pred == "in" else 0.05
                else:
                    pos = np.array(data.body_xpos[inner.obj_body_id[target]])
                    pos[2] += 0.08
                free = obj.joints[0]
                q = np.array(data.get_joint_qpos(free))
                q[:3] = pos
                data.set_joint_qpos(free, q)
            else:
                state = inner.object_states_dict[args[0]]
                owner = inner.get_object(getattr(state, "parent_name", None) or args[0])
                site = inner.object_sites_dict.get(args[0])
                names = (site.joints if site is not None and site.joints else owner.joints) or []
                art = owner.object_properties.get("articulation", {})
                value = {
                    "open": max(art.get("default_open_ranges") or [0.0], key=abs),
                    # is_close is strict at the range's end: the middle of the range
                    "close": float(np.mean(art.get("default_close_ranges") or [0.0])),
                    "turnon": 1.0,
                    "turnoff": -0.003,
                }.get(pred, 0.0)
                for j in names:
                    data.set_joint_qpos(j, value)
        inner.sim.forward()
        for _ in range(settle):
            self._need_env().step([0.0] * 6 + [-1.0])
        self.last_gripper = -1.0

    # ----------------------------------------------------------------------- the facts

    def op_facts(self) -> dict[str, Any]:
        """What a spec §3 world state is built from, read the way LIBERO reads it."""
        import mujoco
        import numpy as np

        inner = self._need_env().env
        sim = inner.sim
        # after a step MuJoCo's poses and contacts are those of the last physics substep's
        # start; recomputed, the facts are a function of the simulator state itself, as they
        # are when that state is reloaded (`set_init_state` runs `sim.forward()` too)
        sim.forward()
        data, model = sim.data, sim.model
        objects: dict[str, Any] = {}
        for name in (*inner.objects_dict, *inner.fixtures_dict):
            bid = inner.obj_body_id[name]
            pos = data.body_xpos[bid]
            mat = data.body_xmat[bid].reshape(3, 3)
            half, box = self._extents(self.body_geoms.get(name, []), pos, mat)
            objects[name] = {
                "position": [float(x) for x in pos],
                "orientation": [float(x) for x in data.body_xquat[bid]],
                "half_extent": half,
                "box": box,
                "fixture": name in inner.fixtures_dict,
            }
        regions: dict[str, Any] = {}
        for name, site in inner.object_sites_dict.items():
            pos = data.get_site_xpos(name)
            mat = data.get_site_xmat(name)
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, np.asarray(mat, dtype=float).reshape(9))
            regions[name] = {
                "position": [float(x) for x in pos],
                # SiteObject.in_box's box: |R @ size| about the site (its own approximation)
                "half_extent": [float(x) for x in np.abs(mat @ np.asarray(site.size))],
                # the site itself (`SiteObject.under` measures in its frame): its half sizes
                # and its orientation in the world (w, x, y, z)
                "size": [float(x) for x in site.size],
                "orientation": [float(x) for x in quat],
                "parent": site.parent_name,
                "joints": list(site.joints or []),
            }
        joints: dict[str, Any] = {}
        for name, obj in inner.fixtures_dict.items():
            for jname in getattr(obj, "joints", None) or []:
                jid = model.joint_name2id(jname)
                joints[jname] = {
                    "fixture": name,
                    "q": float(data.qpos[model.get_joint_qpos_addr(jname)]),
                    # what a scripted hand needs to work the joint: its world axis and
                    # anchor, and the world box of the part it moves (a drawer, a door)
                    "axis": [float(x) for x in data.xaxis[jid]],
                    "anchor": [float(x) for x in data.xanchor[jid]],
                    "hinge": int(model.jnt_type[jid]) == 3,
                    "part_box": self._extents(self.part_geoms[jname], np.zeros(3),
                                              np.eye(3))[1],
                    # each collision geom of the part: world box centre and half extents
                    "geoms": [self._world_box(g) for g in self.part_geoms[jname]],
                }
        devices = {
            name: {"on": bool(inner.object_states_dict[name].turn_on())}
            for name, obj in inner.fixtures_dict.items()
            if hasattr(obj, "turn_on")
        }
        owner = self.geom_owner
        pairs = set()
        for c in data.contact[: data.ncon]:
            a, b = owner.get(c.geom1), owner.get(c.geom2)
            if a and b and a != b:
                pairs.add((a, b) if a < b else (b, a))
        gripper = inner.robots[0].gripper
        grasped = {
            name: bool(inner._check_grasp(gripper=gripper, object_geoms=obj.contact_geoms))
            for name, obj in inner.objects_dict.items()
        }
        fingers = [data.qpos[model.get_joint_qpos_addr(j)] for j in gripper.joints]
        grip_site = model.site_name2id(gripper.important_sites["grip_site"])
        eef = data.site_xpos[grip_site]
        pads = [
            np.mean([data.geom_xpos[model.geom_name2id(g)]
                     for g in gripper.important_geoms[key]], axis=0)
            for key in ("left_fingerpad", "right_fingerpad")
        ]
        return {
            "objects": objects,
            "regions": regions,
            "joints": joints,
            "devices": devices,
            "contacts": sorted(pairs),
            "grasped": grasped,
            "gripper": {
                "width": float(fingers[0] - fingers[1]),
                "closed": self.last_gripper > 0,
                "position": [float(x) for x in eef],
                # the grip site's frame (row-major) and the finger pads' centres: the
                # hand's pointing and closing axes, read rather than assumed
                "rotation": [float(x) for x in data.site_xmat[grip_site]],
                "pads": [[float(x) for x in p] for p in pads],
            },
            "robot": {"base": [float(x) for x in data.body_xpos[
                model.body_name2id(inner.robots[0].robot_model.root_body)]]},
            "time": float(data.time),
        }

    def _extents(self, geoms: list[int], pos: Any, mat: Any) -> tuple[list[float], list[Any]]:
        """Of the box holding `geoms`: its half extents in the frame (`pos`, `mat`) about
        `pos` (an entity's reference point, LIBERO's), and its world axis-aligned bounds."""
        import numpy as np

        data, model = self.env.env.sim.data, self.env.env.sim.model
        hi = np.zeros(3)
        lo_w, hi_w = np.full(3, np.inf), np.full(3, -np.inf)
        for gid in geoms:
            centre, half = model.geom_aabb[gid][:3], model.geom_aabb[gid][3:]
            gmat = data.geom_xmat[gid].reshape(3, 3)
            world = data.geom_xpos[gid] + gmat @ centre
            local = mat.T @ (world - pos)
            ext = np.abs(mat.T @ gmat) @ half
            hi = np.maximum(hi, np.abs(local) + ext)
            wext = np.abs(gmat) @ half
            lo_w, hi_w = np.minimum(lo_w, world - wext), np.maximum(hi_w, world + wext)
        box = [[float(x) for x in lo_w], [float(x) for x in hi_w]] if geoms else []
        return [float(x) for x in hi], box

    def _world_box(self, gid: int) -> list[float]:
        import numpy as np

        data, model = self.env.env.sim.data, self.env.env.sim.model
        gmat = data.geom_xmat[gid].reshape(3, 3)
        centre = data.geom_xpos[gid] + gmat @ model.geom_aabb[gid][:3]
        half = np.abs(gmat) @ model.geom_aabb[gid][3:]
        return [float(x) for x in (*centre, *half)]

    def _part_geoms(self, jid: int) -> list[int]:
        """The collision geoms of the body a joint moves and of the bodies it carries."""
        model = self.env.env.sim.model
        body = int(model.jnt_bodyid[jid])
        moved = {body}
        for b in range(model.nbody):  # parents come before children in MuJoCo's order
            if int(model.body_parentid[b]) in moved and b != 0:
                moved.add(b)
        return [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in moved
                and (int(model.geom_contype[g]) or int(model.geom_conaffinity[g]))]

    # ------------------------------------------------------------------------ cameras

    def _render_owner(self) -> list[str]:
        """Geom id -> the entity whose body it hangs from ('' for none): a rendered pixel is a
        visual geom, which an object's `contact_geoms` do not list, so the owner is found by
        body ancestry (the object's `root_body`, the robot's bodies)."""
        inner = self.env.env
        model = inner.sim.model
        roots: dict[int, str] = {}
        for name, obj in {**inner.fixtures_dict, **inner.objects_dict}.items():
            root = getattr(obj, "root_body", None)
            if root is not None:
                roots[model.body_name2id(root)] = name
        gripper = model.body_name2id(inner.robots[0].gripper.root_body)
        arm = model.body_name2id(inner.robots[0].robot_model.root_body)
        owner_of_body: list[str] = []
        for b in range(model.nbody):  # parents come before children in MuJoCo's order
            parent = int(model.body_parentid[b])
            name = roots.get(b) or ("robot_gripper" if b == gripper else
                                    "robot" if b == arm else "")
            if not name and b:
                name = owner_of_body[parent]
            owner_of_body.append(name)
        return [owner_of_body[int(model.geom_bodyid[g])] for g in range(model.ngeom)]

    def op_render(self, camera: str, width: int, height: int) -> dict[str, Any]:
        """One frame of a camera of the task as LIBERO's renders are made (robosuite's
        offscreen MjSim.render), turned upright (OpenGL's rows run bottom-up; LIBERO's
        harnesses flip them too): RGB, depth in metres (`camera_utils.get_real_depth_map`),
        the entity of every pixel, and the camera's intrinsics and pose in the world
        (`camera_utils.get_camera_intrinsic_matrix` / `get_camera_extrinsic_matrix`: OpenCV
        axes, x right, y down, z forward). The render context is made at the first request:
        nothing renders that nobody asked for."""
        import base64

        import numpy as np
        from robosuite.utils import camera_utils
        from robosuite.utils.binding_utils import MjRenderContextOffscreen

        sim = self._need_env().env.sim
        cameras = list(sim.model.camera_names)
        if camera not in cameras:
            raise RequestError(f"no camera '{camera}' (this task has {', '.join(cameras)})",
                               arg="camera")
        for side, v in (("width", width), ("height", height)):
            if not isinstance(v, int) or not 16 <= v <= 2048:
                raise RequestError(f"{side} must be 16 to 2048 pixels, got {v!r}", arg=side)
        if sim._render_context_offscreen is None:
            inner = self.env.env
            ctx = MjRenderContextOffscreen(sim, device_id=-1)  # it adds itself to the sim
            # what robosuite's env sets when it makes its own offscreen renderer
            # (robosuite/environments/base.py `_reset_internal`): the collision meshes (group
            # 0, translucent) hidden, the visual meshes (group 1) shown
            ctx.vopt.geomgroup[0] = 1 if inner.render_collision_mesh else 0
            ctx.vopt.geomgroup[1] = 1 if inner.render_visual_mesh else 0
        if self.render_owner is None:
            self.render_owner = self._render_owner()
        rgb, depth = sim.render(width=width, height=height, camera_name=camera, depth=True)
        seg = self._segmentation(sim, camera, width, height)
        labels = ["", *sorted({n for n in self.render_owner if n})]
        index = {n: i for i, n in enumerate(labels)}
        lut = np.array([*(index[n] for n in self.render_owner), 0], dtype=np.uint16)
        geom = np.where(seg[..., 0] == 5, seg[..., 1], -1)  # mjOBJ_GEOM
        ids = lut[geom]  # -1 -> the last entry: no entity
        # MuJoCo's offscreen buffer is multisampled (the model's default `offsamples`, which
        # LIBERO's own RGB renders use): at an edge the ID colours of two surfaces blend, so a
        # boundary pixel's label may name one surface while its depth is the other's. A label
        # is kept where the pixel's 3 x 3 neighbourhood agrees on it.
        agree = np.ones(ids.shape, dtype=bool)
        padded = np.pad(ids, 1, mode="edge")
        for dv in range(3):
            for du in range(3):
                agree &= padded[dv:dv + ids.shape[0], du:du + ids.shape[1]] == ids
        ids = np.where(agree, ids, 0).astype(np.uint16)
        metres = camera_utils.get_real_depth_map(sim, depth).astype(np.float32)

        def b64(a: Any) -> str:
            return base64.b64encode(np.ascontiguousarray(a[::-1]).tobytes()).decode()

        return {"width": width, "height": height, "rgb": b64(rgb), "depth": b64(metres),
                "segmentation": b64(ids), "labels": labels,
                "K": camera_utils.get_camera_intrinsic_matrix(sim, camera, height, width
                                                              ).tolist(),
                "camera_to_world": camera_utils.get_camera_extrinsic_matrix(sim, camera
                                                                           ).tolist()}

    @staticmethod
    def _segmentation(sim: Any, camera: str, width: int, height: int) -> Any:
        """(objtype, objid) per pixel, as robosuite's `MjRenderContext.read_pixels(...,
        segmentation=True)` decodes MuJoCo's ID colours (robosuite/utils/binding_utils.py),
        in integers wide enough: robosuite 1.4 multiplies the uint8 channels by 2**8 and
        2**16, which numpy 2 refuses (OverflowError)."""
        import numpy as np
        from robosuite.utils import binding_utils

        ctx = sim._render_context_offscreen
        with binding_utils._MjSim_render_lock:
            ctx.render(width=width, height=height, camera_id=sim.model.camera_name2id(camera),
                       segmentation=True)
            colour = ctx.read_pixels(width, height).astype(np.int64)
            code = colour[..., 0] + (colour[..., 1] << 8) + (colour[..., 2] << 16)
            n = ctx.scn.ngeom
            code[code >= n + 1] = 0
            ids = np.full((n + 1, 2), -1, dtype=np.int64)
            for i in range(n):
                geom = ctx.scn.geoms[i]
                if geom.segid != -1:
                    ids[geom.segid + 1] = (geom.objtype, geom.objid)
        return ids[code]

    def op_close(self) -> None:
        self.render_owner = None
        if self.env is not None:
            env, self.env = self.env, None
            env.close()


def main() -> None:
    _die_with_parent()
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # LIBERO's prints go to stderr
    worker = Worker()
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                name = str(req.pop("op", ""))
                op = getattr(worker, "op_" + name, None)
                if op is None:
                    raise RequestError(f"unknown request {line.strip()[:80]!r}")
                try:
                    inspect.signature(op).bind(**req)
                except TypeError as e:
                    raise RequestError(f"bad arguments for '{name}': {e}") from None
                answer: dict[str, Any] = {"ok": op(**req)}
            except RequestError as e:
                answer = {"error": str(e), "kind": "input", "arg": e.arg}
            except Exception as e:
                tb = traceback.format_exc(limit=4)
                answer = {"error": f"{type(e).__name__}: {e}\n{tb}", "kind": "runtime"}
            proto.write(json.dumps(answer) + "\n")
    finally:
        worker.op_close()


if __name__ == "__main__":
    main()
