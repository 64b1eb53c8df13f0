"""Campaign files (commands.md §5): systems x tasks x seeds x faults, validated before any
episode runs so a typo costs seconds, not an hour of episodes.

Every problem is an `InputError` naming the file and field (`systems[1].backend`,
`faults[2]`, `tasks[0]`); a fault a task cannot take (`wrong_object` in a scene with one
movable object) is refused here by the same `FaultInjector` check the expert applies.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from mango.errors import InputError, from_validation_error
from mango.sim.libero.scene_names import is_libero_scene
from mango.sim.seeds import MAX_SEED_COUNT, SEED_MAX
from mango.yaml_files import read_yaml_mapping

if TYPE_CHECKING:
    from mango.orchestrator.config import OrchestratorConfig

IN_PROCESS_BACKENDS = ("expert",)  # what runs without a policy server or a GPU


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# names become folder names and table rows: no spaces, slashes or shell characters
SafeName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$", min_length=1,
                                             max_length=80)]


def _option_text(value: object) -> str:
    """A model option as `--opt KEY=VALUE` gives it: a YAML scalar taken as its text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value)
    raise ValueError(f"an option is a string, number or boolean (got {type(value).__name__})")


OptionValue = Annotated[str, BeforeValidator(_option_text)]


class PolicySystem(_Strict):
    """A VLA policy run alone (no orchestrator): the sim's expert with the campaign's fault."""

    name: SafeName
    kind: Literal["policy"]
    backend: str = "expert"


class TaskSystem(_Strict):
    """An orchestrated run (`mango task run`): mode, monitor and decider."""

    name: SafeName
    kind: Literal["task"]
    mode: Literal["vla_only", "tools_only", "full", "motor"] = "full"
    monitor: Literal["none", "oracle", "gt", "vlm"] = "oracle"
    decider: Literal["offline", "local", "vlm"] = "offline"
    # the model behind a `vlm` / `local` decider or a `vlm` monitor, as `mango task run`'s
    # --backend / --model / --opt take them (e.g. options: {base_url: http://127.0.0.1:8000/v1})
    backend: str | None = None
    model: str | None = None
    options: dict[str, OptionValue] = Field(default_factory=dict)
    world: Literal["physics", "estimated"] = "physics"  # what the oracle and monitor read

    def config(self) -> OrchestratorConfig:
        """The orchestrator's configuration of this system (one place for both the check
        before a campaign runs and the episode that runs it)."""
        from mango.orchestrator.config import OrchestratorConfig

        return OrchestratorConfig(mode=self.mode, monitor=self.monitor, decider=self.decider,
                                  backend=self.backend, model=self.model,
                                  backend_opts=tuple(self.options.items()), world=self.world)


System = Annotated[PolicySystem | TaskSystem, Field(discriminator="kind")]


class SeedRange(_Strict):
    """Every seed a campaign runs is a seed (0..2**32-1, `mango.sim.seeds`): what numpy seeds
    and the store's INTEGER column hold, checked before any episode runs."""

    start: int = Field(0, ge=0, le=SEED_MAX)
    count: int = Field(..., ge=1, le=MAX_SEED_COUNT)

    @field_validator("start", "count", mode="before")
    @classmethod
    def _whole(cls, value: object) -> object:
        """YAML's `1.0e+20` is a float: a whole one is checked as the integer it is (against
        the range), not refused as too big to parse."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @model_validator(mode="after")
    def _last_seed(self) -> SeedRange:
        if self.start + self.count - 1 > SEED_MAX:
            raise ValueError(f"{self.count} seeds from {self.start} run past the last seed, "
                             f"{SEED_MAX}")
        return self


class CampaignFile(_Strict):
    name: SafeName
    systems: list[System] = Field(..., min_length=1)
    tasks: list[str] = Field(..., min_length=1)
    seeds: SeedRange
    faults: list[str] = Field(default_factory=lambda: ["none"], min_length=1)
    # grid: every system x task x seed x fault; mango: per task 4 passes and 2 early, 2 mid,
    # 2 late failures picked from a pool of expert runs over the seeds (and the faults, or
    # when only `none` is given, every fault the task accepts): `mango.evaluation.sampling`
    sampling: Literal["grid", "mango"] = "grid"
    # handwritten: each scene's own oracle file; generated: MANGO modules I-III with the
    # offline planner, once per campaign (`mango.evaluation.generated`), judging and labelling
    oracles: Literal["handwritten", "generated"] = "handwritten"
    # in_process: the embedded sim in the worker (no DDS, the fast path); ros: each worker
    # brings up the sim stack on its own ROS_DOMAIN_ID (`mango.evaluation.ros_runner`)
    runner: Literal["in_process", "ros"] = "in_process"


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode of a campaign; `id` is stable across runs (what resuming matches on)."""

    system: str
    task: str
    seed: int
    fault: str | None  # KIND@WHEN, None for no fault

    @property
    def id(self) -> str:
        """A folder name: a task given as a scene file counts by its file name."""
        task = Path(self.task).stem if self.task.endswith((".yaml", ".yml")) else self.task
        text = f"{self.system}__{task}__s{self.seed}__{self.fault or 'none'}"
        return re.sub(r"[^A-Za-z0-9_.-]", "_", text.replace("@", "-at-"))


@dataclass(frozen=True)
class Campaign:
    file: str
    spec: CampaignFile

    @property
    def systems(self) -> dict[str, PolicySystem | TaskSystem]:
        return {s.name: s for s in self.spec.systems}

    def episodes(self) -> Iterator[EpisodeSpec]:
        s = self.spec.seeds
        for system in self.spec.systems:
            for task in self.spec.tasks:
                for fault in self.spec.faults:
                    for seed in range(s.start, s.start + s.count):
                        yield EpisodeSpec(system.name, task, seed,
                                          None if fault == "none" else fault)


def load_campaign(path: str | Path) -> Campaign:
    """Read and check a campaign file; raises `InputError` before anything runs."""
    p = str(path)
    data = read_yaml_mapping(path, "campaign")
    try:
        spec = CampaignFile.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, file=p) from None
    names = [s.name for s in spec.systems]
    for i, n in enumerate(names):
        if names.index(n) != i:
            raise InputError(f"system name '{n}' is used twice", file=p, field=f"systems[{i}].name")
    for i, s in enumerate(spec.systems):
        if isinstance(s, TaskSystem):
            _check_task_system(s, p, i)
        if isinstance(s, PolicySystem) and s.backend not in IN_PROCESS_BACKENDS:
            raise InputError(
                f"backend '{s.backend}' cannot run in-process (it needs a policy server); "
                f"in-process campaigns run: {', '.join(IN_PROCESS_BACKENDS)}",
                file=p, field=f"systems[{i}].backend")
    if spec.runner == "ros":
        _check_ros(spec, p)
    _check_tasks_and_faults(spec, p)
    return Campaign(p, spec)


def _check_ros(spec: CampaignFile, file: str) -> None:
    """What a stack episode can run: a policy on the scene's own oracle (the vla_node labels
    the run against it), not an orchestrated task (the orchestrator drives the embedded sim)."""
    for i, s in enumerate(spec.systems):
        if isinstance(s, TaskSystem):
            raise InputError("runner: ros runs policy systems (the stack's vla_node); "
                             "orchestrated systems run in_process", file=file,
                             field=f"systems[{i}].kind")
    if spec.oracles != "handwritten":
        raise InputError("runner: ros judges with the scenes' own oracles (the stack's "
                         "vla_node labels the run against them); generated oracles run "
                         "in_process", file=file, field="oracles")


def _check_task_system(system: TaskSystem, file: str, i: int) -> None:
    """The orchestrator's own check of mode, monitor and decider (what is not built yet), and
    that a model backend is one there is and is used by something."""
    from mango.llm.registry import model_backends

    uses_model = system.decider in ("vlm", "local") or system.monitor == "vlm"
    given = [k for k in ("backend", "model", "options") if getattr(system, k)]
    if given and not uses_model:
        raise InputError(f"{given[0]} is for a vlm or local decider or a vlm monitor; this "
                         f"system's decider is {system.decider} and its monitor "
                         f"{system.monitor}", file=file, field=f"systems[{i}].{given[0]}")
    registry = model_backends()
    if system.backend is not None and not registry.knows(system.backend):
        raise InputError(f"unknown backend {system.backend!r}; use one of "
                         f"{', '.join(registry.names())}", file=file,
                         field=f"systems[{i}].backend")
    try:
        system.config()
    except InputError as exc:
        raise InputError(exc.message, file=file,
                         field=f"systems[{i}].{exc.field}" if exc.field else f"systems[{i}]"
                         ) from None


def _check_libero_tasks(spec: CampaignFile, file: str) -> None:
    """LIBERO's tasks (`libero/SUITE/TASK`, commands.md §7): seeds are LIBERO's init states;
    what runs on them so far is the scripted expert, in-process, without faults (each checked
    before anything runs, the task and its init states by LIBERO itself)."""
    from mango.sim.libero import LiberoClient, parse_scene
    from mango.sim.libero.client import find_venv, runtime_problem

    tasks = [(i, t) for i, t in enumerate(spec.tasks) if is_libero_scene(t)]
    if not tasks:
        return
    i, first = tasks[0]
    if spec.runner != "in_process":
        raise InputError(f"task '{first}': LIBERO's tasks run in_process (one LIBERO process "
                         "per worker)", file=file, field="runner")
    if spec.sampling != "grid":
        raise InputError(f"task '{first}': mango sampling draws from faulted runs, and faults "
                         "are not wired on LIBERO's tasks yet: use sampling: grid", file=file,
                         field="sampling")
    for j, fault in enumerate(spec.faults):
        if fault != "none":
            raise InputError(f"task '{first}': faults are not wired on LIBERO's tasks yet",
                             file=file, field=f"faults[{j}]")
    for k, system in enumerate(spec.systems):
        if not isinstance(system, PolicySystem):
            raise InputError(f"task '{first}': orchestrated systems do not run on LIBERO's "
                             "tasks yet (the scripted expert does: kind: policy)", file=file,
                             field=f"systems[{k}].kind")
    scenes = []
    for i, task in tasks:
        try:
            scenes.append((i, task, parse_scene(task)))
        except InputError as exc:
            raise InputError(exc.message, file=file, field=f"tasks[{i}]") from None
    problem = runtime_problem(find_venv())
    if problem:
        raise InputError(problem, file=file, field=f"tasks[{tasks[0][0]}]")
    last = spec.seeds.start + spec.seeds.count - 1
    with LiberoClient() as client:
        for i, task, scene in scenes:
            try:
                n = client.task_info(scene)["n_init_states"]
            except InputError as exc:
                raise InputError(f"task '{task}': {exc.message}", file=file,
                                 field=f"tasks[{i}]") from None
            if last >= n:
                raise InputError(f"task '{task}' has LIBERO init states 0..{n - 1}: seeds "
                                 f"{spec.seeds.start}..{last} run past them", file=file,
                                 field="seeds")


def _check_tasks_and_faults(spec: CampaignFile, file: str) -> None:
    from mango.sim.env import as_scene
    from mango.sim.faults import FaultInjector, parse_fault

    faults = []
    for j, text in enumerate(spec.faults):
        if text == "none":
            faults.append(None)
            continue
        try:
            faults.append(parse_fault(text))
        except InputError as exc:
            raise InputError(exc.message, file=file, field=f"faults[{j}]") from None
    _check_libero_tasks(spec, file)
    for i, task in enumerate(spec.tasks):
        if is_libero_scene(task):
            continue
        try:
            scene = as_scene(task)
        except InputError as exc:
            raise InputError(f"task '{task}': {exc.message}", file=file,
                             field=f"tasks[{i}]") from None
        for j, fault in enumerate(faults):
            if fault is None:
                continue
            try:
                FaultInjector(scene, fault)
            except InputError as exc:
                raise InputError(f"{exc.message} (task '{task}')", file=file,
                                 field=f"faults[{j}]") from None
