"""World states out of a bag: CDR payloads on a `WorldState` topic -> core `WorldState`s.

A bag may hold several episodes: world time going back (a simulator reset) starts a new one,
as in the oracle node. Episodes are found from the header stamps alone (the first bytes of
each payload), then the chosen one is decoded as a stream, so replaying a long bag never holds
all its states in memory.

A state that does not decode, or breaks the validity rules, is skipped and said, as the
oracle node skips it, and counted (`StreamProblems.summary`); a topic (or chosen episode) with
messages but no usable state is bad input, an `InputError` that says why, not an empty run to
judge. Every function takes a bag path or a `BagReader`: one reader per command says what it
finds in the file (truncation, damage) once, however often the command reads it.
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


Bag = str | Path | BagReader


def bag_reader(bag: Bag) -> BagReader:
    """`bag` itself when it is a reader, else a reader of it."""
    return bag if isinstance(bag, BagReader) else BagReader(bag)


def bag_name(bag: Bag) -> str:
    """The bag's path, as messages name it."""
    return str(bag.path if isinstance(bag, BagReader) else bag)


def world_state_payloads(bag: Bag, topic: str,
                         span: tuple[int, int] | None = None) -> Iterator[bytes]:
    """The topic's payloads (in a byte span of the bag: see `BagReader.messages`); a whole
    bag with none is an error."""
    reader = bag_reader(bag)
    seen = False
    for m in reader.messages({topic}, span):
        if m.msgtype != WORLD_STATE_TYPE:
            raise InputError(f"topic {topic} carries {m.msgtype}, not {WORLD_STATE_TYPE}",
                             file=str(reader.path))
        seen = True
        yield m.data
    if not seen and span is None:
        raise no_messages(reader, topic)


def world_state_topic(bag: Bag, topic: str | None = None) -> str:
    """The topic to judge: `topic` when given; else `/world_state`, or the bag's only
    `WorldState` topic (a run recorded under a namespace, as `mango policy run` records)."""
    if topic:
        return topic
    reader = bag_reader(bag)
    found = sorted(t for t, (msgtype, _) in reader.topics().items()
                   if msgtype == WORLD_STATE_TYPE)
    if DEFAULT_TOPIC in found or not found:
        return DEFAULT_TOPIC  # an absent topic is reported by the reader, with what there is
    if len(found) > 1:
        raise InputError(f"the bag has {len(found)} WorldState topics ({', '.join(found)}): "
                         "choose one with --topic", file=str(reader.path))
    return found[0]


def no_messages(bag: Bag, topic: str) -> InputError:
    """The error for a bag with nothing on `topic`, listing what it has."""
    reader = bag_reader(bag)
    topics = ", ".join(sorted(reader.topics())) or "none"
    return InputError(f"no messages on {topic} (topics in the bag: {topics})",
                      file=str(reader.path))


_HELD_LINES = 10  # problems kept back (until a state is usable) before they are only counted
# what each kind of skipped message or state did, said of one and of several
_KINDS = {"unreadable": ("does not decode", "do not decode"),
          "invalid": ("breaks the validity rules", "break the validity rules"),
          "unjudged": ("could not be evaluated", "could not be evaluated")}


class StreamProblems:
    """What a bag's states could not be used for: logged as the oracle node logs it (each
    distinct problem once, then every 10 s of world time), so a replay says what the live run
    said, and skips what it skipped; and counted, with the first of each kind, for a summary
    or for the error when no state at all is usable. Until a state is usable the lines are
    kept back: a stream none of whose states can be used is one error, not a warning per
    message."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.log = ProblemLog()
        self.skipped = 0  # states not judged, for any reason
        self.skipped_messages = 0  # messages not even tracked (unreadable or invalid)
        self.messages = 0  # messages read from the topic
        self.t = 0.0  # world time of the latest state read (an unreadable message has none)
        self.counts = dict.fromkeys(_KINDS, 0)
        self.first: dict[str, str] = {}  # kind -> its first problem, where it was
        self.held: list[str] | None = []  # lines kept back; None once a state was usable
        self._not_held = 0

    def restart(self) -> None:
        """Forget what was counted: the stream is read again from its start."""
        self.__init__(self.topic)  # type: ignore[misc]

    def unreadable(self, number: int, text: str) -> None:
        """A message that does not decode (skipped, as the oracle node skips it)."""
        self.skipped += 1
        self.skipped_messages += 1
        self._count("unreadable", f"message {number}: {text}")
        self._say(self.t, f"{self.topic} message {number}: skipped: {text}", text)

    def invalid(self, t: float, problems: list[str]) -> None:
        """A state that breaks the validity rules (skipped)."""
        self.skipped += 1
        self.skipped_messages += 1
        self._count("invalid", f"t={t:.3f}: {problems[0]}")
        for text in problems:
            self._say(t, f"{self.topic} t={t:.3f}: state skipped: {text}", text)

    def unjudged(self, t: float, exc: EvaluationError) -> None:
        """A state the tracker could not evaluate (skipped)."""
        self.skipped += 1
        self._count("unjudged", str(exc))
        self._say(t, f"state skipped: {exc}", exc.key)

    def usable(self) -> None:
        """A state was usable: what was kept back is said, and from now on as it comes."""
        held, self.held = self.held, None
        for line in held or []:
            log.warning(line)
        if self._not_held:
            log.warning("%s: %d more problems before the first usable state, not listed",
                        self.topic, self._not_held)

    def summary(self, done: str = "judged") -> str | None:
        """How many messages (and states) were skipped and why, or None when none was."""
        if not self.skipped:
            return None
        return (f"{self.topic}: {self.skipped} of {self.messages} messages not {done}: "
                + self._reasons())

    def nothing_usable(self, bag: Bag, episode: int | None = None) -> InputError:
        """The error for a topic (or chosen episode) with messages and no usable state."""
        where = self.topic if episode is None else f"{self.topic} (episode {episode})"
        n = self.messages
        if self.counts["unreadable"] == n:
            text = (f"no state on {where} decoded: "
                    + ("its only message fails" if n == 1 else f"all {n} messages fail")
                    + f" to decode as {WORLD_STATE_TYPE} (first, {self.first['unreadable']})")
        else:
            text = f"no usable state on {where}: of its {n} messages, " + self._reasons()
        return InputError(text, file=bag_name(bag))

    def _reasons(self) -> str:
        return ", ".join(f"{k} {_KINDS[kind][k > 1]} (first, {self.first[kind]})"
                         for kind, k in self.counts.items() if k)

    def _count(self, kind: str, where: str) -> None:
        self.counts[kind] += 1
        self.first.setdefault(kind, where)

    def _say(self, t: float, text: str, key: str | None) -> None:
        line = self.log.note(text, t, key)
        if line is None:
            return
        if self.held is None:
            log.warning(line)
        elif len(self.held) < _HELD_LINES:
            self.held.append(line)
        else:
            self._not_held += 1


def _decoded(payloads: Iterator[bytes], bag: Bag, topic: str,
             problems: StreamProblems | None = None, whole: bool = True,
             episode: int | None = None) -> Iterator[WorldState]:
    """The valid states of the payloads; the others are reported and skipped. When the
    payloads are a whole topic (or episode), `whole`, messages without one usable state are
    an `InputError`."""
    decoder = WorldStateDecoder()
    problems = problems or StreamProblems(topic)
    for data in payloads:
        problems.messages += 1
        try:
            state = decoder.decode(data)
        except InputError as exc:
            problems.unreadable(problems.messages, exc.message)
            continue
        problems.t = state.t
        if decoder.problems:
            problems.invalid(state.t, decoder.problems)
            continue
        if problems.held is not None:
            problems.usable()
        yield state
    if whole and problems.held is not None and problems.messages:
        raise problems.nothing_usable(bag, episode)


def iter_bag_world_states(bag: Bag, topic: str = "/world_state",
                          span: tuple[int, int] | None = None,
                          problems: StreamProblems | None = None) -> Iterator[WorldState]:
    """Every world state recorded on `topic` (in `span`), in recording order (episodes
    concatenated); those that break the validity rules are reported to `problems`, skipped.
    A whole topic (no `span`) without one usable state is an `InputError`."""
    return _decoded(world_state_payloads(bag, topic, span), bag, topic, problems,
                    whole=span is None)


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


def episode_starts(bag: Bag, topic: str = "/world_state") -> tuple[list[int], int]:
    """Indices of the messages that start an episode, and the message count.

    Where world time goes back among the usable states, as the tracker of a replay sees it:
    a message that is no usable state (another type's bytes, garbage) starts none. The stamps
    alone (the payloads' first bytes) answer when they never go back, as in a bag of one
    episode; else the states are decoded to tell."""
    bag = bag_reader(bag)
    last = None
    n = 0
    back = False
    for data in world_state_payloads(bag, topic):
        n += 1
        if len(data) < 12:
            continue
        sec, nsec = _STAMP.unpack_from(data, 4)
        t = sec * 1_000_000_000 + nsec
        back = back or (last is not None and t < last)
        last = t
    if not back:
        return [0] if n else [], n
    decoder = WorldStateDecoder()
    starts: list[int] = []
    last_t = None
    for i, data in enumerate(world_state_payloads(bag, topic)):
        if i == 0:
            starts.append(0)
        try:
            state = decoder.decode(data)
        except InputError:
            continue
        if decoder.problems:
            continue
        if last_t is not None and state.t < last_t:
            starts.append(i)
        last_t = state.t
    return starts, n


def iter_episode(bag: Bag, topic: str = "/world_state", episode: int | None = None,
                 problems: StreamProblems | None = None) -> Iterator[WorldState]:
    """The states of one episode (1-based; negative counts from the end; default the last),
    skipping (and reporting to `problems`) those that break the validity rules; an episode
    without one usable state is an `InputError`."""
    bag = bag_reader(bag)
    starts, n = episode_starts(bag, topic)
    index = -1 if episode is None else episode - 1 if episode > 0 else episode
    if episode == 0 or not -len(starts) <= index < len(starts):
        raise InputError(f"no episode {episode}: the bag has {len(starts)}", file=bag_name(bag))
    first = starts[index]
    end = starts[index + 1] if index != -1 and index + 1 < len(starts) else n

    def chosen() -> Iterator[bytes]:
        for i, data in enumerate(world_state_payloads(bag, topic)):
            if i >= end:
                return
            if i >= first:
                yield data

    return _decoded(chosen(), bag, topic, problems, episode=episode)


def bag_episode(bag: Bag, topic: str = "/world_state",
                episode: int | None = None) -> list[WorldState]:
    """`iter_episode` as a list."""
    return list(iter_episode(bag, topic, episode))


def bag_episodes(bag: Bag, topic: str = "/world_state") -> list[list[WorldState]]:
    """Every episode's states."""
    bag = bag_reader(bag)
    starts, _ = episode_starts(bag, topic)
    return [bag_episode(bag, topic, k) for k in range(1, len(starts) + 1)]
