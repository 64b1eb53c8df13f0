"""Running a campaign: every episode not yet in the store, on local worker processes (or in
this process with one worker), each result stored the moment it arrives.

Resuming is the same call: episodes whose ids the store holds are skipped, so a killed run
(Ctrl-C, a dead worker, a power cut) loses only the episodes that were in flight. Workers are
spawned, not forked: MuJoCo's renderer and threads do not survive a fork. With MANGO sampling
the pool of expert runs is stored too (role `pool`), so a resumed run samples the same
episodes without running the pool again; a policy system that is the pool's own expert reuses
the pool's run of the same seed and fault (the same episode) instead of repeating it.
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mango.errors import InputError
from mango.evaluation.campaign import Campaign, EpisodeSpec
from mango.evaluation.episodes import execute_episode, write_episode
from mango.evaluation.sampling import QUOTA, fault_catalogue, select, stage_of
from mango.evaluation.store import Store
from mango.evaluation.streaming import stream_bounded
from mango.sim.libero.scene_names import is_libero_scene

STORE_FILE = "campaign.sqlite"
POOL = "pool"  # the sampling runs' system name
POOL_SYSTEM = {"name": POOL, "kind": "policy", "backend": "expert"}




@dataclass
class RunSummary:
    total: int = 0
    skipped: int = 0  # finished by an earlier run
    ran: int = 0
    errors: int = 0  # episodes whose result carries an error
    pool: int = 0  # sampling runs made by this call
    shortfall: dict[str, dict[str, int]] | None = None  # task -> stage -> missing episodes
    interrupted: str | None = None  # why the run stopped early


class _Executor:
    """Episodes in this process (one worker), on spawned processes, or as Ray tasks; results
    (with their files) come back as they end, in whatever order they end."""

    def __init__(self, workers: int, ray_address: str | None = None,
                 ros_out: Path | None = None, ros_domain_base: int | None = None,
                 ros_views: bool = False) -> None:
        self.workers = workers
        self.ray_address = ray_address
        self.pool: ProcessPoolExecutor | None = None
        self._ray: Any = None
        self._ros: Any = None
        if ros_out is not None:  # each episode a stack on its worker's ROS domain
            from mango.evaluation.ros_runner import RosEpisodes

            self._ros = RosEpisodes(workers, ros_out, ros_domain_base, ros_views)
        elif ray_address is not None:  # joined at once: its CPUs size the sampling batches too
            from mango.evaluation.ray_runner import RayEpisodes

            self._ray = RayEpisodes(ray_address)
            self.workers = self._ray.slots

    def run(self, specs: list[tuple[EpisodeSpec, dict[str, Any]]]
            ) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
        if self._ray is not None:
            yield from self._ray.run(specs)
            return
        if self._ros is not None:
            yield from self._ros.run(specs)
            return
        if self.workers <= 1:
            for spec, system in specs:
                yield execute_episode(spec, system)
            return
        if self.pool is None:
            self.pool = ProcessPoolExecutor(max_workers=self.workers,
                                            mp_context=multiprocessing.get_context("spawn"))
        pool = self.pool
        yield from stream_bounded(lambda spec, system: pool.submit(execute_episode, spec, system),
                                  specs, 2 * self.workers)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
        if self._ray is not None:
            self._ray.close()
        if self._ros is not None:
            self._ros.close()


def run_campaign(campaign: Campaign, out: str | Path, workers: int = 1,
                 on_result: Callable[[dict[str, Any], int, int], None] | None = None,
                 ray_address: str | None = None,
                 ros_domain_base: int | None = None, record_views: bool = False) -> RunSummary:
    """Run what is left of `campaign` into `out`; `on_result(result, done, total)` per episode.

    `ray_address` ("auto", "HOST:PORT") runs each episode as a Ray task instead of on local
    workers; the results stream back into the same store. A `runner: ros` campaign runs each
    episode as a sim stack, worker k on ROS domain `ros_domain_base + k` (default: the domains
    after this process's); its MANGO sampling pool still runs in-process (it only chooses).
    `record_views` records the cameras in each stack episode's bag (`evaluation.dataset`)."""
    ros = campaign.spec.runner == "ros"
    if record_views and not ros:
        raise InputError("recording the cameras needs stack episodes: set `runner: ros` (an "
                         "in_process episode records no bag)", file=campaign.file,
                         field="runner")
    if ros and ray_address is not None:
        raise InputError("runner: ros brings stacks up on this machine; --ray-address runs "
                         "in_process episodes", file=campaign.file, field="runner")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    summary = RunSummary()
    with Store(out / STORE_FILE) as store:
        previous = store.meta("campaign")
        if previous is not None and previous != campaign.spec.model_dump(mode="json"):
            raise InputError(f"{out} holds another campaign's results (a different campaign "
                             "file); use a new output folder", file=campaign.file)
        store.set_meta("campaign", campaign.spec.model_dump(mode="json"))
        oracles = _oracle_files(campaign, store, out)
        systems = {n: {**s.model_dump(mode="json"), "oracles": oracles}
                   for n, s in campaign.systems.items()}
        executor = _Executor(workers, ray_address, out if ros else None, ros_domain_base,
                             record_views)
        sampler = _Executor(workers) if ros else executor

        def record(result: dict[str, Any], files: dict[str, str] | None = None) -> None:
            if files is not None:
                write_episode(out, result, files)
            store.add(result)
            summary.ran += 1
            summary.errors += result.get("error") is not None
            if on_result:
                on_result(result, summary.skipped + summary.ran, summary.total)

        try:
            if campaign.spec.sampling == "mango":
                plan = _sample(campaign, store, sampler, summary, oracles)
            else:
                plan = list(campaign.episodes())
            summary.total = len(plan)
            finished = store.done()
            todo = [e for e in plan if e.id not in finished]
            summary.skipped = summary.total - len(todo)
            rest = []
            for e in todo:
                reused = None if ros else _pool_run(store, out, e, systems[e.system])
                if reused is not None:
                    record(*reused)
                else:
                    rest.append((e, systems[e.system]))
            for result, files in executor.run(rest):
                record(result, files)
        except KeyboardInterrupt:
            summary.interrupted = "interrupted"
        except BrokenProcessPool:
            summary.interrupted = "a worker process died"
        finally:
            executor.close()
            if sampler is not executor:
                sampler.close()
    return summary


def _oracle_files(campaign: Campaign, store: Store, out: Path) -> dict[str, str]:
    """task -> oracle file when the campaign judges with generated oracles (made once: a
    resumed run keeps the files its finished episodes were judged with)."""
    if campaign.spec.oracles != "generated" or all(map(is_libero_scene, campaign.spec.tasks)):
        return {}
    made = store.meta("oracle_files")
    if made and all(Path(f).is_file() for f in made.values()):
        return dict(made)
    from mango.evaluation.generated import generate_oracles

    # LIBERO's tasks are judged by the oracle of their own BDDL's instruction, made per
    # episode in LIBERO's semantics (`evaluation.episodes`), whatever `oracles` says
    files, table = generate_oracles([t for t in campaign.spec.tasks if not is_libero_scene(t)],
                                    out)
    store.set_meta("generation", table)
    store.set_meta("oracle_files", files)
    return files


def _pool_run(store: Store, out: Path, spec: EpisodeSpec, system: dict[str, Any]
              ) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The pool's run of this episode (result and files) when the system is the pool's
    expert: the same policy, seed and fault is the same episode."""
    if system.get("kind") != "policy" or system.get("backend") != "expert":
        return None
    pool_id = EpisodeSpec(POOL, spec.task, spec.seed, spec.fault).id
    found = store.get(pool_id)
    if found is None:
        return None
    folder = out / "episodes" / pool_id
    files = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*")
             if p.name != "result.json"} if folder.is_dir() else {}
    return {**found, "episode": spec.id, "system": spec.system, "reused_from": pool_id}, files


def _plan_steps(task: str, oracle: str | None = None) -> list[str]:
    from mango.evaluation.episodes import with_oracle
    from mango.oracle.model import load_oracle, plan_entries
    from mango.sim.env import as_scene
    from mango.sim.runner import load_oracle_json

    data, path = load_oracle_json(with_oracle(as_scene(task), oracle))
    if data is None:
        raise InputError(f"task '{task}' has no fine-grained oracle: MANGO sampling places "
                         "failures by the oracle's steps", field="sampling")
    return [e.path for e in plan_entries(load_oracle(data, file=str(path)))]


@dataclass
class _TaskPool:
    """One task's sampling state: the plan's steps, the candidates not yet run, the runs."""

    task: str
    steps: list[str]
    candidates: list[EpisodeSpec]
    runs: list[dict[str, Any]]
    derive: bool = True  # stalls from the passing runs' step windows (not with given faults)

    def add(self, run: dict[str, Any]) -> None:
        """A pool run came back. A passing one also tells when each of its steps ran: a stall
        in the middle of each step's window (between the ground truth's milestones) is a new
        candidate for its seed, so a step no catalogue fault fails (a pick that a drop, which
        strikes in the carry, never reaches) still gets its failures."""
        self.runs.append(run)
        labels = run.get("labels") or {}
        if not self.derive or run.get("fault") is not None or \
                labels.get("expected_verdict") != "pass":
            return
        times = sorted(float(m["t"]) for m in labels.get("milestones", [])
                       if m.get("achieved") and m.get("t") is not None)
        known = {(c.seed, c.fault) for c in self.candidates}
        for a, b in itertools.pairwise([0.0, *times]):
            if b - a < 0.2:  # too short a window to stop in
                continue
            fault = f"stall@{(a + b) / 2:.2f}"
            if (run["seed"], fault) not in known:
                self.candidates.append(EpisodeSpec(POOL, self.task, run["seed"], fault))

    def next_batch(self, size: int) -> list[EpisodeSpec]:
        """The next candidates worth running; empty when the quota is full or none can help.

        A fault tends to fail the same step on every seed: once the stages a fault has
        produced are full, its other seeds are not worth a run; untried faults come first.
        """
        counts = dict.fromkeys(QUOTA, 0)
        seen: dict[str, set[str]] = {}
        for r in self.runs:
            if not r.get("labels"):
                continue
            st = stage_of(r["labels"], self.steps)
            if (st == "pass") == (r["fault"] is None):
                counts[st] += 1
            if r["fault"] is not None:
                seen.setdefault(r["fault"], set()).add(st)
        need_pass = counts["pass"] < QUOTA["pass"]
        open_stages = {k for k in ("early", "mid", "late") if counts[k] < QUOTA[k]}
        useful = [c for c in self.candidates if (c.fault is None and need_pass) or (
            c.fault is not None and open_stages
            and (c.fault not in seen or seen[c.fault] & open_stages))]
        useful.sort(key=lambda c: c.fault is not None and c.fault in seen)  # stable
        batch = useful[:size]
        for c in batch:
            self.candidates.remove(c)
        return batch


def _sample(campaign: Campaign, store: Store, executor: _Executor,
            summary: RunSummary, oracles: dict[str, str]) -> list[EpisodeSpec]:
    """Per task, the quota's (seed, fault) pairs from a pool of expert runs, run lazily (every
    task's next candidates together, so the workers stay busy) until each task's stages are
    filled or its candidates run out."""
    from mango.sim.env import as_scene

    spec = campaign.spec
    seeds = range(spec.seeds.start, spec.seeds.start + spec.seeds.count)
    given = [f for f in spec.faults if f != "none"]
    pools = []
    for task in spec.tasks:
        faults = given or fault_catalogue(as_scene(task))
        pools.append(_TaskPool(task, _plan_steps(task, oracles.get(task)), [
            EpisodeSpec(POOL, task, s, None) for s in seeds] + [
            EpisodeSpec(POOL, task, s, f) for s in seeds for f in faults], [],
            derive=not given))
    by_task = {tp.task: tp for tp in pools}
    size = max(1, executor.workers)
    while True:
        batch = [c for tp in pools for c in tp.next_batch(size)]
        if not batch:
            break
        todo = []
        for c in batch:
            found = store.get(c.id)
            if found is not None:
                by_task[c.task].add(found)
            else:
                todo.append((c, {**POOL_SYSTEM, "oracles": oracles}))
        for result, files in executor.run(todo):
            write_episode(store.path.parent, result, files)
            store.add(result, role=POOL)
            summary.pool += 1
            by_task[result["task"]].add(result)
    plan: list[EpisodeSpec] = []
    shortfall: dict[str, dict[str, int]] = {}
    for tp in pools:
        chosen, short = select(tp.runs, tp.steps)
        if short:
            shortfall[tp.task] = short
        for system in spec.systems:
            plan += [EpisodeSpec(system.name, tp.task, r["seed"], r["fault"]) for r in chosen]
    summary.shortfall = shortfall or None
    return plan
