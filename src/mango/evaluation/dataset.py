"""A campaign's episodes as one LeRobot dataset (`mango campaign run … --dataset DIR`).

Stack episodes (`runner: ros`) record a bag each, cameras included when the campaign asks
(`run_campaign(record_views=True)`); every stored episode with a bag becomes one episode of
the dataset, failed runs included — their frames carry `success` false and the subtask
labels of the oracle node's verdict (`bags.lerobot_export`), so people filter on them. An
episode that could not run (its result has an `error`) has nothing to export and is said.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mango.bags.lerobot_export import (
    EpisodeSummary,
    ExportOptions,
    ExportProgress,
    export_lerobot,
)
from mango.errors import InputError
from mango.evaluation.runner import STORE_FILE
from mango.evaluation.store import Store


@dataclass(frozen=True)
class CampaignDataset:
    """What went into the dataset, and which episodes did not (id -> why)."""

    episodes: list[EpisodeSummary]
    left_out: dict[str, str]


def campaign_bags(out: Path) -> tuple[list[Path], dict[str, str]]:
    """The stored episodes' bags, in episode order, and the episodes without one."""
    with Store(out / STORE_FILE) as store:
        results = sorted(store.results(), key=lambda r: r["episode"])
    bags, left_out = [], {}
    for r in results:
        bag = out / "episodes" / r["episode"] / "bag"
        if r.get("error"):
            left_out[r["episode"]] = f"it could not run ({r['error']})"
        elif not (bag / "metadata.yaml").is_file():
            left_out[r["episode"]] = "it recorded no bag (an in_process episode)"
        else:
            bags.append(bag)
    return bags, left_out


def export_campaign(out: Path, dataset: Path, options: ExportOptions | None = None,
                    progress: ExportProgress | None = None) -> CampaignDataset:
    """Write the campaign in `out` as a new LeRobot dataset at `dataset`."""
    bags, left_out = campaign_bags(out)
    if not bags:
        raise InputError("no episode of the campaign recorded a bag to make a dataset of",
                         file=str(out))
    return CampaignDataset(export_lerobot(bags, dataset, options or ExportOptions(), progress),
                           left_out)
