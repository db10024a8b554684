"""The UI's time series: rates and latency per bucket of the 10-minute window, summed over executors."""

from __future__ import annotations

from storm_py.metrics.reports import Report
from storm_py.metrics.windows import StatsBook
from storm_py.ui.series import series


def report(component: str, is_spout: bool, t: float, counters: dict[str, float]) -> Report:
    return Report("node", 6700, component, component, [1], is_spout, t, counters, {}, t, [])


def test_points_follow_a_rate_change_and_leave_system_components_out() -> None:
    book = StatsBook()
    t0 = 30_000.0  # a bucket boundary (30 s buckets)
    emitted = acked = complete = 0.0
    for second in range(0, 121):  # 10 tuples/s for 90 s, then 2 tuples/s
        rate = 10 if second < 90 else 2
        emitted += rate
        acked += rate
        complete += rate * (5.0 if second < 90 else 50.0)
        now = t0 + second
        found = [report("spout", True, now, {"emitted:default": emitted, "acked": acked, "complete_ms": complete}),
                 report("__acker", False, now, {"emitted:default": 1000.0 * second})]
        book.observe("t", {r.book_key: (r.time_secs, r.counters) for r in found},
                     {r.book_key: t0 for r in found})
    got = series(book, "t", found, t0 + 120.5)
    points = got["points"]
    assert got["bucketSecs"] == 30.0 and [p["time"] for p in points] == [t0 + 30 * i for i in range(5)]
    assert [p["emitted"] for p in points[:3]] == [10.0, 10.0, 10.0]  # the acker's 1000s are not the topology's
    assert points[3]["emitted"] == 2.0 and points[3]["completeLatency"] == 50.0
    assert points[0]["completeLatency"] == 5.0 and points[0]["failed"] == 0.0
    assert points[-1]["time"] == t0 + 120 and points[-1]["emitted"] == 2.0  # over 1 s so far, not a spike


def test_a_component_alone_and_no_more_than_twenty_buckets() -> None:
    book = StatsBook()
    found: list[Report] = []
    for second in range(0, 1200, 10):
        found = [report("a", True, float(second), {"emitted:default": second * 1.0}),
                 report("b", False, float(second), {"executed:a:default": second * 2.0,
                                                   "execute_ms:a:default": second * 2.0})]
        book.observe("t", {r.book_key: (r.time_secs, r.counters) for r in found}, {r.book_key: 0.0 for r in found})
    got = series(book, "t", found, 1195.0, component="b")
    assert len(got["points"]) == 20 and got["component"] == "b"
    assert got["points"][0]["executed"] == 2.0 and got["points"][0]["executeLatency"] == 1.0
    assert got["points"][0]["emitted"] == 0.0 and got["points"][0]["completeLatency"] is None


def test_the_oldest_bucket_counts_from_the_executors_start() -> None:
    book = StatsBook()
    found: list[Report] = []
    for second in range(16, 61):  # started at 15 s, 10 tuples/s: the bucket [0, 30) covers 15 s of it
        found = [report("a", True, float(second), {"emitted:default": (second - 15) * 10.0})]
        book.observe("t", {r.book_key: (r.time_secs, r.counters) for r in found}, {r.book_key: 15.0 for r in found})
    first, *rest = [p["emitted"] for p in series(book, "t", found, 60.0)["points"]]
    assert 9.0 <= first <= 10.0 and rest == [10.0, 10.0]  # the report at 30 s carries the last second of [0, 30)
