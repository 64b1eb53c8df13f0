"""The offline planner's vocabulary: word lists from `lexicon.json`, and word similarity.

The lists are data so that a new verb, synonym or container word is a one-line edit that
needs no code change. They are read once, when this module is first imported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from rapidfuzz.fuzz import ratio

from mango.json_files import read_json

LEXICON_PATH = Path(__file__).with_name("lexicon.json")


@dataclass(frozen=True)
class Lexicon:
    """Every word list the instruction reader and the rules use (see `lexicon.json`)."""

    verb_words: dict[str, str]  # word -> canonical verb
    multiword: tuple[tuple[re.Pattern[str], str], ...]
    relations: tuple[tuple[tuple[str, ...], str], ...]  # longest phrase first
    determiners: frozenset[str]
    quantifiers: frozenset[str]
    numbers: dict[str, int]
    stop: frozenset[str]
    pronouns: frozenset[str]
    connectors: frozenset[str]
    sequencing_connectors: frozenset[str]
    verbs_needing_an_object: frozenset[str]
    source_words: frozenset[str]
    order_words: frozenset[str]
    synonyms: tuple[frozenset[str], ...]
    weak_synonyms: tuple[frozenset[str], ...]
    closable: frozenset[str]
    switchable: frozenset[str]
    contain_words: frozenset[str]
    on_words: frozenset[str]
    composite_verbs: frozenset[str]
    containers: frozenset[str]
    layout_directions: dict[str, tuple[float, float]]
    middle_words: frozenset[str]
    ordinals: dict[str, int]
    superlatives: dict[str, str]
    locators: tuple[tuple[tuple[str, ...], str], ...]  # longest phrase first
    fillers: frozenset[str]
    exceptions: frozenset[str]
    universal: frozenset[str]
    place_pronouns: frozenset[str]
    inner_part_words: frozenset[str]
    grammar: dict[str, Any]  # closed word classes of `grammar` (see lexicon.json)

    @property
    def spatial_words(self) -> frozenset[str]:
        """Words that pick one of several alike entities by where it is."""
        return frozenset(self.layout_directions) | self.middle_words

    def words_of(self, verb: str) -> frozenset[str]:
        """The words that express one canonical verb."""
        return frozenset(w for w, canon in self.verb_words.items() if canon == verb)


def load_lexicon(path: str | Path = LEXICON_PATH) -> Lexicon:
    """Read and check a lexicon file (errors name the file)."""
    raw = read_json(path, "lexicon")
    sets = {k: frozenset(raw[k]) for k in (
        "determiners", "quantifiers", "pronouns", "connectors", "sequencing_connectors",
        "verbs_needing_an_object", "source_words", "order_words", "closable", "switchable",
        "contain_words", "on_words", "composite_verbs", "containers", "middle_words", "fillers",
        "exceptions", "universal", "place_pronouns", "inner_part_words")}
    relations = sorted(((tuple(p.split()), rel) for p, rel in raw["relations"]),
                       key=lambda r: -len(r[0]))
    locators = sorted(((tuple(p.split()), rel) for p, rel in raw["locators"]),
                      key=lambda r: -len(r[0]))
    return Lexicon(
        verb_words={w: canon for canon, words in raw["verbs"].items() for w in words},
        multiword=tuple((re.compile(p), r) for p, r in raw["multiword"]),
        relations=tuple(relations),
        numbers=dict(raw["numbers"]),
        stop=sets["determiners"] | sets["quantifiers"] | sets["fillers"]
        | frozenset(raw["extra_stop_words"]),
        synonyms=tuple(frozenset(g) for g in raw["synonyms"]),
        weak_synonyms=tuple(frozenset(g) for g in raw["weak_synonyms"]),
        layout_directions={k: (float(v[0]), float(v[1]))
                           for k, v in raw["layout_directions"].items()},
        ordinals=dict(raw["ordinals"]),
        superlatives=dict(raw["superlatives"]),
        locators=tuple(locators),
        grammar={k: v if isinstance(v, (dict, str)) else frozenset(
                     tuple(x) if isinstance(x, list) else x for x in v)
                 for k, v in raw["grammar"].items()},
        **sets,
    )


LEXICON = load_lexicon()


@lru_cache(maxsize=8192)
def singular(word: str) -> str:
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


@lru_cache(maxsize=65536)
def token_sim(a: str, b: str) -> float:
    """1 for the same word, 0.9 for a strong synonym, 0.6 for a weak one, 0.85 for a typo
    (cached: the matcher asks the same pairs for every candidate of every phrase)."""
    sa, sb = singular(a), singular(b)
    if a == b or sa == sb:
        return 1.0
    for group in LEXICON.synonyms:
        if sa in group and sb in group:
            return 0.9
    for group in LEXICON.weak_synonyms:
        if sa in group and sb in group:
            return 0.6
    if min(len(a), len(b)) >= 5 and ratio(a, b) >= 85:
        return 0.85  # typos, British spellings
    return 0.0


def head_noun(words: list[str]) -> str | None:
    """The head noun: the last content word before an "of" complement, else the last one."""
    if "of" in words:
        before = [w for w in words[: words.index("of")] if w not in LEXICON.stop]
        if before:
            return before[-1]
    content = [w for w in words if w not in LEXICON.stop]
    return content[-1] if content else None
