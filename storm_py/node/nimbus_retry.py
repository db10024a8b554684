"""This module owns when a client tries nimbus again (:class:`RetryPolicy`, read from ``storm.nimbus.retry.*``).

A pure policy: it is told how many tries failed, whether the last was a refused connection and for how long
refusals have lasted, and answers the delay before the next try or that it is time to give up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from storm_py.config.keys import setting


@dataclass(frozen=True)
class RetryPolicy:
    """When a request nimbus did not answer is tried again.

    A failure that may pass (a timeout, a leader being elected, a nimbus that is not the leader) is retried
    ``times`` times, the delay starting at ``interval`` and doubling up to ``ceiling`` seconds.  A refused
    connection means nothing listens: it is retried only while the refusals have lasted under ``refused_secs``
    (a daemon restarting), at ``interval`` capped to a quarter of that, never more than ``times`` times.
    """

    times: int
    interval: float
    ceiling: float
    refused_secs: float

    @classmethod
    def from_conf(cls, conf: Mapping[str, Any]) -> RetryPolicy:
        """The policy ``storm.nimbus.retry.*`` configure."""
        return cls(
            times=max(0, int(setting(conf, "storm.nimbus.retry.times"))),
            interval=max(0.0, float(setting(conf, "storm.nimbus.retry.interval.millis")) / 1000.0),
            ceiling=max(0.0, float(setting(conf, "storm.nimbus.retry.intervalceiling.millis")) / 1000.0),
            refused_secs=max(0.0, float(setting(conf, "storm.nimbus.retry.refused.secs"))),
        )

    def delay(self, failures: int, refused: bool, refused_for: float) -> float | None:
        """Seconds to wait before the next try after ``failures`` failed ones, the last ``refused`` or not, the
        refusals in a row having lasted ``refused_for`` seconds; None: give up."""
        if failures > self.times:
            return None
        if refused:
            step = min(self.interval, self.refused_secs / 4)
            return step if self.refused_secs > 0 and refused_for + step <= self.refused_secs else None
        return min(self.interval * 2.0 ** (failures - 1), self.ceiling)
