"""`mango policy run --chunk-threshold F --aggregate NAME` (spec commands.md §8): bad values
are one `error:` line naming the option, exit 2, before any stack starts."""

from __future__ import annotations

from typer.testing import CliRunner

from mango.cli.main import app

runner = CliRunner()


def test_an_unknown_aggregator_is_named_with_the_known_ones() -> None:
    out = runner.invoke(app, ["policy", "run", "--scene", "libero10_book_caddy",
                              "--aggregate", "median"])
    assert out.exit_code == 2, out.output
    assert "error:" in out.output and "aggregate" in out.output
    assert "weighted_average" in out.output and "Traceback" not in out.output


def test_a_threshold_outside_zero_to_one_is_refused() -> None:
    for bad in ("-0.1", "1.5"):
        out = runner.invoke(app, ["policy", "run", "--scene", "libero10_book_caddy",
                                  "--chunk-threshold", bad])
        assert out.exit_code == 2, out.output
        assert "--chunk-threshold" in out.output


def test_the_options_are_documented_in_help() -> None:
    out = runner.invoke(app, ["policy", "run", "--help"], terminal_width=200)
    assert out.exit_code == 0
    for word in ("--chunk-threshold", "--aggregate", "latest_only", "conservative"):
        assert word in out.output
