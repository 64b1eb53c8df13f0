"""Reading an instruction into clauses without a language model.

An instruction is split into clauses at conjunctions that introduce a new verb ("..., place
it in the bowl and close it"), each clause into a verb, an object noun phrase, an optional
source ("from the cutting board") and a spatial relation with its target ("to the right of
the plate", "in the back compartment of the caddy"). Verb-less conjuncts ("put the soup in
the basket and the sauce in the bowl") repeat the previous verb. Grounding the noun phrases
on a scene is `grounding`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from mango.generation.offline.grammar import (
    canonical_clause,
    first_goal,
    looks_like_verb,
    receiver_verb,
)
from mango.generation.offline.lexicon import LEXICON, singular
from mango.generation.offline.relation_phrases import locating_modifier, match_relation
from mango.generation.offline.respectively import distribute_respectively

# the verb of a clause that only shows things ("there is a mug; put it ..."): no goal
MENTION = "mention"


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
        content = [w for w in self.words if w not in LEXICON.determiners]
        return len(content) == 1 and content[0] in LEXICON.pronouns


@dataclass
class Clause:
    verb: str  # canonical verb
    obj: NounPhrase | None
    source: NounPhrase | None = None
    source_relation: str = "from"  # how the source locates the object: from, near, on, in
    relation: str | None = None
    target: NounPhrase | None = None
    sequential_after_previous: bool = False  # "then", "after that"
    text: str = ""
    # where the clause comes in the order of doing ("put X in Y after you put Z in it": the
    # second clause is done first); the reader keeps the clauses in the order said, so
    # pronouns resolve as read, and `grounding` orders the goals by this
    order: int = 0
    # no verb was said and "put" is assumed ("cream cheese and butter into the basket"): where
    # the object then names nothing, the words were no request the reader can read
    verb_guessed: bool = False


def normalize_instruction(text: str) -> list[str]:
    s = text.lower().strip()
    s = re.sub(r"(\w)['\u2019]s\b", r"\1 _s", s)  # "the cabinet's drawer": see _noun_phrase
    s = re.sub(r"[\"'`\u2019]", "", s)
    s = re.sub(r"\b(one|two|three|four)-(?=[a-z])", r"\1", s)  # "two-tone" counts nothing
    s = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", s)  # "the yellow-and-white mug"
    s = s.replace("&", " and ")
    s = re.sub(r"[;:.!?]", " , ", s)
    s = s.replace(",", " , ")
    for pattern, repl in LEXICON.multiword:
        s = pattern.sub(repl, s)
    return [t for t in s.split() if t not in LEXICON.grammar["politeness"]]


def _starts_clause(toks: list[str], j: int) -> bool:
    """Whether the verb at `j` starts a new clause ("and set the table", not "and set"); an
    unlisted word used as a verb ("and swing the door shut") starts one too."""
    if j < len(toks) and looks_like_verb(toks, j):
        return True
    if any(toks[j : j + len(n)] == list(n) for n in LEXICON.grammar["negations"]):
        return True  # "... and don't touch the rest"
    if j < len(toks) and toks[j] in LEXICON.grammar["assurances"]:
        return True  # "... and make sure the door is closed"
    if any(toks[j : j + len(f)] == list(f) for f in LEXICON.grammar["repeat_frames"]):
        return True  # "..., and do likewise with the cheese"
    if j >= len(toks) or toks[j] not in LEXICON.verb_words:
        return False
    if toks[j] not in LEXICON.verbs_needing_an_object:
        return True
    follows = LEXICON.determiners | LEXICON.pronouns | LEXICON.quantifiers
    return j + 1 < len(toks) and toks[j + 1] in follows


def _states_a_goal(toks: list[str]) -> bool:
    """A subject-first clause: a copula or modal before any relation ("the drawer should be
    closed", "the mug goes on the plate"), not a noun phrase with a place."""
    g = LEXICON.grammar
    for i, t in enumerate(toks):
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        if match_relation(toks, i) is not None or t == "," or (
                t == "and" and nxt in LEXICON.stop):  # not "the yellow and white one"
            return False
        if i > 0 and (t in g["motion_copulas"] or t in {"should", "must", "needs", "has",
                                                        "have", "ought"}) and \
                toks[i - 1] not in {"that", "which", "who"}:
            return True
    return False


def _split_clauses(toks: list[str]) -> list[tuple[list[str], bool, list[str]]]:
    """Split at connectors that introduce a verb; returns (clause tokens, after_previous,
    the connectors that introduced it)."""
    clauses: list[tuple[list[str], bool, list[str]]] = []
    current: list[str] = []
    after = False
    lead = [t for t in toks[: next((k for k, t in enumerate(toks)
                                    if t not in LEXICON.connectors), len(toks))]]
    i = 0
    while i < len(toks):
        t = toks[i]
        if t in LEXICON.connectors and current:
            j = i
            saw_then = False
            while j < len(toks) and toks[j] in LEXICON.connectors:
                if toks[j] in LEXICON.sequencing_connectors and not (
                        toks[j] == "next" and j + 1 < len(toks) and toks[j + 1] == "to"):
                    saw_then = True
                j += 1
            # "then" always starts a clause, read or not ("..., then do the same with X")
            # "the bowl should be in the drawer, and the drawer (should be) closed": a stated
            # goal after a clause that has its place (not "the milk and the butter go ...")
            stated = j < len(toks) and toks[j] in LEXICON.determiners and \
                _states_a_goal(toks[j : j + 8]) and \
                any(match_relation(current, k) for k in range(1, len(current)))
            # "..., the plate on the right gets the yellow and white mug": a receiving frame
            stated = stated or receiver_verb(toks[j : j + 16]) is not None
            if _starts_clause(toks, j) or stated or (saw_then and j < len(toks)):
                clauses.append((current, after, lead))
                current, after, lead = [], saw_then, toks[i:j]
                i = j
                continue
        current.append(t)
        i += 1
    if current:
        clauses.append((current, after, lead))
    return [part for c, a, w in clauses if c for part in _enabled(c, a, w)]


def _enabled(toks: list[str], after: bool, lead: list[str]
             ) -> list[tuple[list[str], bool, list[str]]]:
    """"open the drawer so (that) you can put the bowl in it": what a purpose says the main
    clause makes possible, in a verb the reader knows, is asked for too, after it (a purpose
    in any other verb, "so you can reach the bowl", still asks nothing)."""
    g = LEXICON.grammar
    for i in range(1, len(toks) - 3):
        if toks[i] in g["purpose_markers"] and toks[i] != "without" and \
                toks[i + 1] in g["subjects"] and toks[i + 2] in g["modals"] and \
                toks[i + 3] in LEXICON.verb_words:
            return [(toks[:i], after, lead), (toks[i + 3 :], True, ["then"])]
    return [(toks, after, lead)]


def _subordinator(lead: list[str]) -> str | None:
    """"before"/"after" introducing a clause of its own ("after you put the butter in"),
    not the sequencing "after that"."""
    for k, w in enumerate(lead):
        if w in {"before", "after"} and not (k + 1 < len(lead) and lead[k + 1] == "that"):
            return w
    return None


def _order_groups(groups: list[tuple[list[Clause], str | None]]) -> None:
    """Set each clause's place in the order of doing from "before"/"after" subordinates:
    "Y after X" and "before Y, X" do X first; "after X, Y" and "Y before X" as said."""
    order = list(range(len(groups)))
    for k, (clauses, sub) in enumerate(groups):
        if sub is None or len(groups) < 2:
            continue
        if (k == 0 and sub == "before") or (k > 0 and sub == "after"):
            said_first, said_second = (0, 1) if k == 0 else (k - 1, k)
            order[said_first], order[said_second] = order[said_second], order[said_first]
            groups[said_second][0][0].sequential_after_previous = \
                groups[said_first][0][0].sequential_after_previous
            groups[said_first][0][0].sequential_after_previous = True
        elif k == 0:  # "after X, Y"
            groups[1][0][0].sequential_after_previous = True
        else:  # "Y before X"
            clauses[0].sequential_after_previous = True
    for pos, (clauses, _) in zip(order, groups, strict=True):
        for c in clauses:
            c.order = pos


def _continued(prev: Clause, toks: list[str], after: bool) -> Clause | None:
    """"put the butter in the basket, then the milk (too)": a bare noun phrase repeats the
    previous clause's verb and place; with a place of its own, only the verb."""
    words = [t for t in toks if t not in LEXICON.connectors and t not in {"too", "also"}]
    if not words or words[0] not in LEXICON.determiners | LEXICON.quantifiers:
        return None
    verb_word = prev.text.split()[0] if prev.text else None
    if any(match_relation(words, i) for i in range(1, len(words))) and verb_word:
        return parse_clause([verb_word, *words], after)
    if prev.target is None:
        return None
    return Clause(verb=prev.verb, obj=_noun_phrase(words), relation=prev.relation,
                  target=prev.target, sequential_after_previous=after,
                  text=" ".join([verb_word or prev.verb, *words]))


def _later_relation(toks: list[str], i: int) -> bool:
    """Whether another relation follows `i` before any 'and' or ',' (the first one then
    locates the object: 'move the bowl beside the ramekin to the plate')."""
    j = i
    while j < len(toks) and toks[j] not in {"and", ","}:
        if toks[j] in {"that", "which", "who"}:
            return False  # "into the basket that is on the table": the basket's own place
        if match_relation(toks, j) is not None:
            return True
        j += 1
    return False


def _noun_phrase(words: list[str]) -> NounPhrase | None:
    while words and words[0] in {",", "and"}:
        words = words[1:]
    while words and words[-1] in {"and", "then", ",", "too", "also"}:
        words = words[:-1]
    if "_s" in words:  # "the cabinet's top drawer" -> "the top drawer of the cabinet"
        k = words.index("_s")
        words = ["the", *words[k + 1 :], "of", *words[:k]]
    if not words:
        return None
    quantified = any(w in LEXICON.quantifiers for w in words)
    content = [w for w in words if w not in LEXICON.stop]
    plural = bool(content) and singular(content[-1]) != content[-1] and not quantified
    return NounPhrase(words=words, plural=plural or quantified, quantified=quantified)


def parse_noun_phrase(text: str) -> NounPhrase | None:
    """A phrase said on its own ("the black bowl", "both moka pots"), as a clause has it."""
    return _noun_phrase(normalize_instruction(text))


def parse_clause(toks: list[str], after: bool) -> Clause | None:
    """One clause: verb, object, optional source and relation + target."""
    while toks and (toks[0] in LEXICON.connectors or toks[0] == "please"):
        toks = toks[1:]
    if not toks or toks[0] not in LEXICON.verb_words:
        return None
    verb = LEXICON.verb_words[toks[0]]
    rest = toks[1:]
    if verb in {"open", "close", "turn_on", "turn_off"}:
        return Clause(verb=verb, obj=_noun_phrase(rest), sequential_after_previous=after,
                      text=" ".join(toks))
    # object runs up to "from" or the first relation phrase
    obj_words: list[str] = []
    source = None
    relation = None
    target = None
    source_relation = "from"
    i = 0
    while i < len(rest):
        if rest[i] in LEXICON.source_words and obj_words and not locating_modifier(rest, i) \
                and not any(w in LEXICON.superlatives for w in obj_words):
            # not "farthest from X", "the farthest bowl from X"
            j = i + 1
            while j < len(rest) and rest[j] == "of":
                j += 1
            src: list[str] = []
            while j < len(rest) and match_relation(rest, j) is None:
                src.append(rest[j])
                j += 1
            source = _noun_phrase(src)
            i = j
            continue
        if rest[i] in LEXICON.place_pronouns and obj_words:
            relation, target = "to", NounPhrase(words=["it"])  # "put the bowl there"
            break
        m = match_relation(rest, i)
        if m is not None and obj_words:
            rel, n = m
            tail = rest[i + n :]
            if verb == "pick" and n == 1 and rest[i] in LEXICON.grammar["directional"]:
                verb = "place"  # "get the soup into the basket", "take the bowl to the plate"
            if verb == "push" and rel == "in":
                verb = "place"  # "slide the mug into the compartment": in, so lifted in
            if verb == "pick":
                # a locator of the picked object ("the bowl next to the plate")
                source, source_relation = _noun_phrase(tail), rel
                break
            if rel in {"near", "on", "in", "to", "on_top"} and _later_relation(rest, i + n):
                obj_words.extend(rest[i : i + n])  # it locates the object; the later one is
                i += n                             # where it goes
                continue
            relation, target = rel, _noun_phrase(tail)
            if target is not None and obj_words and any(
                    w in LEXICON.universal or w in LEXICON.quantifiers for w in obj_words):
                k = next((j for j, w in enumerate(target.words) if w in LEXICON.exceptions), None)
                if k:  # "put all the items in the basket except the ketchup"
                    obj_words.extend(target.words[k:])
                    target = _noun_phrase(target.words[:k])
            break
        obj_words.append(rest[i])
        i += 1
    return Clause(verb=verb, obj=_noun_phrase(obj_words), source=source,
                  source_relation=source_relation, relation=relation, target=target,
                  sequential_after_previous=after, text=" ".join(toks))


def _gapped(clause: Clause, toks: list[str]) -> tuple[Clause, list[str]] | None:
    """'put the soup in the basket and the sauce in the bowl': the verb is left out."""
    if clause.target is None or clause.verb != "place":
        return None
    words = clause.target.words
    for i, w in enumerate(words):
        if w not in {"and", ","}:
            continue
        rest = [toks[0], *[x for x in words[i + 1 :] if x not in {"then"}]]
        if not any(match_relation(words, j) for j in range(i + 2, len(words))):
            # "... and the red one on the right": a place said by a locating word alone is
            # "on the right one", the head noun of the place before
            j = next((j for j in range(i + 2, len(words)) if words[j] in {"on", "in", "at", "to"}
                      and locating_modifier(words, j)), None)
            if j is not None and any(t not in LEXICON.stop for t in words[i + 1 : j]):
                rest = [*rest, "one"]
            elif clause.relation != "between" and _bare_noun_phrase(words[i + 1 :]):
                # "put the soup in the basket, and the cheese too": the same place again
                rest = [*rest, *_relation_words(clause.relation), *words[:i]]
            else:
                continue
        first = Clause(verb=clause.verb, obj=clause.obj, source=clause.source,
                       relation=clause.relation, target=_noun_phrase(words[:i]),
                       sequential_after_previous=clause.sequential_after_previous,
                       text=clause.text)
        return first, rest
    return None


def _bare_noun_phrase(words: list[str]) -> bool:
    """A noun phrase of its own after "and"/","; not "but not X", "both of them" (said of
    the object), nor a clause ("the drawer should be closed")."""
    content = [t for t in words if t not in LEXICON.stop]
    return bool(words) and words[0] not in {"and", "not"} and \
        words[0] not in LEXICON.exceptions and bool(content) and \
        not all(t in LEXICON.pronouns for t in content) and \
        not any(t in LEXICON.grammar["motion_copulas"] or t in {"should", "must"} for t in words)


def _relation_words(relation: str | None) -> list[str]:
    """The words of a relation phrase that reads as `relation` (to say a place again)."""
    return next((list(words) for words, rel in LEXICON.relations if rel == relation), ["to"])


def parse_instruction(instruction: str) -> tuple[list[Clause], list[str]]:
    """Clauses of an instruction, in order, and what could not be read (naming the words);
    verb-less conjuncts repeat the previous verb."""
    out: list[Clause] = []
    unread: list[str] = []
    groups: list[tuple[list[Clause], str | None]] = []
    known = ", ".join(sorted(set(LEXICON.verb_words.values())))
    said = _split_clauses(distribute_respectively(normalize_instruction(instruction)))
    topic: list[str] | None = None
    fronted: list[str] | None = None
    excepted: list[str] | None = None  # an exception said before its clause
    for k, (toks, after, lead) in enumerate(said):
        if (repeated := _repeated(out, toks, after)) is not None:
            out.append(repeated)  # "..., then do the same with the mug"
            groups.append(([repeated], _subordinator(lead)))
            continue
        if k == 0 and len(said) > 1 and len(toks) > 2 and first_goal(toks, 1) is None and (
                toks[0] in LEXICON.grammar["purpose_markers"] or (
                    toks[0] in {"to", "for"} and toks[1] not in LEXICON.determiners
                    and toks[1] not in LEXICON.quantifiers)):
            # "to get the coffee going, turn on the stove ...": a purpose said first asks
            # nothing, but what it names may come back as a pronoun ("to warm up the mug,
            # put it in the microwave")
            if (named := _purpose_object(toks)) is not None:
                out.append(Clause(verb=MENTION, obj=named, text=" ".join(toks)))
            continue
        if (shown := _presented(toks) or _kept(toks)) is not None:
            # "there are a red mug and a white mug; put the former ...", "see the mug? put
            # it ...", "leave the milk where it is": things shown or kept, not acted on; the
            # reader grounds them for what follows ("everything else")
            out.append(Clause(verb=MENTION, obj=shown, text=" ".join(toks)))
            continue
        toks = canonical_clause(toks)
        if not toks:  # a purpose clause of its own ("in order to tidy up, ...")
            continue
        if topic is not None:
            toks, topic = _with_topic(toks, topic), None
        if fronted is not None:
            if first_goal(toks, 1) is None:
                toks = [*toks, *fronted]  # "into the basket, put the milk"
            fronted = None
        if match_relation(toks, 0) is not None and toks[0] not in LEXICON.verb_words and \
                k + 1 < len(said) and first_goal(said[k + 1][0], 1) is None:
            fronted = toks  # a place said first
            continue
        if len(toks) == 1 and toks[0] in LEXICON.verb_words and k + 1 < len(said):
            continue  # "pick up and place the bowl ...": the verbs share the next object
        start = len(out)
        c = parse_clause(toks, after)
        if c is None and not out and k + 1 < len(said) and _is_topic(toks, said[k + 1][0]):
            topic = toks  # "the bowl next to the plate, put it in the drawer"
            continue
        if c is None and not out and first_goal(toks, 1) is not None and \
                toks[0] not in LEXICON.verb_words:
            toks = [LEXICON.grammar["place_verb"], *toks]  # verbless:
            c = parse_clause(toks, after)  # "cream cheese and butter into the basket"
            if c is not None:
                c.verb_guessed = True
        if c is None and toks and toks[0] in LEXICON.exceptions:
            # "put everything in the basket, except the ketchup", "with the exception of the
            # milk, put ...": the exception is said of the clause's object, apart from it
            if out and out[-1].obj is not None:
                out[-1].obj = _noun_phrase([*out[-1].obj.words, *toks])
            else:
                excepted = toks
            continue
        if excepted is not None and c is not None and c.obj is not None:
            c.obj, excepted = _noun_phrase([*c.obj.words, *excepted]), None
        if c is None and out:
            c = _continued(out[-1], toks, after)
            if c is not None:
                out.append(c)
                groups.append((out[start:], _subordinator(lead)))
                continue
        if c is None:
            words = [t for t in toks if t not in LEXICON.connectors and t != "please"]
            if words:
                unread.append(f"'{' '.join(words)}': no action verb I can read in it "
                              f"('{words[0]}'; actions: {known})")
            continue
        while c is not None:
            split = _gapped(c, toks)
            if split is None:
                out.append(c)
                break
            first, toks = split
            out.append(first)
            c = parse_clause(toks, False)
            if c is None:  # never dropped unsaid
                unread.append(f"'{' '.join(toks[1:])}': I cannot read what to do with it")
        groups.append((out[start:], _subordinator(lead)))
    _order_groups([g for g in groups if g[0]])
    for c, nxt in pairwise(out):
        if c.verb == nxt.verb == "place" and c.relation is None and nxt.relation is not None \
                and c.obj is not None and not c.obj.is_pronoun:
            # "put the milk and then the butter in the basket": one place said for both
            c.relation, c.target = nxt.relation, nxt.target
    return out, unread


def _repeated(out: list[Clause], toks: list[str], after: bool) -> Clause | None:
    """"do the same with the mug", "same for the milk", "likewise with X": the previous
    clause again, with another object."""
    if not out:
        return None
    g = LEXICON.grammar
    words = [t for t in toks if t not in LEXICON.connectors and t not in g["politeness"]]
    for frame in sorted(g["repeat_frames"], key=len, reverse=True):
        if words[: len(frame)] == list(frame):
            rest = words[len(frame) :]
            while rest and rest[0] in g["repeat_markers"]:
                rest = rest[1:]
            np = _noun_phrase([t for t in rest if t not in {"too", "also", "as", "well"}])
            if np is None:
                return None
            prev = out[-1]
            return Clause(verb=prev.verb, obj=np, relation=prev.relation, target=prev.target,
                          sequential_after_previous=after, text=" ".join(words))
    return None


def _is_topic(toks: list[str], following: list[str]) -> bool:
    """A noun phrase said first and taken up by a pronoun in the next clause."""
    return bool(toks) and (toks[0] in LEXICON.determiners or toks[0] in LEXICON.quantifiers) \
        and any(t in {"it", "them"} for t in following)


def _with_topic(toks: list[str], topic: list[str]) -> list[str]:
    """The clause with its first "it"/"them" standing for the topic's noun phrase."""
    for i, t in enumerate(toks):
        if t in {"it", "them"}:
            return [*toks[:i], *topic, *toks[i + 1 :]]
    return toks


def _presented(toks: list[str]) -> NounPhrase | None:
    """The noun phrase a presentative frame shows ("there are X", "see X", "look at X")."""
    while toks and toks[0] in LEXICON.connectors:
        toks = toks[1:]
    for frame in LEXICON.grammar["presentatives"]:
        if tuple(toks[: len(frame)]) == tuple(frame) and len(toks) > len(frame):
            rest = toks[len(frame) :]
            if rest[0] in LEXICON.determiners or rest[0] in LEXICON.quantifiers:
                return _noun_phrase(rest)
    return None


def _purpose_object(toks: list[str]) -> NounPhrase | None:
    """The first noun phrase of a purpose clause ("to warm up the white mug", "so that the
    bowl is out of the way"): from its determiner to the first word that is no part of a
    noun phrase (a verb, a copula, a relation, a particle or an -ing form)."""
    g = LEXICON.grammar
    start = next((i for i, t in enumerate(toks) if t in LEXICON.determiners and t != "that"
                  and i > 0), None)
    if start is None:
        return None
    end = start + 1
    while end < len(toks):
        t = toks[end]
        if t in {",", "and"} or t in g["motion_copulas"] or t in g["auxiliaries"] or \
                t in g["particles"] or t.endswith("ing") or t in LEXICON.verb_words or \
                match_relation(toks, end) is not None:
            break
        end += 1
    return _noun_phrase(toks[start:end]) if end > start + 1 else None


def _kept(toks: list[str]) -> NounPhrase | None:
    """The noun phrase a clause asks to stay as it is ("leave the milk where it is",
    "leaving the other butter alone", "keep the ketchup out")."""
    g = LEXICON.grammar
    while toks and toks[0] in LEXICON.connectors:
        toks = toks[1:]
    if not toks:
        return None
    verb = toks[0]
    if verb.endswith("ing"):  # "leaving", "keeping"
        verb = next((v for v in g["keep_verbs"] if verb in {v + "ing", v[:-1] + "ing"}), verb)
    if verb not in g["keep_verbs"]:
        return None
    for frame in g["stay_frames"]:
        if len(toks) > len(frame) + 1 and tuple(toks[-len(frame) :]) == tuple(frame):
            return _noun_phrase(toks[1 : -len(frame)])
    return None


def parse_instruction_clauses(instruction: str) -> list[Clause]:
    """Clauses of an instruction that ask for an action, in order; verb-less conjuncts repeat
    the previous verb."""
    return [c for c in parse_instruction(instruction)[0] if c.verb != MENTION]
