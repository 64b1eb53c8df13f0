"""LIBERO itself as a runtime (issue #34): predicate agreement with LIBERO's own code over all
130 tasks, and raw LIBERO steps/s without cameras.

For every task of libero_10, libero_goal, libero_spatial, libero_object and libero_90 (init
state 0): each BDDL goal atom is judged by LIBERO (`base_predicates`, in its own process) and
by our `libero_*` predicates on the spec §3 world state of the same simulator state, at the
states of `mango.sim.libero.agreement.rollout_checks` (init, settled, moved, goal posed). Also
the symbolic verdict (all goal atoms, ours) against LIBERO's `check_success()` per state.
Needs `.venv-libero` (`make libero-venv`).
"""

from __future__ import annotations

import argparse
import sys
import time

from report import headline, print_table

from mango.sim.libero import SUITES, LiberoClient, LiberoScene
from mango.sim.libero.agreement import NOOP, STAGES, libero_library, rollout_checks


def agreement(suites: list[str], limit: int | None) -> None:
    library = libero_library()
    rows, bad = [], []
    total_pairs = total_agree = 0
    verdicts = verdict_agree = 0
    t0 = time.monotonic()
    with LiberoClient() as client:
        for suite in suites:
            tasks = client.tasks(suite)[:limit]
            pairs = agree = true = states = states_agree = posed_success = 0
            for t in tasks:
                task = client.open(LiberoScene(suite, t["index"]), 0)
                checks = rollout_checks(client, STAGES, library)
                posed_success += client.check_success()
                for stage, cs in checks.items():
                    pairs += len(cs)
                    agree += sum(c.agrees for c in cs)
                    true += sum(c.libero for c in cs)
                    states += 1
                    states_agree += all(c.libero for c in cs) == all(c.ours for c in cs)
                    bad += [(f"{suite}/{task.index}", stage, " ".join(c.atom), c.libero,
                             c.ours) for c in cs if not c.agrees]
                print(f"{suite}/{task.index}: {agree}/{pairs} pairs agree so far, "
                      f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
            rows.append([suite, len(tasks), pairs, true, agree, f"{agree / max(pairs, 1):.4f}",
                         f"{states_agree}/{states}", f"{posed_success}/{len(tasks)}"])
            total_pairs, total_agree = total_pairs + pairs, total_agree + agree
            verdicts, verdict_agree = verdicts + states, verdict_agree + states_agree
    print_table(
        f"LIBERO goal atoms: our libero_* predicates vs LIBERO's base_predicates "
        f"(init state 0; states {', '.join(STAGES)}; {time.monotonic() - t0:.0f} s)",
        ["suite", "tasks", "(state, atom) pairs", "true for LIBERO", "agree", "agreement",
         "verdict = all atoms (states)", "check_success when posed"],
        rows,
    )
    print_table("Disagreements", ["task", "state", "atom", "LIBERO", "ours"],
                [[*b[:3], str(b[3]), str(b[4])] for b in bad] or [["none", "", "", "", ""]])
    headline("Oracle", "LIBERO goal-atom agreement with LIBERO's own predicates",
             f"{total_agree / max(total_pairs, 1):.4f} of {total_pairs}", ">= 0.99")


def speed(steps: int) -> None:
    with LiberoClient() as client:
        client.open(LiberoScene("libero_10", 2), 0)
        client.step(NOOP, 10)
        t = time.perf_counter()
        client.step(NOOP, steps)
        raw = steps / (time.perf_counter() - t)
        client.open(LiberoScene("libero_10", 2), 0)  # robosuite's horizon: 1000 steps
        t = time.perf_counter()
        for _ in range(steps):
            client.step(NOOP)
        one = steps / (time.perf_counter() - t)
        n = max(steps // 10, 1)
        client.open(LiberoScene("libero_10", 2), 0)
        t = time.perf_counter()
        for _ in range(n):
            client.step(NOOP)
            client.facts()
        with_facts = n / (time.perf_counter() - t)
    print_table(
        "LIBERO steps/s without cameras (libero_10/2, ControlEnv, OSC_POSE, 20 Hz control)",
        ["mode", "steps/s", "x LIBERO's 20 Hz"],
        [["raw (in the LIBERO process)", f"{raw:.1f}", f"{raw / 20:.1f}"],
         ["one request per step (process boundary)", f"{one:.1f}", f"{one / 20:.1f}"],
         ["one step + its world-state facts", f"{with_facts:.1f}", f"{with_facts / 20:.1f}"]],
    )
    headline("Simulation and control", "LIBERO raw steps/s without cameras", f"{raw:.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--suites", nargs="*", default=list(SUITES), choices=SUITES)
    ap.add_argument("--tasks", type=int, default=None, help="first N tasks of each suite")
    ap.add_argument("--steps", type=int, default=500)
    args = ap.parse_args()
    agreement(args.suites, args.tasks)
    speed(args.steps)


if __name__ == "__main__":
    main()
