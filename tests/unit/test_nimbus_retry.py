"""When the client tries nimbus again: briefly when nothing listens, long when the failure may pass."""

from __future__ import annotations

from storm_py.config import read_storm_config
from storm_py.node.nimbus_retry import RetryPolicy

POLICY = RetryPolicy(times=5, interval=2.0, ceiling=60.0, refused_secs=3.0)


def test_a_failure_that_may_pass_backs_off_for_a_minute() -> None:
    delays = [POLICY.delay(n, refused=False, refused_for=0.0) for n in range(1, 7)]
    assert delays == [2.0, 4.0, 8.0, 16.0, 32.0, None]


def test_a_refused_connection_is_retried_for_a_few_seconds_only() -> None:
    waited, failures = 0.0, 0
    while True:
        failures += 1
        delay = POLICY.delay(failures, refused=True, refused_for=waited)
        if delay is None:
            break
        waited += delay
    assert 1.0 <= waited <= 3.0 and failures <= 5


def test_refusals_never_outlast_the_configured_tries_or_window() -> None:
    assert RetryPolicy(times=0, interval=2.0, ceiling=60.0, refused_secs=3.0).delay(1, True, 0.0) is None
    assert RetryPolicy(times=5, interval=2.0, ceiling=60.0, refused_secs=0.0).delay(1, True, 0.0) is None
    assert POLICY.delay(1, refused=True, refused_for=2.9) is None
    assert POLICY.delay(2, refused=True, refused_for=0.75) == 0.75


def test_the_defaults_make_that_policy() -> None:
    assert RetryPolicy.from_conf(read_storm_config(None, (), ())) == POLICY
