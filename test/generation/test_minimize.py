"""(1+1)-EA task-set minimization with real sentence embeddings."""

from __future__ import annotations

import pytest

from mango.generation.embeddings import MiniLMEmbedder
from mango.generation.engine import load_function_library
from mango.generation.minimize import library_similarity, minimize_tasks
from mango.generation.models import AtomicOracleLibrary
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.pipeline import make_pipeline


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def make_library():
    library, catalog = load_function_library(None)
    calls: list[list[str]] = []

    def make(tasks: list[str]) -> AtomicOracleLibrary:
        calls.append(list(tasks))
        pipe = make_pipeline(OfflinePlanner(), catalog, library=library)
        return pipe.generate_library(tasks).oracle_library

    make.calls = calls  # type: ignore[attr-defined]
    return make


def test_embeddings_are_normalised_and_meaningful(embedder):
    v = embedder.embed(["pick up the mug", "grasp the cup and lift it", "close the drawer"])
    assert v.shape == (3, 384)
    assert abs(float((v[0] ** 2).sum()) - 1.0) < 1e-4
    assert float(v[0] @ v[1]) > float(v[0] @ v[2])


def test_library_similarity(embedder, make_library, libero_tasks):
    full = make_library(libero_tasks)
    assert library_similarity(full, full, embedder) == pytest.approx(1.0, abs=1e-5)
    only_pick = make_library(["pick up the book"])
    assert library_similarity(full, only_pick, embedder) < 0.95
    empty = AtomicOracleLibrary(atomic_oracle_library=[])
    assert library_similarity(full, empty, embedder) == 0.0


def test_minimize_is_seeded_and_keeps_the_library(embedder, make_library, libero_tasks):
    a = minimize_tasks(libero_tasks, make_library, embedder, seed=7)
    b = minimize_tasks(libero_tasks, make_library, embedder, seed=7)
    assert a.selected == b.selected and a.history == b.history
    assert len(a.selected) < len(libero_tasks)
    assert a.similarity >= 0.95
    full = make_library(libero_tasks)
    assert library_similarity(full, make_library(a.selected), embedder) >= 0.95
    # only smaller subsets are ever accepted
    sizes = [len(libero_tasks)] + [h.size for h in a.history if h.accepted]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
    assert a.stopped.startswith("no improvement in 20") or a.generations == 200


def test_each_candidate_is_evaluated_three_times(embedder, make_library, libero_tasks):
    make_library.calls.clear()
    res = minimize_tasks(libero_tasks[:4], make_library, embedder, seed=1, max_generations=6,
                         patience=50)
    assert res.generations == 6
    evaluated = sum(1 for h in res.history if h.similarity is not None)
    assert res.evaluations == 3 * (evaluated + 1)  # + the full set
    assert len(make_library.calls) == 1 + res.evaluations  # + the reference library


def test_minimize_rejects_bad_arguments(embedder, make_library):
    with pytest.raises(ValueError):
        minimize_tasks([], make_library, embedder)
    with pytest.raises(ValueError):
        minimize_tasks(["pick up the book"], make_library, embedder, tau=1.5)
