"""This module owns storm-redis's bolts: :class:`AbstractRedisBolt` (a client per task), :class:`RedisStoreBolt`
(an exactly-once sink under ``exactly_once``), :class:`RedisLookupBolt` and :class:`RedisFilterBolt`.

A server that cannot be reached is reported and retried with
:class:`~storm_py.stateful.api.sink.RetryBackoff`: the store bolt keeps its inputs (neither acked nor failed) and
sends them again on the next tick; lookups and filters wait and retry.  Under exactly_once the store bolt seals
each checkpoint's commands into its managed state and runs them when the checkpoint commits, in one
``MULTI``/``EXEC`` with ``HSET <commit key> <topology>/<component>/<task> <txid>``; a checkpoint whose txid is
already there is not run again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from storm_py.api.components import Bolt, OutputCollector, OutputFieldsDeclarer
from storm_py.api.context import TopologyContext
from storm_py.api.tuple import Tuple
from storm_py.clock import SYSTEM_CLOCK, Clock
from storm_py.redis.commands import (
    check_filter_type,
    filter_command,
    found,
    lookup_command,
    lookup_value,
    store_command,
)
from storm_py.redis.config import AnyRedisConfig, RedisClusterConfig, as_config
from storm_py.redis.mappers import RedisError, RedisFilterMapper, RedisLookupMapper, RedisStoreMapper
from storm_py.stateful.api.sink import RetryBackoff, SinkLedger
from storm_py.stateful.state.key_value import NO_TXID, KeyValueState
from storm_py.stateful.state.redis_client import is_connection_error, is_redis_error

log = logging.getLogger(__name__)

TICK_SECS: Final = 0.1
DEFAULT_COMMIT_KEY: Final = "storm_py:sink_commits"
EXACTLY_ONCE: Final = "exactly_once"


class AbstractRedisBolt(Bolt):
    """Storm's ``AbstractRedisBolt``: ``prepare`` connects (a refused login or an unreachable server raises
    :class:`RedisError` with the server's message), ``get_instance()`` is the client, ``cleanup()`` closes."""

    def __init__(self, config: AnyRedisConfig | Mapping[str, Any], clock: Clock = SYSTEM_CLOCK) -> None:
        self.config = as_config(config)
        self.clock = clock
        self._client: Any = None

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.collector = collector
        self.component_id = context.get_this_component_id()
        self.backoff = RetryBackoff()
        client = self.config.client()
        try:
            client.ping()
        except Exception as exc:
            if not is_redis_error(exc):
                raise
            raise RedisError(f"bolt {self.component_id!r}: cannot connect to {self.config.where()}: {exc}") from exc
        self._client = client

    def get_instance(self) -> Any:
        return self._client

    def return_instance(self, client: Any) -> None:
        """Give a client back (the client is a pool: nothing to do)."""

    def _report(self, message: str) -> None:
        err = RedisError(f"bolt {self.component_id!r}: {message}")
        log.warning("%s", err.message)
        self.collector.report_error(err)

    def _call(self, command: list[Any]) -> Any:
        """Run one command, waiting out an unreachable server (reported, retried with backoff)."""
        while True:
            try:
                reply = self._client.execute_command(*command)
                self.backoff.succeeded()
                return reply
            except Exception as exc:
                if not is_connection_error(exc):
                    raise
                delay = self.backoff.failed(self.clock.now())
                self._report(f"{self.config.where()} unreachable (retrying in {delay:.1f}s): {exc}")
                self.clock.sleep(delay)

    def cleanup(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


class RedisStoreBolt(AbstractRedisBolt):
    """Storm's ``RedisStoreBolt(config, storeMapper)``: each input's key and value written by data type."""

    def __init__(self, config: AnyRedisConfig | Mapping[str, Any], store_mapper: RedisStoreMapper,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(config, clock)
        self.mapper = store_mapper
        self.desc = store_mapper.get_data_type_description()
        self.commit_key = DEFAULT_COMMIT_KEY

    def with_commit_key(self, key: str) -> RedisStoreBolt:
        self.commit_key = key
        return self

    def get_component_configuration(self) -> dict[str, Any] | None:
        return {"topology.tick.tuple.freq.secs": TICK_SECS}

    def takes_part_in_checkpoints(self) -> bool:
        return True

    def requires_exactly_once(self) -> bool:
        return False

    def prepare(self, conf: dict[str, Any], context: TopologyContext, collector: OutputCollector) -> None:
        self.exactly_once = conf.get("topology.state.guarantee") == EXACTLY_ONCE
        if self.exactly_once and isinstance(self.config, RedisClusterConfig):
            raise RedisError(f"bolt {context.get_this_component_id()!r}: a RedisClusterConfig cannot take part in "
                             "topology.state.guarantee exactly_once (no MULTI across nodes)")
        super().prepare(conf, context, collector)
        self.field = f"{context.topology_name}/{self.component_id}/{context.get_this_task_id()}"
        self.pending: list[tuple[Tuple, list[Any]]] = []
        self.ledger = SinkLedger()
        self.written_txid = NO_TXID

    def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            self._flush()
            return
        try:
            command = store_command(self.desc, self.mapper.get_key_from_tuple(tup),
                                    self.mapper.get_value_from_tuple(tup))
        except (ValueError, KeyError, TypeError) as exc:
            self._report(f"tuple from {tup.source_component!r} cannot be stored: {exc}")
            if not self.exactly_once:
                self.collector.fail(tup)
            else:
                self.collector.ack(tup)  # left out: failing it would replay it forever
            return
        if self.exactly_once:
            self.ledger.add(command)
            self.collector.ack(tup)
            return
        self.pending.append((tup, command))
        self._flush()

    def _down(self, exc: BaseException) -> None:
        delay = self.backoff.failed(self.clock.now())
        self._report(f"{self.config.where()} unreachable (retrying in {delay:.1f}s, nothing lost): {exc}")

    def _flush(self) -> None:
        if self.exactly_once:
            self._write_due()
            return
        if not self.pending or not self.backoff.ready(self.clock.now()):
            return
        batch, self.pending = self.pending, []
        pipe = self._client.pipeline(transaction=False)
        for _, command in batch:
            pipe.execute_command(*command)
        try:
            replies = pipe.execute(raise_on_error=False)
        except Exception as exc:
            if not is_connection_error(exc):
                raise
            self.pending = batch + self.pending
            self._down(exc)
            return
        self.backoff.succeeded()
        for (tup, command), reply in zip(batch, replies, strict=True):
            if isinstance(reply, Exception):
                self._report(f"{command[0]} refused: {reply}")
                self.collector.fail(tup)
            else:
                self.collector.ack(tup)

    # -- exactly_once --------------------------------------------------------------------------------------------

    def init_state(self, state: KeyValueState) -> None:
        fresh = self.ledger.restore(state)
        if fresh:
            self._call(["HSET", self.commit_key, self.field, NO_TXID])
            self.written_txid = NO_TXID
        else:
            stored = self._call(["HGET", self.commit_key, self.field])
            self.written_txid = NO_TXID if stored is None else int(stored)

    def pre_prepare(self, txid: int) -> None:
        self.ledger.seal(txid)

    def pre_commit(self, txid: int) -> None:
        self.ledger.commit(txid)
        self._write_due()

    def pre_rollback(self) -> None:
        self.ledger.rollback()

    def _write_due(self) -> None:
        for txid, commands in self.ledger.due():
            if txid > self.written_txid:
                if not self.backoff.ready(self.clock.now()):
                    return
                pipe = self._client.pipeline(transaction=True)
                for command in commands:
                    pipe.execute_command(*command)
                pipe.execute_command("HSET", self.commit_key, self.field, txid)
                try:
                    replies = pipe.execute(raise_on_error=False)
                except Exception as exc:
                    if not is_connection_error(exc):
                        raise
                    self._down(exc)
                    return
                self.backoff.succeeded()
                for command, reply in zip(commands, replies, strict=False):
                    if isinstance(reply, Exception):
                        self._report(f"{command[0]} of checkpoint {txid} refused (left out): {reply}")
                self.written_txid = txid
            self.ledger.written(txid)

    def cleanup(self) -> None:
        if self._client is not None and not self.exactly_once:
            self._flush()
        super().cleanup()

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """No output."""


class RedisLookupBolt(AbstractRedisBolt):
    """Storm's ``RedisLookupBolt(config, lookupMapper)``: per input one lookup by data type; what the mapper
    makes of the value is emitted anchored, then the input is acked."""

    def __init__(self, config: AnyRedisConfig | Mapping[str, Any], lookup_mapper: RedisLookupMapper,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(config, clock)
        self.mapper = lookup_mapper
        self.desc = lookup_mapper.get_data_type_description()

    def execute(self, tup: Tuple) -> None:
        try:
            reply = self._call(lookup_command(self.desc, self.mapper.get_key_from_tuple(tup)))
            for values in self.mapper.to_tuple(tup, lookup_value(self.desc, reply)):
                self.collector.emit(values, anchors=tup)
        except Exception as exc:
            if not (is_redis_error(exc) or isinstance(exc, (ValueError, KeyError, TypeError))):
                raise
            self._report(f"lookup of the tuple from {tup.source_component!r} failed: {exc}")
            self.collector.fail(tup)
            return
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.mapper.declare_output_fields(declarer)


class RedisFilterBolt(AbstractRedisBolt):
    """Storm's ``RedisFilterBolt(config, filterMapper)``: forwards the input's values, anchored, when its key is
    found; acks either way."""

    def __init__(self, config: AnyRedisConfig | Mapping[str, Any], filter_mapper: RedisFilterMapper,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        super().__init__(config, clock)
        self.mapper = filter_mapper
        self.desc = filter_mapper.get_data_type_description()
        check_filter_type(self.desc)

    def execute(self, tup: Tuple) -> None:
        try:
            reply = self._call(filter_command(self.desc, self.mapper.get_key_from_tuple(tup)))
        except Exception as exc:
            if not (is_redis_error(exc) or isinstance(exc, (ValueError, KeyError, TypeError))):
                raise
            self._report(f"filter of the tuple from {tup.source_component!r} failed: {exc}")
            self.collector.fail(tup)
            return
        if found(self.desc, reply):
            self.collector.emit(tup.get_values(), anchors=tup)
        self.collector.ack(tup)

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.mapper.declare_output_fields(declarer)
