"""Non-finite and out-of-range numbers on the command line are refused before anything is sent."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from storm_py.cli.main import cli


@pytest.mark.parametrize("args", [
    ["kill", "wc", "-w", "nan"], ["kill", "wc", "-w", "inf"], ["kill", "wc", "-w", "-1"],
    ["rebalance", "wc", "-w", "NaN"], ["rebalance", "wc", "-w", "1e999"], ["rebalance", "wc", "-n", "0"],
    ["monitor", "wc", "-i", "nan"], ["local", "x.whl", "mod:fn", "--ttl", "inf"],
])  # fmt: skip
def test_bad_numbers_are_refused_by_the_cli(args: list[str]) -> None:
    result = CliRunner().invoke(cli, [*args, "-c", "nimbus.seeds=['127.0.0.1:1']", "-c", "storm.nimbus.retry.times=0"])
    assert result.exit_code == 2, result.output  # a usage error, before any request
    assert "Invalid value" in result.output
