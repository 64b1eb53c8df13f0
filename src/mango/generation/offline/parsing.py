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

from mango.generation.offline.grammar import canonical_clause, looks_like_verb
from mango.generation.offline.lexicon import LEXICON, singular
from mango.generation.offline.relation_phrases import locating_modifier, match_relation


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
    """Whether the verb at `j` starts a new clause ("and set the table", not "and set"); an
    unlisted word used as a verb ("and swing the door shut") starts one too."""
    if j < len(toks) and looks_like_verb(toks, j):
        return True
    if j >= len(toks) or toks[j] not in LEXICON.verb_words:
        return False
    if toks[j] not in LEXICON.verbs_needing_an_object:
        return True
    follows = LEXICON.determiners | LEXICON.pronouns | LEXICON.quantifiers
    return j + 1 < len(toks) and toks[j + 1] in follows


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
            if _starts_clause(toks, j) or (saw_then and j < len(toks)):
                clauses.append((current, after, lead))
                current, after, lead = [], saw_then, toks[i:j]
                i = j
                continue
        current.append(t)
        i += 1
    if current:
        clauses.append((current, after, lead))
    return [(c, a, w) for c, a, w in clauses if c]


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
        if rest[i] in LEXICON.source_words and obj_words and not locating_modifier(rest, i):
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
    groups: list[tuple[list[Clause], str | None]] = []
    known = ", ".join(sorted(set(LEXICON.verb_words.values())))
    for toks, after, lead in _split_clauses(normalize_instruction(instruction)):
        toks = canonical_clause(toks)
        if not toks:  # a purpose clause of its own ("in order to tidy up, ...")
            continue
        start = len(out)
        c = parse_clause(toks, after)
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
        groups.append((out[start:], _subordinator(lead)))
    _order_groups([g for g in groups if g[0]])
    return out, unread


def parse_instruction_clauses(instruction: str) -> list[Clause]:
    """Clauses of an instruction, in order; verb-less conjuncts repeat the previous verb."""
    return parse_instruction(instruction)[0]
