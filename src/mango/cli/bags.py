"""`mango record`, `mango replay` and `mango bag info|export|repair`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from mango.cli.bounds import MAX_PROCESSES
from mango.cli.verdicts import ExitCodeOpt, exit_for
from mango.errors import InputError

bag_app = typer.Typer(help="Inspect, export and repair rosbag2 MCAP bags.", no_args_is_help=True)


TopicOpt = Annotated[str | None, typer.Option(
    help="WorldState topic (default: /world_state, or the bag's only WorldState topic).")]
EpisodeOpt = Annotated[int | None, typer.Option(
    help="Episode (1-based, negative from the end; episodes split where world time goes "
         "back). Default: the last.")]


def register(app: typer.Typer) -> None:
    app.command("record")(record)
    app.command("replay")(replay)
    app.add_typer(bag_app, name="bag")


def _fail(exc: InputError) -> NoReturn:
    sys.stderr.write(f"error: {exc}\n")
    raise typer.Exit(2)


def record(
    output: Annotated[Path, typer.Option("-o", "--output", help="Bag directory to create.")],
    topics: Annotated[list[str] | None, typer.Argument(help="Topics (default: all).")] = None,
    duration: Annotated[float, typer.Option(
        min=0, help="Stop after this many seconds (0: Ctrl-C).")] = 0.0,
) -> None:
    """Record topics to a rosbag2 MCAP bag (readable by `ros2 bag` and Foxglove)."""
    import time

    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    from mango.cli.outputs import output_dir
    from mango.nodes.bag_recorder import BagRecorder

    try:
        output_dir(output, "bag", new=True)
    except InputError as exc:
        _fail(exc)
    rclpy.init()
    node = None
    failed: OSError | None = None
    try:
        node = BagRecorder(str(output), list(topics or []))
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        end = time.monotonic() + duration if duration > 0 else None
        while rclpy.ok() and (end is None or time.monotonic() < end):
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except (FileExistsError, NotADirectoryError) as exc:
        _fail(InputError(str(exc)))
    except OSError as exc:  # a full disk: stop; what reached the disk stays a readable bag
        failed = exc
    finally:
        if node is not None:
            count = node.writer.message_count
            try:
                node.destroy_node()
            except OSError as exc:  # closing writes the summary: the same full disk again
                failed = failed or exc
            if failed is None:
                sys.stderr.write(f"recorded {count} messages to {output}\n")
        rclpy.try_shutdown()
    if failed is not None:
        where = failed.filename or (node.writer.path / node.writer.file_name if node is not None
                                    else output)
        sys.stderr.write(f"error: {where}: cannot write: {failed.strerror or failed}; the bag "
                         "keeps what reached the disk before (`mango bag info` reads it)\n")
        raise typer.Exit(1)  # the recording could not go on (commands.md: exit 1)


def replay(
    bag: Annotated[Path, typer.Argument(help="Bag directory or .mcap file.")],
    oracle: Annotated[Path, typer.Option("--oracle", help="Fine-grained oracle JSON.")],
    functions: Annotated[Path | None, typer.Option("--functions")] = None,
    topic: TopicOpt = None,
    hold: Annotated[int, typer.Option(min=1)] = 1,
    episode: EpisodeOpt = None,
    jobs: Annotated[int, typer.Option(
        min=0, max=MAX_PROCESSES,
        help="Processes (0: one per core when the bag is big enough to gain).")] = 0,
    json_output: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    exit_code: ExitCodeOpt = False,
) -> None:
    """Re-judge a recorded run offline; prints what `mango oracle check` prints.

    World time going back (a sim reset) starts a new episode, as in the oracle node; the last
    episode is judged unless `--episode` says otherwise.
    """
    from rich.console import Console

    from mango.bags import BagReader
    from mango.bags.judge import judge_bag
    from mango.bags.states import StreamProblems, world_state_topic
    from mango.oracle import FunctionLibrary, StepTracker
    from mango.oracle.cli_render import render_report
    from mango.oracle.predicates import EvaluationError

    try:
        library = FunctionLibrary.load(functions) if functions else FunctionLibrary.default()
        reader = BagReader(bag)  # one reader: what it finds in the file is said once
        topic = world_state_topic(reader, topic)
        problems = StreamProblems(topic)
        report = judge_bag(reader, StepTracker(oracle, library, hold=hold), topic, episode,
                           jobs=jobs, problems=problems)
    except (InputError, EvaluationError) as exc:
        _fail(InputError(str(exc)) if not isinstance(exc, InputError) else exc)
    render_report(report, Console(), json_output=json_output)
    skipped = problems.summary()
    if skipped:
        sys.stderr.write(f"{skipped}\n")
    exit_for(report.verdict, exit_code)


def _exists(bag: Path) -> None:
    """A missing bag is named before any default output beside it is made."""
    if not bag.exists():
        raise InputError("no such bag (a rosbag2 folder or .mcap file)", file=str(bag))


@bag_app.command("info")
def info(bag: Annotated[Path, typer.Argument(help="Bag directory or .mcap file.")]) -> None:
    """Topics, types and message counts (read from the data, so it works on a cut bag)."""
    from rich.console import Console
    from rich.table import Table

    from mango.bags import BagReader

    try:
        reader = BagReader(bag)
        topics = reader.topics()
    except InputError as exc:
        _fail(exc)
    table = Table(title=str(bag))
    for col in ("topic", "type", "messages"):
        table.add_column(col, overflow="fold")
    for name, (msgtype, n) in sorted(topics.items()):
        table.add_row(name, msgtype, str(n))
    console = Console()
    console.print(table)
    for file, n in reader.recordings.items():
        console.print(f"[yellow]{file.name} holds {n} recordings one after another (MCAP files "
                      "concatenated): all are read, in file order, and counted above[/]")
    if reader.truncated:
        console.print("[yellow]the bag (or a recording in it) ends early (recorder killed?); "
                      "`mango bag repair` rewrites it whole[/]")
    if reader.corrupt:
        console.print(f"[yellow]{reader.corrupt} damaged place(s) skipped (the warnings give "
                      "their byte offsets); `mango bag repair` copies what is readable[/]")


@bag_app.command("export")
def export(
    bags: Annotated[list[Path], typer.Argument(
        metavar="BAG...",
        help="Bag directories or .mcap files (with --format lerobot, one episode each).")],
    output: Annotated[str | None, typer.Option(
        "-o", "--output", metavar="PATH",
        help="trace: a trace file (JSON Lines), or a folder (ends in / or exists) to write "
             "BAG.jsonl in; default BAG.jsonl next to the bag (BAG.episodeN.jsonl with "
             "--episode). lerobot: the new dataset folder (required).")] = None,
    topic: TopicOpt = None,
    episode: EpisodeOpt = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="trace (spec §3 world states) | lerobot (a LeRobot dataset).")
                   ] = "trace",
    fps: Annotated[int, typer.Option(min=1, max=1000, help="lerobot: frames per second.")
                   ] = 15,
    cameras: Annotated[list[str] | None, typer.Option(
        help="lerobot: cameras to export, by name (repeat, or comma-separated; default "
             "every …/<camera>/image_raw topic of the first bag).")] = None,
    oracle: Annotated[Path | None, typer.Option(
        help="lerobot: judge the world states with this oracle (default: the task verdict "
             "recorded in the bag).")] = None,
    functions: Annotated[Path | None, typer.Option(help="lerobot: the oracle's functions.")
                         ] = None,
    max_gap: Annotated[float | None, typer.Option(
        "--max-gap", min=0.0, help="lerobot: seconds a stream may be silent before the export "
        "refuses the bag (default: 5 of its median intervals or 2 frames).")] = None,
    images: Annotated[bool, typer.Option(
        "--images", help="lerobot: store frames as images in the parquet files, not MP4 "
        "videos (readable by lerobot without a video decoder).")] = False,
    vcodec: Annotated[str, typer.Option(help="lerobot: h264 | hevc | libsvtav1.")] = "h264",
) -> None:
    """Write recorded world states as a spec §3 trace (`--format trace`, one bag, one episode:
    default the last), or recorded runs as a LeRobot dataset with the oracle's subtask labels
    (`--format lerobot`, one episode per bag)."""
    if fmt not in ("trace", "lerobot"):
        _fail(InputError(f"unknown format {fmt!r} (trace | lerobot)", field="--format"))
    # an option of the other format is a mistake to say, not to ignore
    other = (("--topic", topic), ("--episode", episode)) if fmt == "lerobot" else (
        ("--cameras", cameras), ("--oracle", oracle), ("--functions", functions),
        ("--max-gap", max_gap), ("--images", images or None))
    for name, value in other:
        if value is not None:
            _fail(InputError(f"{name} does not apply to --format {fmt}", field=name))
    if fmt == "lerobot":
        _export_lerobot(bags, output, fps, cameras, oracle, functions, max_gap, images, vcodec)
        return
    if len(bags) != 1:
        _fail(InputError(f"--format trace exports one bag ({len(bags)} given)", field="BAG"))
    _export_trace(bags[0], output, topic, episode)


def _export_trace(bag: Path, output: str | None, topic: str | None,
                  episode: int | None) -> None:
    import itertools

    from mango.bags import BagReader
    from mango.bags.states import StreamProblems, iter_episode, world_state_topic
    from mango.cli.outputs import beside, output_file, output_file_in, write_error
    from mango.oracle.world_state import write_trace

    suffix = f".episode{episode}.jsonl" if episode is not None else ".jsonl"
    target = beside(bag, suffix)
    try:
        _exists(bag)
        path = (output_file(target, "trace file") if output is None
                else output_file_in(output, target.name, "trace file"))
        reader = BagReader(bag)  # one reader: what it finds in the file is said once
        topic = world_state_topic(reader, topic)
        problems = StreamProblems(topic)
        states = iter_episode(reader, topic, episode, problems)
        # the first usable state before the file is opened: a topic without one is an error
        # that leaves no empty trace behind
        first = next(states, None)
        n = write_trace(path, itertools.chain([] if first is None else [first], states))
    except InputError as exc:
        _fail(exc)
    except OSError as exc:
        _fail(write_error(exc, output or target))
    sys.stderr.write(f"wrote {n} states to {path}\n")
    skipped = problems.summary("exported")
    if skipped:
        sys.stderr.write(f"{skipped}\n")


def _export_lerobot(bags: list[Path], output: str | None, fps: int, cameras: list[str] | None,
                    oracle: Path | None, functions: Path | None, max_gap: float | None,
                    images: bool, vcodec: str) -> None:
    from rich.console import Console

    from mango.bags.lerobot_export import ExportOptions, export_lerobot
    from mango.cli.bag_progress import ExportBar, quiet_lerobot
    from mango.cli.outputs import output_dir
    from mango.oracle.predicates import EvaluationError

    err = Console(stderr=True)
    quiet_lerobot()
    names = [c.strip() for given in cameras or [] for c in given.split(",") if c.strip()]
    try:
        if output is None:
            raise InputError("--format lerobot needs -o DIR (the new dataset folder)",
                             field="--output")
        for bag in bags:
            _exists(bag)
        out = Path(output)
        output_dir(out, "dataset", new=True)
        options = ExportOptions(fps=fps, cameras=names or None, oracle=oracle,
                                functions=functions, max_gap=max_gap, videos=not images,
                                vcodec=vcodec)
        with ExportBar(err) as bar:
            episodes = export_lerobot(bags, out, options, bar)
    except (InputError, EvaluationError) as exc:
        _fail(exc if isinstance(exc, InputError) else InputError(str(exc)))
    frames = sum(e.frames for e in episodes)
    failed = sum(not e.success for e in episodes)
    err.print(f"wrote {len(episodes)} episodes ({frames} frames, {failed} failed) to {out}",
              highlight=False, soft_wrap=True)


@bag_app.command("repair")
def repair(
    bag: Annotated[Path, typer.Argument(help="Bag whose recorder died.")],
    output: Annotated[Path | None, typer.Option(
        "-o", "--output", help="New bag directory (must not exist). Default: BAG.repaired next "
        "to the bag.")] = None,
) -> None:
    """Copy every readable message into a new, properly closed bag (summary, metadata); the
    damaged bag is left as it is.

    The new bag is written beside OUTPUT and moved there once complete: a repair that fails
    leaves nothing half-written behind."""
    import shutil
    import tempfile

    from mango.bags import BagReader, BagWriter
    from mango.cli.outputs import beside, output_dir

    if output is None:
        output = beside(bag, ".repaired")
    try:
        _exists(bag)
        output_dir(output, "repaired bag", new=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{output.name}.", dir=output.parent))
    except InputError as exc:
        _fail(exc)
    except OSError as exc:
        _fail(InputError(f"cannot write here: {exc.strerror}", file=str(output)))
    try:
        reader = BagReader(bag)
        qos = reader.offered_qos()
        types: dict[str, str] = {}  # topic -> type, as the new bag has it
        with BagWriter(partial / output.name) as writer:
            for m in reader.messages():
                if types.setdefault(m.topic, m.msgtype) != m.msgtype:
                    raise InputError(f"topic {m.topic} carries {types[m.topic]} in one "
                                     f"recording and {m.msgtype} in another: one bag cannot "
                                     "hold both (split the file where the second recording "
                                     "begins)", file=str(bag))
                writer.add_topic(m.topic, m.msgtype, qos.get(m.topic))
                writer.write(m.topic, m.data, m.log_time_ns)
            n = writer.message_count
        (partial / output.name).rename(output)
    except (InputError, OSError) as exc:
        _fail(exc if isinstance(exc, InputError) else InputError(str(exc), file=str(output)))
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    recordings = sum(reader.recordings.values()) + len(reader.files) - len(reader.recordings)
    sys.stderr.write(f"wrote {n} messages to {output}"
                     + (f" (from {recordings} recordings)" if recordings > len(reader.files)
                        else "") + "\n")
