"""Drive LIBERO's worker process (`worker.py`, run by `.venv-libero/bin/python`) from here.

LIBERO's MuJoCo 3.3.2 cannot share a process with the main venv's MuJoCo 4, so a task runs in
a child process and this class speaks its JSON-lines protocol. Nothing is downloaded: a
missing runtime is one error naming `make libero-venv`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mango.errors import InputError
from mango.sim.libero.scene_names import LiberoScene

WORKER = Path(__file__).with_name("worker.py")
VENV_NAME = ".venv-libero"
INSTALL_HINT = "make libero-venv"


class LiberoRuntimeError(RuntimeError):
    """The LIBERO process failed (missing runtime, crash, an error inside LIBERO)."""


def find_venv() -> Path:
    """`$MANGO_LIBERO_VENV`, else `.venv-libero` in the working directory or a parent of it or
    of this checkout."""
    env = os.environ.get("MANGO_LIBERO_VENV")
    if env:
        return Path(env)
    for start in (Path.cwd(), Path(__file__).resolve()):
        for d in (start, *start.parents):
            if (d / VENV_NAME / "bin" / "python").exists():
                return d / VENV_NAME
    return Path.cwd() / VENV_NAME


def runtime_problem(venv: Path) -> str | None:
    """Why `venv` cannot run LIBERO, or None."""
    if not (venv / "bin" / "python").exists():
        return f"LIBERO's runtime is not installed ({venv} is missing): run `{INSTALL_HINT}`"
    if not (venv / "libero-config" / "config.yaml").exists() or not (venv / ".stamp").exists():
        return f"LIBERO's runtime in {venv} is incomplete: run `{INSTALL_HINT}`"
    return None


@dataclass(frozen=True)
class LiberoTask:
    """The open task as LIBERO names it, with its BDDL goal atoms."""

    suite: str
    index: int
    name: str
    stem: str
    language: str
    init: int
    n_init_states: int
    goal: tuple[tuple[str, ...], ...]
    state_size: int
    articulation: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    bddl: str = ""  # the task's BDDL file, in LIBERO's installation


@dataclass(frozen=True)
class LiberoFrame:
    """A LIBERO camera's frame, upright: RGB (H x W x 3), depth in metres (H x W), the
    entity of each pixel (`labels[segmentation[v, u]]`, "" for none), the intrinsics K (3 x 3)
    and the camera's pose in the world (4 x 4, OpenCV axes: x right, y down, z forward)."""

    camera: str
    rgb: Any
    depth: Any
    segmentation: Any
    labels: tuple[str, ...]
    K: Any
    camera_to_world: Any


class LiberoClient:
    """One LIBERO worker process; one task open at a time. Use as a context manager."""

    def __init__(self, venv: Path | None = None) -> None:
        venv = venv or find_venv()
        problem = runtime_problem(venv)
        if problem:
            raise LiberoRuntimeError(problem)
        # the worker's stderr, kept for the error when it dies; closed in close()
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        env = dict(os.environ, LIBERO_CONFIG_PATH=str(venv / "libero-config"))
        env.setdefault("MUJOCO_GL", "egl")
        self._proc = subprocess.Popen(
            [str(venv / "bin" / "python"), "-u", str(WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            text=True,
            bufsize=1,
        )
        self.task: LiberoTask | None = None

    # ------------------------------------------------------------------------ protocol

    def _call(self, op: str, **args: Any) -> Any:
        proc = self._proc
        if proc.poll() is not None:
            raise LiberoRuntimeError(f"the LIBERO process has exited{self._stderr_tail()}")
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise LiberoRuntimeError(f"lost the LIBERO process ({e}){self._stderr_tail()}") from e
        if not line:
            proc.wait(timeout=10)
            raise LiberoRuntimeError(
                f"the LIBERO process died during '{op}' (exit {proc.returncode})"
                f"{self._stderr_tail()}"
            )
        answer = json.loads(line)
        if "error" in answer:
            if answer.get("kind") == "input":
                raise InputError(answer["error"], field=answer.get("arg") or op)
            raise LiberoRuntimeError(f"LIBERO failed in '{op}': {answer['error']}")
        return answer["ok"]

    def _stderr_tail(self, n: int = 2000) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace")[-n:]
        return f"; its last output:\n{text}" if text.strip() else ""

    # ------------------------------------------------------------------------ requests

    def tasks(self, suite: str) -> list[dict[str, Any]]:
        """LIBERO's tasks of `suite` in benchmark order (index, name, stem, language)."""
        return self._call("tasks", suite=suite)

    def task_info(self, scene: LiberoScene) -> dict[str, Any]:
        """One task as LIBERO lists it (index, name, stem, language, n_init_states), without
        building it: an unknown suite or task is an `InputError` naming `suite` or `task`."""
        return self._call("task", suite=scene.suite, task=scene.task)

    def open(self, scene: LiberoScene, init: int = 0) -> LiberoTask:
        """Build the task as LIBERO's harness does: `env.seed(0); env.reset();
        env.set_init_state(get_task_init_states(i)[init])`."""
        info = self._call("open", suite=scene.suite, task=scene.task, init=init)
        info["goal"] = tuple(tuple(a) for a in info["goal"])
        self.task = LiberoTask(**info)
        return self.task

    def step(self, action: list[float] | tuple[float, ...], n: int = 1) -> bool:
        """`n` LIBERO control steps (20 Hz) of one 7-D OSC action; True when LIBERO says done."""
        return bool(self._call("step", action=[float(a) for a in action], n=int(n))["done"])

    def get_sim_state(self) -> list[float]:
        return self._call("get_state")

    def observe(self) -> tuple[dict[str, Any], list[float]]:
        """`facts()` and `get_sim_state()` of the same instant, in one request."""
        answer = self._call("observe")
        return answer["facts"], answer["state"]

    def set_sim_state(self, state: list[float]) -> None:
        """LIBERO's `set_init_state`: any state `get_sim_state` returned for this task."""
        self._call("set_state", state=[float(x) for x in state])

    def check_success(self) -> bool:
        return bool(self._call("check_success"))

    def goal_values(self, atoms: list[tuple[str, ...]] | None = None) -> list[bool]:
        """LIBERO's own `base_predicates` value of each atom (default: the task's goal)."""
        return self._call("goal_values", atoms=None if atoms is None else [list(a) for a in atoms])

    def pose_goal(self, settle: int = 10) -> None:
        """Put each goal atom's object at its target and each goal joint at the end of its
        range, then `settle` no-op steps: goal-side states for agreement tests, not a policy."""
        self._call("pose_goal", settle=int(settle))

    def facts(self) -> dict[str, Any]:
        """The raw simulation facts a world state is built from (`world.world_state`)."""
        return self._call("facts")

    def render(self, camera: str, width: int = 224, height: int = 224) -> LiberoFrame:
        """One upright frame of a LIBERO camera (`agentview`, `robot0_eye_in_hand`, ...)."""
        import base64

        import numpy as np

        a = self._call("render", camera=camera, width=int(width), height=int(height))
        h, w = a["height"], a["width"]

        def array(key: str, dtype: Any, *shape: int) -> Any:
            return np.frombuffer(base64.b64decode(a[key]), dtype=dtype).reshape(h, w, *shape)

        return LiberoFrame(camera, array("rgb", np.uint8, 3), array("depth", np.float32),
                           array("segmentation", np.uint16), tuple(a["labels"]),
                           np.asarray(a["K"], float), np.asarray(a["camera_to_world"], float))

    def close(self) -> None:
        """Close the task's environment (EGL teardown), then end the process."""
        proc = self._proc
        if proc.poll() is None:
            try:
                self._call("close")
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=30)
            except (LiberoRuntimeError, OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> LiberoClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
