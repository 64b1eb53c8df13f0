"""Instruction parsing and scene grounding without a language model.

This is the deterministic reading the offline planner uses: an instruction is split into
clauses at conjunctions that introduce a new verb ("..., place it in the bowl and close
it"), each clause into a verb, an object noun phrase, an optional source ("from the
cutting board") and a spatial relation with its target ("to the right of the plate",
"in the back compartment of the caddy"). Noun phrases are grounded on the scene by fuzzy
token matching against ids and their human descriptions (spec §4 `descriptions`), with
coordination ("both X and Y"), plurals ("both moka pots") and pronouns ("it") resolved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rapidfuzz.fuzz import ratio

from mango.generation.models import SceneTask

# Canonical verbs and the words that express them (multi-word forms are joined first).
_VERB_WORDS: dict[str, str] = {}
for _canon, _words in {
    "pick": "pick pick_up grab take lift grasp get fetch retrieve pickup",
    "place": "put place set drop move transfer bring relocate insert stack load position "
    "return leave deposit store",
    "push": "push slide shove nudge",
    "open": "open",
    "close": "close shut",
    "turn_on": "turn_on switch_on activate start ignite power_on",
    "turn_off": "turn_off switch_off deactivate stop power_off",
}.items():
    for _w in _words.split():
        _VERB_WORDS[_w] = _canon

_MULTIWORD = [
    (r"\bpick(?:\s+it|\s+them)?\s+up\b", "pick_up"),
    (r"\bpick\s+(?=\w)", "pick_up "),
    (r"\bturn\s+on\b", "turn_on"),
    (r"\bturn\s+off\b", "turn_off"),
    (r"\bswitch\s+on\b", "switch_on"),
    (r"\bswitch\s+off\b", "switch_off"),
    (r"\bpower\s+on\b", "power_on"),
    (r"\bpower\s+off\b", "power_off"),
    (r"\bput\s+down\b", "put"),
    (r"\bset\s+down\b", "set"),
    (r"\bin\s+to\b", "into"),
    (r"\bon\s+to\b", "onto"),
    (r"\bon\s+top\s+of\b", "onto"),
]

# Relation phrases, longest first; each maps to a predicate-level relation.
_RELATIONS: list[tuple[tuple[str, ...], str]] = sorted(
    [
        (("to", "the", "right", "of"), "right_of"),
        (("on", "the", "right", "of"), "right_of"),
        (("on", "the", "right", "side", "of"), "right_of"),
        (("to", "the", "right", "side", "of"), "right_of"),
        (("right", "of"), "right_of"),
        (("to", "the", "left", "of"), "left_of"),
        (("on", "the", "left", "of"), "left_of"),
        (("on", "the", "left", "side", "of"), "left_of"),
        (("to", "the", "left", "side", "of"), "left_of"),
        (("left", "of"), "left_of"),
        (("next", "to"), "near"),
        (("close", "to"), "near"),
        (("near",), "near"),
        (("beside",), "near"),
        (("by",), "near"),
        (("in", "front", "of"), "front_of"),
        (("to", "the", "front", "of"), "front_of"),
        (("behind",), "behind"),
        (("into",), "in"),
        (("inside", "of"), "in"),
        (("inside",), "in"),
        (("within",), "in"),
        (("in",), "in"),
        (("onto",), "on"),
        (("on",), "on"),
        (("upon",), "on"),
        (("atop",), "on"),
        (("over",), "on"),
        (("to",), "to"),
        (("at",), "to"),
        (("under",), "under"),
    ],
    key=lambda r: -len(r[0]),
)

_DETERMINERS = {"the", "a", "an", "this", "that", "these", "those", "its", "their", "some",
                "each", "every", "one", "other", "another", "your", "my", "please"}
_QUANTIFIERS = {"both", "all", "two", "three", "four"}
_STOP = _DETERMINERS | _QUANTIFIERS | {"of", "and", "with", "for", "from", "then", "also",
                                       "object", "item", "thing", ","}
_PRONOUNS = {"it", "them", "itself", "one"}
_CONNECTORS = {"and", ",", "then", "also", "finally", "next", "afterwards", "after", "that",
               "before", "first", "subsequently", "lastly", ";"}

# Strong synonyms (score 0.9) and weak ones (0.6): people rarely say an id's word.
_SYNONYMS: list[set[str]] = [
    {"mug", "cup"},
    {"stove", "cooktop", "burner", "hob", "range", "stovetop"},
    {"cabinet", "cupboard"},
    {"fridge", "refrigerator"},
    {"plate", "dish", "saucer"},
    {"box", "carton", "package"},
    {"bin", "basket"},
    {"counter", "countertop", "worktop"},
    {"table", "desk"},
    {"pan", "frypan", "skillet"},
    {"pot", "kettle"},
    {"book", "novel"},
    {"bottle", "flask"},
    {"caddy", "organizer", "organiser"},
    {"sauce", "ketchup"},
    {"soup", "can"},
]
_WEAK: list[set[str]] = [
    {"region", "compartment", "drawer", "area", "zone", "section", "slot", "space", "inside",
     "interior", "spot", "side", "place", "contain", "heating", "cook"},
]
_CLOSABLE = {"drawer", "door", "microwave", "oven", "fridge", "refrigerator", "cabinet",
             "cupboard", "dishwasher", "lid", "box", "safe", "closet", "wardrobe", "hatch"}
_SWITCHABLE = {"stove", "cooktop", "burner", "light", "lamp", "microwave", "oven", "faucet",
               "tap", "sink", "blender", "kettle", "toaster", "machine", "fan", "tv"}
_CONTAIN_WORDS = {"contain", "heating", "inside", "interior", "in", "inner", "container"}
_ON_WORDS = {"cook", "top", "surface", "on", "burner", "plate"}


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("ches", "shes", "xes", "sses")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokens_of(text: str) -> list[str]:
    """Lower-case word tokens; ids split at underscores, trailing numbers dropped."""
    words = re.sub(r"[^a-z0-9]+", " ", text.lower().replace("_", " ")).split()
    return [w for w in words if not w.isdigit()]


def _token_sim(a: str, b: str) -> float:
    if a == b or _singular(a) == _singular(b):
        return 1.0
    for group in _SYNONYMS:
        if _singular(a) in group and _singular(b) in group:
            return 0.9
    for group in _WEAK:
        if _singular(a) in group and _singular(b) in group:
            return 0.6
    if min(len(a), len(b)) >= 5 and ratio(a, b) >= 85:
        return 0.85  # typos, British spellings
    return 0.0


def _head(words: list[str]) -> str | None:
    """The head noun: the last content word before an "of" complement, else the last one."""
    if "of" in words:
        before = [w for w in words[: words.index("of")] if w not in _STOP]
        if before:
            return before[-1]
    content = [w for w in words if w not in _STOP]
    return content[-1] if content else None


@dataclass(frozen=True)
class EntityNames:
    """How one scene id may be called: its description and its id read as words."""

    entity: str
    names: tuple[tuple[str, ...], ...]
    heads: tuple[str, ...]


def _match_score(phrase: list[str], name: tuple[str, ...], name_head: str | None) -> float:
    content = [w for w in phrase if w not in _STOP]
    if not content or not name:
        return 0.0
    head = _head(phrase)
    weights = [2.0 if w == head else 1.0 for w in content]
    best = [max(_token_sim(w, n) for n in name) for w in content]
    recall = sum(w * b for w, b in zip(weights, best, strict=True)) / sum(weights)
    covered = [max(_token_sim(n, w) for w in content) for n in name]
    precision = sum(covered) / len(covered)
    if recall == 0 or precision == 0:
        return 0.0
    score = 2 * precision * recall / (precision + recall)
    if head is not None and max(_token_sim(head, n) for n in name) == 0.0:
        score *= 0.5  # "the basket" must not ground to a thing merely *in* a basket
    if name_head is not None and head is not None and _token_sim(head, name_head) >= 0.9:
        score = min(1.0, score + 0.05)
    return score


class Grounder:
    """Fuzzy matching of noun phrases to the ids of one scene."""

    def __init__(self, scene: SceneTask) -> None:
        self.scene = scene
        self.entities = scene.entities()
        self._names: dict[str, EntityNames] = {}
        for ent in self.entities:
            names: list[tuple[str, ...]] = []
            heads: list[str] = []
            desc = scene.descriptions.get(ent)
            if desc:
                words = tokens_of(desc)
                names.append(tuple(w for w in words if w not in _STOP))
                h = _head(words)
                if h:
                    heads.append(h)
            id_words = tuple(tokens_of(ent))
            names.append(id_words)
            if id_words:
                heads.append(id_words[-1])
            self._names[ent] = EntityNames(ent, tuple(n for n in names if n), tuple(heads))

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
        best = None
        for other in self.entities:
            if other != ent and ent.startswith(other + "_") and (
                best is None or len(other) > len(best)
            ):
                best = other
        return best

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
        return any(_singular(h) in _CLOSABLE for h in self.head_words(ent))

    def is_switchable(self, ent: str) -> bool:
        if self.kind(ent) == "device":
            return True
        return any(_singular(h) in _SWITCHABLE for h in self.head_words(ent))

    # -- matching -----------------------------------------------------------------------

    def score(self, phrase: list[str], ent: str) -> float:
        names = self._names[ent]
        return max(
            (_match_score(phrase, n, names.heads[i] if i < len(names.heads) else None)
             for i, n in enumerate(names.names)),
            default=0.0,
        )

    def rank(
        self, phrase: list[str], candidates: list[str] | None = None
    ) -> list[tuple[str, float]]:
        pool = candidates if candidates is not None else self.entities
        scored = [(e, self.score(phrase, e)) for e in pool]
        return sorted(scored, key=lambda es: -es[1])


# ----------------------------------------------------------------------------- parsing


@dataclass
class NounPhrase:
    words: list[str]
    plural: bool = False
    quantified: bool = False  # "both", "all", "two"

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def is_pronoun(self) -> bool:
        content = [w for w in self.words if w not in _DETERMINERS]
        return len(content) == 1 and content[0] in _PRONOUNS


@dataclass
class Clause:
    verb: str  # canonical verb
    obj: NounPhrase | None
    source: NounPhrase | None = None
    relation: str | None = None
    target: NounPhrase | None = None
    sequential_after_previous: bool = False  # "then", "after that"
    text: str = ""


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


def normalize_instruction(text: str) -> list[str]:
    s = text.lower().strip()
    s = re.sub(r"[\"'`]", "", s)
    s = s.replace("&", " and ")
    s = re.sub(r"[;:.!?]", " , ", s)
    s = s.replace(",", " , ")
    for pattern, repl in _MULTIWORD:
        s = re.sub(pattern, repl, s)
    return s.split()


def _split_clauses(toks: list[str]) -> list[tuple[list[str], bool]]:
    """Split at connectors that introduce a verb; returns (clause tokens, after_previous)."""
    clauses: list[tuple[list[str], bool]] = []
    current: list[str] = []
    after = False
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in _CONNECTORS and current:
            j = i
            saw_then = False
            while j < len(toks) and toks[j] in _CONNECTORS:
                if toks[j] in {"then", "after", "afterwards", "subsequently", "finally", "next"}:
                    saw_then = True
                j += 1
            if j < len(toks) and toks[j] in _VERB_WORDS and (
                toks[j] not in {"set", "take", "get", "start", "stop", "leave", "return", "load"}
                or (j + 1 < len(toks) and toks[j + 1] in _DETERMINERS | _PRONOUNS | _QUANTIFIERS)
            ):
                clauses.append((current, after))
                current, after = [], saw_then
                i = j
                continue
        current.append(t)
        i += 1
    if current:
        clauses.append((current, after))
    return [(c, a) for c, a in clauses if c]


def _match_relation(toks: list[str], i: int) -> tuple[str, int] | None:
    for words, rel in _RELATIONS:
        if tuple(toks[i : i + len(words)]) == words:
            # "on the left plate" is a noun phrase, "on the left of the plate" a relation
            return rel, len(words)
    return None


def _noun_phrase(words: list[str]) -> NounPhrase | None:
    while words and words[0] in {",", "and"}:
        words = words[1:]
    while words and words[-1] in {"and", "then", ","}:
        words = words[:-1]
    if not words:
        return None
    quantified = any(w in _QUANTIFIERS for w in words)
    content = [w for w in words if w not in _STOP]
    plural = bool(content) and _singular(content[-1]) != content[-1] and not quantified
    return NounPhrase(words=words, plural=plural or quantified, quantified=quantified)


def parse_clause(toks: list[str], after: bool) -> Clause | None:
    """One clause: verb, object, optional source and relation + target."""
    while toks and (toks[0] in _CONNECTORS or toks[0] == "please"):
        toks = toks[1:]
    if not toks or toks[0] not in _VERB_WORDS:
        return None
    verb = _VERB_WORDS[toks[0]]
    rest = toks[1:]
    if verb in {"open", "close", "turn_on", "turn_off"}:
        return Clause(verb=verb, obj=_noun_phrase(rest), sequential_after_previous=after,
                      text=" ".join(toks))
    # object runs up to "from" or the first relation phrase
    obj_words: list[str] = []
    source = None
    relation = None
    target = None
    i = 0
    while i < len(rest):
        if rest[i] in {"from", "off", "out"} and obj_words:
            j = i + 1
            while j < len(rest) and rest[j] == "of":
                j += 1
            src: list[str] = []
            while j < len(rest) and _match_relation(rest, j) is None:
                src.append(rest[j])
                j += 1
            source = _noun_phrase(src)
            i = j
            continue
        m = _match_relation(rest, i)
        if m is not None and obj_words:
            rel, n = m
            tail = rest[i + n :]
            if verb == "pick":
                # a locator of the picked object ("the bowl next to the plate")
                source = _noun_phrase(tail)
            else:
                relation, target = rel, _noun_phrase(tail)
            break
        obj_words.append(rest[i])
        i += 1
    return Clause(verb=verb, obj=_noun_phrase(obj_words), source=source, relation=relation,
                  target=target, sequential_after_previous=after, text=" ".join(toks))


def _gapped(clause: Clause, toks: list[str]) -> tuple[Clause, list[str]] | None:
    """'put the soup in the basket and the sauce in the bowl': the verb is left out."""
    if clause.target is None or clause.verb != "place":
        return None
    words = clause.target.words
    for i, w in enumerate(words):
        if w in {"and", ","} and any(_match_relation(words, j) for j in range(i + 2, len(words))):
            first = Clause(verb=clause.verb, obj=clause.obj, source=clause.source,
                           relation=clause.relation, target=_noun_phrase(words[:i]),
                           sequential_after_previous=clause.sequential_after_previous,
                           text=clause.text)
            rest = [toks[0], *[x for x in words[i + 1 :] if x not in {"then"}]]
            return first, rest
    return None


def parse_instruction_clauses(instruction: str) -> list[Clause]:
    """Clauses of an instruction, in order; verb-less conjuncts repeat the previous verb."""
    out = []
    for toks, after in _split_clauses(normalize_instruction(instruction)):
        c = parse_clause(toks, after)
        while c is not None:
            split = _gapped(c, toks)
            if split is None:
                out.append(c)
                break
            first, toks = split
            out.append(first)
            c = parse_clause(toks, False)
    return out


# ----------------------------------------------------------------------------- grounding

_ACCEPT = 0.45


class InstructionGrounder:
    """Turns an instruction into grounded goals on one scene."""

    def __init__(self, scene: SceneTask) -> None:
        self.g = Grounder(scene)
        self.mentioned: list[str] = []
        self.problems: list[str] = []

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

    def _split_coordination(self, np: NounPhrase) -> list[list[str]]:
        parts: list[list[str]] = [[]]
        for w in np.words:
            if w in {"and", ","}:
                parts.append([])
            else:
                parts[-1].append(w)
        return [p for p in parts if any(w not in _STOP for w in p)]

    def ground_np(self, np: NounPhrase | None, role: str, exclude: set[str] | None = None
                  ) -> list[str]:
        """Ids a noun phrase denotes (several for "both X and Y" or plurals)."""
        exclude = exclude or set()
        if np is None:
            ent = self._resolve_pronoun(role, exclude) if role in {"closable", "switchable"} \
                else None
            if ent is None:
                self.problems.append(f"a clause names no {role}")
                return []
            return [ent]
        if np.is_pronoun:
            ent = self._resolve_pronoun(role, exclude)
            if ent is None:
                self.problems.append(f"cannot resolve '{np.text}' ({role})")
            return [ent] if ent else []
        pool = self._pool(role)
        whole = self.g.rank(np.words, pool)
        best_whole = whole[0][1] if whole else 0.0
        parts = self._split_coordination(np)
        if len(parts) > 1:
            grounded = [self.g.rank(p, pool)[0] if pool else ("", 0.0) for p in parts]
            ids = [e for e, _ in grounded]
            worst = min(s for _, s in grounded)
            if (np.quantified or worst >= best_whole - 0.05) and worst >= _ACCEPT and len(
                set(ids)
            ) == len(ids):
                return ids
        if not whole or best_whole < _ACCEPT:
            if role in {"closable", "switchable"}:
                # "close the door" after putting something in the microwave: the door is a
                # part the scene does not list; the fixture just mentioned is meant
                ent = self._resolve_pronoun(role, exclude)
                if ent is not None:
                    return [ent]
            self.problems.append(f"no scene entity matches '{np.text}' ({role})")
            return []
        if np.plural:
            head = _head(np.words)
            same_head = [e for e, s in whole if s >= _ACCEPT and head is not None and any(
                _token_sim(head, h) == 1.0 for h in self.g.head_words(e))]
            ties = [e for e, s in whole if s >= best_whole - 0.02]
            chosen = same_head if len(same_head) > 1 else ties
            count = {"both": 2, "two": 2, "three": 3, "four": 4}
            n = next((count[w] for w in np.words if w in count), None)
            if n is not None and len(chosen) > n:
                chosen = chosen[:n]
            if len(chosen) > 1:
                return chosen
        return [whole[0][0]]

    def _pool(self, role: str) -> list[str]:
        ents = self.g.entities
        if role == "object":
            movable = [e for e in ents if self.g.is_movable(e)]
            return movable or ents
        if role == "closable":
            return [e for e in ents if self.g.is_closable(e)] or ents
        if role == "switchable":
            return [e for e in ents if self.g.is_switchable(e)] or ents
        return ents

    # -- targets ------------------------------------------------------------------------

    def _child_region(self, ent: str, prefer: set[str]) -> str | None:
        regions = [c for c in self.g.children(ent) if self.g.is_region(c)]
        if not regions:
            return None
        scored = sorted(regions, key=lambda r: -len(self.g.words(r) & prefer))
        if len(regions) == 1 or self.g.words(scored[0]) & prefer:
            return scored[0]
        return None

    def resolve_target(self, relation: str, target: str) -> tuple[str, str]:
        """Predicate-level (relation, id): containers become their regions where needed."""
        if relation == "to":
            relation = "in" if self._child_region(target, _CONTAIN_WORDS) else "on"
        if relation == "in" and not self.g.is_region(target):
            region = self._child_region(target, _CONTAIN_WORDS)
            if region:
                return "in", region
        if relation == "on" and not self.g.is_region(target) and not self.g.is_movable(target):
            kind = self.g.kind(target)
            if kind not in {"surface"}:
                region = self._child_region(target, _ON_WORDS)
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
        land_words -= _STOP | {"region", "area"}
        best, best_n = None, 0
        for ent in self.g.entities:
            if ent == landmark or not self.g.is_region(ent):
                continue
            words = self.g.words(ent)
            if direction not in words and not (direction == "behind" and "back" in words):
                continue
            overlap = len({_singular(w) for w in words} & {_singular(w) for w in land_words})
            if overlap > best_n:
                best, best_n = ent, overlap
        return best

    # -- whole instruction --------------------------------------------------------------

    def ground(self, instruction: str) -> ParseResult:
        result = ParseResult(instruction=instruction)
        clauses = parse_instruction_clauses(instruction)
        if not clauses:
            result.problems.append("no action verb found in the instruction")
            return result
        pending_pick: list[Goal] = []
        for clause in clauses:
            if clause.verb in {"open", "close", "turn_on", "turn_off"}:
                role = "closable" if clause.verb in {"open", "close"} else "switchable"
                ids = self.ground_np(clause.obj, role)
                for ent in ids:
                    result.goals.append(Goal(kind=clause.verb, obj=ent,
                                             after_previous=clause.sequential_after_previous,
                                             text=clause.text))
                self._mention(*ids)
                continue
            if clause.verb == "place" and clause.obj is not None and clause.obj.is_pronoun \
                    and pending_pick:
                objs = [pending_pick[-1].obj]
            else:
                objs = self.ground_np(clause.obj, "object")
            source = None
            if clause.source is not None:
                src = self.ground_np(clause.source, "target", exclude=set(objs))
                source = src[0] if src else None
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
            if clause.target is None or clause.relation is None:
                self.problems.append(f"'{clause.text}' says where to put nothing")
                continue
            relation = clause.relation
            targets = self.ground_np(clause.target, "target", exclude=set(objs))
            if not targets:
                continue
            landmark = targets[0]
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
            elif relation == "under":
                relation, target = "near", landmark
            else:
                relation, target = self.resolve_target(relation, landmark)
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
            self._mention(landmark, target)
        result.problems.extend(self.problems)
        return result


def ground_instruction(instruction: str, scene: SceneTask) -> ParseResult:
    """Parse and ground one instruction on a scene (deterministic, no language model)."""
    return InstructionGrounder(scene).ground(instruction)
