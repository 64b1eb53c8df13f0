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

from mango.generation.offline.lexicon import LEXICON, singular


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


def normalize_instruction(text: str) -> list[str]:
    s = text.lower().strip()
    s = re.sub(r"(\w)['\u2019]s\b", r"\1 _s", s)  # "the cabinet's drawer": see _noun_phrase
    s = re.sub(r"[\"'`\u2019]", "", s)
    s = s.replace("&", " and ")
    s = re.sub(r"[;:.!?]", " , ", s)
    s = s.replace(",", " , ")
    for pattern, repl in LEXICON.multiword:
        s = pattern.sub(repl, s)
    return s.split()


def _starts_clause(toks: list[str], j: int) -> bool:
    """Whether the verb at `j` starts a new clause ("and set the table", not "and set")."""
    if j >= len(toks) or toks[j] not in LEXICON.verb_words:
        return False
    if toks[j] not in LEXICON.verbs_needing_an_object:
        return True
    follows = LEXICON.determiners | LEXICON.pronouns | LEXICON.quantifiers
    return j + 1 < len(toks) and toks[j + 1] in follows


def _split_clauses(toks: list[str]) -> list[tuple[list[str], bool]]:
    """Split at connectors that introduce a verb; returns (clause tokens, after_previous)."""
    clauses: list[tuple[list[str], bool]] = []
    current: list[str] = []
    after = False
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
            if _starts_clause(toks, j) or (saw_then and j < len(toks)):
                clauses.append((current, after))
                current, after = [], saw_then
                i = j
                continue
        current.append(t)
        i += 1
    if current:
        clauses.append((current, after))
    return [(c, a) for c, a in clauses if c]


def _locating_modifier(toks: list[str], i: int) -> bool:
    """'on the left', 'at the back', 'in the middle' ending a noun phrase: a modifier of the
    phrase before it, not a relation ('on the left plate' is a relation to a plate)."""
    j = i + 1
    while j < len(toks) and toks[j] in LEXICON.determiners:
        j += 1
    if j >= len(toks) or toks[j] not in LEXICON.spatial_words:
        return False
    nxt = toks[j + 1] if j + 1 < len(toks) else None
    return nxt is None or nxt in LEXICON.connectors or nxt in {"and", ","} or (
        nxt not in {"of", "side"} and any(tuple(toks[j + 1 : j + 1 + len(w)]) == w
                                          for w, _ in LEXICON.relations))


def match_relation(toks: list[str], i: int) -> tuple[str, int] | None:
    """(relation, number of words) of the relation phrase starting at `i`, if any."""
    if i > 0 and toks[i - 1] in LEXICON.superlatives:
        return None  # "the bowl closest to the plate" locates the bowl
    for words, rel in LEXICON.relations:
        if tuple(toks[i : i + len(words)]) == words:
            if len(words) == 1 and rel in {"on", "in", "to"} and _locating_modifier(toks, i):
                return None
            return rel, len(words)
    return None


def _later_relation(toks: list[str], i: int) -> bool:
    """Whether another relation follows `i` before any 'and' or ',' (the first one then
    locates the object: 'move the bowl beside the ramekin to the plate')."""
    j = i
    while j < len(toks) and toks[j] not in {"and", ","}:
        if match_relation(toks, j) is not None:
            return True
        j += 1
    return False


def _noun_phrase(words: list[str]) -> NounPhrase | None:
    while words and words[0] in {",", "and"}:
        words = words[1:]
    while words and words[-1] in {"and", "then", ","}:
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
        if rest[i] in LEXICON.source_words and obj_words and not _locating_modifier(rest, i):
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
            if verb == "pick":
                # a locator of the picked object ("the bowl next to the plate")
                source, source_relation = _noun_phrase(tail), rel
                break
            if rel in {"near", "on", "in", "to"} and _later_relation(rest, i + n):
                obj_words.extend(rest[i : i + n])  # it locates the object; the later one is
                i += n                             # where it goes
                continue
            relation, target = rel, _noun_phrase(tail)
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
        if w in {"and", ","} and any(match_relation(words, j) for j in range(i + 2, len(words))):
            first = Clause(verb=clause.verb, obj=clause.obj, source=clause.source,
                           relation=clause.relation, target=_noun_phrase(words[:i]),
                           sequential_after_previous=clause.sequential_after_previous,
                           text=clause.text)
            rest = [toks[0], *[x for x in words[i + 1 :] if x not in {"then"}]]
            return first, rest
    return None


def parse_instruction(instruction: str) -> tuple[list[Clause], list[str]]:
    """Clauses of an instruction, in order, and what could not be read (naming the words);
    verb-less conjuncts repeat the previous verb."""
    out: list[Clause] = []
    unread: list[str] = []
    known = ", ".join(sorted(set(LEXICON.verb_words.values())))
    for toks, after in _split_clauses(normalize_instruction(instruction)):
        c = parse_clause(toks, after)
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
    return out, unread


def parse_instruction_clauses(instruction: str) -> list[Clause]:
    """Clauses of an instruction, in order; verb-less conjuncts repeat the previous verb."""
    return parse_instruction(instruction)[0]
