"""msgpack with numpy arrays, in openpi's wire encoding.

An ndarray travels as a map `{"__ndarray__": true, "data": <bytes>, "dtype": <dtype.str>,
"shape": [...]}` and a numpy scalar as `{"__npgeneric__": true, "data", "dtype"}`; openpi's
packer writes those keys as msgpack *bin*, so unpacking accepts bytes and str keys alike.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np


def _pack_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind in ("V", "O", "c"):
            raise TypeError(f"cannot send arrays of dtype {obj.dtype}")
        return {b"__ndarray__": True, b"data": np.ascontiguousarray(obj).tobytes(),
                b"dtype": obj.dtype.str, b"shape": list(obj.shape)}
    if isinstance(obj, np.generic):
        return {b"__npgeneric__": True, b"data": obj.item(), b"dtype": obj.dtype.str}
    raise TypeError(f"cannot pack {type(obj).__name__}")


def _get(obj: dict, key: str) -> Any:
    return obj[key] if key in obj else obj[key.encode()]


def _unpack_hook(obj: dict) -> Any:
    if b"__ndarray__" in obj or "__ndarray__" in obj:
        dtype = _get(obj, "dtype")
        dtype = dtype.decode() if isinstance(dtype, bytes) else dtype
        return np.ndarray(buffer=_get(obj, "data"), dtype=np.dtype(dtype),
                          shape=tuple(_get(obj, "shape")))
    if b"__npgeneric__" in obj or "__npgeneric__" in obj:
        dtype = _get(obj, "dtype")
        dtype = dtype.decode() if isinstance(dtype, bytes) else dtype
        return np.dtype(dtype).type(_get(obj, "data"))
    return obj


def packb(obj: Any) -> bytes:
    return msgpack.packb(obj, default=_pack_default, use_bin_type=True)


def unpackb(data: bytes) -> Any:
    return msgpack.unpackb(data, object_hook=_unpack_hook, raw=False, strict_map_key=False)
