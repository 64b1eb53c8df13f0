"""The report's figures as inline SVG (matplotlib, Agg backend): a step timeline (Gantt) of
one episode, and the failure -> decision -> outcome flow of a campaign (VoLo's Fig. 5 form).

SVG text, not pictures of text: the report stays searchable, scales, and has no file beside
it. The hash salt is fixed so the same results draw the same bytes (a report diffs cleanly).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from typing import Any

TOOL_COLOURS = {"vla": "#4c78a8", "grasp": "#f58518", "place": "#54a24b", "halt": "#9d9d9d",
                "noop": "#bab0ac"}
STEP_COLOURS = {"completed": "#54a24b", "failed": "#e45756", "running": "#eeca3b"}
OUTCOME_COLOURS = {"recovered": "#54a24b", "not recovered": "#e45756"}
_RC = {"svg.hashsalt": "mango-report", "svg.fonttype": "none", "font.size": 9,
       "axes.spines.top": False, "axes.spines.right": False}


def _styled(draw: Callable[..., str]) -> Callable[..., str]:
    """Draw under the report's style (a context, not the process-wide rcParams)."""

    @functools.wraps(draw)
    def wrapper(*args: Any, **kwargs: Any) -> str:
        import matplotlib

        matplotlib.use("Agg", force=False)
        with matplotlib.rc_context(_RC):
            return draw(*args, **kwargs)

    return wrapper


def _svg(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # inline: no XML prolog or DOCTYPE inside the page


def _figure(width: float, height: float) -> tuple[Any, Any]:
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def episode_lanes(result: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """An episode as (spans, instants) on named lanes, from what its result stores.

    Orchestrated episodes: tool runs and halts per subgoal, the decisions, the monitor's
    signals and the world's failures and recoveries. Policy episodes: one lane per oracle
    step, from the previous step's completion to its own (a failed step runs to the end),
    with the fault and the labelled failure as instants."""
    spans: list[dict[str, Any]] = []
    marks: list[dict[str, Any]] = []
    orch = result.get("orchestrated")
    if orch:
        for item in orch.get("timeline", []):
            if item["kind"] in ("tool", "halt"):
                lane = "halt" if item["kind"] == "halt" else f"subgoal {item['subgoal']}"
                spans.append({"lane": lane, "start": item["start"], "end": item["end"],
                              "colour": TOOL_COLOURS.get(item["tool"] or "noop", "#bab0ac"),
                              "label": item["tool"] or ""})
            elif item["kind"] == "decision":
                marks.append({"lane": "decisions", "t": item["t"], "marker": "D",
                              "colour": "#b279a2" if item["phase"] == "recovery" else "#444",
                              "label": item["action"] if item["phase"] == "recovery" else ""})
            elif item["kind"] == "signal":
                marks.append({"lane": "monitor", "t": item["t"], "marker": "v",
                              "colour": "#e45756" if item["signal"] == "failure" else "#54a24b",
                              "label": item["reason"] if item["signal"] == "failure" else ""})
        for ev in orch.get("events", []):
            recovery = ev["kind"] == "recovery"
            marks.append({"lane": "world", "t": ev["t"], "marker": "o" if recovery else "X",
                          "colour": "#54a24b" if recovery else "#e45756",
                          "label": "" if recovery else ev["kind"]})
        return spans, marks
    verdict = result.get("verdict") or {}
    end = (result.get("symbolic") or {}).get("t_end") or 0.0
    start = 0.0
    for step in verdict.get("steps", []):
        lane = f"{step['path']} {step.get('action_id', '')}".strip()
        done = step.get("completed_t")
        status = step.get("status")
        if done is not None:
            spans.append({"lane": lane, "start": start, "end": done,
                          "colour": STEP_COLOURS["completed"], "label": ""})
            start = done
        elif status in ("failed", "running", "enabled") or step["path"] == verdict.get(
                "failed_step"):
            spans.append({"lane": lane, "start": start, "end": end,
                          "colour": STEP_COLOURS["failed" if step["path"] == verdict.get(
                              "failed_step") else "running"], "label": status or ""})
        else:
            spans.append({"lane": lane, "start": end, "end": end, "colour": "#ccc",
                          "label": status or ""})
    labels = result.get("labels") or {}
    if labels.get("fault_t") is not None:
        marks.append({"lane": "truth", "t": labels["fault_t"], "marker": "X",
                      "colour": "#e45756", "label": f"fault {labels.get('fault')}"})
    if labels.get("expected_verdict") == "fail" and labels.get("failed_t") is not None:
        marks.append({"lane": "truth", "t": labels["failed_t"], "marker": "v",
                      "colour": "#b279a2", "label": f"fails {labels.get('failed_step')}"})
    for ev in verdict.get("events", []) or []:
        if isinstance(ev, dict) and ev.get("t") is not None:
            marks.append({"lane": "oracle", "t": ev["t"], "marker": "v", "colour": "#444",
                          "label": str(ev.get("kind") or ev.get("event") or "")})
    return spans, marks


@_styled
def gantt_svg(result: dict[str, Any]) -> str:
    """One episode's step timeline: spans on lanes, events and decisions as markers."""
    spans, marks = episode_lanes(result)
    lanes: list[str] = []
    for x in [*spans, *marks]:
        if x["lane"] not in lanes:
            lanes.append(x["lane"])
    if not lanes:
        lanes = ["(no steps)"]
    fig, ax = _figure(8.0, 0.9 + 0.32 * len(lanes))
    row = {name: i for i, name in enumerate(lanes)}
    for s in spans:
        y = row[s["lane"]]
        ax.barh(y, max(s["end"] - s["start"], 0.05), left=s["start"], height=0.6,
                color=s["colour"], edgecolor="white", linewidth=0.5)
        if s["label"] and s["end"] - s["start"] > 1.0:
            ax.text(s["start"] + 0.1, y, s["label"], va="center", fontsize=7, color="white")
    for m in marks:
        y = row[m["lane"]]
        ax.scatter([m["t"]], [y], marker=m["marker"], color=m["colour"], s=30, zorder=3)
        if m["label"]:
            ax.annotate(m["label"], (m["t"], y), xytext=(3, 5), textcoords="offset points",
                        fontsize=7)
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    ax.set_xlabel("robot time (s)")
    ax.set_title(result["episode"], fontsize=9, loc="left")
    return _svg(fig)


@_styled
def recovery_flow_svg(flow: Sequence[dict[str, Any]]) -> str:
    """Failure kinds -> the decision taken -> recovered or not, band widths by count."""
    import numpy as np

    columns = [sorted({f["failure"] for f in flow}), sorted({f["decision"] for f in flow}),
               [o for o in OUTCOME_COLOURS if any(f["outcome"] == o for f in flow)]]
    total = sum(f["count"] for f in flow) or 1
    gap = 0.04
    fig, ax = _figure(8.0, 3.6)
    xs = (0.0, 1.0, 2.0)
    boxes: list[dict[str, tuple[float, float]]] = []
    for col, names in enumerate(columns):
        key = ("failure", "decision", "outcome")[col]
        sizes = {n: sum(f["count"] for f in flow if f[key] == n) / total for n in names}
        y, placed = 0.0, {}
        for n in names:
            placed[n] = (y, y + sizes[n])
            y += sizes[n] + gap
        boxes.append(placed)
        for n, (lo, hi) in placed.items():
            colour = OUTCOME_COLOURS.get(n, "#4c78a8" if col == 0 else "#b279a2")
            ax.add_patch(_rect(xs[col] - 0.03, lo, 0.06, hi - lo, colour))
            count = round(sizes[n] * total)
            ax.text(xs[col] + (0.05 if col < 2 else -0.05), (lo + hi) / 2, f"{n} ({count})",
                    va="center", ha="left" if col < 2 else "right", fontsize=8)
    # bands: each (failure, decision, outcome) count runs left to right through both gaps
    cursor = [{n: lo for n, (lo, _) in b.items()} for b in boxes]
    t = np.linspace(0.0, 1.0, 30)
    ease = 3 * t ** 2 - 2 * t ** 3
    for f in sorted(flow, key=lambda f: (f["failure"], f["decision"], f["outcome"])):
        h = f["count"] / total
        ends = []
        for col, key in enumerate(("failure", "decision", "outcome")):
            lo = cursor[col][f[key]]
            ends.append(lo)
        colour = OUTCOME_COLOURS[f["outcome"]]
        for a, b in ((0, 1), (1, 2)):
            x = xs[a] + 0.03 + (xs[b] - xs[a] - 0.06) * t
            lo = ends[a] + (ends[b] - ends[a]) * ease
            ax.fill_between(x, lo, lo + h, color=colour, alpha=0.35, linewidth=0)
        for col, key in enumerate(("failure", "decision", "outcome")):
            cursor[col][f[key]] += h
    ax.set_xlim(-0.1, 2.1)
    ax.set_ylim(max(sum(hi - lo for lo, hi in b.values()) + gap * (len(b) - 1)
                    for b in boxes) + 0.02, -0.02)
    ax.axis("off")
    for x, title in zip(xs, ("failure (world)", "decision", "outcome"), strict=True):
        ax.text(x, -0.02, title, ha="center", va="bottom", fontsize=9, fontweight="bold")
    return _svg(fig)


def _rect(x: float, y: float, w: float, h: float, colour: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, color=colour)
