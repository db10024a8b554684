"""A Spark job's checkpoint and trigger decisions (pure)."""

from __future__ import annotations

import pytest

from storm_py.spark.jobs import JobError, JobOutput, TriggerPolicy, check_steps, load_job, plan_step, step_name


def test_next_step_covers_what_committed_after_the_checkpoint():
    assert plan_step(latest=0, done_through=0) is None
    assert plan_step(latest=5, done_through=5) is None
    assert plan_step(latest=5, done_through=0) == (1, 5)
    assert plan_step(latest=9, done_through=5) == (6, 9)
    assert plan_step(latest=9, done_through=5, max_txids=2) == (6, 7)


def test_published_steps_must_tile_the_txids():
    assert check_steps([]) == 0
    assert check_steps([(4, 9), (1, 3)]) == 9
    with pytest.raises(JobError, match="do not follow each other"):
        check_steps([(1, 3), (5, 9)])
    with pytest.raises(JobError, match="do not follow each other"):
        check_steps([(1, 3), (3, 9)])


def test_checkpoint_is_read_from_the_step_directories(tmp_path):
    out = JobOutput(tmp_path)
    assert out.done_through() == 0
    for a, b in ((1, 4), (5, 5)):
        (tmp_path / step_name(a, b)).mkdir()
    (tmp_path / "_staging" / "abc").mkdir(parents=True)
    (tmp_path / "notes").mkdir()
    assert out.done_through() == 5
    assert out.step_dirs() == [str(tmp_path / step_name(1, 4)), str(tmp_path / step_name(5, 5))]


def test_trigger_policy():
    every3 = TriggerPolicy(every_txids=3)
    assert not every3.due(0, 100) and not every3.due(2, 100) and every3.due(3, 0)
    timed = TriggerPolicy(every_secs=10)
    assert not timed.due(5, 9.9) and timed.due(1, 10) and not timed.due(0, 50)
    both = TriggerPolicy(every_txids=10, every_secs=5)
    assert both.due(10, 0) and both.due(1, 5) and not both.due(9, 4)
    assert TriggerPolicy().due(1, 0) and not TriggerPolicy().due(0, 0)


def test_jobs_are_loaded_by_name():
    assert load_job("operator:add")(1, 2) == 3
    for spec, msg in (("nocolon", "MODULE:FUNCTION"), ("no_such_module_x:f", "cannot import"),
                      ("json:nope", "no function 'nope'")):
        with pytest.raises(JobError, match=msg):
            load_job(spec)
