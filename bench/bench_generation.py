"""Benchmark: MANGO generation with the offline planner on LIBERO-10.

Prints (1) generation time per module and per oracle (goal: < 1 s per oracle) and (2) the
ablation table (validity, executability, similarity to the ground truth in
config/oracles/) for the full method, each ablation and the single-agent Baseline.
The offline planner is rule-based, not a language model.

Run: python bench/bench_generation.py
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from report import headline, print_table

from mango.generation.engine import load_function_library
from mango.generation.metrics import score_oracle, summarize
from mango.generation.models import load_scene_file, load_tasks
from mango.generation.offline.planner import OfflinePlanner
from mango.generation.pipeline import ABLATIONS, GenerationConfig, make_pipeline

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "test" / "data" / "generation"
SLUGS = [
    "soup_sauce_basket",
    "cheese_butter_basket",
    "stove_moka",
    "bowl_drawer",
    "mugs_plates",
    "book_caddy",
    "mug_pudding_plate",
    "soup_cheese_basket",
    "two_moka_stove",
    "mug_microwave",
]
REPEATS = 5


def run(ablation: str, tasks, scenes, library, catalog):
    pipe = make_pipeline(
        OfflinePlanner(), catalog, GenerationConfig(ablation=ablation), library=library
    )
    t0 = time.perf_counter()
    lib = pipe.generate_library(tasks)
    t_lib = time.perf_counter() - t0
    per_oracle, oracles = [], []
    for task, scene in zip(tasks, scenes.task_objects, strict=True):
        t1 = time.perf_counter()
        r = pipe.module3(
            task,
            scene,
            None if ablation == "no_module1" else lib.atomic_library,
            None if ablation == "no_module2" else lib.oracle_library,
        )
        per_oracle.append(time.perf_counter() - t1)
        oracles.append(r)
    return lib, t_lib, per_oracle, oracles


def main() -> None:
    tasks = load_tasks(DATA / "libero10_tasks.json")
    scenes = load_scene_file(DATA / "libero10_scenes.json")
    library, catalog = load_function_library(None)
    truths = [
        json.loads((ROOT / "config/oracles" / f"libero10_{s}.json").read_text()) for s in SLUGS
    ]

    m1, m2, m3 = [], [], []
    per_task: list[list[float]] = [[] for _ in tasks]
    for _ in range(REPEATS):
        lib, _, per_oracle, _ = run("full", tasks, scenes, library, catalog)
        m1.append(lib.module1.seconds)
        m2.append(lib.module2.seconds)
        m3.append(sum(per_oracle))
        for i, t in enumerate(per_oracle):
            per_task[i].append(t)

    print_table(f"offline planner (not an LLM), LIBERO-10, median of {REPEATS} runs",
                ("module", "seconds", "iterations"), [
                    ("I   atomic task library (10 instructions)",
                     f"{statistics.median(m1):.4f}", str(lib.module1.iterations)),
                    ("II  atomic oracle library", f"{statistics.median(m2):.4f}",
                     str(lib.module2.iterations)),
                    ("III fine-grained oracles (10)", f"{statistics.median(m3):.4f}", "1 each"),
                ])
    worst = max(max(x) for x in per_task)
    print_table("module III time per oracle (goal < 1 s)", ("task", "median s", "max s"), [
        *[(slug, f"{statistics.median(times):.4f}", f"{max(times):.4f}")
          for slug, times in zip(SLUGS, per_task, strict=True)],
        ("worst", "", f"{worst:.4f} ({'meets' if worst < 1 else 'misses'} the 1 s goal)"),
    ])

    rows = []
    for ablation in ABLATIONS:
        t0 = time.perf_counter()
        lib, _, _, oracles = run(ablation, tasks, scenes, library, catalog)
        secs = time.perf_counter() - t0
        scores = [
            score_oracle(r.oracle.to_json_dict(), s, truth, library)
            for r, s, truth in zip(oracles, scenes.task_objects, truths, strict=True)
        ]
        summ = summarize(scores)
        calls = lib.module1.calls + lib.module2.calls + sum(r.module3.calls for r in oracles)
        approved = "n/a" if ablation == "baseline" else (f"{sum(r.approved for r in oracles)}/10")
        rows.append((ablation, f"{summ['validity']:.2f}", f"{summ['executability']:.2f}",
                     f"{summ['similarity']:.3f}", f"{summ['min_similarity']:.3f}", approved,
                     str(calls), f"{secs:.3f}"))
    print_table("ablations (offline planner, LIBERO-10)",
                ("variant", "validity", "executability", "similarity", "min sim", "approved",
                 "agent calls", "seconds"), rows)
    medians = [statistics.median(times) * 1000 for times in per_task]
    headline("Oracle generation", f"offline oracle generation, per LIBERO-10 oracle: median "
             f"of {REPEATS} runs, fastest–slowest task (slowest single run)",
             f"{min(medians):.0f}–{max(medians):.0f} ms ({worst * 1000:.0f} ms)", "< 1 s")


if __name__ == "__main__":
    main()
