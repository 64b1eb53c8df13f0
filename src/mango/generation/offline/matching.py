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


def _unpackaged(phrase: list[str], name: tuple[str, ...]) -> list[str]:
    """The phrase less a packaging noun the name does not have, when another word is left to
    be the head: "the ketchup bottle", "the carton of milk", "the box of butter"."""
    packaging = LEXICON.grammar["packaging"]
    kept = [w for w in phrase if not (singular(w) in packaging
                                      and max(token_sim(w, n) for n in name) == 0.0)]
    if kept == phrase or not any(w not in LEXICON.stop for w in kept):
        return phrase
    return kept


def _match_score(phrase: list[str], name: tuple[str, ...], name_head: str | None,
                 exact: frozenset[str] = frozenset(),
                 exact_part: frozenset[str] = frozenset()) -> float:
    """F-measure of the phrase's words against one name; a word in `exact` (one some other
    thing is called by, word for word) counts half where it matches only a synonym here ("the
    sauce" is the tomato sauce before it is the ketchup), and the head word, if in `exact_part` (one
    any candidate, a part included, is called by), where it matches only a weak synonym ("the
    drawer" is a drawer before it is a stove's cook region)."""
    if name:
        phrase = _unpackaged(phrase, name)
    content = [w for w in phrase if w not in LEXICON.stop]
    if not content or not name:
        return 0.0
    head = head_noun(phrase)

    def sim(w: str, n: str) -> float:
        s = token_sim(w, n)
        if s < 1.0 and (singular(w) in exact or (
                s <= 0.6 and w == head and singular(w) in exact_part)):
            return s * 0.5
        return s

    weights = [2.0 if w == head else 1.0 for w in content]
    best = [max(sim(w, n) for n in name) for w in content]
    recall = sum(w * b for w, b in zip(weights, best, strict=True)) / sum(weights)
    covered = [max(sim(w, n) for w in content) for n in name]
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
        # qualified kind names the reader knows (two words or more: "bbq sauce", "black
        # bowl"): the benchmark's catalogue and this scene's own descriptions
        said_kinds = [*LEXICON.grammar["known_kinds"], *scene.descriptions.values()]
        kinds = {tuple(w for w in tokens_of(k) if w not in LEXICON.stop) for k in said_kinds}
        self._kinds = tuple(k for k in kinds if len(k) > 1)

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

    def contradiction(self, phrase: list[str], ent: str) -> str | None:
        """The word of a phrase that says `ent` is some other thing, if one does.

        Fuzzy matching lets a phrase match on its head alone ("the sauce"); a modifier the
        entity's names lack must then not be dropped silently where it names what the entity
        is not. A modifier contradicts a described entity when (1) it is a colour and the
        entity's description gives another colour ("the blue bowl" of a black bowl), or (2)
        the phrase says a qualified kind name the reader knows -- the benchmark's catalogue or
        another of the scene's descriptions, head word for head word -- that the entity's
        names do not cover ("the bbq sauce" of a tomato sauce or a ketchup). A modifier of
        neither sort ("the small plate", "the coffee pot") is one the scene does not describe,
        and contradicts nothing."""
        desc = self.scene.descriptions.get(ent)
        head = head_noun(phrase)
        if not desc or head is None:
            return None  # an undescribed part is known by its id's words alone
        own = [w for name in self._names[ent].names for w in name]

        def covered(word: str) -> bool:
            return any(token_sim(word, n) >= 0.9 for n in own)

        content = [w for w in phrase if w not in LEXICON.stop]
        said = [w for w in content if w != head and not covered(w)]
        if not said:
            return None
        colours = LEXICON.grammar["colours"]
        if any(w in colours for w in tokens_of(desc)):
            colour = next((w for w in said if w in colours), None)
            if colour is not None:
                return colour
        for kind in self._kinds:
            if singular(kind[-1]) != singular(head) or all(covered(k) for k in kind):
                continue
            if all(any(token_sim(k, w) >= 0.9 for w in content) for k in kind[:-1]):
                return next(w for w in said if any(token_sim(k, w) >= 0.9 for k in kind))
        return None

    def score(self, phrase: list[str], ent: str, exact: frozenset[str] = frozenset(),
              exact_part: frozenset[str] = frozenset()) -> float:
        names = self._names[ent]
        best = max(
            (_match_score(phrase, n, names.heads[i] if i < len(names.heads) else None, exact,
                          exact_part)
             for i, n in enumerate(names.names)),
            default=0.0,
        )
        head = head_noun(phrase)
        if head is not None and names.heads and all(
                token_sim(head, h) == 0.0 for h in names.heads) and any(
                token_sim(w, h) == 1.0 for w in phrase if w != head for h in names.heads):
            best *= 0.8  # "the top of the drawer" is a top, not a drawer
        if head is not None and singular(head) in LEXICON.inner_part_words and \
                self.is_region(ent) and not self.is_inner(ent) and all(
                token_sim(head, n) < 0.9 for name in names.names for n in name):
            best *= 0.5  # "the drawer" is no stove's cook region, however like a part
        return best

    def rank(
        self, phrase: list[str], candidates: list[str] | None = None
    ) -> list[tuple[str, float]]:
        pool = candidates if candidates is not None else self.entities
        said = {singular(w) for w in phrase if w not in LEXICON.stop}
        called = {e: {singular(n) for name in self._names[e].names for n in name} for e in pool}
        exact = frozenset(w for w in said if any(  # things, not regions named after them
            w in called[e] for e in pool if not self.is_region(e)))
        exact_part = frozenset(w for w in said if any(w in called[e] for e in pool))
        scored = [(e, self.score(phrase, e, exact, exact_part)) for e in pool]
        return sorted(scored, key=lambda es: -es[1])
