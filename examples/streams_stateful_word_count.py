"""storm-starter's StatefulWordCount and StateQueryExample in the Stream API: a running count per word kept in
managed state (``update_state_by_key``, checkpointed like any stateful bolt), and a second stream of words whose
values ask that state for their count (``state_query``).

Run it in-process:  storm-py local examples.streams_stateful_word_count:build --ttl 10
"""

from __future__ import annotations

from typing import Any

from storm_py import Spout
from storm_py.api.topology import StormTopology
from storm_py.streams import StreamBuilder, ValueMapper
from storm_py.testing import TestWordSpout


def stateful_word_count(builder: StreamBuilder, words: Spout, queries: Spout, counts: Any, answers: Any) -> None:
    """Count each word of ``words`` in state; answer each word of ``queries`` with ``(word, count)``.

    ``counts`` receives every ``(word, count so far)`` update, ``answers`` every answered query.
    """
    state = (builder.new_stream(words, ValueMapper(0))
             .map_to_pair(lambda word: (word, 1))
             .update_state_by_key(0, lambda count, one: count + one))
    state.to_pair_stream().for_each(counts)
    builder.new_stream(queries, ValueMapper(0)).state_query(state).for_each(answers)


def build(conf: dict[str, Any] | None = None) -> StormTopology:
    """The topology, printing every update and every answer."""
    builder = StreamBuilder()
    stateful_word_count(builder, TestWordSpout(), TestWordSpout(), print, lambda answer: print("query:", answer))
    return builder.build()
