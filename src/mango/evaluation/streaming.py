"""Episode results as they finish, from any pool of workers (local processes, ROS stacks)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from mango.evaluation.campaign import EpisodeSpec

EpisodeOut = tuple[dict[str, Any], dict[str, str]]


def stream_bounded(submit: Callable[[EpisodeSpec, dict[str, Any]], Future[EpisodeOut]],
                   specs: list[tuple[EpisodeSpec, dict[str, Any]]], slots: int
                   ) -> Iterator[EpisodeOut]:
    """Results as they finish, with at most `slots` episodes submitted at a time: the
    workers are kept busy, never the whole plan queued (a stop loses only those in flight)."""
    todo = iter(specs)
    pending: set[Future[EpisodeOut]] = set()
    for spec, system in todo:
        pending.add(submit(spec, system))
        if len(pending) >= slots:
            break
    while pending:
        finished, pending = wait(pending, return_when=FIRST_COMPLETED)
        for f in finished:
            yield f.result()
            nxt = next(todo, None)
            if nxt is not None:
                pending.add(submit(*nxt))
