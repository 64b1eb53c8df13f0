"""Grounding an instruction on a scene: clauses become goals over scene ids.

Noun phrases are matched to ids (`matching.Grounder`), with coordination ("both X and
Y"), plurals ("both moka pots") and pronouns ("it") resolved; containers become their
regions where the relation needs one ("in the basket" -> `basket_1_contain_region`), and a
spatial relation becomes the scene region that names the spot where there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mango.generation.models import MAX_INSTRUCTION_CHARS, SceneTask, instruction_problem
from mango.generation.offline.lexicon import LEXICON, head_noun, singular, token_sim, tokens_of
from mango.generation.offline.matching import Grounder
from mango.generation.offline.parsing import (
    MENTION,
    NounPhrase,
    parse_instruction,
    parse_noun_phrase,
)
from mango.generation.offline.references import Chooser, Reference, analyse

_ACCEPT = 0.45


@dataclass
class Goal:
    """One grounded sub-goal of an instruction."""

    kind: str  # "pick_place", "pick", "push", "open", "close", "turn_on", "turn_off"
    obj: str
    relation: str | None = None  # predicate-level: in, on, right_of, left_of, near
    target: str | None = None
    source: str | None = None
    after_previous: bool = False
    text: str = ""
    # a spatial relation said in words ("to the right of" the landmark), kept when the
    # target became a scene region, so a planner without a region skill can fall back
    spatial: str | None = None
    landmark: str | None = None


@dataclass
class ParseResult:
    instruction: str
    goals: list[Goal] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # what the instruction's phrases name, as read: a thing's phrase -> its ids, a place's
    # phrase ("on the left plate") -> the predicate and id it becomes ("on plate_1"); a
    # language model is shown this so it need not ground references itself
    phrases: dict[str, str] = field(default_factory=dict)

    @property
    def read_in_full(self) -> bool:
        """Goals and no problem: what the schema may hold a model to."""
        return bool(self.goals) and not self.problems


# how a place's relation reads in the phrase that names it
_PLACE_WORDS = {"on_top": "on top of", "right_of": "to the right of",
                "left_of": "to the left of", "front_of": "in front of", "near": "next to"}


def _one_as_head(words: list[str]) -> int | None:
    """Where "one"/"ones" stands for a noun ("the right one", "the one in the middle", "the
    one that is on the plate"), not a number ("one bowl"); never one in an exception ("the
    plate except the one on the left": that one is the plate, `_ground_exception` says so)."""
    for i, w in enumerate(words):
        if w in LEXICON.exceptions:
            return None
        if w in {"one", "ones"} and i > 0:
            nxt = words[i + 1] if i + 1 < len(words) else None
            if nxt is None or nxt in {"that", "which", "at", "from", "of", "with", "_s"} or any(
                    tuple(words[i + 1 : i + 1 + len(p)]) == p for p, _ in LEXICON.locators):
                return i
    return None


def _opposite(direction: str) -> str:
    """The layout word for the other way ("left" -> "right", "back" -> "front")."""
    vec = LEXICON.layout_directions[direction]
    return next(d for d, v in LEXICON.layout_directions.items()
                if v == (-vec[0], -vec[1]))


def _colours_of_one(words: list[str]) -> bool:
    """"the yellow and white coffee cup": colour words joined before one noun, the second
    without a determiner of its own, name one thing of two colours (not "the red and the
    white mug", two mugs, nor "the red and white mugs"), whether or not the scene's name
    says every other word."""
    colours = LEXICON.grammar["colours"]
    if words and singular(words[-1]) != words[-1]:
        return False  # "the red and white mugs": a mug of each
    for i, w in enumerate(words):
        if w == "and" and 0 < i < len(words) - 1:
            before = [x for x in words[:i] if x not in LEXICON.stop]
            return bool(before) and all(x in colours for x in before) and \
                words[i + 1] not in LEXICON.determiners
    return False


def _every_thing(ref: Reference) -> bool:
    """"every item", "everything", "the objects": a phrase that names no kind, said of all
    (every movable object the rest of the phrase keeps)."""
    if not all(w in LEXICON.stop for w in ref.name):
        return False
    return ref.universal or (bool(ref.name) and singular(ref.name[-1]) != ref.name[-1])


class InstructionGrounder:
    """Turns an instruction into grounded goals on one scene."""

    def __init__(self, scene: SceneTask) -> None:
        self.g = Grounder(scene)
        self.mentioned: list[str] = []
        self.problems: list[str] = []
        self._ambiguous = False
        # while a target is grounded: whether its relation wants a place to put things in
        # (True), on (False), or either (None); it breaks ties between a fixture's parts
        self._inner_wanted: bool | None = None
        self._clause_order = 0
        # the head noun last said for each role: "the right one" is the right plate
        self._last_head: dict[str, str] = {}
        # the things last said together ("the white mug and the red mug"), in the order
        # said: what "the former" and "the latter" choose from
        self._group: list[str] = []

    def _mention(self, *ents: str | None) -> None:
        for e in ents:
            if e:
                self.mentioned.append(e)

    def _resolve_pronoun(self, role: str, exclude: set[str]) -> str | None:
        for ent in reversed(self.mentioned):
            if ent in exclude:
                continue
            if role == "object" and self.g.is_movable(ent):
                return ent
            if role == "target" and not (self.g.is_movable(ent) and ent in exclude):
                return ent
            if role == "closable":
                node: str | None = ent
                while node is not None:
                    if self.g.is_closable(node):
                        return node
                    node = self.g.parent(node)
            if role == "switchable" and self.g.is_switchable(ent):
                return ent
        return None

    def _can(self, role: str, ent: str) -> bool:
        """Whether `ent` (or the fixture it is a part of) opens and closes / switches."""
        node: str | None = ent
        while node is not None:
            if (self.g.is_closable(node) if role == "closable" else self.g.is_switchable(node)):
                return True
            node = self.g.parent(node)
        return False

    def _part_said(self, ent: str, words: list[str]) -> str:
        """"the lower shelf", "the upper drawer": where the phrase matched the whole fixture,
        the part inside it its height word names ("the top of the cabinet" is its top side,
        left as it is)."""
        heights = {w for i, w in enumerate(words) if w in LEXICON.grammar["part_words"]
                   and i + 1 < len(words) and words[i + 1] != "of"}
        if not heights or self.g.is_region(ent) or self.g.is_movable(ent):
            return ent
        prefer = set(heights).union(*(g for g in LEXICON.synonyms if heights & g))
        return self._child_region(ent, prefer, inner=True) or ent

    def _split_coordination(self, np: NounPhrase) -> list[list[str]]:
        parts: list[list[str]] = [[]]
        for w in np.words:
            if w in {"and", ","}:
                parts.append([])
            else:
                parts[-1].append(w)
        return [p for p in parts if any(w not in LEXICON.stop for w in p)]

    def ground_np(self, np: NounPhrase | None, role: str, exclude: set[str] | None = None,
                  locator: tuple[str, list[str]] | None = None, ties_ok: bool = False
                  ) -> list[str]:
        """Ids a noun phrase denotes (several for "both X and Y", plurals, "all the X").

        `locator` is a locating phrase the clause gives apart ("pick up the bowl next to the
        plate", "take the bowl from the cookie box"); `ties_ok` returns every equally good match
        instead of calling the phrase ambiguous (a landmark the layout then decides on)."""
        exclude = exclude or set()
        if np is None:
            ent = self._resolve_pronoun(role, exclude) if role in {"closable", "switchable"} \
                else None
            if ent is None:
                self.problems.append(f"a clause names no {role}")
                return []
            return [ent]
        if np.is_pronoun or np.words in (["that", "one"], ["this", "one"]):
            ent = self._resolve_pronoun(role, exclude)
            if ent is None:
                self.problems.append(f"cannot resolve '{np.text}' ({role})")
            return [ent] if ent else []
        content = [w for w in np.words if w not in LEXICON.stop]
        order_pronouns = LEXICON.grammar["order_pronouns"]
        if len(content) == 1 and content[0] in order_pronouns:
            # "the former", "the latter": of the things last said together
            if len(self._group) < 2:
                self.problems.append(f"cannot resolve '{np.text}' ({role})")
                return []
            return [self._group[order_pronouns[content[0]]]]
        pool = self._pool(role)
        words = [w for w in np.words if w not in {"too", "also"}]
        last = "last" in words and not any(w in LEXICON.layout_directions for w in words)
        if last or any(w in LEXICON.grammar["others"] for w in words):
            # "the other two mugs", "the remaining bowl", "then the last one" (no direction
            # to count from): not those already spoken of
            pool = [e for e in pool if e not in self.mentioned] or pool
        content = [w for w in words if w not in LEXICON.stop]
        one = _one_as_head(words)
        if one is not None and self._last_head:
            # "the right one", "the one in the middle": the head noun said last
            head = self._last_head.get(role) or next(iter(self._last_head.values()))
            np = NounPhrase(words=[*words[:one], head, *words[one + 1 :]], plural=np.plural,
                            quantified=np.quantified)
        ref = analyse(np.words)
        if one is None and content and content[-1] not in LEXICON.pronouns:
            # the name's head, not a locator's ("the bowl at the front": bowl)
            self._last_head[role] = head_noun(ref.name) or content[-1]
        if locator is not None and any(w not in LEXICON.stop for w in locator[1]):
            ref.locators.append(locator)
        parts = self._split_coordination(NounPhrase(ref.name))
        # "the yellow and white coffee cup" is one thing where the scene has a thing of
        # both colours (else "the red and white mug" may still be two)
        one_thing = _colours_of_one(ref.name) and any(
            sc >= _ACCEPT and self.g.contradiction(ref.name, e) is None
            for e, sc in self.g.rank(ref.name, pool)[:3])
        if len(parts) > 1 and not ref.locators and not ref.exceptions and not one_thing:
            whole = self.g.rank(ref.name, pool)
            best_whole = whole[0][1] if whole else 0.0
            refs = [analyse(p) for p in parts]
            ranked = [self.g.rank(r.name, pool)[:1] or [("", 0.0)] for r in refs]
            worst = min(r[0][1] for r in ranked)
            # the whole phrase is one name ("the yellow and white mug") only where its best
            # match covers every word of it ("the cheese and the butter" is two things)
            covers = bool(whole) and all(
                any(token_sim(w, n) > 0 for n in self.g.words(whole[0][0]))
                for w in ref.name if w not in LEXICON.stop)
            if (np.quantified or worst >= best_whole - 0.05 or not covers) and worst >= _ACCEPT:
                ids = [self._ground_ref(r, np, role, pool, exclude) for r in refs]
                flat = [e for group in ids for e in group]
                if all(ids) and len(set(flat)) == len(flat):
                    self._group = flat
                    return flat
                if not all(ids):
                    return []
        ids = self._ground_ref(ref, np, role, pool, exclude, ties_ok)
        if not ids and role in {"closable", "switchable"} and not self._ambiguous:
            # "close the door" after putting something in the microwave: the door is a
            # part the scene does not list; the fixture just mentioned is meant
            ent = self._resolve_pronoun(role, exclude)
            if ent is not None:
                self.problems.pop()
                return [ent]
        return ids

    def _ground_ref(self, ref: Reference, np: NounPhrase, role: str, pool: list[str],
                    exclude: set[str], ties_ok: bool = False) -> list[str]:
        self._ambiguous = False
        text = " ".join(ref.name) if ref.name != np.words else np.text
        if _every_thing(ref):
            return self._every_object(ref, np, role, pool, exclude)
        whole = self.g.rank(ref.name, pool)
        contradicted = {e: w for e, sc in whole if sc >= _ACCEPT
                        and (w := self.g.contradiction(ref.name, e)) is not None}
        whole = [(e, sc) for e, sc in whole if e not in contradicted]
        best = whole[0][1] if whole else 0.0
        if not whole or best < _ACCEPT:
            why = "; ".join(f"{e} is not '{w}'" for e, w in contradicted.items())
            self.problems.append(f"no scene entity matches '{text}' ({role})"
                                 + (f": {why}" if why else ""))
            return []
        ties = [e for e, sc in whole if sc >= best - 0.02 and sc >= _ACCEPT]
        # the entities of the name's kind, whatever else their names say ("mug": the white
        # mug, the red mug and the yellow and white mug)
        head = head_noun(ref.name)
        alike = [e for e, sc in whole if sc >= _ACCEPT and head is not None and any(
            token_sim(head, h) == 1.0 for h in self.g.head_words(e))]
        bare = len([w for w in ref.name
                    if w not in LEXICON.stop and w not in LEXICON.spatial_words]) == 1
        if len(alike) > len(ties) and (
                ref.ordinal is not None or ref.superlative is not None
                or (bare and (ref.modifiers or ref.exceptions))):
            # "the first mug from the right", "the mug nearest the plate", "the right mug",
            # "the mug that is not white" count every mug, not only the names that match
            # "mug" best ("white mug" before "yellow and white mug")
            ties = alike
        if len(ties) > 1 and [e for e in ties if e not in exclude] and not (
                ref.modifiers or ref.ordinal):
            # (where layout words choose, they choose among all alike: "the one in the
            # middle" of three bowls, though one of them is the bowl being moved)
            ties = [e for e in ties if e not in exclude]
        # "the bowls except the one at the front": the name says the number, not the end of
        # the phrase
        named = [w for w in ref.name if w not in LEXICON.stop]
        many = ref.selects_many or np.plural or (
            bool(ref.exceptions) and bool(named) and singular(named[-1]) != named[-1])
        if many:
            chosen = alike if len(alike) > 1 else ties
            chosen = self._choose(chosen, ref, role, exclude, keep_many=True)
            for exc in ref.exceptions:
                gone = self._ground_exception(exc, ref.name, chosen)
                if gone is None:
                    return []
                chosen = [e for e in chosen if e not in gone]
            if ref.count is not None and len(chosen) > ref.count:
                chosen = chosen[: ref.count]
            if len(chosen) > 1 or ref.selects_many:
                if not chosen:
                    self.problems.append(f"'{np.text}' leaves nothing ({role})")
                return chosen
            return chosen
        if len(ties) > 1 and any(w in {"one", "ones"} for exc in ref.exceptions for w in exc):
            # "the mug that is not white" (read as "the mug except the white one"): one
            # thing, the alike ones less those the negated modifier names (where the name
            # alone picks one, "the yellow and white mug, not the white one", the negation
            # only confirms it; an exception that names a thing of its own, "the tray, but
            # not the ketchup", is said of the clause's object, not of this one)
            for exc in ref.exceptions:
                gone = self._ground_exception(exc, ref.name, ties)
                if gone is None:
                    return []
                ties = [e for e in ties if e not in gone]
            if not ties:
                self.problems.append(f"'{np.text}' leaves nothing ({role})")
                return []
        if len(ties) > 1 and role == "target" and self._inner_wanted is not None:
            fit = [e for e in ties if self.g.is_inner(e) == self._inner_wanted]
            ties = fit or ties  # "in the top layer": the layer inside, not the top side
        if len(ties) == 1:
            return ties
        chosen = self._choose(ties, ref, role, exclude)
        if len(chosen) > 1:
            # "the first moka pot ..., then the second one", no side said: counted as said
            nth = [LEXICON.ordinals[w] for w in np.words if w in LEXICON.ordinals]
            counted = ref.ordinal is None and bool(nth)
            if counted and nth[0] > len(chosen):
                self.problems.append(f"'{np.text}': the scene has {len(chosen)} of them "
                                     f"({', '.join(chosen)})")
                return []
            known = [e for e in chosen if e in self.mentioned]
            if len(known) == 1 and not (counted and role == "object"):
                return known  # "the drawer": the one already spoken of
            if (np.words[0] in LEXICON.grammar["indefinites"] or counted) and role == "object":
                # "one moka pot", "a bowl": any of them will do; one not yet spoken of (so
                # is "the first moka pot ..., then the second one" where no side is said)
                return [next((e for e in chosen if e not in self.mentioned), chosen[0])]
            if ties_ok:
                return chosen
            self._ambiguous = True
            self.problems.append(f"'{np.text}' is ambiguous: it may be any of "
                                 f"{', '.join(chosen)} ({role})")
            return []
        return chosen

    def _every_object(self, ref: Reference, np: NounPhrase, role: str, pool: list[str],
                      exclude: set[str]) -> list[str]:
        """"every item on the table except the red block", "everything": the name says no
        kind, so every movable object the locators keep, less the exceptions."""
        chosen = self._choose([e for e in pool if self.g.is_movable(e) and e not in exclude],
                              ref, role, exclude, keep_many=True)
        for exc in ref.exceptions:
            gone = self._ground_exception(exc, ref.name, chosen)
            if gone is None:
                return []
            chosen = [e for e in chosen if e not in gone]
        if not chosen:
            self.problems.append(f"'{np.text}' leaves nothing ({role})")
        return chosen

    def _choose(self, cands: list[str], ref: Reference, role: str, exclude: set[str],
                keep_many: bool = False) -> list[str]:
        """Narrow alike candidates with the phrase's locators, superlative and modifiers."""
        chooser = Chooser(self.g)
        chosen = list(cands)
        for rel, words in ref.locators:
            landmarks = self._landmarks(rel, words, set(chosen) | exclude)
            if landmarks is None:
                return []
            if rel == "from" and len(chosen) == 1:
                continue
            kept = chooser.locate(chosen, rel, landmarks)
            if kept is not None and (keep_many or len(kept) < len(chosen) or rel != "from"):
                chosen = kept
        if ref.superlative is not None and len(chosen) > 1:
            rel, words = ref.superlative
            said = [w for w in words if w not in LEXICON.stop]
            if said and all(w in LEXICON.grammar["robot_words"] for w in said):
                # "the mug furthest from the robot": the robot is no scene entity, but the
                # layout side it stands on is known; nearest it is furthest toward that side
                side = LEXICON.grammar["robot_side"]
                kept = chooser.by_modifiers(
                    chosen, [side if rel == "near" else _opposite(side)], None)
                return kept if kept is not None else chosen
            landmarks = self._landmarks(rel, words, set(chosen) | exclude)
            if landmarks is None:
                return []
            kept = chooser.locate(chosen, rel, landmarks)
            if kept is not None:
                chosen = kept
        if len(chosen) > 1 and (ref.modifiers or ref.ordinal) and not keep_many:
            kept = chooser.by_modifiers(chosen, ref.modifiers, ref.ordinal)
            said = list(ref.modifiers)
            if ref.ordinal is not None and not said:
                # "the first moka pot from the left" is the left one, "the second (of two)
                # from the left" the right one: the names may say the side
                n, direction = ref.ordinal
                if n in {-1, len(chosen)} and n != 1:
                    said = [_opposite(direction)]
                elif n == 1:
                    said = [direction]
            if kept is None and said:
                # no layout to tell by: the names may ("the plate on the left" is the one
                # described as the "left plate")
                ranked = self.g.rank([*ref.name, *said], chosen)
                top = [e for e, sc in ranked if sc >= ranked[0][1] - 0.02]
                kept = top if len(top) < len(chosen) else None
            if kept is not None:
                chosen = kept
        return chosen

    def _landmarks(self, rel: str, words: list[str], exclude: set[str]) -> list[str] | None:
        """The ids a locating phrase names ("the plate and the ramekin" for "between")."""
        if rel == "between":
            parts = self._split_coordination(NounPhrase(words))
            out = [e for p in parts for e in self.ground_np(NounPhrase(p), "target", exclude)]
            return out if len(out) == len(parts) and out else None
        ids = self.ground_np(NounPhrase(words), "target", exclude, ties_ok=True)
        if len(ids) == 1:
            self._mention(*ids)  # "the mug closest to the left plate ... on it"
        return ids or None

    def _ground_exception(self, words: list[str], base: list[str], among: list[str]
                          ) -> list[str] | None:
        """The ids "except the red one" removes from `among` ("one" stands for the base's
        head noun)."""
        head = head_noun(base)
        swapped = [singular(head) if w in {"one", "ones"} and head else w for w in words]
        ref = analyse(swapped)
        ranked = self.g.rank(ref.name, among)
        if not ranked or ranked[0][1] < _ACCEPT:
            self.problems.append(f"the exception '{' '.join(words)}' matches none of "
                                 f"{', '.join(among)}")
            return None
        ties = [e for e, sc in ranked if sc >= ranked[0][1] - 0.02]
        if len(ties) == len(among) > 1 and not (ref.modifiers or ref.locators or ref.ordinal):
            self.problems.append(f"the exception '{' '.join(words)}' tells none of "
                                 f"{', '.join(among)} apart")
            return None
        if ref.selects_many or singular(ref.name[-1]) != ref.name[-1]:
            return ties
        chosen = self._choose(ties, ref, "object", set())
        if len(chosen) > 1:
            self.problems.append(f"the exception '{' '.join(words)}' is ambiguous: "
                                 f"{', '.join(chosen)}")
            return None
        return chosen

    def _pool(self, role: str) -> list[str]:
        ents = self.g.entities
        if role == "object":
            movable = [e for e in ents if self.g.is_movable(e)]
            return movable or ents
        if role == "closable":
            return [e for e in ents if self.g.is_closable(e)] or ents
        if role == "switchable":
            return [e for e in ents if self.g.is_switchable(e)] or ents
        # a place or a landmark: a joint is neither (nothing is put in "bottom drawer (joint)",
        # the drawer's region is meant)
        return [e for e in ents if self.g.kind(e) != "joint"] or ents

    # -- targets ------------------------------------------------------------------------

    def _child_region(self, ent: str, prefer: frozenset[str] | set[str],
                      inner: bool | None = None) -> str | None:
        """The part of `ent` a relation means: the one whose words the relation prefers, or the
        only one; `inner` keeps only parts one puts things in (True) or on (False)."""
        regions = [c for c in self.g.children(ent) if self.g.is_region(c)]
        if inner is not None:
            regions = [r for r in regions if self.g.is_inner(r) == inner] or (
                regions if not inner else [])
        if not regions:
            return None
        scored = sorted(regions, key=lambda r: -len(self.g.words(r) & prefer))
        if len(regions) == 1 or self.g.words(scored[0]) & prefer:
            return scored[0]
        return None

    def resolve_target(self, relation: str, target: str) -> tuple[str, str]:
        """Predicate-level (relation, id): containers become their regions where needed,
        with the relation the benchmark states for that kind of target (`_convention`)."""
        return self._convention(*self._resolve_place(relation, target))

    def _convention(self, relation: str, target: str) -> tuple[str, str]:
        """LIBERO's relation for the target's kind, whatever preposition was said. Its
        bddl_files (Lifelong-Robot-Learning/LIBERO, libero/libero/bddl_files) state `In` only
        of a container's inner region (`basket_1_contain_region`, a drawer's
        `white_cabinet_1_bottom_region`, `microwave_1_heating_region`), `On` of every other
        region (`flat_stove_1_cook_region`, `wine_rack_1_top_region`, `*_top_side`) and of
        a movable object (libero_goal/put_the_cream_cheese_in_the_bowl.bddl:
        `(On cream_cheese_1 akita_black_bowl_1)`; plates likewise)."""
        if relation not in {"in", "on"}:
            return relation, target
        if self.g.is_region(target) or target.endswith("_side"):
            return ("in" if self.g.is_inner(target) else "on"), target
        if self.g.is_movable(target):
            inner = self._child_region(target, LEXICON.contain_words, inner=True)
            return ("in", inner) if inner else ("on", target)
        return relation, target

    def _resolve_place(self, relation: str, target: str) -> tuple[str, str]:
        if relation == "to":
            inner = self.g.is_inner(target) or self._child_region(
                target, LEXICON.contain_words, inner=True) is not None
            relation = "in" if inner else "on"
        if relation == "in" and not self.g.is_region(target):
            region = self._child_region(target, LEXICON.contain_words, inner=True) or \
                self._child_region(target, LEXICON.contain_words)
            if region:
                return "in", region
        if relation == "on_top":  # "on top of the cabinet" (or of its drawer): its top side
            side = None if self.g.is_movable(target) else self.g.side_of(target)
            if side is not None:
                return "on", side
            relation = "on"
        if relation == "under":  # "under the shelf": in its bottom layer, else next to it
            owner = target if not self.g.is_region(target) else (self.g.parent(target) or target)
            low = self._child_region(owner, frozenset({"bottom", "lower"}), inner=True)
            return ("in", low) if low else ("near", target)
        if relation == "on" and not self.g.is_region(target) and not self.g.is_movable(target):
            kind = self.g.kind(target)
            if kind not in {"surface"}:
                if not self.g.is_closable(target) and self.g.side_of(target) is not None:
                    # "on the shelf": on one of its layers, which are inside it
                    layer = self._child_region(target, LEXICON.on_words, inner=True)
                    if layer:
                        return "in", layer
                region = self._child_region(target, LEXICON.on_words, inner=False)
                if region:
                    return "on", region
        return relation, target

    def spatial_region(self, relation: str, landmark: str) -> str | None:
        """A scene region that names the spot ("area to the right of the plate")."""
        direction = {"right_of": "right", "left_of": "left", "front_of": "front",
                     "behind": "behind", "near": "near"}.get(relation)
        if direction is None:
            return None
        land_words = set(tokens_of(self.g.scene.descriptions.get(landmark, ""))) | set(
            tokens_of(landmark)
        )
        land_words -= LEXICON.stop | {"region", "area"}
        best, best_n = None, 0
        for ent in self.g.entities:
            if ent == landmark or not self.g.is_region(ent):
                continue
            words = self.g.words(ent)
            if direction not in words and not (direction == "behind" and "back" in words):
                continue
            overlap = len({singular(w) for w in words} & {singular(w) for w in land_words})
            if overlap > best_n:
                best, best_n = ent, overlap
        return best

    # -- whole instruction --------------------------------------------------------------

    def ground(self, instruction: str) -> ParseResult:
        result = ParseResult(instruction=instruction)
        too_long = len(instruction) > MAX_INSTRUCTION_CHARS and instruction_problem(instruction)
        if too_long:  # refused before any reading: the grammar's work grows with the length
            result.problems.append(too_long)
            return result
        clauses, unread = parse_instruction(instruction)
        self.problems.extend(unread)
        if not clauses:
            if not unread:
                result.problems.append("no action verb found in the instruction")
            result.problems.extend(self.problems)
            return result
        pending_pick: list[Goal] = []
        order: dict[int, int] = {}  # id(goal) -> its clause's place in the order of doing
        for clause in clauses:
            for goal in result.goals:
                order.setdefault(id(goal), self._clause_order)
            self._clause_order = clause.order
            if clause.verb == MENTION:  # things shown or kept, for what follows to speak of
                said = len(self.problems)
                self._mention(*self.ground_np(clause.obj, "object"))
                del self.problems[said:]  # asking nothing, it cannot fail the instruction
                continue
            if clause.verb in {"open", "close", "turn_on", "turn_off"}:
                role = "closable" if clause.verb in {"open", "close"} else "switchable"
                ids = self.ground_np(clause.obj, role)
                if not all(self._can(role, ent) for ent in ids):
                    what = "opens or closes" if role == "closable" else "switches on or off"
                    self.problems.append(f"'{clause.obj.text if clause.obj else clause.text}'"
                                         f" is not something that {what}")
                    continue
                _name(result, clause.obj, ids, clause.text)
                for ent in ids:
                    result.goals.append(Goal(kind=clause.verb, obj=ent,
                                             after_previous=clause.sequential_after_previous,
                                             text=clause.text))
                self._mention(*ids)
                continue
            locator = None
            if clause.source is not None:
                locator = (clause.source_relation, clause.source.words)
            if clause.verb == "place" and clause.obj is not None and clause.obj.is_pronoun \
                    and pending_pick:
                # "pick up the two pots and put them ...": all of the last pick, else the one
                last = [p.obj for p in pending_pick if p.text == pending_pick[-1].text]
                objs = last if "them" in clause.obj.words else [pending_pick[-1].obj]
            else:
                said = len(self.problems)
                objs = self.ground_np(clause.obj, "object", locator=locator)
                if not objs and clause.verb_guessed and clause.obj is not None:
                    # "fly to the moon": no verb, and no thing called "fly" either
                    del self.problems[said:]
                    self.problems.append(f"'{clause.obj.text}': no action verb I can read in "
                                         f"'{clause.text.split(' ', 1)[-1]}'")
            _name(result, clause.obj, objs, clause.text)
            source = None
            if clause.source is not None:
                src = self.ground_np(clause.source, "target", exclude=set(objs), ties_ok=True)
                chooser = Chooser(self.g)
                # of equally named places, the one the layout puts the object on or in
                source = next((s for s in src if objs and chooser.supported_by(objs[0], s)),
                              src[0] if src else None)
            if clause.verb == "pick":
                for ent in objs:
                    goal = Goal(kind="pick", obj=ent, source=source,
                                after_previous=clause.sequential_after_previous, text=clause.text)
                    result.goals.append(goal)
                    pending_pick.append(goal)
                self._mention(source, *objs)  # "it" later means the object, not its source
                continue
            # place: the object may be what was just picked ("pick X and place it in Y")
            self._mention(*objs)
            if clause.relation is None:
                self.problems.append(f"'{clause.text}' says where to put nothing")
                continue
            if clause.target is None:  # "open the drawer and put the bowl inside"
                clause.target = NounPhrase(words=["it"])
            if clause.target.words == ["_top"]:  # "... and the cream cheese on top"
                below = next((g.obj for g in reversed(result.goals)
                              if g.kind in {"pick_place", "push"} and g.obj not in objs), None)
                if below is None:
                    self.problems.append(f"'{clause.text}': on top of what?")
                    continue
                self._mention(below)
                clause.target = NounPhrase(words=["it"])
            relation = clause.relation
            self._inner_wanted = {"in": True, "on": False, "on_top": False}.get(relation)
            on_top = relation == "on_top"
            targets = self.ground_np(clause.target, "target", exclude=set(objs), ties_ok=on_top)
            self._inner_wanted = None
            if on_top and len({self.resolve_target(relation, t) for t in targets}) > 1:
                # "on top of the drawer": any of the drawers, if all have the one top side
                self.problems.append(f"'{clause.target.text}' is ambiguous: it may be any of "
                                     f"{', '.join(targets)} (target)")
                continue
            if not targets:
                continue
            landmark = self._part_said(targets[0], clause.target.words)
            if clause.obj is not None and _every_thing(analyse(clause.obj.words)):
                # "put everything in the basket": not the basket, nor what it is part of
                objs = [o for o in objs if o not in {landmark, self.g.parent(landmark)}]
            if landmark in objs:  # "put the bowl on the bowl" in a scene with one bowl
                self.problems.append(f"'{clause.text}' puts {landmark} on or in itself")
                continue
            spatial = {"front_of": "near", "behind": "near", "under": "near"}.get(
                relation, relation) if relation in {"right_of", "left_of", "front_of", "behind",
                                                    "near", "under"} else None
            if relation in {"right_of", "left_of", "front_of", "behind", "near"}:
                region = self.spatial_region(relation, landmark)
                if region:
                    relation, target = "on", region
                else:
                    target = landmark
                    if relation in {"front_of", "behind"}:
                        relation = "near"
            else:
                relation, target = self.resolve_target(relation, landmark)
            said = _PLACE_WORDS.get(clause.relation, clause.relation.replace("_", " "))
            result.phrases[f"{said} {clause.target.text}"] = f"{relation} {target}"
            for ent in objs:
                if clause.verb == "push":
                    result.goals.append(Goal(
                        kind="push", obj=ent, relation=relation, target=target, source=source,
                        after_previous=clause.sequential_after_previous, text=clause.text,
                        spatial=spatial, landmark=landmark))
                    continue
                picked = next((p for p in pending_pick if p.obj == ent), None)
                if picked is not None:
                    result.goals.remove(picked)
                    pending_pick.remove(picked)
                result.goals.append(Goal(
                    kind="pick_place", obj=ent, relation=relation, target=target,
                    source=picked.source if picked else source,
                    after_previous=(picked.after_previous if picked
                                    else clause.sequential_after_previous),
                    text=clause.text, spatial=spatial, landmark=landmark))
            if clause.relation in {"right_of", "left_of", "front_of", "behind", "near"}:
                # "to the right of the plate ... on it": "it" is the plate, not the place
                # beside it
                self._mention(target, landmark)
            else:
                self._mention(landmark, target)
        for goal in result.goals:
            order.setdefault(id(goal), self._clause_order)
        if any(c.order != k for k, c in enumerate(clauses)):
            result.goals.sort(key=lambda g: order[id(g)])  # stable: as said within a clause
        result.problems.extend(self.problems)
        return result


def _name(result: ParseResult, np: NounPhrase | None, ids: list[str], clause: str) -> None:
    """Keep what a thing's phrase was read as; a pronoun with the clause that says it ("them"
    in "place them in the tray" is the lower bowl of the stack), as one instruction may say
    "it" of two things."""
    if np is not None and ids:
        key = f"{np.text} (in '{clause}')" if np.is_pronoun else np.text
        result.phrases[key] = ", ".join(ids)


def ground_instruction(instruction: str, scene: SceneTask) -> ParseResult:
    """Parse and ground one instruction on a scene (deterministic, no language model)."""
    return InstructionGrounder(scene).ground(instruction)


@dataclass(frozen=True)
class PhraseGrounding:
    """What a standalone noun phrase denotes on a scene: ids with their match scores (best
    first; several for "both X and Y" or a plural), or why nothing."""

    phrase: str
    matches: tuple[tuple[str, float], ...]
    problem: str | None = None


def ground_phrase(phrase: str, scene: SceneTask) -> PhraseGrounding:
    """Ground one noun phrase exactly as an instruction's target is grounded (perception asks
    "where is the black bowl" with the generator's own matching, so both name the same id)."""
    np = parse_noun_phrase(phrase)
    if np is None or not any(w not in LEXICON.stop for w in np.words):
        return PhraseGrounding(phrase, (), f"'{phrase}' names nothing")
    grounder = InstructionGrounder(scene)
    ids = grounder.ground_np(np, "target")
    if not ids:
        problem = grounder.problems[-1] if grounder.problems else ""
        return PhraseGrounding(phrase, (), problem.removesuffix(" (target)")
                               or f"no scene entity matches '{phrase}'")
    parts = grounder._split_coordination(np) if len(ids) > 1 else [np.words]
    scores = []
    for i, ent in enumerate(ids):
        words = parts[i] if len(parts) == len(ids) else np.words
        scores.append((ent, round(grounder.g.score(words, ent), 4)))
    return PhraseGrounding(phrase, tuple(scores))
