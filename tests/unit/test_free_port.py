"""The kernel's ephemeral port range, as the dev daemons' port picker reads it."""

from __future__ import annotations

from pathlib import Path

from storm_py.dev.zookeeper import ephemeral_low


def test_the_range_is_read_from_the_kernels_file_and_unreadable_means_none(tmp_path: Path) -> None:
    f = tmp_path / "range"
    f.write_text("40000\t60999\n")
    assert ephemeral_low(f) == 40000
    f.write_text("")
    assert ephemeral_low(f) is None
    f.write_text("x 1")
    assert ephemeral_low(f) is None
    assert ephemeral_low(tmp_path / "missing") is None
