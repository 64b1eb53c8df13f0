"""Decode a serialized `WorldState` (CDR, as DDS delivers it) straight into the core model.

Generic deserialization builds one Python message object per nested field (about 650 µs for
50 objects); this reads the bytes once with `struct` (the layout follows msg/*.msg, and a test
checks it against rclpy's deserializer on random records). Used on the oracle node's hot path
and for bag replay; it needs no rclpy.
"""

from __future__ import annotations

import struct
from typing import Any

from mango.errors import InputError
from mango.oracle.world_state import (
    DeviceState,
    EntityState,
    GripperState,
    JointState,
    WorldState,
)

_U32 = struct.Struct("<I")
_I32U32 = struct.Struct("<iI")
_POSE_BOOL = struct.Struct("<7d?")
_VEC_BOOL = struct.Struct("<3d?")
_JOINT = struct.Struct("<5d")
_GRIPPER = struct.Struct("<d???")
_NS = 1_000_000_000


def _construct(cls: type, fields: dict[str, Any]) -> Any:
    """`cls.model_construct(**fields)` for a model whose every field is given: skips the
    defaults/fields-set bookkeeping that makes model_construct cost microseconds per call."""
    obj = cls.__new__(cls)
    object.__setattr__(obj, "__dict__", fields)
    object.__setattr__(obj, "__pydantic_fields_set__", set(fields))
    object.__setattr__(obj, "__pydantic_extra__", None)
    object.__setattr__(obj, "__pydantic_private__", None)
    return obj


class CdrError(InputError):
    """The bytes are not a WorldState in little-endian CDR."""


class WorldStateDecoder:
    """Decodes a stream of states; an object whose bytes did not change since the previous
    state is reused instead of rebuilt (most objects lie still most of the time)."""

    def __init__(self) -> None:
        # Per object index, from the previous state: start and end offsets, the meaningful
        # byte segments (CDR padding bytes are not zeroed by serializers, so they can't be
        # compared), id and entity.
        self._objects: list[_Cached] = []

    def decode(self, data: bytes | memoryview) -> WorldState:
        buf = bytes(data)
        if len(buf) < 4 or buf[1] != 0x01:
            raise CdrError("not little-endian CDR (encapsulation header)")
        try:
            return _decode(buf, self._objects)
        except (struct.error, IndexError, UnicodeDecodeError) as exc:
            raise CdrError(f"truncated or malformed WorldState: {exc}") from None


def decode_world_state(data: bytes | memoryview) -> WorldState:
    """Decode one state (no reuse across calls)."""
    return WorldStateDecoder().decode(data)


_Cached = tuple[int, int, tuple[tuple[int, bytes], ...], str, EntityState]


def _decode(buf: bytes, cache: list[_Cached]) -> WorldState:
    u32 = _U32.unpack_from
    pos = 4  # after the encapsulation header; alignment is relative to it

    def string(p: int) -> tuple[str, int]:
        p = (p + 3) & ~3 if (p - 4) % 4 else p
        (n,) = u32(buf, p)
        p += 4
        return buf[p:p + n - 1].decode(), p + n

    def length(p: int) -> tuple[int, int]:
        """A sequence's element count and where its elements start."""
        p = align(p, 4)
        return u32(buf, p)[0], p + 4

    def align(p: int, a: int) -> int:
        r = (p - 4) % a
        return p + (a - r) if r else p

    sec, nsec = _I32U32.unpack_from(buf, pos)
    pos += 8
    _frame, pos = string(pos)

    objects: dict[str, EntityState] = {}
    n, pos = length(pos)
    for k in range(n):
        start = pos
        if k < len(cache):
            c_start, c_end, c_segments, c_id, c_ent = cache[k]
            # Same offset and same bytes (id, kind, parent, pose, size): the object is as it
            # was; five comparisons instead of parsing three strings and eleven numbers.
            (o1, b1), (o2, b2), (o3, b3), (o4, b4), (o5, b5) = c_segments
            sw = buf.startswith
            if (c_start == start and sw(b4, o4) and sw(b5, o5) and sw(b1, o1) and sw(b2, o2)
                    and sw(b3, o3)):
                objects[c_id] = c_ent
                pos = c_end
                continue
        s1 = align(pos, 4)
        oid, e1 = string(pos)
        s2 = align(e1, 4)
        kind, e2 = string(e1)
        s3 = align(e2, 4)
        parent, e3 = string(e2)
        s4 = pos = align(e3, 8)
        px, py, pz, qx, qy, qz, qw, has_o = _POSE_BOOL.unpack_from(buf, pos)
        s5 = pos = align(pos + 57, 8)
        sx, sy, sz, has_s = _VEC_BOOL.unpack_from(buf, pos)
        pos += 25
        ent = objects[oid] = _construct(EntityState, {
            "position": (px, py, pz),
            "orientation": (qw, qx, qy, qz) if has_o else None,
            "size": (sx, sy, sz) if has_s else None,
            "kind": kind or "object",
            "parent": parent or None,
        })
        segments = ((s1, buf[s1:e1]), (s2, buf[s2:e2]), (s3, buf[s3:e3]),
                    (s4, buf[s4:s4 + 57]), (s5, buf[s5:pos]))
        entry = (start, pos, segments, oid, ent)
        if k < len(cache):
            cache[k] = entry
        else:
            cache.append(entry)

    joints: dict[str, JointState] = {}
    n, pos = length(pos)
    for _ in range(n):
        jid, pos = string(pos)
        pos = align(pos, 8)
        q, q_open, q_closed, closed_frac, open_frac = _JOINT.unpack_from(buf, pos)
        pos += 40
        joints[jid] = _construct(JointState, {
            "q": q, "q_open": q_open, "q_closed": q_closed,
            "closed_frac": None if closed_frac != closed_frac else closed_frac,  # NaN: not given
            "open_frac": None if open_frac != open_frac else open_frac,
        })

    devices: dict[str, DeviceState] = {}
    n, pos = length(pos)
    for _ in range(n):
        did, pos = string(pos)
        devices[did] = _construct(DeviceState, {"on": bool(buf[pos])})
        pos += 1

    pos = align(pos, 8)
    width, has_width, closed, has_closed = _GRIPPER.unpack_from(buf, pos)
    pos += 11
    has_gripper = bool(buf[pos])
    pos += 1
    gripper = _construct(GripperState, {
        "width": width if has_width else None, "closed": closed if has_closed else None,
    }) if has_gripper else None

    contacts: list[tuple[str, str]] = []
    n, pos = length(pos)
    for _ in range(n):
        a, pos = string(pos)
        b, pos = string(pos)
        contacts.append((a, b))

    facts: dict[str, bool] = {}
    n, pos = length(pos)
    for _ in range(n):
        atom, pos = string(pos)
        facts[atom] = bool(buf[pos])
        pos += 1

    fields: dict[str, Any] = {
        "t": round(sec + nsec / _NS, 9), "objects": objects, "joints": joints,
        "devices": devices, "gripper": gripper, "contacts": contacts, "facts": facts,
    }
    return _construct(WorldState, fields)
