"""A small clause grammar that brings free wording to the reader's canonical clause.

The reader (`parsing`) reads a clause as VERB OBJECT [SOURCE] [RELATION TARGET]. People say
the same thing in other constructions; each rule here is one English construction, not a
list of example phrases, and rewrites the clause's tokens to the canonical order:

- request frames: "could you ...", "I want the bowl on the plate" (a wish for a state: put),
  sentence adverbs ("carefully put ...");
- purpose clauses: "so (that) ...", "in order to ...", and "to"/"for" after the goal phrase
  ("put the mug in the microwave to warm it up") carry no goal and are dropped, as does a
  "to VERB ..." clause said before the main one ("to make room, move the mug ...");
- what not to do ("don't touch the rest") asks nothing (what is to stay, "leave the milk where
  it is", is read in `parsing`: it names a thing the rest may speak of, "everything else");
- particles of phrasal verbs: "lay the book down in ...", "carry X over to Y", "pick X up";
- resultatives: "push the drawer shut", "pull the door open" (the state is the goal);
- split particles of switching: "turn the stove on";
- receiving frames, the place as subject: "the drawer receives the bowl", "the plate gets
  the mug", "the basket should end up with the soup in it";
- stated goals: subject-first motion ("the ketchup goes in the drawer"), copulas and passives
  ("the bowl should end up on the plate", "the mug needs to be placed on it"), causatives
  ("have the bowl placed on the plate"), states ("make sure the drawer is closed");
- request frames of frame words only ("go ahead and", "I need you to", "let's"), politeness;
- other argument frames: "fill the basket with X" (X goes in), "pull out the drawer" (opens);
- the caused-motion construction: an unlisted verb with an object and a goal phrase ("toss
  the butter into the basket") moves the object there, whatever the verb's manner.

Word classes come from `lexicon.json` (closed classes: particles, modal and wish verbs,
resultative adjectives, purpose markers), so the rules stay data-light and general.
"""

from __future__ import annotations

from mango.generation.offline.lexicon import LEXICON, singular
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
    k = j + 2 if toks[j + 1] in LEXICON.grammar["particles"] else j + 1  # "scoop up the"
    if k >= len(toks):
        return False
    nxt = toks[k]
    if nxt == "one":
        return False  # "the yellow and white one": an adjective before "one", not a verb
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
        if toks[0] in g["assurances"]:
            # "make sure (that) the bowl is on the plate": the rest states the goal
            toks, changed, wish = toks[1:], True, True
            if toks[:1] in (["that"], ["to"]):
                toks = toks[1:]
        elif toks[0] in g["modals"] and len(toks) > 1 and toks[1] in g["subjects"]:
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
                _is_verb(toks[1]) or _verb_of_gerund(toks[1]) or toks[1] in g["switch_verbs"]):
            toks, changed = toks[1:], True  # "after you put the butter in it", "once you
            # turn the stove on" (a switching verb whose particle comes after its object)
        elif (stem := _verb_of_gerund(toks[0])) is not None:
            toks, changed = [stem, *toks[1:]], True  # "before putting the milk in ..."
        elif toks[0].endswith("ly") and len(toks[0]) > 4 and len(toks) > 1 and (
                _is_verb(toks[1]) or looks_like_verb(toks, 1)):
            toks, changed = toks[1:], True  # "carefully put", "gently lay"
        elif (k := _frame_end(toks)) is not None:
            toks, changed = toks[k:], True  # "go ahead and put", "your task is to put"
    return toks, wish


def _frame_end(toks: list[str]) -> int | None:
    """Where the verb comes after a request frame made only of frame words ("go ahead and",
    "I need you to", "let's", "would you mind"): a listed verb or its -ing form."""
    frame = LEXICON.grammar["frame_words"]
    for k in range(1, min(len(toks), 7)):
        if _is_verb(toks[k]) or _verb_of_gerund(toks[k]) is not None:
            return k
        if toks[k] not in frame:
            return None
    return None


def _participle(tok: str) -> str | None:
    """The verb a past participle is of ("placed" -> "place", "dropped" -> "drop", "laid" ->
    "lay"), or the state it leaves ("closed", "open"); None for any other word."""
    g = LEXICON.grammar
    if tok in g["irregular_participles"]:
        return g["irregular_participles"][tok]
    if tok in g["resultatives"]:
        return g["resultatives"][tok]
    if not tok.endswith("ed") or len(tok) < 5:
        return None
    stem = tok[:-2]
    for cand in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else "",
                 stem[:-1] + "y" if stem.endswith("i") else ""):
        if cand and _is_verb(cand):
            return cand
    return None


def _stated_goal(toks: list[str]) -> list[str] | None:
    """A clause that states the goal instead of asking for it, in canonical order:
    "the ketchup goes in the drawer", "the bowl should end up on the plate", "the mug needs to
    be placed on the plate", "have the bowl placed on the plate" (causative), "the drawer is
    closed" / "the stove is on" (a state). The predicate is the first copula or participle
    outside a relative clause ("the bowl that is on the stove goes ...")."""
    g = LEXICON.grammar
    start = 1 if toks and toks[0] in g["causatives"] else 0
    relative = {"that", "which", "who"}
    for i in range(start + 1, len(toks)):
        t = toks[i]
        if toks[i - 1] in relative or (i > 1 and toks[i - 2] in relative
                                        and toks[i - 1] in g["motion_copulas"]):
            continue  # the relative clause's own verb ("the bowl that is (placed) on ...")
        if t not in g["motion_copulas"] and _participle(t) is None:
            continue
        if t == "set" and toks[i - 1] in LEXICON.determiners:
            continue
        obj = [w for w in toks[start:i] if w not in g["auxiliaries"]]
        state = _participle(t)
        rest = toks[i + 1 :]
        while rest and (rest[0] in g["auxiliaries"] or rest[0] in g["motion_copulas"]
                        or rest[0] in g["particles"] or _participle(rest[0]) is not None):
            state = _participle(rest[0]) or state
            rest = rest[1:]
        if not obj:
            return None
        if not rest and state in {"open", "close"}:
            return [state, *obj]  # "make sure the drawer is closed"
        if len(rest) == 1 and rest[0] in g["resultatives"]:
            return [g["resultatives"][rest[0]], *obj]  # "the drawer should be open"
        if len(rest) == 1 and rest[0] in g["switch_particles"]:
            return [g["switch_particles"][rest[0]], *obj]  # "the stove should be on"
        if rest and (first_goal(rest, 0) == 0 or rest[0] in LEXICON.place_pronouns):
            return [g["place_verb"], *obj, *rest]  # "..., the sauce goes there too"
        return None
    return None


def receiver_verb(toks: list[str]) -> int | None:
    """Where a clause whose subject is the place has its verb ("the plate on the left gets
    the white mug", "the drawer receives the bowl", "the basket should end up with the soup
    in it"): a receiving verb after a noun phrase, followed by the thing received."""
    g = LEXICON.grammar
    if not toks or toks[0] not in LEXICON.determiners:
        return None
    for i in range(2, len(toks) - 1):
        if toks[i] in {"and", ","} or (_is_verb(toks[i]) and toks[i] not in g["receive_verbs"]):
            return None
        if toks[i] in g["receive_verbs"] and toks[i - 1] not in {"that", "which", "who"} and (
                toks[i + 1] in LEXICON.determiners or toks[i + 1] in LEXICON.quantifiers):
            return i
    return None


def _received(toks: list[str]) -> list[str] | None:
    """The receiving frame in canonical order: "the drawer receives the bowl" is "put the
    bowl to the drawer" (the benchmark's relation for the drawer then applies); a place said
    again by a pronoun ("... with the soup in it") gives the relation."""
    g = LEXICON.grammar
    k = receiver_verb(toks)
    if k is None:
        return None
    place = toks[:k]
    while place and (place[-1] in g["auxiliaries"] or place[-1] in g["modals"]):
        place = place[:-1]  # "the stove should have", "the basket needs to get"
    thing = toks[k + 1 :]
    relation = ["to"]
    if len(thing) > 2 and thing[-1] in {"it", "them"} and match_relation(thing, len(thing) - 2):
        relation, thing = [thing[-2]], thing[:-2]
    if not place or not thing:
        return None
    return [g["place_verb"], *thing, *relation, *place]


def first_goal(toks: list[str], start: int) -> int | None:
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
            # "push the plate forward so (that) it is in front of the stove": a result clause
            # says the place the main clause leaves out
            rest = toks[i + 1 :]
            while rest and (rest[0] in {"that", "it", "they", "them"} or rest[0] in
                            g["motion_copulas"] or rest[0] in g["auxiliaries"]):
                rest = rest[1:]
            if first_goal(toks[:i], 1) is None and rest and first_goal(rest, 0) == 0:
                if LEXICON.verb_words.get(toks[0]) == "pick":
                    # "pick up the cheese so that it ends up in the basket": the result
                    # is a place, so the picking is a placing
                    return [g["place_verb"], *toks[1:i], *rest]
                return [*toks[:i], *rest]
            # the purpose clause ends at a comma: "..., so it is out of the way, and the
            # sauce too" goes on after it
            end = next((k for k in range(i + 1, len(toks)) if toks[k] == ","), None)
            return toks[:i] if end is None else [*toks[:i], *toks[end:]]
    goal = first_goal(toks, 1)
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


def _other_frame(toks: list[str]) -> list[str] | None:
    """Verbs whose arguments come in another order than VERB OBJECT PLACE:
    - "fill the basket with the milk and the butter", "cover the bowl with the plate": the
      'with' phrase is what is moved, the object the place;
    - "pull out the drawer", "push the drawer in": a drawer's particle is its state;
    - "pull open the drawer", "push shut the door": the state said before the object."""
    g = LEXICON.grammar
    if len(toks) < 3:
        return None
    verb = toks[0]
    if verb in g["with_frames"] and "with" in toks[2:]:
        k = toks.index("with", 2)
        if first_goal(toks[:k], 1) is None and k + 1 < len(toks):
            rel = "into" if g["with_frames"][verb] == "in" else "onto"
            return [g["place_verb"], *toks[k + 1 :], rel, *toks[1:k]]
    if verb in g["drawer_verbs"]:
        particles = g["drawer_particles"]
        if toks[1] in particles and toks[2] in LEXICON.determiners:
            state, np = particles[toks[1]], toks[2:]
        elif toks[-1] in particles:
            state, np = particles[toks[-1]], toks[1:-1]
        else:
            state, np = None, []
        if state and any(singular(w) in LEXICON.closable for w in np):
            return [state, *np]
    if toks[1] in g["resultatives"] and toks[2] in LEXICON.determiners and (
            not _is_verb(verb) or LEXICON.verb_words[verb] == "push"):
        return [g["resultatives"][toks[1]], *toks[2:]]
    return None


def canonical_clause(toks: list[str]) -> list[str]:
    """The clause's tokens in the reader's order VERB OBJECT [RELATION TARGET]."""
    g = LEXICON.grammar
    toks = [t for t in toks if t not in g["politeness"]]  # "please", "kindly", "thanks"
    if len(toks) > 1 and toks[0] in {"to", "for"} and not _is_verb(toks[1]) and \
            not _closed_class(toks[1]) and first_goal(toks, 1) is None:
        return []  # "to make room for the bowl, move ...", "for heating, put ...": a purpose
    if any(toks[: len(n)] == list(n) for n in g["negations"]):
        return []  # "don't touch the rest": what not to do is no goal to reach
    toks, wish = _strip_frame(toks)
    if all(t in g["frame_words"] for t in toks):
        return []  # "go ahead (and put ...)": a frame split off its verb carries nothing
    toks = _cut_purpose(toks)
    while toks and toks[-1] in {",", "and"}:
        toks = toks[:-1]  # trailing punctuation ("... on?")
    if not toks:
        return toks
    toks = _drop_particles(toks)
    place = g["place_verb"]
    if (framed := _other_frame(toks)) is not None:
        return framed
    if not _is_verb(toks[0]) and (received := _received(toks)) is not None:
        return received
    if (not _is_verb(toks[0]) or toks[0] in g["causatives"]) and (
            stated := _stated_goal(toks)) is not None:
        return stated
    if len(toks) > 2 and toks[1] in g["particles"] and looks_like_verb(toks, 0):
        # "scoop up the butter": an unlisted verb's particle before its object
        toks = [toks[0], *toks[2:]]
        if first_goal(toks, 2) is None:
            return ["pick", *toks[1:]]
    if wish and not _is_verb(toks[0]):
        if len(toks) > 1 and first_goal(toks, 1) is None:
            last = toks[-1]  # "i want the drawer open", "we need the stove on"
            if last in g["resultatives"]:
                return [g["resultatives"][last], *toks[:-1]]
            if last in g["switch_particles"]:
                return [g["switch_particles"][last], *toks[:-1]]
        return [place, *toks]  # "i want the bowl on the plate"
    if len(toks) > 2 and toks[-1] in g["resultatives"] and first_goal(toks, 1) is None:
        # "push the drawer shut", "swing the door closed": the state it ends in
        return [g["resultatives"][toks[-1]], *toks[1:-1]]
    if len(toks) > 2 and toks[0] in g["switch_verbs"] and toks[-1] in g["switch_particles"]:
        return [g["switch_particles"][toks[-1]], *toks[1:-1]]  # "turn the stove on"
    if looks_like_verb(toks, 0) and first_goal(toks, 2) is not None:
        return [place, *toks[1:]]  # caused motion: "toss the butter into the basket"
    return toks
