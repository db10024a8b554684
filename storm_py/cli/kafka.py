"""The ``storm-py dev-kafka`` command: a development Kafka-protocol broker on loopback until interrupted."""

from __future__ import annotations

import click

from storm_py.cli.daemons import serve_dev_service
from storm_py.cli.options import config_options


@click.command("dev-kafka")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=0, show_default=True,
              help="Port to listen on (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Loopback address to listen on.")
@click.option("--topic", "topics", multiple=True, metavar="NAME[:PARTITIONS]",
              help="Create a topic once the broker serves (repeatable; default 1 partition).")
@config_options
def dev_kafka(port: int, host: str, topics: tuple[str, ...], config_file: str | None,
              overrides: tuple[str, ...]) -> None:
    """Run the development Kafka broker (tansu, in memory) and print its address."""
    from storm_py.dev.kafka import KafkaBrokerProcess

    broker = KafkaBrokerProcess(port or None, host=host, die_with_parent=True)
    serve_dev_service(broker, "the Kafka broker", lambda: broker.bootstrap_servers, "kafka",
                      then=(lambda: _create_topics(broker.bootstrap_servers, topics)) if topics else None)


def _create_topics(bootstrap_servers: str, topics: tuple[str, ...]) -> None:
    """Create each ``NAME[:PARTITIONS]``; the admin client is gone on return (one left open until the broker
    stopped would hold the exit for seconds, retrying its connection)."""
    from storm_py.kafka.client import KafkaAdmin

    admin = KafkaAdmin(bootstrap_servers)
    try:
        for spec in topics:
            name, _, parts = spec.partition(":")
            admin.create_topic(name, int(parts or 1))
    finally:
        del admin
