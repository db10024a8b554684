"""Storm's metrics: metric types for ``register_metric``, consumers, statistics windows and Prometheus text.

Public names (``docs/REFERENCE.md``): :class:`CountMetric`, :class:`MultiCountMetric`, :class:`ReducedMetric` with
:class:`MeanReducer`, :class:`CombinedMetric`; consumers derive from :class:`MetricsConsumer` (or just have its
methods) and are registered with ``topology.metrics.consumer.register``; :class:`LoggingMetricsConsumer` ships.
"""

from storm_py.metrics.consumer import DataPoint, LoggingMetricsConsumer, MetricsConsumer, TaskInfo
from storm_py.metrics.metric_types import (
    CombinedMetric,
    CountMetric,
    GaugeMetric,
    IMetric,
    MeanReducer,
    MultiCountMetric,
    MultiReducedMetric,
    ReducedMetric,
)

__all__ = [
    "CombinedMetric",
    "CountMetric",
    "DataPoint",
    "GaugeMetric",
    "IMetric",
    "LoggingMetricsConsumer",
    "MeanReducer",
    "MetricsConsumer",
    "MultiCountMetric",
    "MultiReducedMetric",
    "ReducedMetric",
    "TaskInfo",
]
