"""This module owns storm-redis's data types and mappers: :class:`RedisDataType`,
:class:`RedisDataTypeDescription`, the mapper bases (:class:`TupleMapper`, :class:`RedisStoreMapper`,
:class:`RedisLookupMapper`, :class:`RedisFilterMapper`) and :class:`RedisError`."""

from __future__ import annotations

import enum
from typing import Any

from storm_py.api.components import OutputFieldsDeclarer
from storm_py.api.tuple import Tuple
from storm_py.errors import StormPyError


class RedisError(StormPyError):
    """Redis refused a command or a login, or could not be reached (the message carries the server's words)."""

    code = "redis_error"


class RedisDataType(enum.Enum):
    """Storm's ``RedisDataTypeDescription.RedisDataType``."""

    STRING = "STRING"
    HASH = "HASH"
    LIST = "LIST"
    SET = "SET"
    SORTED_SET = "SORTED_SET"
    HYPER_LOG_LOG = "HYPER_LOG_LOG"
    GEO = "GEO"


DataType = RedisDataType

#: the types whose commands name a containing key (the additional key)
NEEDS_ADDITIONAL_KEY = frozenset({RedisDataType.HASH, RedisDataType.SORTED_SET, RedisDataType.GEO})


class RedisDataTypeDescription:
    """A data type and, for HASH, SORTED_SET and GEO (and SET in a filter), the key of the containing structure."""

    RedisDataType = DataType

    def __init__(self, data_type: DataType | str, additional_key: str | None = None) -> None:
        if isinstance(data_type, str):
            try:
                data_type = DataType(data_type.upper())
            except ValueError:
                raise ValueError(f"unknown Redis data type {data_type!r} (one of "
                                 f"{[t.name for t in DataType]})") from None
        if data_type in NEEDS_ADDITIONAL_KEY and not additional_key:
            raise ValueError(f"Redis data type {data_type.name} needs an additional key")
        self.data_type = data_type
        self.additional_key = additional_key

    def get_data_type(self) -> DataType:
        return self.data_type

    def get_additional_key(self) -> str | None:
        return self.additional_key

    def __repr__(self) -> str:
        return f"RedisDataTypeDescription({self.data_type.name}, {self.additional_key!r})"


class TupleMapper:
    """Storm's ``TupleMapper``: the key and the value of a tuple."""

    def get_key_from_tuple(self, tup: Tuple) -> str:
        raise NotImplementedError

    def get_value_from_tuple(self, tup: Tuple) -> str:
        raise NotImplementedError


class RedisMapper:
    """Storm's ``RedisMapper``: the data type the bolt works on."""

    def get_data_type_description(self) -> RedisDataTypeDescription:
        raise NotImplementedError


class RedisStoreMapper(TupleMapper, RedisMapper):
    """What :class:`~storm_py.redis.bolts.RedisStoreBolt` writes of a tuple."""


class RedisLookupMapper(TupleMapper, RedisMapper):
    """What :class:`~storm_py.redis.bolts.RedisLookupBolt` looks up and emits."""

    def to_tuple(self, input: Tuple, value: Any) -> list[list[Any]]:
        raise NotImplementedError

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        raise NotImplementedError


class RedisFilterMapper(TupleMapper, RedisMapper):
    """What :class:`~storm_py.redis.bolts.RedisFilterBolt` checks; it declares the input's fields."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        raise NotImplementedError
