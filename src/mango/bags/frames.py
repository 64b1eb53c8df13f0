"""A recorded run resampled to frames at a fixed rate, for training: which image, which
measured joints and which commanded target each frame holds.

Frame k is at `start + k / fps`, where `start` is the first instant every required stream
(each camera, the measured joints) has spoken, up to the first instant one of them stops.
Each frame holds, per stream, the latest message stamped at or before its time (nothing
from its future). A stream silent for longer than its allowed gap inside that span — a
dropped stretch, or a camera that stopped while the run went on — is an `InputError` naming
the bag and topic: sample-and-hold over it would silently pair images with states they were
never seen with.

The action of frame k is the latest joint command stamped before the next frame (what the
controller was told to reach by then: the commanded chunk points, streamed at its rate);
before the first command (the arm holding still) it is the measured position, and the
gripper's the measured width until its first command. Measured state: the arm joints in
`joint_states` order, then the gripper width (the sum of the finger joints).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mango.bags.run_streams import RunStreams, Stream
from mango.bags.types import BagTypes, default_types

GRIPPER = "gripper"  # sim_node's (and the control node's) name for the width in a command
GAP_PERIODS = 5.0  # a stream may be silent for this many of its median intervals …
GAP_FRAMES = 2.0  # … or this many frame periods, whichever is longer
TIE = 1e-6  # s: a stamp this close to a frame's time counts as at it (stamps are integers of ns)


@dataclass(frozen=True)
class FramePlan:
    """Where each frame's data comes from."""

    times: np.ndarray  # (N,) stamps of the frames, s
    images: dict[str, np.ndarray]  # camera -> (N,) index of its image per frame
    state: np.ndarray  # (N, J + 1) float32: arm joints, gripper width
    action: np.ndarray  # (N, J + 1) float32: commanded joints, gripper width
    joint_names: tuple[str, ...]  # the arm joints, in state / action order

    def __len__(self) -> int:
        return len(self.times)


def allowed_gap(stream: Stream, fps: float, max_gap: float | None) -> float:
    """How long `stream` may be silent (s): `max_gap` when given, else a few of its own
    median intervals or two frame periods."""
    if max_gap is not None:
        return max_gap
    t = stream.times()
    median = float(np.median(np.diff(t))) if len(t) > 1 else 0.0
    return max(GAP_PERIODS * median, GAP_FRAMES / fps)


def _check_stream(run: RunStreams, stream: Stream, start: float, end: float,
                  gap: float) -> None:
    t = stream.times()
    if np.any(np.diff(t) < 0):
        k = int(np.argmax(np.diff(t) < 0)) + 1
        raise run.error(f"header stamps go back at message {k + 1} ({t[k - 1]:.3f} s -> "
                        f"{t[k]:.3f} s) within one episode", stream.topic)
    inside = t[(t >= start) & (t <= end)]
    edges = np.concatenate([[start], inside, [end]])
    silent = np.diff(edges)
    k = int(np.argmax(silent))
    if silent[k] > gap:
        what = ("stops" if k == len(silent) - 1 else "has a gap")
        raise run.error(
            f"{what}: no message from t={edges[k]:.3f} s to t={edges[k + 1]:.3f} s "
            f"({silent[k]:.3f} s; allowed {gap:.3f} s) while the run's other streams go on "
            f"(from {start:.3f} s to {end:.3f} s); frames there would pair data recorded at "
            "different times (--max-gap allows longer silences)", stream.topic)


def _joint_rows(stream: Stream, types: BagTypes, run: RunStreams
                ) -> tuple[tuple[str, ...], np.ndarray]:
    """Arm joint names and the (M, J + 1) measured rows (arm, gripper width)."""
    names: tuple[str, ...] = ()
    rows = []
    for i, data in enumerate(stream.payloads):
        msg = types.deserialize(data, "sensor_msgs/msg/JointState")
        got = dict(zip(msg.name, np.asarray(msg.position, float), strict=False))  # type: ignore
        if not names:
            names = tuple(n for n in msg.name if "finger" not in n)  # type: ignore[attr-defined]
            if not names or len(names) == len(msg.name):  # type: ignore[attr-defined]
                raise run.error("the joint states name no arm joints and finger joints "
                                f"(names: {list(msg.name)})", stream.topic)  # type: ignore
        fingers = [v for n, v in got.items() if "finger" in n]
        missing = [n for n in names if n not in got]
        if missing or not fingers:
            raise run.error(f"message {i + 1} lacks joint {missing[0] if missing else 'finger'}"
                            , stream.topic)
        rows.append([*(got[n] for n in names), sum(fingers)])
    return names, np.asarray(rows, dtype=np.float64)


def plan_frames(run: RunStreams, fps: float, max_gap: float | None = None,
                types: BagTypes | None = None) -> FramePlan:
    """Resample the run to `fps`; see the module's rules (an `InputError` on a gap)."""
    types = types or default_types()
    required = [*run.cameras.values(), run.joint_states]
    start = max(s.stamps[0] for s in required)
    end = max(s.stamps[-1] for s in required)
    for s in required:
        _check_stream(run, s, start, end, allowed_gap(s, fps, max_gap))
    stop = min(s.stamps[-1] for s in required)
    n = int(np.floor((stop - start) * fps + 1e-9)) + 1
    times = start + np.arange(n) / fps
    images = {c: np.searchsorted(s.times(), times + TIE, side="right") - 1
              for c, s in run.cameras.items()}
    names, measured = _joint_rows(run.joint_states, types, run)
    at = np.searchsorted(run.joint_states.times(), times + TIE, side="right") - 1
    state = measured[at]
    action = _actions(run, types, names, times, fps, state)
    return FramePlan(times, images, state.astype(np.float32), action.astype(np.float32), names)


def _actions(run: RunStreams, types: BagTypes, names: tuple[str, ...], times: np.ndarray,
             fps: float, state: np.ndarray) -> np.ndarray:
    """Per frame the latest commanded arm target and gripper width stamped before the next
    frame; the measured values before the first command of each."""
    stream = run.joint_command
    index = {n: i for i, n in enumerate(names)}
    arm = np.full((len(stream.stamps), len(names)), np.nan)
    width = np.full(len(stream.stamps), np.nan)
    for k, data in enumerate(stream.payloads):
        msg = types.deserialize(data, "sensor_msgs/msg/JointState")
        for n, v in zip(msg.name, msg.position, strict=False):  # type: ignore[attr-defined]
            if n == GRIPPER:
                width[k] = v
            elif n in index:
                arm[k, index[n]] = v
            else:
                raise run.error(f"message {k + 1} commands joint {n!r}, which the joint states "
                                f"do not have ({', '.join(names)})", stream.topic)
    t = stream.times()
    action = state.copy()
    before = times + 1.0 / fps - TIE
    for col, values in [*((j, arm[:, j]) for j in range(len(names))), (len(names), width)]:
        given = ~np.isnan(values)
        if not given.any():
            continue
        at = np.searchsorted(t[given], before, side="right") - 1
        known = at >= 0
        action[known, col] = values[given][at[known]]
    return action
