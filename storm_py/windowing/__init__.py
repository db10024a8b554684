"""storm_py.windowing: Storm 2.x's windowed bolts — count and duration windows, sliding and tumbling, processing
and event time with watermarks and late tuples.

:class:`BaseWindowedBolt` is what users extend; :class:`~storm_py.windowing.manager.WindowManager` and the
policies of :mod:`storm_py.windowing.policies` are the pure core; :class:`WindowedBoltExecutor` runs a windowed
bolt in a topology.
"""

from storm_py.windowing.bolt import BaseWindowedBolt
from storm_py.windowing.executor import LATE_TUPLE_FIELD, WindowedBoltExecutor
from storm_py.windowing.manager import WindowManager
from storm_py.windowing.spans import Count, Duration
from storm_py.windowing.window import TupleWindow

__all__ = [
    "LATE_TUPLE_FIELD",
    "BaseWindowedBolt",
    "Count",
    "Duration",
    "TupleWindow",
    "WindowManager",
    "WindowedBoltExecutor",
]
