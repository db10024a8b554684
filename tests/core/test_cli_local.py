"""``storm-py version`` and ``storm-py local``: the in-process commands."""

from __future__ import annotations

import subprocess
from pathlib import Path

from click.testing import CliRunner

from examples import transactional_global_count, trident_word_count
from storm_py.cli.main import cli
from storm_py.clock import SYSTEM_CLOCK
from tests.cluster.harness import storm_py_command

REPO = Path(__file__).resolve().parents[2]


def test_version():
    result = CliRunner().invoke(cli, ["version"])
    assert result.exit_code == 0
    assert result.output.startswith("storm_py ")


def test_local_runs_word_count_and_prints_progress_and_counts():
    result = CliRunner().invoke(cli, ["local", "examples.word_count:build", "--ttl", "1.5",
                                      "-c", "wordcount.sentences=500"])
    assert result.exit_code == 0, result.output
    assert "emitted" in result.output and "acked" in result.output
    assert "final counts" in result.output
    total = 0
    for line in result.output.splitlines():
        if line.startswith("final counts"):
            total += sum(int(kv.split("=")[1]) for kv in line.split(": ", 1)[1].split(", "))
    from examples.word_count import SENTENCES

    assert total == sum(len(SENTENCES[i % len(SENTENCES)].split()) for i in range(500))


def test_local_bad_inputs_give_one_line_errors():
    runner = CliRunner()
    for args, needle in (
        (["local", "nocolon"], "MODULE:FUNCTION"),
        (["local", "no_such_module_xyz:build"], "cannot import module"),
        (["local", "examples.word_count:nope"], "has no function"),
        (["local", "examples.word_count:SENTENCES"], "not callable"),
        (["local", "examples.word_count:build", "-c", "oops"], "key=value"),
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code != 0, args
        assert needle in result.output, (args, result.output)


def _run_local(entry: str, ttl: float, *args: str) -> tuple[list[str], float]:
    """Run ``storm-py local ENTRY --ttl TTL``; its output lines and the seconds from its ``running`` line to its
    exit (the time ``--ttl`` governs)."""
    proc = subprocess.Popen([*storm_py_command(), "local", entry, "--ttl", str(ttl), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=REPO)
    lines: list[str] = []
    started = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("running ") and started is None:
                started = SYSTEM_CLOCK.now()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and started is not None, "\n".join(lines)
    return lines, SYSTEM_CLOCK.now() - started


def test_local_trident_word_count_ends_on_time_and_prints_its_counts():
    """A busy Trident topology (thousands of batches a second) still ends within a second or two of --ttl,
    and prints every word's count."""
    lines, took = _run_local("examples.trident_word_count:build", 5)
    assert took < 5 + 2, f"--ttl 5 took {took:.1f}s:\n" + "\n".join(lines)
    counted = {kv.split("=")[0]: int(kv.split("=")[1]) for line in lines if line.startswith("final counts: ")
               for kv in line.split(": ", 1)[1].split(", ")}
    assert set(counted) == {w for (s,) in trident_word_count.SENTENCES for w in s.split(" ")}, lines
    assert counted["the"] > counted["cow"] > 0 and lines[-1].startswith("done: emitted")


def test_local_finite_topology_says_once_that_it_is_idle_and_prints_its_result():
    """The transactional global count finishes its input within a second: it prints each commit and then one
    idle line, not a zero-rate line every second until --ttl ends."""
    lines, _ = _run_local("examples.transactional_global_count:build", 4)
    total = sum(len(rows) for rows in transactional_global_count.DATA.values())
    assert f"all {total} tuples counted (the input is finite: nothing more comes)" in lines, lines
    reports = [x for x in lines if x.startswith("[")]
    assert sum(" idle: " in x for x in reports) == 1 and " idle: " in reports[-1], lines
    assert not [x for x in reports if "(         0/s)" in x], lines


def test_local_exclamation_prints_the_exclaimed_words():
    lines, _ = _run_local("examples.exclamation:build", 2)
    (shown,) = [x for x in lines if x.startswith("exclaimed: ")]
    assert "nathan!!!!!! x" in shown, lines
