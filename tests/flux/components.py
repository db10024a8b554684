"""Python components the Flux tests name by ``module:Class``: a bolt driven by constructor arguments, properties,
config methods and factories (Storm's flux-core ``TestBolt``), a topology source, a custom grouping, a worker hook."""

from __future__ import annotations

import enum
from typing import Any

from storm_py import BaseWindowedBolt, BasicBolt, Fields, Spout, TopologyBuilder
from storm_py.api.hooks import WorkerHook
from storm_py.testing import TestWordSpout


class TestEnum(enum.Enum):
    __test__ = False
    FOO = "foo"
    BAR = "bar"


class TestClass:
    __test__ = False

    def __init__(self, field: str) -> None:
        self.field = field


class TestBolt(BasicBolt):
    """Records every way Flux configured it."""

    __test__ = False

    def __init__(self, kind: TestEnum | None = None, ratio: float = 0.0, flag: bool = False,
                 classes: list[TestClass] | None = None) -> None:
        self.kind = kind
        self.ratio = ratio
        self.flag = flag
        self.classes = classes or []
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.time_len: Any = None
        self.plain = None
        self.snake_prop = None

    @classmethod
    def new_instance(cls, kind: TestEnum | None = None) -> TestBolt:
        return cls(kind)

    def with_foo(self, foo: str) -> TestBolt:
        self.calls.append(("withFoo", (foo,)))
        return self

    def withNone(self) -> TestBolt:
        self.calls.append(("withNone", ()))
        return self

    def with_foo_bar(self, foo: str, bar: str) -> TestBolt:
        self.calls.append(("withFooBar", (foo, bar)))
        return self

    def with_classes(self, classes: list[TestClass]) -> TestBolt:
        self.calls.append(("withClasses", tuple(c.field for c in classes)))
        return self

    def set_time_len(self, value: Any) -> None:
        self.time_len = value

    def execute(self, tup: Any, collector: Any) -> None:
        collector.emit([tup.values[0]])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(Fields(["word"]))


class Exploding:
    """Its constructor raises."""

    def __init__(self, *args: Any) -> None:
        raise RuntimeError("boom in the constructor")


class NotASpout:
    """Neither a spout nor a bolt."""


class WordSource:
    """A topology source: ``getTopology(config)`` builds the topology in code."""

    def __init__(self, spout_name: str = "words") -> None:
        self.spout_name = spout_name

    def get_topology(self, config: dict[str, Any]) -> Any:
        builder = TopologyBuilder()
        builder.set_spout(self.spout_name, TestWordSpout())
        return builder.create_topology()

    def get_nothing(self, config: dict[str, Any]) -> Any:
        return "not a topology"


class RecordingHook(WorkerHook):
    """A worker hook carrying a label."""

    def __init__(self, label: str = "") -> None:
        self.label = label


class CountingSpout(Spout):
    """Emits 0, 1, 2, ... with message ids (acked tuples are counted by the cluster)."""

    def __init__(self) -> None:
        self.n = 0

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def next_tuple(self) -> None:
        self.collector.emit([self.n], msg_id=self.n)
        self.n += 1

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])


class WindowCount(BaseWindowedBolt):
    """Emits the number of tuples in each window (a Python twin of flux-examples' TestWindowBolt)."""

    def prepare(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: Any) -> None:
        self.collector.emit([len(window.get())])

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["count"])


class ExplodingLoudly:
    """Its constructor raises an error whose message spans lines."""

    def __init__(self) -> None:
        raise ValueError("first line\nsecond line\n  third")


class OnlyValueRecordTranslator:
    """flux-examples' ``OnlyValueRecordTranslator``: the record's value alone, as field ``str``."""

    def translate(self, record: Any) -> tuple[str, list[Any]] | None:
        return "default", [record.value]

    def streams(self) -> dict[str, list[str]]:
        return {"default": ["str"]}
