"""Task-set minimization: the smallest subset of instructions that yields the same library.

A (1+1) evolutionary algorithm over bit vectors (one bit per instruction, starting from the
full set): each generation flips every bit with probability 1/n; the offspring replaces the
parent only if it keeps fewer instructions and the library generated from it stays at least
`tau`-similar to the full set's library. Library similarity is measured with sentence
embeddings: every atomic task oracle of the reference library is matched to its most similar
one in the candidate library and the cosines are averaged (a dropped skill lowers it, a
renamed but equivalent one barely does). Generation may be stochastic (language models),
so each candidate is evaluated `evaluations` times and the similarities averaged. The run
stops after `max_generations` or `patience` generations without improvement, and is
reproducible from its seed.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from mango.generation.embeddings import Embedder
from mango.generation.models import AtomicOracleLibrary

log = logging.getLogger(__name__)

LibraryFn = Callable[[list[str]], AtomicOracleLibrary]


def library_texts(lib: AtomicOracleLibrary) -> list[str]:
    """One sentence per atomic oracle: what it does and what it checks."""
    return [f"{o.id.replace('_', ' ')}: {o.description} Checks {o.correctness_oracle}."
            for o in lib.atomic_oracle_library]


def library_similarity(reference: AtomicOracleLibrary, candidate: AtomicOracleLibrary,
                       embedder: Embedder) -> float:
    """Mean over reference oracles of the best cosine to a candidate oracle (0 if empty)."""
    ref = library_texts(reference)
    cand = library_texts(candidate)
    if not ref:
        return 1.0
    if not cand:
        return 0.0
    a = embedder.embed(ref)
    b = embedder.embed(cand)
    return float(np.clip((a @ b.T).max(axis=1), -1.0, 1.0).mean())


@dataclass
class GenerationLog:
    generation: int
    size: int
    similarity: float | None
    accepted: bool


@dataclass
class MinimizationResult:
    selected: list[str]
    bits: list[int]
    similarity: float
    generations: int
    evaluations: int
    seed: int
    stopped: str
    seconds: float
    history: list[GenerationLog] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def minimize_tasks(
    tasks: list[str],
    make_library: LibraryFn,
    embedder: Embedder,
    tau: float = 0.95,
    seed: int = 0,
    max_generations: int = 200,
    patience: int = 20,
    evaluations: int = 3,
    progress: Callable[[str], None] | None = None,
) -> MinimizationResult:
    """(1+1)-EA over task subsets; see the module docstring."""
    if not tasks:
        raise ValueError("no tasks to minimize")
    if not 0.0 < tau <= 1.0:
        raise ValueError("tau must be in (0, 1]")
    start = time.perf_counter()
    rng = random.Random(seed)
    n = len(tasks)
    n_evals = 0

    def evaluate(bits: list[int]) -> float:
        nonlocal n_evals
        subset = [t for t, b in zip(tasks, bits, strict=True) if b]
        if not subset:
            return 0.0
        sims = []
        for _ in range(evaluations):
            n_evals += 1
            sims.append(library_similarity(reference, make_library(subset), embedder))
        return float(np.mean(sims))

    reference = make_library(list(tasks))
    parent = [1] * n
    parent_sim = evaluate(parent)
    history: list[GenerationLog] = []
    stale = 0
    stopped = f"reached {max_generations} generations"
    gen = 0
    for gen in range(1, max_generations + 1):
        child = [b ^ (rng.random() < 1.0 / n) for b in parent]
        while child == parent:  # an unchanged offspring teaches nothing
            child = [b ^ (rng.random() < 1.0 / n) for b in parent]
        accepted = False
        sim = None
        if sum(child) < sum(parent):
            sim = evaluate(child)
            if sim >= tau:
                parent, parent_sim, accepted = child, sim, True
        history.append(GenerationLog(gen, sum(child), sim, accepted))
        if progress is not None:
            progress(f"generation {gen}: {sum(parent)}/{n} tasks, similarity {parent_sim:.3f}")
        if accepted:
            log.info("generation %d: kept %d/%d tasks (similarity %.3f)", gen, sum(parent), n,
                     parent_sim)
        stale = 0 if accepted else stale + 1
        if stale >= patience:
            stopped = f"no improvement in {patience} generations"
            break
    return MinimizationResult(
        selected=[t for t, b in zip(tasks, parent, strict=True) if b], bits=parent,
        similarity=parent_sim, generations=gen, evaluations=n_evals, seed=seed,
        stopped=stopped, seconds=time.perf_counter() - start, history=history)
