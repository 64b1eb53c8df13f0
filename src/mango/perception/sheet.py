"""Printable marker sheets at a true physical size: what a lab sticks on its objects.

The page is drawn at a stated DPI and saved with that DPI in the file (PNG pHYs, PDF page
size), so printing at 100 % scale gives the black square the side asked for. Each marker
keeps a one-cell white quiet zone (detection needs it) and is labelled with its id, size and
dictionary. Pillow writes the files (a dependency of matplotlib, pinned in constraints).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from mango.errors import InputError
from mango.sim.markers import cv_dictionary, marker_cells

PAGES_MM: dict[str, tuple[float, float]] = {"a4": (210.0, 297.0), "letter": (215.9, 279.4)}
MARGIN_MM = 10.0
GAP_MM = 6.0
LABEL_MM = 5.0


def mm_to_px(mm: float, dpi: float) -> int:
    return round(mm / 25.4 * dpi)


def marker_sheet(dictionary: str, ids: Sequence[int], size_mm: float, dpi: int = 300,
                 page: str = "a4") -> np.ndarray:
    """One page (grey uint8) with the markers laid out in rows at `size_mm` per black square."""
    if not math.isfinite(size_mm) or size_mm <= 0:
        raise InputError(f"marker size must be a positive number of mm, got {size_mm}",
                         field="--size-mm")
    if not ids:
        raise InputError("no marker ids to print", field="--ids")
    if page not in PAGES_MM:
        raise InputError(f"unknown page '{page}' (known: {', '.join(PAGES_MM)})", field="--page")
    d = cv_dictionary(dictionary)
    n_ids = int(d.bytesList.shape[0])
    bad = [i for i in ids if not 0 <= i < n_ids]
    if bad:
        shown = ", ".join(map(str, bad[:5])) + (", ..." if len(bad) > 5 else "")
        raise InputError(f"ids {shown} are not in dictionary {dictionary} (0..{n_ids - 1})",
                         field="--ids")
    cells = marker_cells(dictionary)
    if size_mm > min(PAGES_MM[page]) - 2 * MARGIN_MM:
        raise InputError(f"a marker of {size_mm:g} mm does not fit on one {page} page",
                         field="--size-mm")
    side = mm_to_px(size_mm, dpi)
    if side < 2 * cells:  # two pixels a cell at least, or the print is not a marker
        raise InputError(f"{size_mm:g} mm is too small for a {dictionary} marker at {dpi} DPI "
                         f"(at least {2 * cells / dpi * 25.4:.1f} mm)", field="--size-mm")
    quiet = round(side / cells)
    cell = side + 2 * quiet
    pw, ph = (mm_to_px(v, dpi) for v in PAGES_MM[page])
    margin, gap, label = (mm_to_px(v, dpi) for v in (MARGIN_MM, GAP_MM, LABEL_MM))
    cols = (pw - 2 * margin + gap) // (cell + gap)
    rows = (ph - 2 * margin + gap) // (cell + label + gap)
    if cols < 1 or rows < 1 or cols * rows < len(ids):
        raise InputError(f"{len(ids)} markers of {size_mm:g} mm do not fit on one {page} page "
                         f"(room for {max(0, cols) * max(0, rows)}): print fewer ids per sheet",
                         field="--ids")
    img = np.full((ph, pw), 255, np.uint8)
    for k, mid in enumerate(ids):
        r, c = divmod(k, cols)
        x = margin + c * (cell + gap)
        y = margin + r * (cell + label + gap)
        mk = cv2.aruco.generateImageMarker(d, int(mid), side, borderBits=1)
        img[y + quiet: y + quiet + side, x + quiet: x + quiet + side] = mk
        # a thin grey cut line around the quiet zone
        cv2.rectangle(img, (x, y), (x + cell - 1, y + cell - 1), 180, 1)
        text = f"id {mid}  {size_mm:g} mm  {dictionary}"
        scale = label * 0.6 / 22.0
        cv2.putText(img, text, (x, y + cell + int(label * 0.8)), cv2.FONT_HERSHEY_SIMPLEX,
                    scale, 0, max(1, int(scale * 2)), cv2.LINE_AA)
    return img


def write_sheet(path: Path, img: np.ndarray, dpi: int) -> None:
    """PNG or PDF, by the file's suffix, carrying the DPI so it prints at true size."""
    from PIL import Image

    suffix = path.suffix.lower()
    pil = Image.fromarray(img, mode="L")
    if suffix == ".png":
        pil.save(path, format="PNG", dpi=(dpi, dpi))
    elif suffix == ".pdf":
        pil.save(path, format="PDF", resolution=float(dpi))
    else:
        raise InputError(f"a marker sheet is .png or .pdf, not '{path.suffix}'", file=str(path))
