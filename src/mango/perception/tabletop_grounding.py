"""Phrases -> tabletop clusters, from what geometry and colour can say.

A phrase is read as colour words, a category noun (mapped to the shape classes
`tabletop._shape_class` gives), size words and spatial words in the robot's base frame
(x forward, y = the robot's left, REP 103), read the way LIBERO's scene language uses them:
"left"/"right" as the front camera (a person facing the robot) sees the table, so "left" is
the robot's right, -y (LIBERO's `libero_10` BDDLs: `plate_1`, "the left plate", starts in
the plate's `left_region` at smaller y; config/scenes/README.md); "front" means nearer the
robot (LIBERO's desk caddy: `front_contain_region` sits at -x of its `back_contain_region`,
config/scenes/libero10_book_caddy.yaml). Each cluster gets a score from colour and category;
size and spatial words then choose among the best-scoring clusters.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from mango.perception.tabletop_pipeline import COLOUR_WORDS, TabletopCluster

# category noun -> the shape classes such a thing gets from the pipeline (best first)
CATEGORY_SHAPES: dict[str, tuple[str, ...]] = {
    "plate": ("flat",), "tray": ("flat",), "dish": ("flat", "container"),
    "book": ("flat", "boxy"),
    "bowl": ("container", "boxy", "round"), "pan": ("container", "boxy", "flat"),
    "mug": ("round",), "cup": ("round",), "can": ("round",), "soup": ("round",),
    "sauce": ("round",), "bottle": ("round",), "pot": ("round",), "jar": ("round",),
    "box": ("boxy",), "butter": ("boxy",), "cheese": ("boxy",), "pudding": ("boxy",),
    "ketchup": ("boxy",), "carton": ("boxy",),
    "basket": ("large", "container"), "caddy": ("large", "container"),
    "cabinet": ("large",), "drawer": ("large",), "microwave": ("large",), "stove": ("large",),
    "object": (), "thing": (), "item": (),
}
SIZE_WORDS = {"big", "biggest", "large", "largest", "small", "smallest", "little", "tall",
              "tallest", "short", "shortest"}
SPATIAL_WORDS = {"left", "leftmost", "right", "rightmost", "front", "back", "rear", "nearest",
                 "closest", "farthest", "furthest", "middle", "center", "centre"}
_RELATIONS = ("next to", "near", "beside", "by")
_STOP = {"the", "a", "an", "of", "one", "and", "on", "in", "at", "to", "with"}
_ACHROMATIC = {"white", "grey", "black"}
_PLURAL = {"dishes": "dish", "boxes": "box"}


@dataclass(frozen=True)
class ParsedPhrase:
    colours: tuple[str, ...]
    category: str | None
    sizes: tuple[str, ...]
    spatial: tuple[str, ...]
    reference: str | None  # "next to the plate" -> "the plate"
    unknown: tuple[str, ...]  # words none of the above

    @property
    def empty(self) -> bool:
        return not (self.colours or self.category or self.sizes or self.spatial
                    or self.reference)


def parse_phrase(phrase: str) -> ParsedPhrase:
    """Split a referring phrase into the word groups the tabletop grounder uses."""
    text = re.sub(r"[^a-z0-9 ]+", " ", phrase.lower())
    reference = None
    for rel in _RELATIONS:
        m = re.search(rf"\b{rel}\b", text)
        if m and text[m.end():].strip():
            reference = text[m.end():].strip()
            text = text[: m.start()]
            break
    colours, sizes, spatial, unknown = [], [], [], []
    category = None
    for w in text.split():
        w = _PLURAL.get(w, w)
        if w in _STOP:
            continue
        if w in ("gray",):
            w = "grey"
        if w in COLOUR_WORDS:
            colours.append(w)
        elif w in SIZE_WORDS:
            sizes.append(w)
        elif w in SPATIAL_WORDS:
            spatial.append(w)
        elif w in CATEGORY_SHAPES or w.rstrip("s") in CATEGORY_SHAPES:
            category = w if w in CATEGORY_SHAPES else w.rstrip("s")  # the last noun is the head
        else:
            unknown.append(w)
    return ParsedPhrase(tuple(colours), category, tuple(sizes), tuple(spatial), reference,
                        tuple(unknown))


@dataclass(frozen=True)
class Grounded:
    cluster: TabletopCluster
    score: float


def ground_phrase(
    phrase: str,
    clusters: list[TabletopCluster],
    base_position: np.ndarray,
    base_yaw: float = 0.0,
) -> tuple[list[Grounded], str]:
    """Clusters a phrase may mean, best first, and a message when there are none."""
    parsed = parse_phrase(phrase)
    if parsed.empty:
        return [], (f"'{phrase}': no colour, size, shape or place word the tabletop backend "
                    f"knows (unknown: {', '.join(parsed.unknown) or 'none'})")
    if not clusters:
        return [], f"'{phrase}': nothing stands on the table"
    scores = np.array([_attribute_score(parsed, c) for c in clusters])
    ref_xy = None
    if parsed.reference is not None:
        ref, msg = ground_phrase(parsed.reference, clusters, base_position, base_yaw)
        if not ref:
            return [], f"'{phrase}': the reference {msg}"
        ref_xy = ref[0].cluster.centroid[:2]
        scores[ref[0].cluster.index] = 0.0  # a thing is not next to itself
    best = float(scores.max())
    if best <= 0.0:
        return [], f"'{phrase}': no cluster fits"
    order = list(np.argsort(-scores, kind="stable"))
    # size and place words choose among the clusters that fit the attributes about as well
    pool = [i for i in order if scores[i] >= 0.6 * best]
    c = math.cos(base_yaw)
    s = math.sin(base_yaw)

    def base_xy(i: int) -> tuple[float, float]:
        d = clusters[i].centroid[:2] - np.asarray(base_position, float)[:2]
        return float(c * d[0] + s * d[1]), float(-s * d[0] + c * d[1])

    keys: list[tuple[int, float]] = []  # (sign, value) to sort the pool by, first wins
    for w in parsed.sizes:
        if w in ("big", "biggest", "large", "largest"):
            keys.append((-1, 0))
        elif w in ("small", "smallest", "little"):
            keys.append((1, 0))
        elif w in ("tall", "tallest"):
            keys.append((-1, 1))
        else:
            keys.append((1, 1))
    ranked = pool

    def value(i: int, what: int) -> float:
        cl = clusters[i]
        if what == 0:  # "big": how far it spreads, as a person judges a plate bigger than a mug
            return max(cl.size[0], cl.size[1])
        if what == 1:
            return cl.height
        x, y = base_xy(i)
        return {2: y, 3: x, 4: math.hypot(x, y), 5: abs(y)}[what]

    for w in parsed.spatial:
        if w in ("left", "leftmost"):  # the viewer's left: smallest y (see the docstring)
            keys.append((1, 2))
        elif w in ("right", "rightmost"):
            keys.append((-1, 2))
        elif w == "front":
            keys.append((1, 3))
        elif w in ("back", "rear"):
            keys.append((-1, 3))
        elif w in ("nearest", "closest"):
            keys.append((1, 4))
        elif w in ("farthest", "furthest"):
            keys.append((-1, 4))
        else:
            keys.append((1, 5))
    if ref_xy is not None:
        ranked = sorted(pool, key=lambda i: float(
            np.linalg.norm(clusters[i].centroid[:2] - ref_xy)))
    if keys:
        sign, what = keys[0]
        ranked = sorted(ranked, key=lambda i: sign * value(i, what))
    rest = [i for i in order if i not in ranked]
    out = [Grounded(clusters[i], float(scores[i]) * (1.0 if k == 0 else 0.8))
           for k, i in enumerate(ranked)]
    out += [Grounded(clusters[i], float(scores[i]) * 0.5) for i in rest]
    return [g for g in out if g.score > 0.0], ""


def _attribute_score(p: ParsedPhrase, c: TabletopCluster) -> float:
    score = 1.0
    if p.colours:
        # a hue word counts double: shading and highlights put white, grey and black on
        # anything, a hue only on what has it
        fits = [min(1.0, c.colours.get(w, 0.0) / 0.3) for w in p.colours]
        weights = [1.0 if w in _ACHROMATIC else 2.0 for w in p.colours]
        score *= max(0.05, float(np.average(fits, weights=weights)))
    if p.category is not None:
        shapes = CATEGORY_SHAPES[p.category]
        if shapes:
            score *= 1.0 if c.shape == shapes[0] else 0.7 if c.shape in shapes else 0.25
    return score


def cluster_label(c: TabletopCluster) -> str:
    """What the backend calls a cluster: its colour and shape words."""
    return f"{c.colour} {c.shape} object" if c.shape != "object" else f"{c.colour} object"
