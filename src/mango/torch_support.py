"""torch beside the only torchvision there is for it: shared by the lerobot policy backend and
the transformers perception backends, which both import torchvision (directly or through
transformers)."""

from __future__ import annotations

import functools
import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any

_log = logging.getLogger(__name__)


@functools.cache
def declare_torchvision_ops() -> Any:
    """Let torchvision import beside a CPU-only torch whose C ops it cannot load.

    The only torchvision release for torch 2.13 on PyPI is a CUDA build: its `_C` library does
    not load with the CPU torch wheel, and torchvision's import then fails registering fake
    kernels for `nms`/`qnms` ("operator torchvision::nms does not exist"), which also stops
    transformers importing its detectors. Declaring those two schemas first lets it import; its
    C ops (nms, roi_align) stay unavailable, and what we load (ACT and Diffusion policies with
    plain ResNet backbones, PIL image processors) uses none. Done only when `_C` really fails to
    load, before anything imports torchvision; the returned library must stay alive (cached).
    """
    import torch

    spec = importlib.util.find_spec("torchvision")
    if "torchvision" in sys.modules or spec is None or not spec.submodule_search_locations:
        return None
    libs = sorted(Path(spec.submodule_search_locations[0]).glob("_C*.so"))
    try:
        if libs:
            torch.ops.load_library(str(libs[0]))
            return None
    except OSError:
        pass
    lib = torch.library.Library("torchvision", "DEF")
    for op in ("nms", "qnms"):
        lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _log.info("torchvision's C ops do not load with this torch; declared nms/qnms so it imports")
    return lib
