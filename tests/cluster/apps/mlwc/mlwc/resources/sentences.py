"""The word-count workload of the multilang tests and benchmark: ten sentences of eight words each."""

SENTENCES = [
    "the quick brown fox jumps over the lazy",
    "storm processes unbounded streams of tuples very fast",
    "a spout emits tuples and bolts process them",
    "every tuple tree is tracked by the acker",
    "python workers exchange messages over zeromq with msgpack",
    "the counter bolt keeps a count per word",
    "fields grouping sends the same word to one",
    "at least once processing replays failed tuple trees",
    "batches make the transport cheap and the acker",
    "words flow from the splitter into the counter",
]
