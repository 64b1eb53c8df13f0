"""What a noun phrase refers to beyond its name: quantifiers, exceptions, locators, ordinals.

A phrase is split into its name ("the black bowls"), a quantifier ("all", "both", "two"),
exceptions ("except the red one"), locating phrases ("next to the ramekin", "between the plate
and the ramekin", "on the cookie box", "from the table center") and spatial modifiers ("left",
"in the middle", "the second from the left", "closest to the plate"). The name gives the
candidates (the matcher's best, tied); the rest chooses among them from the scene's `layout`
(positions and what each entity starts on), so scenes whose alike entities carry no telling
description ("black bowl", "black bowl") can still be told apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mango.generation.offline.lexicon import LEXICON
from mango.generation.offline.matching import Grounder


@dataclass
class Reference:
    """A noun phrase taken apart (words as the instruction says them)."""

    name: list[str]
    universal: bool = False  # all, every, each
    count: int | None = None  # both, two, three
    exceptions: list[list[str]] = field(default_factory=list)
    locators: list[tuple[str, list[str]]] = field(default_factory=list)
    modifiers: list[str] = field(default_factory=list)  # left, middle, ...
    ordinal: tuple[int, str] | None = None  # (2, "left"): the second from the left
    superlative: tuple[str, list[str]] | None = None  # ("near", landmark words)

    @property
    def selects_many(self) -> bool:
        return self.universal or (self.count is not None and self.count > 1)


def _match_at(words: list[str], i: int, phrases: tuple[tuple[tuple[str, ...], str], ...]
              ) -> tuple[str, int] | None:
    for phrase, rel in phrases:
        if tuple(words[i : i + len(phrase)]) == phrase:
            return rel, len(phrase)
    return None


def _only_modifiers(words: list[str]) -> list[str] | None:
    content = [w for w in words if w not in LEXICON.stop]
    if content and all(w in LEXICON.spatial_words or w == "side" for w in content):
        return [w for w in content if w != "side"]
    return None


def analyse(words: list[str]) -> Reference:
    """Split a noun phrase's words into name, quantifier, exceptions, locators, modifiers."""
    base, exc = words, []
    for i, w in enumerate(words):
        if w in LEXICON.exceptions and i > 0:
            base, exc = words[:i], words[i + 1 :]
            break
    ref = Reference(name=[])
    if exc:
        part: list[str] = []
        for w in exc:
            if w in {"and", ","}:
                if part:
                    ref.exceptions.append(part)
                part = []
            else:
                part.append(w)
        if part:
            ref.exceptions.append(part)
    i = 0
    name: list[str] = []
    while i < len(base):
        w = base[i]
        if w in LEXICON.superlatives:
            j = i + 1
            if j < len(base) and base[j] not in {"to", "from"} and \
                    base[j] not in LEXICON.determiners:
                # said before the noun: "the closest bowl to the plate", "the farther butter
                # from the robot"; with no landmark ("the nearest bowl") it names none, and
                # the name alone must tell
                k = next((n for n in range(j, len(base)) if base[n] in {"to", "from"}), None)
                name.extend(base[j:k])
                if k is not None:
                    ref.superlative = (LEXICON.superlatives[w], base[k + 1 :])
                break
            if j < len(base) and base[j] in {"to", "from"}:
                j += 1
            ref.superlative = (LEXICON.superlatives[w], base[j:])
            break
        if w in LEXICON.ordinals:
            direction = next((x for x in base[i + 1 :] if x in LEXICON.layout_directions), None)
            if direction is not None:
                nth = LEXICON.ordinals[w]
                d = base.index(direction, i + 1)
                said_at = [x for x in base[i + 1 : d] if x not in LEXICON.determiners][-1:]
                if nth == -1 and said_at and said_at[0] in {"on", "at", "to"}:
                    nth = 1  # "the last mug on the right" is the one furthest right (counted
                    # from, "the last one from the right", it would be the furthest left)
                ref.ordinal = (nth, direction)
                rest = base[i + 1 :]
                k = next((n for n, x in enumerate(rest) if x in LEXICON.source_words), None)
                base = base[: i + 1] + (rest[:k] if k is not None else
                                        [x for x in rest if x != direction])
                i += 1
                continue
        m = _match_at(base, i, LEXICON.locators) if name else None
        if m is not None:
            rel, n = m
            j = i + n
            tail: list[str] = []
            while j < len(base):
                nxt = _match_at(base, j, LEXICON.locators) if tail else None
                if nxt is not None and nxt[0] != "between" and not (
                        rel == "between" and base[j] in {"and", ","}):
                    break
                tail.append(base[j])
                j += 1
            heights = [x for x in tail if x not in LEXICON.stop]
            mods = _only_modifiers(tail)
            if heights and all(x in LEXICON.grammar["part_words"] for x in heights):
                name.extend(heights)  # "the drawer at the bottom" is the bottom drawer
            elif mods is not None:
                ref.modifiers.extend(mods)  # "on the left", "in the middle", "at the back"
            elif any(x not in LEXICON.stop for x in tail):
                ref.locators.append((rel, tail))
            i = j
            continue
        if w in LEXICON.universal:
            ref.universal = True
        elif w in LEXICON.numbers:
            ref.count = LEXICON.numbers[w]
        if w in LEXICON.spatial_words:
            ref.modifiers.append(w)
        name.append(w)
        i += 1
    ref.name = name
    return ref


def _main_axis(pos: dict[str, tuple[float, float]]) -> tuple[int, float]:
    """The layout axis (0 = x, 1 = y) the entities spread along most, and that spread."""
    spread = [max(p[a] for p in pos.values()) - min(p[a] for p in pos.values()) for a in (0, 1)]
    axis = 0 if spread[0] >= spread[1] else 1
    return axis, spread[axis]


def _distance(a: tuple[float, float], b: tuple[float, float]) -> float:
    return math.hypot(a[0] - b[0], a[1] - b[1])


class Chooser:
    """Chooses among alike candidates with locators and modifiers, from the scene's layout."""

    def __init__(self, g: Grounder) -> None:
        self.g = g

    def positions(self, ids: list[str]) -> dict[str, tuple[float, float]] | None:
        out = {e: self.g.position(e) for e in ids}
        if any(p is None for p in out.values()):
            return None
        return {e: p for e, p in out.items() if p is not None}

    def supported_by(self, ent: str, support: str) -> bool:
        """Whether the layout puts `ent` on or in `support`, one of its parts, or (when the
        phrase names a part: "the bowl on the stove's burner") the whole it belongs to."""
        node = self.g.support(ent)
        if node is None:
            return False
        if support.startswith(node + "_") and self.g.is_region(support):
            return True
        seen: set[str] = set()
        while node is not None and node not in seen:
            seen.add(node)
            if node == support or node.startswith(support + "_"):
                return True
            node = self.g.parent(node) if self.g.is_region(node) else None
        return False

    def locate(self, cands: list[str], rel: str, landmarks: list[str]) -> list[str] | None:
        """Candidates the locator keeps; None when the layout cannot tell."""
        if rel in {"on", "in", "from", "at", "on_top"}:
            kept = [c for c in cands if any(self.supported_by(c, s) for s in landmarks)]
            rel = "on" if rel == "on_top" else rel  # "the bowl on top of the cabinet"
            if rel in {"on", "in"} and len(kept) > 1:
                # "the bowl in the top layer", not the one on the top: the layout says which
                same = [c for c in kept if (e := self.g.scene.layout.get(c)) and e.relation == rel]
                kept = same or kept
            return kept or None
        pos = self.positions([*cands, *landmarks])
        if pos is None:
            return None
        if rel == "between" and len(landmarks) == 2:
            a, b = pos[landmarks[0]], pos[landmarks[1]]
            mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
            return [min(cands, key=lambda c: _distance(pos[c], mid))]
        if rel in {"near", "far"} and landmarks:
            others = [c for c in cands if c not in landmarks]
            if not others:
                return None
            dist = {c: min(_distance(pos[c], pos[lm]) for lm in landmarks) for c in others}
            pick = min if rel == "near" else max
            return [pick(others, key=lambda c: dist[c])]
        return None

    def by_modifiers(self, cands: list[str], modifiers: list[str],
                     ordinal: tuple[int, str] | None) -> list[str] | None:
        """The candidate the spatial words pick; None when the layout cannot tell."""
        pos = self.positions(cands)
        if pos is None or len(cands) < 2:
            return None
        if ordinal is not None:
            n, direction = ordinal
            dx, dy = LEXICON.layout_directions[direction]
            order = sorted(cands, key=lambda c: pos[c][0] * dx + pos[c][1] * dy, reverse=True)
            k = n - 1 if n > 0 else len(order) + n
            return [order[k]] if 0 <= k < len(order) else None
        chosen = list(cands)
        for mod in modifiers:
            if mod in LEXICON.middle_words:
                axis, _ = _main_axis({c: pos[c] for c in chosen})
                order = sorted(chosen, key=lambda c: pos[c][axis])
                chosen = [order[len(order) // 2]]
            elif mod in LEXICON.layout_directions:
                dx, dy = LEXICON.layout_directions[mod]
                chosen = [max(chosen, key=lambda c: pos[c][0] * dx + pos[c][1] * dy)]
        return chosen if chosen != cands else None


def layout_words(g: Grounder, descriptions: dict[str, str]) -> dict[str, str]:
    """Entities that share a description ("black bowl", "black bowl") → how people tell
    them apart by the layout ("the front black bowl"): the two ends of the axis they spread
    along most, and the one between them when there are three. A small model cannot read
    "left" off table-frame coordinates; the words come from the lexicon's directions, the
    ones the reader resolves the same phrases with."""
    groups: dict[str, list[str]] = {}
    for ent, desc in descriptions.items():
        if desc.strip():
            groups.setdefault(" ".join(desc.lower().split()), []).append(ent)
    word = {tuple(v): w for w, v in reversed(LEXICON.layout_directions.items())}
    middle = "middle" if "middle" in LEXICON.middle_words else min(LEXICON.middle_words)
    chooser = Chooser(g)
    out: dict[str, str] = {}
    for desc, ids in groups.items():
        pos = chooser.positions(ids) if len(ids) > 1 else None
        if pos is None:
            continue
        axis, spread = _main_axis(pos)
        if spread < 0.02:  # stacked or coincident: the layout cannot tell
            continue
        ahead = (1, 0) if axis == 0 else (0, 1)
        order = sorted(ids, key=lambda e: pos[e][axis])
        ends = {order[0]: word[(-ahead[0], -ahead[1])], order[-1]: word[ahead]}
        if len(order) == 3:
            ends[order[1]] = middle
        out.update({e: f"the {w} {desc}" for e, w in ends.items()})
    return out
