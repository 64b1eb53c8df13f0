"""World states out of a bag: CDR payloads on a `WorldState` topic -> core `WorldState`s.

A bag may hold several episodes: world time going back (a simulator reset) starts a new one,
as in the oracle node. Episodes are found from the header stamps alone (the first bytes of
each payload), then the chosen one is decoded as a stream, so replaying a long bag never holds
all its states in memory.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

from mango.bags.reader import BagReader
from mango.bags.world_state_cdr import WorldStateDecoder
from mango.errors import InputError, ProblemLog
from mango.oracle.predicates import EvaluationError
from mango.oracle.tracker import StepTracker
from mango.oracle.world_state import WorldState

log = logging.getLogger(__name__)

WORLD_STATE_TYPE = "mango_ros/msg/WorldState"
DEFAULT_TOPIC = "/world_state"
_STAMP = struct.Struct("<iI")  # header.stamp right after the 4-byte CDR encapsulation


def world_state_payloads(bag: str | Path, topic: str,
                         span: tuple[int, int] | None = None) -> Iterator[bytes]:
    """The topic's payloads (in a byte span of the bag: see `BagReader.messages`); a whole
    bag with none is an error."""
    reader = BagReader(bag)
    seen = False
    for m in reader.messages({topic}, span):
        if m.msgtype != WORLD_STATE_TYPE:
            raise InputError(f"topic {topic} carries {m.msgtype}, not {WORLD_STATE_TYPE}",
                             file=str(bag))
        seen = True
        yield m.data
    if not seen and span is None:
        raise no_messages(bag, topic)


def world_state_topic(bag: str | Path, topic: str | None = None) -> str:
    """The topic to judge: `topic` when given; else `/world_state`, or the bag's only
    `WorldState` topic (a run recorded under a namespace, as `mango policy run` records)."""
    if topic:
        return topic
    found = sorted(t for t, (msgtype, _) in BagReader(bag).topics().items()
                   if msgtype == WORLD_STATE_TYPE)
    if DEFAULT_TOPIC in found or not found:
        return DEFAULT_TOPIC  # an absent topic is reported by the reader, with what there is
    if len(found) > 1:
        raise InputError(f"the bag has {len(found)} WorldState topics ({', '.join(found)}): "
                         "choose one with --topic", file=str(bag))
    return found[0]


def no_messages(bag: str | Path, topic: str) -> InputError:
    """The error for a bag with nothing on `topic`, listing what it has."""
    topics = ", ".join(sorted(BagReader(bag).topics())) or "none"
    return InputError(f"no messages on {topic} (topics in the bag: {topics})", file=str(bag))


class StreamProblems:
    """What a bag's states could not be used for: logged as the oracle node logs it (each
    distinct problem once, then every 10 s of world time), so a replay says what the live run
    said, and skips what it skipped."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.log = ProblemLog()
        self.skipped = 0  # states not judged, for any reason
        self.skipped_messages = 0  # messages not even tracked (unreadable or invalid)
        self.t = 0.0  # world time of the latest state read (an unreadable message has none)

    def unreadable(self, number: int, text: str) -> None:
        """A message that does not decode (skipped, as the oracle node skips it)."""
        self.skipped += 1
        self.skipped_messages += 1
        self._say(self.t, f"{self.topic} message {number}: skipped: {text}", text)

    def invalid(self, t: float, problems: list[str]) -> None:
        """A state that breaks the validity rules (skipped)."""
        self.skipped += 1
        self.skipped_messages += 1
        for text in problems:
            self._say(t, f"{self.topic} t={t:.3f}: state skipped: {text}", text)

    def unjudged(self, t: float, exc: EvaluationError) -> None:
        """A state the tracker could not evaluate (skipped)."""
        self.skipped += 1
        self._say(t, f"state skipped: {exc}", exc.key)

    def _say(self, t: float, text: str, key: str | None) -> None:
        line = self.log.note(text, t, key)
        if line is not None:
            log.warning(line)


def _decoded(payloads: Iterator[bytes], bag: str | Path, topic: str,
             problems: StreamProblems | None = None) -> Iterator[WorldState]:
    """The valid states of the payloads; the others are reported and skipped."""
    decoder = WorldStateDecoder()
    problems = problems or StreamProblems(topic)
    for i, data in enumerate(payloads):
        try:
            state = decoder.decode(data)
        except InputError as exc:
            problems.unreadable(i + 1, exc.message)
            continue
        problems.t = state.t
        if decoder.problems:
            problems.invalid(state.t, decoder.problems)
        else:
            yield state


def iter_bag_world_states(bag: str | Path, topic: str = "/world_state",
                          span: tuple[int, int] | None = None,
                          problems: StreamProblems | None = None) -> Iterator[WorldState]:
    """Every world state recorded on `topic` (in `span`), in recording order (episodes
    concatenated); those that break the validity rules are reported to `problems`, skipped."""
    return _decoded(world_state_payloads(bag, topic, span), bag, topic, problems)


def track_states(tracker: StepTracker, states: Iterable[WorldState],
                 last: float | None = None, problems: StreamProblems | None = None
                 ) -> tuple[int, float | None]:
    """Feed states to the tracker, restarting it where world time goes back (a new episode,
    as in the oracle node), skipping (and reporting) those it cannot evaluate, as the node
    does; the number read and the last time."""
    n = 0
    for n, state in enumerate(states, start=1):  # noqa: B007
        if last is not None and state.t < last:
            tracker.reset()
        try:
            tracker.update(state)
        except EvaluationError as exc:
            (problems or StreamProblems("")).unjudged(state.t, exc)
        last = state.t
    return n, last


def episode_starts(bag: str | Path, topic: str = "/world_state") -> tuple[list[int], int]:
    """Indices of the messages that start an episode, and the message count."""
    starts: list[int] = []
    last = None
    n = 0
    for n, data in enumerate(world_state_payloads(bag, topic), start=1):
        if len(data) < 12:
            raise InputError(f"{topic} message {n} is too short for a WorldState", file=str(bag))
        sec, nsec = _STAMP.unpack_from(data, 4)
        t = sec * 1_000_000_000 + nsec
        if last is None or t < last:
            starts.append(n - 1)
        last = t
    return starts, n


def iter_episode(bag: str | Path, topic: str = "/world_state", episode: int | None = None,
                 problems: StreamProblems | None = None) -> Iterator[WorldState]:
    """The states of one episode (1-based; negative counts from the end; default the last),
    skipping (and reporting to `problems`) those that break the validity rules."""
    starts, n = episode_starts(bag, topic)
    index = -1 if episode is None else episode - 1 if episode > 0 else episode
    if episode == 0 or not -len(starts) <= index < len(starts):
        raise InputError(f"no episode {episode}: the bag has {len(starts)}", file=str(bag))
    first = starts[index]
    end = starts[index + 1] if index != -1 and index + 1 < len(starts) else n

    def chosen() -> Iterator[bytes]:
        for i, data in enumerate(world_state_payloads(bag, topic)):
            if i >= end:
                return
            if i >= first:
                yield data

    return _decoded(chosen(), bag, topic, problems)


def bag_episode(bag: str | Path, topic: str = "/world_state",
                episode: int | None = None) -> list[WorldState]:
    """`iter_episode` as a list."""
    return list(iter_episode(bag, topic, episode))


def bag_episodes(bag: str | Path, topic: str = "/world_state") -> list[list[WorldState]]:
    """Every episode's states."""
    starts, _ = episode_starts(bag, topic)
    return [bag_episode(bag, topic, k) for k in range(1, len(starts) + 1)]
