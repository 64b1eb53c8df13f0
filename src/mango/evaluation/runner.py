"""Running a campaign: every episode not yet in the store, on local worker processes (or in
this process with one worker), each result stored the moment it arrives.

Resuming is the same call: episodes whose ids the store holds are skipped, so a killed run
(Ctrl-C, a dead worker, a power cut) loses only the episodes that were in flight. Workers are
spawned, not forked: MuJoCo's renderer and threads do not survive a fork.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mango.evaluation.campaign import Campaign, EpisodeSpec
from mango.evaluation.episodes import run_episode_spec
from mango.evaluation.store import Store

STORE_FILE = "campaign.sqlite"


@dataclass
class RunSummary:
    total: int
    skipped: int  # finished by an earlier run
    ran: int
    errors: int  # episodes whose result carries an error
    interrupted: str | None = None  # why the run stopped early


def run_campaign(campaign: Campaign, out: str | Path, workers: int = 1,
                 on_result: Callable[[dict[str, Any], int, int], None] | None = None
                 ) -> RunSummary:
    """Run what is left of `campaign` into `out`; `on_result(result, done, total)` per episode."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    episodes = list(campaign.episodes())
    with Store(out / STORE_FILE) as store:
        previous = store.meta("campaign")
        if previous is not None and previous != campaign.spec.model_dump(mode="json"):
            from mango.errors import InputError

            raise InputError(f"{out} holds another campaign's results (a different campaign "
                             "file); use a new output folder", file=campaign.file)
        store.set_meta("campaign", campaign.spec.model_dump(mode="json"))
        finished = store.done()
        todo = [e for e in episodes if e.id not in finished]
        summary = RunSummary(len(episodes), len(episodes) - len(todo), 0, 0)
        systems = {n: s.model_dump(mode="json") for n, s in campaign.systems.items()}

        def record(result: dict[str, Any]) -> None:
            store.add(result)
            summary.ran += 1
            summary.errors += result.get("error") is not None
            if on_result:
                on_result(result, summary.skipped + summary.ran, summary.total)

        try:
            if workers <= 1:
                for e in todo:
                    record(run_episode_spec(e, systems[e.system], out))
            else:
                _run_pool(todo, systems, out, workers, record)
        except KeyboardInterrupt:
            summary.interrupted = "interrupted"
        except BrokenProcessPool:
            summary.interrupted = "a worker process died"
    return summary


def _run_pool(todo: list[EpisodeSpec], systems: dict[str, dict[str, Any]], out: Path,
              workers: int, record: Callable[[dict[str, Any]], None]) -> None:
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    pending: set[Future[dict[str, Any]]] = set()
    queue = iter(todo)
    try:
        for e in queue:
            pending.add(pool.submit(run_episode_spec, e, systems[e.system], out))
            if len(pending) >= 2 * workers:  # keep workers busy, not the whole plan queued
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in finished:
                record(f.result())
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(run_episode_spec, nxt, systems[nxt.system], out))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
