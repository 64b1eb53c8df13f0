"""Fuzzy matching of noun phrases to the ids of one scene.

Each scene id is known by its human description (spec §4 `descriptions`) and by the id read
as words; a phrase scores by weighted token similarity (synonyms, plurals, typos) with its
head noun counting double. The Execution Reliability assessor uses the same matching to
suggest the closest id for an ungrounded one.
"""

from __future__ import annotations

from dataclasses import dataclass

from mango.generation.models import SceneTask
from mango.generation.offline.lexicon import LEXICON, head_noun, singular, token_sim, tokens_of


@dataclass(frozen=True)
class EntityNames:
    """How one scene id may be called: its description and its id read as words."""

    entity: str
    names: tuple[tuple[str, ...], ...]
    heads: tuple[str, ...]


def _match_score(phrase: list[str], name: tuple[str, ...], name_head: str | None) -> float:
    content = [w for w in phrase if w not in LEXICON.stop]
    if not content or not name:
        return 0.0
    head = head_noun(phrase)
    weights = [2.0 if w == head else 1.0 for w in content]
    best = [max(token_sim(w, n) for n in name) for w in content]
    recall = sum(w * b for w, b in zip(weights, best, strict=True)) / sum(weights)
    covered = [max(token_sim(n, w) for w in content) for n in name]
    precision = sum(covered) / len(covered)
    if recall == 0 or precision == 0:
        return 0.0
    score = 2 * precision * recall / (precision + recall)
    if head is not None and max(token_sim(head, n) for n in name) == 0.0:
        score *= 0.5  # "the basket" must not ground to a thing merely *in* a basket
    if name_head is not None and head is not None and token_sim(head, name_head) >= 0.9:
        score = min(1.0, score + 0.05)
    return score


class Grounder:
    """Fuzzy matching of noun phrases to the ids of one scene."""

    def __init__(self, scene: SceneTask) -> None:
        self.scene = scene
        self.entities = scene.entities()
        self._parents = {e: self._longest_prefix(e) for e in self.entities}
        self._names: dict[str, EntityNames] = {}
        for ent in self.entities:
            names: list[tuple[str, ...]] = []
            heads: list[str] = []
            desc = scene.descriptions.get(ent)
            if desc:
                words = tokens_of(desc)
                names.append(tuple(w for w in words if w not in LEXICON.stop))
                h = head_noun(words)
                if h:
                    heads.append(h)
            else:
                part = self._part_name(ent)
                if part is not None:
                    names.append(part[0])
                    heads.append(part[1])
            id_words = tuple(tokens_of(ent))
            names.append(id_words)
            if id_words:
                heads.append(id_words[-1])
            self._names[ent] = EntityNames(ent, tuple(n for n in names if n), tuple(heads))

    def _longest_prefix(self, ent: str) -> str | None:
        best = None
        for other in self.entities:
            if other != ent and ent.startswith(other + "_") and (
                best is None or len(other) > len(best)
            ):
                best = other
        return best

    def _part_name(self, ent: str) -> tuple[tuple[str, ...], str] | None:
        """How people call an undescribed part of a fixture, read from the id structure and the
        owner's kind: a closable fixture's `top_region` is its "top drawer", a `*_contain_region`
        a compartment, a `top_side` its top ("the top drawer of the cabinet")."""
        owner = self._parents.get(ent)
        if owner is None or not (self.kind(ent) == "region" or ent.endswith(("_region", "_side"))):
            return None
        suffix = [w for w in tokens_of(ent[len(owner) + 1 :]) if w != "init"]
        desc = self.scene.descriptions.get(owner)
        owner_words = [w for w in tokens_of(desc or owner) if w not in LEXICON.stop]
        owner_heads = {singular(w) for w in (head_noun(owner_words),) if w}
        if suffix and suffix[-1] == "side":
            return (*suffix, *owner_words), suffix[0]
        inner = set(suffix) & LEXICON.inner_part_words
        if suffix and suffix[-1] == "region" and not inner and owner_heads & LEXICON.closable:
            return (*suffix[:-1], "drawer", *owner_words), "drawer"
        has_side = any(e.startswith(owner + "_") and e.endswith("_side") for e in self.entities)
        if inner or (suffix and suffix[-1] == "region" and has_side):
            # a fixture with a top side has its regions inside it: a shelf's layers
            return (*suffix, "compartment", *owner_words), "compartment"
        return (*suffix, *owner_words), suffix[-1] if suffix else "region"

    # -- kinds and structure ------------------------------------------------------------

    def kind(self, ent: str) -> str | None:
        k = self.scene.kind_of(ent)
        if k is None and ent.endswith("_region"):
            return "region"
        return k

    def is_movable(self, ent: str) -> bool:
        return ent in self.scene.objects or self.kind(ent) == "object"

    def is_region(self, ent: str) -> bool:
        return self.kind(ent) == "region" or ent.endswith("_region")

    def parent(self, ent: str) -> str | None:
        """The longest other id that prefixes this one (basket_1 for basket_1_contain_region)."""
        return self._parents.get(ent)

    def is_inner(self, ent: str) -> bool:
        """A place things go *in* (a drawer, a compartment, a basket's inside), not on."""
        return not ent.endswith("_side") and bool(self.words(ent) & LEXICON.inner_part_words)

    def side_of(self, ent: str) -> str | None:
        """The top side of the fixture `ent` is (or is a part of), if the scene has one."""
        node: str | None = ent
        while node is not None:
            side = next((c for c in self.children(node) if c.endswith("_side")), None)
            if side is not None:
                return side
            node = self.parent(node)
        return None

    def position(self, ent: str) -> tuple[float, float] | None:
        """The table-frame position the scene's layout gives, else the owner's or support's."""
        seen: set[str] = set()
        node: str | None = ent
        while node is not None and node not in seen:
            seen.add(node)
            entry = self.scene.layout.get(node)
            if entry is not None and entry.position is not None:
                return entry.position
            node = self.parent(node)
        return None

    def support(self, ent: str) -> str | None:
        """What the layout says the entity starts on or in."""
        entry = self.scene.layout.get(ent)
        return entry.on if entry is not None else None

    def children(self, ent: str) -> list[str]:
        return [e for e in self.entities if e != ent and self.parent(e) == ent]

    def words(self, ent: str) -> set[str]:
        out: set[str] = set()
        for n in self._names[ent].names:
            out.update(n)
        return out

    def head_words(self, ent: str) -> tuple[str, ...]:
        return self._names[ent].heads

    def is_closable(self, ent: str) -> bool:
        if self.kind(ent) == "joint":
            return True
        return any(singular(h) in LEXICON.closable for h in self.head_words(ent))

    def is_switchable(self, ent: str) -> bool:
        if self.kind(ent) == "device":
            return True
        return any(singular(h) in LEXICON.switchable for h in self.head_words(ent))

    # -- matching -----------------------------------------------------------------------

    def score(self, phrase: list[str], ent: str) -> float:
        names = self._names[ent]
        best = max(
            (_match_score(phrase, n, names.heads[i] if i < len(names.heads) else None)
             for i, n in enumerate(names.names)),
            default=0.0,
        )
        head = head_noun(phrase)
        if head is not None and names.heads and all(
                token_sim(head, h) == 0.0 for h in names.heads) and any(
                token_sim(w, h) == 1.0 for w in phrase if w != head for h in names.heads):
            best *= 0.8  # "the top of the drawer" is a top, not a drawer
        return best

    def rank(
        self, phrase: list[str], candidates: list[str] | None = None
    ) -> list[tuple[str, float]]:
        pool = candidates if candidates is not None else self.entities
        scored = [(e, self.score(phrase, e)) for e in pool]
        return sorted(scored, key=lambda es: -es[1])
