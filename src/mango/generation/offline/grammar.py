"""A small clause grammar that brings free wording to the reader's canonical clause.

The reader (`parsing`) reads a clause as VERB OBJECT [SOURCE] [RELATION TARGET]. People say
the same thing in other constructions; each rule here is one English construction, not a
list of example phrases, and rewrites the clause's tokens to the canonical order:

- request frames: "could you ...", "I want the bowl on the plate" (a wish for a state: put),
  sentence adverbs ("carefully put ...");
- purpose clauses: "so (that) ...", "in order to ...", and "to"/"for" after the goal phrase
  ("put the mug in the microwave to warm it up") carry no goal and are dropped;
- particles of phrasal verbs: "lay the book down in ...", "carry X over to Y", "pick X up";
- resultatives: "push the drawer shut", "pull the door open" (the state is the goal);
- split particles of switching: "turn the stove on";
- subject-first motion: "the ketchup goes in the drawer", "X and Y belong in the basket";
- the caused-motion construction: an unlisted verb with an object and a goal phrase ("toss
  the butter into the basket") moves the object there, whatever the verb's manner.

Word classes come from `lexicon.json` (closed classes: particles, modal and wish verbs,
resultative adjectives, purpose markers), so the rules stay data-light and general.
"""

from __future__ import annotations

from mango.generation.offline.lexicon import LEXICON
from mango.generation.offline.relation_phrases import match_relation


def _is_verb(tok: str) -> bool:
    return tok in LEXICON.verb_words


def _closed_class(tok: str) -> bool:
    """A function word or a word the reader already gives a role (never a verb's slot)."""
    return (tok in LEXICON.stop or tok in LEXICON.pronouns or tok in LEXICON.connectors
            or tok in LEXICON.spatial_words or tok in LEXICON.source_words
            or any(tok == words[0] for words, _ in LEXICON.relations)
            or tok in LEXICON.grammar["particles"] or tok in LEXICON.grammar["subjects"]
            or not tok.isalpha())


def looks_like_verb(toks: list[str], j: int) -> bool:
    """Whether the unlisted word at `j` is used as a verb: an open-class word directly
    followed by an object's determiner or pronoun ("swing the door shut", "stick it in")."""
    if j + 1 >= len(toks) or _is_verb(toks[j]) or _closed_class(toks[j]):
        return False
    nxt = toks[j + 1]
    return nxt in LEXICON.determiners or nxt in LEXICON.pronouns or nxt in LEXICON.quantifiers


def _verb_of_gerund(tok: str) -> str | None:
    """The listed verb an -ing form is of ("putting" -> "put", "placing" -> "place")."""
    if not tok.endswith("ing") or len(tok) < 6:
        return None
    stem = tok[:-3]
    for cand in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else ""):
        if cand and _is_verb(cand):
            return cand
    return None


def _strip_frame(toks: list[str]) -> tuple[list[str], bool]:
    """Drop a request frame and sentence adverbs; True when a wish for a state was stripped
    ("I want the bowl on the plate": the rest is an object and where it should be)."""
    g = LEXICON.grammar
    wish = False
    changed = True
    while toks and changed:
        changed = False
        if toks[0] in g["modals"] and len(toks) > 1 and toks[1] in g["subjects"]:
            toks, changed = toks[2:], True  # "could you", "can we"
        elif toks[0] in g["subjects"] and len(toks) > 1 and toks[1] in g["wishes"]:
            toks, changed, wish = toks[2:], True, True  # "i want", "we need"
            if toks[:1] and toks[0] in g["subjects"]:
                toks = toks[1:]  # "i want you to ..."
            if toks[:1] == ["to"]:
                toks = toks[1:]
        elif toks[0] in {"please", ","} or toks[0] in LEXICON.connectors or (
                toks[0] in g["modals"] and len(toks) > 1 and _is_verb(toks[1])):
            toks, changed = toks[1:], True
        elif toks[0] in g["subjects"] and len(toks) > 1 and (
                _is_verb(toks[1]) or _verb_of_gerund(toks[1])):
            toks, changed = toks[1:], True  # "after you put the butter in it"
        elif (stem := _verb_of_gerund(toks[0])) is not None:
            toks, changed = [stem, *toks[1:]], True  # "before putting the milk in ..."
        elif toks[0].endswith("ly") and len(toks[0]) > 4 and len(toks) > 1 and (
                _is_verb(toks[1]) or looks_like_verb(toks, 1)):
            toks, changed = toks[1:], True  # "carefully put", "gently lay"
    return toks, wish


def _first_goal(toks: list[str], start: int) -> int | None:
    """Index of the first relation phrase after `start` (the goal phrase's preposition)."""
    for i in range(start, len(toks)):
        if match_relation(toks, i) is not None:
            return i
    return None


def _cut_purpose(toks: list[str]) -> list[str]:
    """Drop a purpose clause: from "so"/"in_order_to" on, or from "to"/"for" + a non-noun
    phrase once the goal phrase has begun."""
    g = LEXICON.grammar
    for i, t in enumerate(toks):
        if t in g["purpose_markers"]:
            return toks[:i]
    goal = _first_goal(toks, 1)
    if goal is None:
        return toks
    for i in range(goal + 2, len(toks) - 1):
        t, nxt = toks[i], toks[i + 1]
        if t in {"to", "for"} and nxt not in LEXICON.determiners and \
                nxt not in LEXICON.quantifiers and nxt not in LEXICON.spatial_words:
            return toks[:i]
    return toks


def _drop_particles(toks: list[str]) -> list[str]:
    """Drop a phrasal verb's particle after its object ("lay the book down in the caddy",
    "pick the bowl up"): one that ends the clause or comes right before a relation phrase,
    and does not follow a determiner, a preposition ("the back compartment", "at the back")."""
    out: list[str] = []
    for i, t in enumerate(toks):
        if t in LEXICON.grammar["particles"] and i > 1:
            prev = toks[i - 1]
            j = i + 1
            while j < len(toks) and toks[j] in LEXICON.grammar["particles"]:
                j += 1  # "set the ketchup back down in the basket"
            ends = j == len(toks) or toks[j] in {",", "and"}
            before_goal = j < len(toks) and (
                match_relation(toks, j) is not None or toks[j] in LEXICON.source_words)
            if (ends or before_goal) and prev not in LEXICON.determiners and \
                    match_relation(toks, i - 1) is None and prev != "_s":
                continue
        out.append(t)
    return out


def canonical_clause(toks: list[str]) -> list[str]:
    """The clause's tokens in the reader's order VERB OBJECT [RELATION TARGET]."""
    g = LEXICON.grammar
    toks, wish = _strip_frame(toks)
    toks = _cut_purpose(toks)
    if not toks:
        return toks
    toks = _drop_particles(toks)
    place = g["place_verb"]
    if wish and not _is_verb(toks[0]):
        return [place, *toks]  # "i want the bowl on the plate"
    if len(toks) > 2 and toks[-1] in g["resultatives"] and _first_goal(toks, 1) is None:
        # "push the drawer shut", "swing the door closed": the state it ends in
        return [g["resultatives"][toks[-1]], *toks[1:-1]]
    if len(toks) > 2 and toks[0] in g["switch_verbs"] and toks[-1] in g["switch_particles"]:
        return [g["switch_particles"][toks[-1]], *toks[1:-1]]  # "turn the stove on"
    if not _is_verb(toks[0]):
        for i, t in enumerate(toks):
            if t in g["motion_copulas"] and i > 0:
                # "the ketchup goes in the drawer", "X needs to go into Y"
                obj = [w for w in toks[:i] if w not in g["auxiliaries"]]
                rest = toks[i + 1 :]
                if _first_goal(rest, 0) == 0:
                    return [place, *obj, *rest]
        if looks_like_verb(toks, 0) and _first_goal(toks, 2) is not None:
            return [place, *toks[1:]]  # caused motion: "toss the butter into the basket"
    return toks
