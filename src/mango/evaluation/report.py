"""Campaign reports from the stored results: `json` (the summary itself), `md` (tables), and
`html` (one self-contained file: inline SVG charts and tables, no scripts, nothing fetched):
success with Wilson intervals, oracle vs ground truth and by failure stage, comparisons, the
failure -> recovery flow, generation tables when the campaign generated its oracles, and a
step timeline per selected episode.
"""

from __future__ import annotations

import html
import json
from typing import Any


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f} %"


def _num(v: float | None, places: int = 3) -> str:
    return "—" if v is None else f"{v:.{places}f}"


def to_json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, indent=2)


def _system_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[name, f"{s['success']}/{s['n']}", _pct(s["success_rate"]),
             f"{_pct(s['wilson_95'][0])} – {_pct(s['wilson_95'][1])}"]
            for name, s in summary["systems"].items()]


def _judge_rows(table: dict[str, Any], lead: list[str]) -> list[list[str]]:
    rows = []
    for name, m in (("fine-grained oracle", table), ("symbolic end state", table["symbolic"])):
        c = m["confusion"]
        rows.append([*lead, name, str(c["tp"]), str(c["fp"]), str(c["tn"]), str(c["fn"]),
                     _num(m["accuracy"]), _num(m["precision"]), _num(m["recall"]),
                     _num(m["f1"]), _num(m["localization_accuracy"])])
    return rows


def _oracle_rows(summary: dict[str, Any]) -> list[list[str]]:
    return _judge_rows(summary["oracle_vs_symbolic"], [])


def _task_oracle_rows(summary: dict[str, Any]) -> list[list[str]]:
    """Table III per task (a summary from before it had them has none)."""
    return [row for task, t in summary["oracle_vs_symbolic"].get("per_task", {}).items()
            for row in _judge_rows(t, [task, str(t["judged"])])]


def _comparison_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[c["a"], c["b"], f"{c['mean_diff_pp']:+.1f}", f"{c['p']:.4f}", f"{c['a12']:.2f}",
             str(c["tasks"])] for c in summary["comparisons"]]


def _stage_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[stage, str(v["failures"]), str(v["detected"]), str(v["localized"]),
             _pct(v["recall"]), _pct(v["localization_accuracy"])]
            for stage, v in summary["oracle_vs_symbolic"]["by_stage"].items()]


def _flow_rows(summary: dict[str, Any]) -> list[list[str]]:
    return [[f["system"], f["failure"], f["decision"], f["outcome"], str(f["count"])]
            for f in summary.get("recovery_flow", [])]


def _generation_rows(summary: dict[str, Any]) -> list[list[str]]:
    gen = summary.get("generation") or {}
    return [[o["task"], _yes(o["approved"]), str(o["iterations"]), _num(o["seconds"], 2),
             _yes(o["valid"]), _yes(o["executable"]), _num(o["similarity"])]
            for o in gen.get("oracles", [])]


def _yes(v: bool | None) -> str:
    return "—" if v is None else ("yes" if v else "no")


STAGE_HEAD = ["failure stage", "failures", "detected", "localized", "recall", "localization"]
FLOW_HEAD = ["system", "failure", "decision", "outcome", "episodes"]
GENERATION_HEAD = ["task", "approved", "iterations", "seconds", "valid", "executable",
                   "similarity to hand-written"]
SYSTEM_HEAD = ["system", "success", "rate", "Wilson 95 %"]
ORACLE_HEAD = ["judge", "TP", "FP", "TN", "FN", "accuracy", "precision", "recall", "F1",
               "localization"]
TASK_ORACLE_HEAD = ["task", "judged", *ORACLE_HEAD]
COMPARE_HEAD = ["a", "b", "Δ pp", "p (sign-flip)", "Â12", "tasks"]


def to_markdown(summary: dict[str, Any], name: str = "campaign") -> str:
    def table(head: list[str], rows: list[list[str]]) -> str:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        return "\n".join(lines)

    parts = [f"# {name}: {summary['episodes']} episodes", "", "## Success per system", "",
             table(SYSTEM_HEAD, _system_rows(summary)), "",
             f"## Oracle vs ground truth ({summary['oracle_vs_symbolic']['judged']} judged "
             "episodes; positive = a failed episode)", "",
             table(ORACLE_HEAD, _oracle_rows(summary))]
    parts += ["", "## Fine-grained oracle by failure stage", "",
              table(STAGE_HEAD, _stage_rows(summary))]
    if task_rows := _task_oracle_rows(summary):
        parts += ["", "## Oracle vs ground truth per task", "", table(TASK_ORACLE_HEAD,
                                                                      task_rows)]
    if summary["comparisons"]:
        parts += ["", "## Pairwise comparisons", "", table(COMPARE_HEAD,
                                                           _comparison_rows(summary))]
    if summary.get("recovery_flow"):
        parts += ["", "## Failure → recovery", "", table(FLOW_HEAD, _flow_rows(summary))]
    if summary.get("generation"):
        parts += ["", f"## Generated oracles ({summary['generation']['backend']})", "",
                  table(GENERATION_HEAD, _generation_rows(summary))]
    return "\n".join(parts) + "\n"


def _svg_bars(summary: dict[str, Any]) -> str:
    """Success rate per system with its Wilson interval as a whisker."""
    names = list(summary["systems"])
    width, row, left = 640, 28, 160
    h = row * len(names) + 30
    scale = width - left - 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" '
           'role="img" aria-label="success rate per system">']
    for i, n in enumerate(names):
        s = summary["systems"][n]
        y = 10 + i * row
        lo, hi = s["wilson_95"]
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" '
                   f'font-size="13">{html.escape(n)}</text>')
        out.append(f'<rect x="{left}" y="{y + 3}" width="{scale * s["success_rate"]:.1f}" '
                   'height="16" fill="#4c78a8"/>')
        out.append(f'<line x1="{left + scale * lo:.1f}" x2="{left + scale * hi:.1f}" '
                   f'y1="{y + 11}" y2="{y + 11}" stroke="#222" stroke-width="2"/>')
    for f in (0.0, 0.5, 1.0):
        x = left + scale * f
        out.append(f'<text x="{x:.1f}" y="{h - 4}" font-size="11" text-anchor="middle">'
                   f'{int(100 * f)} %</text>')
    out.append("</svg>")
    return "".join(out)


def select_timelines(results: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The episodes worth a timeline: per system in turn, a recovered failure, an
    unrecovered one, a caught failure, a missed one, then a pass (sorted by id: the same
    results select the same episodes)."""

    def rank(r: dict[str, Any]) -> int:
        orch = r.get("orchestrated") or {}
        spells = orch.get("spells", [])
        if spells:
            return 0 if any(s["recovered"] for s in spells) else 1
        if (r.get("labels") or {}).get("expected_verdict") == "fail":
            return 2 if (r.get("verdict") or {}).get("verdict") == "fail" else 3
        return 4 if r.get("error") is None else 5

    by_system: dict[str, list[dict[str, Any]]] = {}
    for r in sorted(results, key=lambda r: (rank(r), r["episode"])):
        by_system.setdefault(r["system"], []).append(r)
    chosen: list[dict[str, Any]] = []
    while len(chosen) < count and any(by_system.values()):
        for queue in by_system.values():
            if queue and len(chosen) < count:
                chosen.append(queue.pop(0))
    return chosen


def to_html(summary: dict[str, Any], name: str = "campaign",
            timelines: list[dict[str, Any]] | None = None) -> str:
    def table(head: list[str], rows: list[list[str]]) -> str:
        th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                       for r in rows)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"

    per_task_rows = [[sys_name, task, f"{v['success']}/{v['n']}"]
                     for sys_name, s in summary["systems"].items()
                     for task, v in s["per_task"].items()]
    sections = [
        f"<h1>{html.escape(name)}</h1><p>{summary['episodes']} episodes</p>",
        "<h2>Success per system (Wilson 95 % interval)</h2>", _svg_bars(summary),
        table(SYSTEM_HEAD, _system_rows(summary)),
        "<h2>Success per task</h2>", table(["system", "task", "success"], per_task_rows),
        f"<h2>Oracle vs ground truth</h2><p>{summary['oracle_vs_symbolic']['judged']} judged "
        "episodes; a positive is a failed episode.</p>",
        table(ORACLE_HEAD, _oracle_rows(summary)),
    ]
    sections += ["<h2>Fine-grained oracle by failure stage</h2>",
                 table(STAGE_HEAD, _stage_rows(summary))]
    if task_rows := _task_oracle_rows(summary):
        sections += ["<h2>Oracle vs ground truth per task</h2>",
                     table(TASK_ORACLE_HEAD, task_rows)]
    if summary["comparisons"]:
        sections += ["<h2>Pairwise comparisons</h2>",
                     table(COMPARE_HEAD, _comparison_rows(summary))]
    if summary.get("recovery_flow"):
        from mango.evaluation.figures import recovery_flow_svg

        systems = sorted({f["system"] for f in summary["recovery_flow"]})
        sections.append("<h2>Failure → recovery (world failures, the decision, the "
                        "outcome)</h2>")
        for sys_name in systems:
            flow = [f for f in summary["recovery_flow"] if f["system"] == sys_name]
            sections += [f"<h3>{html.escape(sys_name)}</h3>",
                         f'<figure class="flow">{recovery_flow_svg(flow)}</figure>']
        sections.append(table(FLOW_HEAD, _flow_rows(summary)))
    if summary.get("generation"):
        sections += [f"<h2>Generated oracles ({html.escape(summary['generation']['backend'])})"
                     "</h2>", table(GENERATION_HEAD, _generation_rows(summary))]
    if timelines:
        from mango.evaluation.figures import gantt_svg

        sections.append("<h2>Step timelines</h2>")
        for r in timelines:
            verdict = (r.get("verdict") or {}).get("verdict", "—")
            sections += [f'<h3 id="{html.escape(r["episode"])}">{html.escape(r["episode"])}'
                         "</h3>", f"<p>success: {_yes(bool(r.get('success')))}, fine-grained "
                         f"verdict: {html.escape(str(verdict))}"
                         + (f", error: {html.escape(r['error'])}" if r.get("error") else "")
                         + "</p>", f'<figure class="gantt">{gantt_svg(r)}</figure>']
    style = ("body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:"
             "collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:"
             "left}th{background:#eee}figure{margin:0.5em 0}figure svg{max-width:100%;height:auto}")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>"
            f"{html.escape(name)}</title><style>{style}</style></head><body>"
            + "".join(sections) + "</body></html>\n")
