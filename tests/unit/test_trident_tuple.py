"""Trident tuples (storm_py/trident/tuple.py): a schema's tuples read by position and name, compare as lists,
survive pickling and copying, and stay unhashable."""

import copy
import pickle

import pytest

from storm_py.trident.tuple import Schema, TridentTuple


def test_a_schemas_tuple_reads_by_position_and_by_name() -> None:
    schema = Schema(["word", "n"])
    t = schema.make(["cat", 2])
    assert isinstance(t, TridentTuple)
    assert t.values == ["cat", 2] and t.get_values() == ["cat", 2]
    assert (t.get_value(0), t[1], t["word"], t.get_value_by_field("n")) == ("cat", 2, "cat", 2)
    assert list(t.fields) == ["word", "n"] and len(t) == 2 and list(t) == ["cat", 2]
    assert t.select(["n", "word"]) == [2, "cat"]
    assert repr(t) == "TridentTuple({'word': 'cat', 'n': 2})"
    with pytest.raises(KeyError):
        t["missing"]


def test_a_tuple_built_directly_equals_the_schemas_own_and_a_list() -> None:
    schema = Schema(["word", "n"])
    direct = TridentTuple(["cat", 2], schema)
    assert direct == schema.make(["cat", 2]) == ["cat", 2]
    assert direct != schema.make(["dog", 2]) and direct != ("cat", 2)
    assert direct["n"] == 2 and list(direct.fields) == ["word", "n"]


def test_tuples_and_schemas_pickle_and_copy_and_tuples_are_unhashable() -> None:
    schema = Schema(["word", "n"])
    t = schema.make(["cat", 2])
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert back == t and back["n"] == 2 and list(back.fields) == ["word", "n"]
    again = pickle.loads(pickle.dumps(schema))
    assert again.make(["dog", 1])["word"] == "dog"
    with pytest.raises(TypeError):
        hash(t)
