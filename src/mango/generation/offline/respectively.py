"""'Respectively': each of several things goes to the place said in the same position.

"put the mug and the bowl on the plate and in the basket, respectively" is read as one clause
per thing ("put the mug on the plate and put the bowl in the basket") before the reader splits
clauses (`parsing`); so are a subject-first clause ("the mug and the pudding go on the plate
and to its right, respectively"), the places said first ("the left plate and the right plate
get the white mug and the red mug, respectively"), and places that share one plural head ("in
the back and front compartments of the caddy").
"""

from __future__ import annotations

from mango.generation.offline.lexicon import LEXICON, singular
from mango.generation.offline.relation_phrases import match_relation


def _coordinated(words: list[str]) -> list[list[str]]:
    """Conjuncts of a coordination, split only where a new phrase begins (a determiner, a
    quantifier or a relation), so that "the yellow and white mug" stays one."""
    parts: list[list[str]] = [[]]
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w in {"and", ","} and (nxt in LEXICON.determiners or nxt in LEXICON.quantifiers
                                  or match_relation(words, i + 1) is not None):
            parts.append([])
        elif w not in {"and", ","} or parts[-1]:
            parts[-1].append(w)
    return [p for p in parts if p]


def _shared_head(place: list[str], n: int) -> list[list[str]] | None:
    """"in the back and front compartments of the caddy": one place phrase that names `n`
    places by modifiers sharing a (plural) head -> "in the back compartment of the caddy",
    "in the front compartment of the caddy"."""
    n_rel = _place_words(place, 0)
    if n_rel is None:
        return None
    rel, rest = place[:n_rel], place[n_rel:]
    if "_s" in rest:  # "the caddy's back and front compartments"
        k = rest.index("_s")
        rest = ["the", *rest[k + 1 :], "of", *rest[:k]]
    det = rest[:1] if rest and rest[0] in LEXICON.determiners else []
    rest = rest[len(det) :]
    mods = rest[0:2 * n - 1:2]
    if len(rest) <= 2 * n - 1 or any(w != "and" and w != "," for w in rest[1:2 * n - 1:2]):
        return None
    head, *tail = rest[2 * n - 1 :]
    return [[*rel, *det, mod, singular(head), *tail] for mod in mods]


def _place_words(toks: list[str], i: int) -> int | None:
    """How many words the relation phrase at `i` has, even where "on the right" would end a
    noun phrase elsewhere ("on the right and left plates": a place said for two things)."""
    return next((len(w) for w, _ in LEXICON.relations if tuple(toks[i : i + len(w)]) == w),
                None)


def distribute_respectively(toks: list[str]) -> list[str]:
    """"put the mug and the bowl on the plate and in the basket, respectively": each thing
    goes to the place said in the same position, so the clause is said once for each
    ("put the mug on the plate and put the bowl in the basket"); a subject-first clause ("the
    mug and the pudding go on the plate and to its right, respectively") likewise. Left as
    said where the counts differ (the reader then says what it cannot read)."""
    if "respectively" not in toks:
        return toks
    r = toks.index("respectively")
    head, tail = toks[:r], toks[r + 1 :]
    while head and head[-1] == ",":
        head = head[:-1]
    v = next((i for i, t in enumerate(head) if t in LEXICON.verb_words), None)
    g = LEXICON.grammar
    receiving = next((i for i, t in enumerate(head) if t in g["receive_verbs"] and i + 1 <
                      len(head) and head[i + 1] in LEXICON.determiners), None)
    if head and head[0] in LEXICON.determiners and receiving is not None:
        # the places first: "the left plate and the right plate get the white mug and the
        # red mug, respectively"
        things = _coordinated(head[receiving + 1 :])
        places = [["to", *p] for p in _coordinated(
            [w for w in head[:receiving] if w not in g["auxiliaries"] or w == "to"])]
        return _distributed([], [g["place_verb"]], things, places, tail) or toks
    if head and head[0] in LEXICON.determiners:
        # subject-first: the things, a motion verb, the places
        c = next((i for i, t in enumerate(head) if t in g["motion_copulas"]), None)
        if c is None:
            return toks
        prefix, verb, objs = [], [g["place_verb"]], head[:c]
        places_from = c + 1
    elif v is not None:
        g = next((i for i in range(v + 2, len(head)) if _place_words(head, i)), None)
        if g is None:
            return toks
        prefix, verb, objs, places_from = head[:v], [head[v]], head[v + 1 : g], g
    else:
        return toks
    things = _coordinated(objs)
    places = _coordinated(head[places_from:])
    if len(places) == 1 and len(things) > 1:
        places = _shared_head(places[0], len(things)) or places
    return _distributed(prefix, verb, things, places, tail) or toks


def _distributed(prefix: list[str], verb: list[str], things: list[list[str]],
                 places: list[list[str]], tail: list[str]) -> list[str] | None:
    """One clause per thing and its place, in the order said (None where the counts
    differ)."""
    if len(things) < 2 or len(things) != len(places):
        return None
    named = [w for w in places[-1] if w not in LEXICON.stop]
    for k, place in enumerate(places):
        said = [w for w in place[_place_words(place, 0) or 0 :] if w not in LEXICON.stop]
        if named and said and all(w in LEXICON.spatial_words for w in said):
            # "on the left and the right plate": the head noun said once, at the end
            places[k] = [*place, named[-1]]
    for k in range(1, len(places)):
        if match_relation(places[k], 0) is None and match_relation(places[k - 1], 0):
            # "on the left plate and the right plate": the relation said once
            places[k] = [*places[k - 1][: match_relation(places[k - 1], 0)[1]], *places[k]]
    out = list(prefix)
    for k, (thing, place) in enumerate(zip(things, places, strict=True)):
        out.extend([*(["and"] if k else []), *verb, *thing, *place])
    return [*out, *tail]
