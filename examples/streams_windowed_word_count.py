"""storm-starter's WindowedWordCount in the Stream API: sentences in tumbling windows of two seconds, counted per
word within each window; only words seen more than ``at_least`` times in the window are kept.

Run it in-process:  storm-py local examples.streams_windowed_word_count:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from examples.word_count import RandomSentenceSpout
from storm_py import Duration, Spout
from storm_py.api.topology import StormTopology
from storm_py.streams import StreamBuilder, TumblingWindows, ValueMapper, Window


def windowed_word_count(builder: StreamBuilder, spout: Spout, out: Any, window: Window | None = None,
                        at_least: int = 5) -> None:
    """Per window: ``(word, count)`` for each word counted more than ``at_least`` times, given to ``out``."""
    (builder.new_stream(spout, ValueMapper(0))
     .window(window or TumblingWindows.of(Duration.seconds(2)))
     .flat_map(str.split)
     .map_to_pair(lambda word: (word, 1))
     .count_by_key()
     .filter(lambda pair: pair[1] > at_least)
     .for_each(out))


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing each window's counts."""
    builder = StreamBuilder()
    windowed_word_count(builder, RandomSentenceSpout(), print)
    return builder.build()
