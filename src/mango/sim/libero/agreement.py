"""Our oracle's LIBERO-semantics predicates against LIBERO's own, on one simulator state.

Each BDDL goal atom (`(In akita_black_bowl_1 wooden_cabinet_1_top_region)`) is judged twice:
by LIBERO (`BDDLBaseDomain._eval_predicate` over `envs/predicates/base_predicates.py`, in the
worker, on its own objects) and by `mango.oracle` on the spec §3 world state built from the
same state (`world.world_state`), with the `libero_*` predicates
(`mango.oracle.libero_predicates`, the library of `config/functions/libero.json`).
"""

from __future__ import annotations

from dataclasses import dataclass

from mango.oracle import FunctionLibrary, PredicateSpec, StateView, compile_expression
from mango.oracle.expr import Atom
from mango.oracle.libero_predicates import LIBERO_IMPLEMENTATIONS
from mango.oracle.world_state import WorldState
from mango.sim.libero.client import LiberoClient
from mango.sim.libero.world import world_state

# LIBERO's goal predicates (base_predicates.py) -> our predicate with LIBERO's semantics
LIBERO_PREDICATES: dict[str, str] = {
    "in": "libero_in",
    "on": "libero_on",
    "up": "libero_up",
    "open": "libero_open",
    "close": "libero_close",
    "turnon": "libero_turnon",
    "turnoff": "libero_turnoff",
}


def libero_library() -> FunctionLibrary:
    """The default library plus the `libero_*` predicates."""
    lib = FunctionLibrary.default()
    preds = dict(lib.predicates)
    for name, (impl, args, kinds, desc) in LIBERO_IMPLEMENTATIONS.items():
        preds[name] = PredicateSpec(name, args, kinds, desc, implementation=impl)
    return FunctionLibrary(preds, lib.thresholds)


def our_atom(atom: tuple[str, ...]) -> Atom:
    """A BDDL goal atom as our atom: `("In", "a", "b")` -> `libero_in(a, b)`."""
    pred = atom[0].lower()
    if pred not in LIBERO_PREDICATES:
        raise ValueError(f"no LIBERO-semantics predicate for LIBERO's '{atom[0]}'")
    return Atom(LIBERO_PREDICATES[pred], tuple(atom[1:]))


@dataclass(frozen=True)
class AtomCheck:
    """One (state, atom) pair: LIBERO's value and ours."""

    atom: tuple[str, ...]
    libero: bool
    ours: bool

    @property
    def agrees(self) -> bool:
        return self.libero == self.ours


def check_goal_atoms(
    client: LiberoClient, library: FunctionLibrary | None = None
) -> tuple[WorldState, list[AtomCheck]]:
    """The world state of the current simulator state and, for each goal atom of the open
    task, LIBERO's value beside ours."""
    if client.task is None:
        raise ValueError("no LIBERO task is open")
    return check_atoms(client, client.task.goal, library)


def check_atoms(
    client: LiberoClient, atoms: tuple[tuple[str, ...], ...],
    library: FunctionLibrary | None = None,
) -> tuple[WorldState, list[AtomCheck]]:
    """Like `check_goal_atoms` for any atoms of LIBERO's predicates (e.g. `("up", "plate_1")`)."""
    task = client.task
    if task is None:
        raise ValueError("no LIBERO task is open")
    library = library or libero_library()
    state = world_state(client.facts(), task.articulation)
    view = StateView(state, library.thresholds)
    theirs = client.goal_values(list(atoms))
    checks = []
    for atom, value in zip(atoms, theirs, strict=True):
        ours = compile_expression(our_atom(atom), library)(view)
        checks.append(AtomCheck(tuple(atom), value, bool(ours)))
    return state, checks


# A deterministic sequence of states per task: LIBERO's init state, after LeRobot's 10 no-op
# settling steps, after a fixed arm motion (down, then forward with the gripper closing), and
# with the goal posed by hand (`LiberoClient.pose_goal`), where goal atoms come true.
NOOP = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0)
MOTION = ((0.0, 0.0, -0.5, 0.0, 0.0, 0.0, -1.0, 10), (0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 10))
STAGES = ("init", "settled", "moved", "posed")


def rollout_checks(client: LiberoClient, stages: tuple[str, ...] = STAGES,
                   library: FunctionLibrary | None = None) -> dict[str, list[AtomCheck]]:
    """Goal-atom checks at each stage of the sequence above, from the open task's init state."""
    library = library or libero_library()
    out: dict[str, list[AtomCheck]] = {}
    for stage in STAGES:
        if stage == "settled":
            client.step(NOOP, 10)
        elif stage == "moved":
            for *action, n in MOTION:
                client.step(action, int(n))
        elif stage == "posed":
            client.pose_goal()
        if stage in stages:
            out[stage] = check_goal_atoms(client, library)[1]
    return out
