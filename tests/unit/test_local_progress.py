"""``storm-py local``'s progress lines: a line per report while tuples move, one ``idle`` line once they stop."""

from __future__ import annotations

from storm_py.cli.local import Progress


def test_progress_reports_rates_while_tuples_move():
    progress = Progress(100.0)
    line = progress.report(101.0, (500, 40, 0))
    assert line is not None and line.startswith("[  1.0s] emitted        500 (       500/s)")
    line = progress.report(102.0, (1500, 90, 1))
    assert line is not None and "(     1,000/s)" in line and "acked         90 (       50/s)" in line
    assert line.endswith("failed 1")


def test_a_finished_topology_gets_one_idle_line_then_silence_until_tuples_move_again():
    progress = Progress(0.0)
    assert progress.report(1.0, (104, 10, 0)) is not None
    idle = progress.report(2.0, (104, 10, 0))
    assert idle is not None and idle.startswith("[  2.0s] idle: nothing emitted") and "emitted 104" in idle
    assert [progress.report(float(t), (104, 10, 0)) for t in range(3, 10)] == [None] * 7
    moving = progress.report(10.0, (110, 11, 0))
    assert moving is not None and "emitted        110 (         6/s)" in moving
    assert progress.report(11.0, (110, 11, 0)) is not None  # idle again: said once more
