"""Where a relation phrase starts in a clause ("to the right of", "into", "next to"), and
when "on the left" ends a noun phrase instead (a locating modifier, not a relation).

Shared by the clause grammar (`grammar`) and the clause reader (`parsing`).
"""

from __future__ import annotations

from mango.generation.offline.lexicon import LEXICON


def locating_modifier(toks: list[str], i: int) -> bool:
    """'on the left', 'at the back', 'in the middle' ending a noun phrase: a modifier of the
    phrase before it, not a relation ('on the left plate' is a relation to a plate)."""
    j = i + 1
    while j < len(toks) and (toks[j] in LEXICON.determiners or toks[j] in LEXICON.fillers):
        j += 1  # "at the very back"
    heights = LEXICON.grammar["part_words"] if toks[i] == "at" else frozenset()
    if j >= len(toks) or (toks[j] not in LEXICON.spatial_words and toks[j] not in heights):
        return False  # "on the left", "at the back", "at the bottom" end a noun phrase
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
            if len(words) == 1 and rel in {"on", "in", "to"} and locating_modifier(toks, i):
                return None
            return rel, len(words)
    return None
