"""A second Kafka-protocol broker, for the one behaviour of Kafka the dev broker lacks: noida-db (a test dependency
in the ``dev`` extra) answers a fetch past a partition's log end with OFFSET_OUT_OF_RANGE, as Kafka does.  Tansu
answers such a fetch with no records.  It listens on a free loopback port and keeps its data in a directory of
the test run."""

from __future__ import annotations

import os
from pathlib import Path

from storm_py.dev.kafka import KafkaBrokerProcess, KafkaUnavailableError


class StrictKafkaBroker(KafkaBrokerProcess):
    """noida-db with only its Kafka service, started and stopped like the dev broker (SIGTERM stops it)."""

    def __init__(self, data_dir: Path, log_path: Path | None = None) -> None:
        super().__init__(log_path=log_path, die_with_parent=True)
        self.data_dir = data_dir

    def command(self) -> list[str]:
        try:
            import noida_db  # the package ships the binary; nothing of it is called
        except ImportError as err:
            raise KafkaUnavailableError("noida-db is not installed: pip install -e '.[dev]'") from err
        binary = Path(noida_db.__file__).parent / "noida-db"
        if not os.access(binary, os.X_OK):  # a wheel may drop the mode; the package's own launcher sets it too
            binary.chmod(0o755)
        return [str(binary), "start", "--only", "kafka", "--kafka-port", str(self.port), "--host", self.host,
                "--data-dir", str(self.data_dir)]
