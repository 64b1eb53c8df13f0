"""Grounding an instruction on a scene: clauses become goals over scene ids.

Noun phrases are matched to ids (`matching.Grounder`), with coordination ("both X and
Y"), plurals ("both moka pots") and pronouns ("it") resolved; containers become their
regions where the relation needs one ("in the basket" -> `basket_1_contain_region`), and a
spatial relation becomes the scene region that names the spot where there is one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mango.generation.models import SceneTask
from mango.generation.offline.lexicon import LEXICON, head_noun, singular, token_sim, tokens_of
from mango.generation.offline.matching import Grounder
from mango.generation.offline.parsing import (
    NounPhrase,
    parse_instruction_clauses,
    parse_noun_phrase,
)

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
        return [p for p in parts if any(w not in LEXICON.stop for w in p)]

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
            head = head_noun(np.words)
            same_head = [e for e, s in whole if s >= _ACCEPT and head is not None and any(
                token_sim(head, h) == 1.0 for h in self.g.head_words(e))]
            ties = [e for e, s in whole if s >= best_whole - 0.02]
            chosen = same_head if len(same_head) > 1 else ties
            n = next((LEXICON.numbers[w] for w in np.words if w in LEXICON.numbers), None)
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
            relation = "in" if self._child_region(target, LEXICON.contain_words) else "on"
        if relation == "in" and not self.g.is_region(target):
            region = self._child_region(target, LEXICON.contain_words)
            if region:
                return "in", region
        if relation == "on" and not self.g.is_region(target) and not self.g.is_movable(target):
            kind = self.g.kind(target)
            if kind not in {"surface"}:
                region = self._child_region(target, LEXICON.on_words)
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
