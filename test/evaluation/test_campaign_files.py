"""The shipped campaign files (config/campaigns/) that the note's numbers come from: each one
passes the campaign check, and the generated-oracle Table III differs from the hand-written
one only in its oracles (same tasks, seeds and sampling: the two tables compare)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mango.evaluation.campaign import load_campaign

CAMPAIGNS = Path(__file__).resolve().parents[2] / "config" / "campaigns"


@pytest.mark.parametrize("name", ["mango_table3", "mango_table3_generated", "volo_modes"])
def test_shipped_campaigns_pass_the_check(name: str) -> None:
    campaign = load_campaign(CAMPAIGNS / f"{name}.yaml")
    assert campaign.spec.name == name
    assert len(campaign.spec.tasks) == 10 and all(t.startswith("libero10_")
                                                  for t in campaign.spec.tasks)


def test_the_two_table3_campaigns_differ_only_in_their_oracles() -> None:
    hand = load_campaign(CAMPAIGNS / "mango_table3.yaml").spec
    gen = load_campaign(CAMPAIGNS / "mango_table3_generated.yaml").spec
    assert (hand.oracles, gen.oracles, hand.sampling) == ("handwritten", "generated", "mango")
    assert hand.model_dump(exclude={"name", "oracles"}) == gen.model_dump(
        exclude={"name", "oracles"})


def test_the_mode_comparison_runs_the_volo_modes() -> None:
    spec = load_campaign(CAMPAIGNS / "volo_modes.yaml").spec
    modes = {(s.mode, s.monitor) for s in spec.systems if s.kind == "task"}
    assert modes == {("vla_only", "none"), ("vla_only", "oracle"), ("full", "oracle"),
                     ("full", "gt"), ("tools_only", "oracle")}
