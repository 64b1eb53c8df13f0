"""Decode a serialized `WorldState` (CDR, as DDS delivers it) straight into the core model.

Generic deserialization builds one Python message object per nested field (about 650 µs for
50 objects). Here a message's *shape* (its string lengths and sequence counts) is compiled
once into a `struct` format covering the whole message, so a state of a known shape is read
with a single `unpack_from`; a stream keeps its shape from one state to the next (same
entities, same ids) and only changes it when, say, a contact appears. Entities, joints and
the small sections whose bytes did not change since the previous state are reused instead of
rebuilt. The layout follows msg/*.msg (little-endian CDR, alignment relative to the byte after
the 4-byte encapsulation header); a test checks it against rclpy's deserializer on random
records. Used on the oracle node's hot path and for bag replay; it needs neither rclpy nor
the generated messages, so it sits with the bags, below `mango.ros`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from mango.errors import InputError
from mango.oracle.world_state import (
    DeviceState,
    EntityState,
    GripperState,
    JointState,
    WorldState,
    duplicate_ids,
    entity_problem,
    gripper_problem,
    joint_problem,
)

_U32 = struct.Struct("<I")
_POSE = struct.Struct("<7d?")  # position, orientation x y z w, has_orientation
_SIZE = struct.Struct("<3d?")  # size, has_size
_JOINT = struct.Struct("<5d")
_GRIPPER = struct.Struct("<d????")  # width, has_width, closed, has_closed, has_gripper
_NS = 1_000_000_000
_MAX_LAYOUTS = 16  # shapes remembered per decoder (a stream alternates between a few)
_MAX_NAMES = 4096  # decoded ids remembered per decoder

# Values per element in the unpacked tuple (length fields included).
_OBJ = 8  # len, id, len, kind, len, parent, pose bytes, size bytes
_JNT = 3  # len, id, joint bytes
_DEV = 3  # len, id, on
_CON = 4  # len, a, len, b
_FACT = 3  # len, atom, value


class CdrError(InputError):
    """The bytes are not a WorldState in little-endian CDR."""


@dataclass(frozen=True)
class _Layout:
    """One message shape: the whole-message format and where each element's values start."""

    unpack: Callable[[bytes, int], tuple[Any, ...]]
    lengths: Callable[[tuple[Any, ...]], tuple[int, ...]]  # every length/count field
    key: tuple[int, ...]  # their values for this shape
    objects: tuple[int, ...]
    # Joints, devices, gripper, contacts and facts, in message order.
    sections: tuple[slice, slice, slice, slice, slice]


class _Walk:
    """Lays out a message from its length fields, read from the buffer as the walk goes."""

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.fmt: list[str] = []
        self.p = 0  # offset after the encapsulation header
        self.n = 0  # values the format yields so far
        self.len_idx: list[int] = []
        self.key: list[int] = []

    def pad(self, a: int) -> None:
        r = self.p % a
        if r:
            self.fmt.append(f"{a - r}x")
            self.p += a - r

    def take(self, code: str, size: int, values: int = 1) -> int:
        """A fixed-size field; returns the index of its (first) value."""
        self.fmt.append(code)
        self.p += size
        self.n += values
        if 4 + self.p > len(self.buf):
            raise CdrError("truncated WorldState")
        return self.n - values

    def length(self, min_size: int) -> int:
        """A string length or sequence count, checked against the bytes left."""
        self.pad(4)
        if 4 + self.p + 4 > len(self.buf):
            raise CdrError("truncated WorldState")
        (v,) = _U32.unpack_from(self.buf, 4 + self.p)
        self.len_idx.append(self.take("I", 4))
        self.key.append(v)
        if v * min_size > len(self.buf) - 4 - self.p:
            raise CdrError(f"length {v} runs past the end of the message")
        return v

    def string(self, keep: bool = True) -> None:
        n = self.length(1)
        if n == 0:
            raise CdrError("string without its terminating NUL")
        if keep:
            self.take(f"{n - 1}sx", n)
        else:
            self.fmt.append(f"{n}x")
            self.p += n

    def compile(self) -> _Layout:
        self.take("iI", 8, 2)  # header.stamp: values 0 and 1
        self.string(keep=False)  # header.frame_id
        objects = []
        for _ in range(self.length(4 * 3 + 56 + 1 + 24 + 1)):
            first = self.n
            self.string()
            self.string()
            self.string()
            self.pad(8)
            self.take("57s", 57)
            self.pad(8)
            self.take("25s", 25)
            objects.append(first)
        joints = self._section(4 + 40, self._joint)
        devices = self._section(4 + 1, self._string_bool)
        self.pad(8)
        gripper = self.take("12s", 12)
        contacts = self._section(8, self._contact)
        facts = self._section(4 + 1, self._string_bool)
        sections = (joints, devices, slice(gripper, gripper + 1), contacts, facts)
        return _Layout(
            unpack=struct.Struct("<" + "".join(self.fmt)).unpack_from,
            lengths=itemgetter(*self.len_idx),
            key=tuple(self.key),
            objects=tuple(objects),
            sections=sections,
        )

    def _section(self, min_size: int, element: Callable[[], None]) -> slice:
        count = self.length(min_size)
        start = self.n
        for _ in range(count):
            element()
        return slice(start, self.n)

    def _joint(self) -> None:
        self.string()
        self.pad(8)
        self.take("40s", 40)

    def _string_bool(self) -> None:  # a device or a fact
        self.string()
        self.take("?", 1)

    def _contact(self) -> None:
        self.string()
        self.string()


def _construct(cls: type, fields: dict[str, Any], fields_set: set[str]) -> Any:
    """`cls.model_construct(**fields)` for a model whose every field is given, without the
    defaults bookkeeping that makes model_construct cost microseconds per call. Every field is
    set, so instances of a class can share one fields-set (adding a field to it is a no-op)."""
    obj = cls.__new__(cls)
    _setattr(obj, "__dict__", fields)
    _setattr(obj, "__pydantic_fields_set__", fields_set)
    _setattr(obj, "__pydantic_extra__", None)
    _setattr(obj, "__pydantic_private__", None)
    return obj


_setattr = object.__setattr__
_ENTITY_FIELDS = set(EntityState.model_fields)
_JOINT_FIELDS = set(JointState.model_fields)
_DEVICE_FIELDS = set(DeviceState.model_fields)
_GRIPPER_FIELDS = set(GripperState.model_fields)
_STATE_FIELDS = set(WorldState.model_fields)


class WorldStateDecoder:
    """Decodes a stream of states, reusing what did not change since the previous one."""

    def __init__(self) -> None:
        self._layouts: dict[tuple[int, ...], _Layout] = {}
        self._layout: _Layout | None = None
        self._names: dict[bytes, str] = {}
        # Per object index: its values in the previous state, the entity built from them and
        # why it is unusable (None when it is fine).
        self._objects: list[tuple[tuple[Any, ...], str, EntityState, str | None]] = []
        # Why the last decoded state breaks the validity rules (oracle.world_state); what
        # broke them is left out of the state, which its readers skip.
        self.problems: list[str] = []
        # Per section (joints, devices, gripper, contacts, facts): previous values and result.
        self._sections: list[tuple[tuple[Any, ...], Any] | None] = [None] * 5
        self._tail: list[Any] = [None, None]  # all five sections' values, and the results
        self._builders = (self._joints, self._devices, _gripper, self._contacts, self._facts)

    def decode(self, data: bytes | memoryview) -> WorldState:
        buf = data if type(data) is bytes else bytes(data)
        if len(buf) < 4 or buf[1] != 0x01:
            raise CdrError("not little-endian CDR (encapsulation header)")
        layout = self._layout
        vals = _unpack(layout, buf) if layout is not None else None
        if vals is None:
            # A new shape: most likely one seen before (a contact came and went).
            for known in reversed(self._layouts.values()):
                if known is not layout and (vals := _unpack(known, buf)) is not None:
                    layout = known
                    break
            else:
                layout = self._shape_of(buf)
                vals = layout.unpack(buf, 4)
            self._layout = layout
        try:
            return self._build(layout, vals)
        except UnicodeDecodeError as exc:
            raise CdrError(f"malformed WorldState: {exc}") from None

    def _shape_of(self, buf: bytes) -> _Layout:
        try:
            walk = _Walk(buf)
            layout = walk.compile()
        except struct.error as exc:  # pragma: no cover - the walk checks bounds first
            raise CdrError(f"truncated or malformed WorldState: {exc}") from None
        known = self._layouts.get(layout.key)
        if known is not None:
            return known
        if len(self._layouts) >= _MAX_LAYOUTS:
            self._layouts.clear()
        self._layouts[layout.key] = layout
        return layout

    def _name(self, raw: bytes) -> str:
        names = self._names
        s = names.get(raw)
        if s is None:
            if len(names) >= _MAX_NAMES:
                names.clear()
            s = names[raw] = raw.decode()
        return s

    def _build(self, layout: _Layout, vals: tuple[Any, ...]) -> WorldState:
        name = self._name
        new, setattr = EntityState.__new__, _setattr
        cache = self._objects
        n_cached = len(cache)
        objects: dict[str, EntityState] = {}
        problems: list[str] = []
        invalid: set[str] = set()
        for k, b in enumerate(layout.objects):
            seg = vals[b:b + _OBJ]
            pose, size = seg[6], seg[7]
            if k < n_cached:
                c_seg, oid, c_ent, why = cache[k]
                if seg == c_seg:  # same id, kind, parent, pose and size bytes
                    if why is None:
                        objects[oid] = c_ent
                    else:
                        invalid.add(oid)
                        problems.append(f"object {oid!r}: {why}")
                    continue
                if seg[1] == c_seg[1] and seg[3] == c_seg[3] and seg[5] == c_seg[5]:
                    kind, parent = c_ent.kind, c_ent.parent  # the same entity, moved
                else:
                    oid = name(seg[1])
                    kind, parent = name(seg[3]) or "object", name(seg[5]) or None
            else:
                oid = name(seg[1])
                kind, parent = name(seg[3]) or "object", name(seg[5]) or None
            px, py, pz, qx, qy, qz, qw, has_o = _POSE.unpack(pose)
            sx, sy, sz, has_s = _SIZE.unpack(size)
            # _construct, inlined: this is the per-entity cost of a stream where things move.
            ent = new(EntityState)
            setattr(ent, "__dict__", {
                "position": (px, py, pz),
                "orientation": (qw, qx, qy, qz) if has_o else None,
                "size": (sx, sy, sz) if has_s else None,
                "kind": kind,
                "parent": parent,
            })
            setattr(ent, "__pydantic_fields_set__", _ENTITY_FIELDS)
            setattr(ent, "__pydantic_extra__", None)
            setattr(ent, "__pydantic_private__", None)
            why = entity_problem(ent)
            if why is None:
                objects[oid] = ent
            else:
                invalid.add(oid)
                problems.append(f"object {oid!r}: {why}")
            if k < n_cached:
                cache[k] = (seg, oid, ent, why)
            else:
                cache.append((seg, oid, ent, why))
        if (len(objects) if not invalid else len(objects.keys() | invalid)) != len(layout.objects):
            problems += self._duplicates(layout, vals, objects)

        # The small sections: rebuilt only when their values changed (usually none did).
        tail = vals[layout.sections[0].start:]
        if tail == self._tail[0]:
            joints, devices, gripper, contacts, facts, section_problems = self._tail[1]
        else:
            cache = self._sections
            out = []
            for i, sl in enumerate(layout.sections):
                seg = vals[sl]
                prev = cache[i]
                if prev is None or prev[0] != seg:
                    prev = cache[i] = (seg, self._builders[i](seg))
                out.append(prev[1])
            (joints, p_joints), (devices, p_devices), (gripper, p_gripper), contacts, \
                (facts, p_facts) = out
            section_problems = p_joints + p_devices + p_gripper + p_facts
            self._tail[1] = joints, devices, gripper, contacts, facts, section_problems
            self._tail[0] = tail
        t = round(vals[0] + vals[1] / _NS, 9)
        self.problems = problems + section_problems if section_problems else problems
        # Fresh containers around the reused elements, so a consumer that edits one state's
        # dict does not edit the next state's.
        return _construct(WorldState, {
            "t": t, "objects": objects,
            "joints": joints.copy(), "devices": devices.copy(), "gripper": gripper,
            "contacts": contacts.copy(), "facts": facts.copy(),
        }, _STATE_FIELDS)

    def _joints(self, seg: tuple[Any, ...]) -> tuple[dict[str, JointState], list[str]]:
        pairs = []
        problems: list[str] = []
        ids = []
        for b in range(0, len(seg), _JNT):
            q, q_open, q_closed, closed_frac, open_frac = _JOINT.unpack(seg[b + 2])
            joint = _construct(JointState, {
                "q": q, "q_open": q_open, "q_closed": q_closed,
                "closed_frac": None if closed_frac != closed_frac else closed_frac,  # NaN: unset
                "open_frac": None if open_frac != open_frac else open_frac,
            }, _JOINT_FIELDS)
            jid = self._name(seg[b + 1])
            ids.append(jid)
            why = joint_problem(joint)
            if why is None:
                pairs.append((jid, joint))
            else:
                problems.append(f"joint {jid!r}: {why}")
        return _unique(pairs, "joint", problems, ids)

    def _duplicates(self, layout: _Layout, vals: tuple[Any, ...],
                    objects: dict[str, EntityState]) -> list[str]:
        """Objects whose id occurs more than once: all of them left out (which one is right
        cannot be told), rather than the last one silently winning."""
        ids = [self._name(vals[b + 1]) for b in layout.objects]
        twice = duplicate_ids(ids)
        for oid in twice:
            objects.pop(oid, None)
        return [f"object {oid!r}: its id occurs {ids.count(oid)} times" for oid in twice]

    def _devices(self, seg: tuple[Any, ...]) -> tuple[dict[str, DeviceState], list[str]]:
        return _unique([(self._name(seg[b + 1]),
                         _construct(DeviceState, {"on": seg[b + 2]}, _DEVICE_FIELDS))
                        for b in range(0, len(seg), _DEV)], "device")

    def _contacts(self, seg: tuple[Any, ...]) -> list[tuple[str, str]]:
        name = self._name
        return [(name(seg[b + 1]), name(seg[b + 3])) for b in range(0, len(seg), _CON)]

    def _facts(self, seg: tuple[Any, ...]) -> tuple[dict[str, bool], list[str]]:
        return _unique([(self._name(seg[b + 1]), seg[b + 2])
                        for b in range(0, len(seg), _FACT)], "fact")


def _unpack(layout: _Layout, buf: bytes) -> tuple[Any, ...] | None:
    """The message's values if it has this shape, else None."""
    try:
        vals = layout.unpack(buf, 4)
    except struct.error:
        return None
    return vals if layout.lengths(vals) == layout.key else None


def _unique(pairs: list[tuple[str, Any]], what: str, problems: list[str] | None = None,
            ids: list[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """A section's entries by id; ids given twice (`ids`: all of them, valid or not) are all
    left out (which one is right cannot be told), rather than the last one silently winning."""
    out = dict(pairs)
    problems = problems or []
    ids = ids if ids is not None else [k for k, _ in pairs]
    if len(set(ids)) != len(ids):
        for k in duplicate_ids(ids):
            out.pop(k, None)
            problems.append(f"{what} {k!r}: its id occurs {ids.count(k)} times")
    return out, problems


def _gripper(seg: tuple[bytes]) -> tuple[GripperState | None, list[str]]:
    width, has_width, closed, has_closed, has_gripper = _GRIPPER.unpack(seg[0])
    if not has_gripper:
        return None, []
    gripper = _construct(GripperState, {
        "width": width if has_width else None, "closed": closed if has_closed else None,
    }, _GRIPPER_FIELDS)
    why = gripper_problem(gripper)
    return (gripper, []) if why is None else (None, [f"gripper reading: {why}"])


def decode_world_state(data: bytes | memoryview) -> WorldState:
    """Decode one state (no reuse across calls)."""
    return WorldStateDecoder().decode(data)
