"""`mango campaign`: many episodes, judged and summarised (commands.md §5, issue #17).

`run` checks the whole campaign file, the output folder and its store first (one `error:` line
naming the field or the path, exit 2), then runs what the output folder does not hold yet, with
a progress bar; Ctrl-C stops after storing what finished. `report` summarises a folder as
json, md or html.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from mango.cli.bounds import MAX_PROCESSES

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(help="Evaluation campaigns: run episodes, report statistics.",
                  no_args_is_help=True)


def _fail(message: str, code: int = 2) -> NoReturn:
    sys.stderr.write(f"error: {message}\n")
    raise typer.Exit(code)


@app.command()
def run(
    campaign_file: Annotated[Path, typer.Argument(help="Campaign YAML (commands.md §5).")],
    out: Annotated[Path, typer.Option("-o", "--out", help="Output folder (resumed if it "
                                      "holds this campaign).")],
    workers: Annotated[int, typer.Option("--workers", min=1, max=MAX_PROCESSES,
                                         help="Worker processes.")] = 1,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", help="Run on a Ray cluster (auto or HOST:PORT).")] = None,
    ros_domain_base: Annotated[int | None, typer.Option(
        "--ros-domain-base", min=0, max=232, help="runner: ros — worker k's stack runs on "
        "ROS domain BASE+k (default: the domains after ROS_DOMAIN_ID).")] = None,
    dataset: Annotated[Path | None, typer.Option(
        "--dataset", help="runner: ros — also record the cameras and write the episodes "
        "(failed ones included, `success` false) as a new LeRobot dataset here.")] = None,
) -> None:
    """Run every episode of the campaign not yet stored in OUT."""
    from rich.console import Console

    from mango.cli.outputs import output_dir, run_progress
    from mango.errors import InputError
    from mango.evaluation.campaign import load_campaign
    from mango.evaluation.runner import run_campaign

    try:
        campaign = load_campaign(campaign_file)
        output_dir(out, "campaign output folder")
        if dataset is not None:
            if campaign.spec.runner != "ros":
                raise InputError("a dataset is made of the episodes' recorded bags: set "
                                 "`runner: ros` (in_process episodes record no cameras)",
                                 file=str(campaign_file), field="--dataset")
            output_dir(dataset, "dataset", new=True)
        done_before = _stored(out)  # opens (or makes) the store: a bad one fails here
    except InputError as exc:
        _fail(str(exc))
    console = Console(stderr=True)
    with run_progress(console, rate=True, transient=False) as progress:
        # a sampled campaign's size is known once its pool is run
        total = (sum(1 for _ in campaign.episodes()) if campaign.spec.sampling == "grid"
                 else None)
        bar = progress.add_task(campaign.spec.name, total=total, rate="")

        def on_result(result: dict, done: int, total: int) -> None:
            el = progress.tasks[bar].elapsed or 0.0
            ran = done - summary_skipped[0]
            rate = f"{ran / el:.2f} ep/s" if el > 0 and ran > 0 else ""
            progress.update(bar, completed=done, total=total or None, rate=rate,
                            description=f"{campaign.spec.name}: {result['episode']}")

        summary_skipped = [done_before]
        progress.update(bar, completed=done_before)
        try:
            summary = run_campaign(campaign, out, workers, on_result, ray_address,
                                   ros_domain_base, record_views=dataset is not None)
        except InputError as exc:
            _fail(str(exc))
    console.print(f"{summary.ran} episodes run, {summary.skipped} already stored, "
                  f"{summary.errors} with errors; results in {out}")
    if summary.pool:
        console.print(f"sampling: {summary.pool} pool runs")
    for task, short in (summary.shortfall or {}).items():
        missing = ", ".join(f"{n} {stage}" for stage, n in short.items())
        console.print(f"[yellow]sampling: {task}: the pool had too few runs ({missing} "
                      "missing); give more seeds[/]")
    if summary.interrupted:
        console.print(f"stopped early ({summary.interrupted}): run the same command again "
                      "to resume")
        raise typer.Exit(130 if summary.interrupted == "interrupted" else 1)
    if dataset is not None:
        _write_dataset(out, dataset, console)


def _write_dataset(out: Path, dataset: Path, console: Console) -> None:
    """The campaign's stored episodes as a LeRobot dataset (`evaluation.dataset`)."""
    from mango.cli.bag_progress import ExportBar, quiet_lerobot
    from mango.errors import InputError
    from mango.evaluation.dataset import export_campaign

    quiet_lerobot()
    try:
        with ExportBar(console) as bar:
            made = export_campaign(out, dataset, progress=bar)
    except InputError as exc:
        _fail(str(exc))
    failed = sum(not e.success for e in made.episodes)
    console.print(f"dataset: {len(made.episodes)} episodes ({failed} failed) in {dataset}",
                  highlight=False, soft_wrap=True)
    for episode, why in made.left_out.items():
        console.print(f"[yellow]dataset: episode {episode} left out: {why}[/]", highlight=False)


def _stored(out: Path) -> int:
    """Episodes the store holds (made empty if missing, so a place where it cannot be made
    or a damaged store is an error before any episode runs)."""
    from mango.evaluation.runner import STORE_FILE
    from mango.evaluation.store import Store

    with Store(out / STORE_FILE) as store:
        return len(store.done())


@app.command()
def report(
    folder: Annotated[Path, typer.Argument(help="A campaign output folder.")],
    out: Annotated[Path | None, typer.Option("-o", "--out", help="Write here, not stdout.")
                   ] = None,
    fmt: Annotated[str, typer.Option("--format", help="html, md or json.")] = "html",
    timelines: Annotated[int, typer.Option("--timelines", min=0, help="Step timelines (html): "
                                           "this many episodes, failures first.")] = 6,
    episode: Annotated[list[str] | None, typer.Option(
        "--episode", help="An episode id to draw a timeline of (repeatable; html).")] = None,
) -> None:
    """Summarise a campaign folder: success with Wilson intervals, oracle vs ground truth,
    pairwise comparisons, failure -> recovery, generated oracles, step timelines."""
    from mango.cli.outputs import output_file
    from mango.evaluation import report as rep
    from mango.evaluation.metrics import summarize
    from mango.evaluation.runner import STORE_FILE
    from mango.evaluation.store import Store

    if fmt not in ("html", "md", "json"):
        _fail(f"--format must be html, md or json, not '{fmt}'")
    db = folder / STORE_FILE
    if not os.path.lexists(db):
        _fail(f"{folder}: no {STORE_FILE} here (not a campaign output folder)")
    if out is not None:
        output_file(out, "report")
    with Store(db) as store:
        results = list(store.results())
        spec = store.meta("campaign") or {}
        generation = store.meta("generation")
    if not results:
        _fail(f"{folder}: the campaign has no finished episodes yet")
    summary = summarize(results)
    if generation:
        summary["generation"] = generation
    by_id = {r["episode"]: r for r in results}
    unknown = [e for e in episode or [] if e not in by_id]
    if unknown:
        _fail(f"--episode: no episode '{unknown[0]}' in {folder}")
    chosen = [by_id[e] for e in episode] if episode else rep.select_timelines(results,
                                                                               timelines)
    name = str(spec.get("name", folder.name))
    text = {"json": rep.to_json, "md": lambda s: rep.to_markdown(s, name),
            "html": lambda s: rep.to_html(s, name, chosen)}[fmt](summary)
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            _fail(f"cannot write {out}: {exc.strerror}", 1)  # the report was made, not written
