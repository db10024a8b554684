"""``storm-py version`` and ``storm-py local``: the in-process commands."""

from __future__ import annotations

from click.testing import CliRunner

from storm_py.cli.main import cli


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
