"""The bar a LeRobot export shows (`mango bag export --format lerobot`, `mango campaign run
--dataset`): frames of the bag being written, then its video encoding."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from rich.console import Console

from mango.cli.outputs import run_progress


class ExportBar:
    """An `ExportProgress` (mango.bags.lerobot_export) drawn on stderr."""

    def __init__(self, console: Console) -> None:
        self._progress = run_progress(console)
        self._task: int | None = None
        self._shown = console.is_terminal  # piped or captured stderr: no bar to redraw

    def __enter__(self) -> ExportBar:
        if self._shown:
            self._progress.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._shown:
            self._progress.stop()

    def reading(self, bag: Path) -> None:
        self._replace(f"{bag.name}: reading", None)

    def episode(self, bag: Path, frames: int) -> None:
        self._replace(f"{bag.name}: frames", frames)

    def _replace(self, what: str, total: int | None) -> None:
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(what, total=total)

    def frame(self) -> None:
        if self._task is not None:
            self._progress.advance(self._task)

    def encoding(self, bag: Path) -> None:
        if self._task is not None:
            self._progress.update(self._task, description=f"{bag.name}: encoding")


def quiet_lerobot() -> None:
    """What lerobot's writer says per episode (datasets' "Map" bars, FFmpeg's notes while it
    muxes the videos, a numpy warning on the `success` column's statistics) is noise beside
    the export's own bar; FFmpeg's errors still show."""
    import warnings

    import av
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()
    av.logging.set_libav_level(av.logging.ERROR)  # lerobot hands FFmpeg its own logger back
    warnings.filterwarnings("ignore", "Converting input from bool", RuntimeWarning)
