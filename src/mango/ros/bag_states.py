"""World states out of a bag: CDR payloads on a `WorldState` topic -> core `WorldState`s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from mango.bags import BagReader
from mango.errors import InputError
from mango.oracle.world_state import WorldState
from mango.ros.world_state_cdr import WorldStateDecoder

WORLD_STATE_TYPE = "mango_ros/msg/WorldState"


def iter_bag_world_states(bag: str | Path, topic: str = "/world_state",
                          reader: BagReader | None = None) -> Iterator[WorldState]:
    """Every world state recorded on `topic`, in recording order (episodes concatenated)."""
    reader = reader or BagReader(bag)
    decoder = WorldStateDecoder()
    seen = False
    for m in reader.messages({topic}):
        if m.msgtype != WORLD_STATE_TYPE:
            raise InputError(f"topic {topic} carries {m.msgtype}, not {WORLD_STATE_TYPE}",
                             file=str(bag))
        seen = True
        try:
            yield decoder.decode(m.data)
        except InputError as exc:
            raise InputError(f"{topic} message at {m.log_time_ns} ns: {exc.message}",
                             file=str(bag)) from None
    if not seen:
        topics = ", ".join(sorted(reader.topics())) or "none"
        raise InputError(f"no messages on {topic} (topics in the bag: {topics})", file=str(bag))


def bag_episodes(bag: str | Path, topic: str = "/world_state") -> list[list[WorldState]]:
    """The recorded world states split into episodes where world time goes back (a reset),
    as the oracle node does live."""
    episodes: list[list[WorldState]] = []
    last = None
    for state in iter_bag_world_states(bag, topic):
        if last is None or state.t < last:
            episodes.append([])
        episodes[-1].append(state)
        last = state.t
    return episodes


def bag_episode(bag: str | Path, topic: str = "/world_state",
                episode: int | None = None) -> list[WorldState]:
    """One episode (1-based; negative counts from the end; default: the last one)."""
    episodes = bag_episodes(bag, topic)
    index = -1 if episode is None else episode - 1 if episode > 0 else episode
    if episode == 0 or not -len(episodes) <= index < len(episodes):
        raise InputError(f"no episode {episode}: the bag has {len(episodes)}", file=str(bag))
    return episodes[index]
