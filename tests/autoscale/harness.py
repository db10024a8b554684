"""What the autoscaler's acceptance test and its bench share: the test topology's project and a paced producer."""

from __future__ import annotations

import threading
from pathlib import Path

from confluent_kafka import Producer

from storm_py.clock import SYSTEM_CLOCK

#: the project of the I/O-bound test topology (``scaleapp.topology:build``)
APP = Path(__file__).parent / "apps" / "scaleapp"
PARTITIONS = 4
#: the topology's workers, one a slot of the dev cluster's two supervisors: a worker runs its executors on one
#: thread, where a bolt sleeping 2 ms a record does about 450 records a second, so the bolt's executors reach
#: 2,000 a second only spread over five workers or more (``topology.autoscale.max.parallelism`` 8: one each)
WORKERS = 8
#: ``topology.executor.receive.buffer.size``: records a worker queues before the spouts pause.  A worker's loop
#: runs an executor's queued records in one pass, and under ``exactly_once`` a checkpoint's barrier waits behind
#: them: at 2 ms a record the default (32,768) is a minute of both; 500 is about a second
BUFFER = 500
#: the daemons' patience with a worker whose loop is silent (the tests' fast timings say 8 s): on a loaded
#: machine a pass of 2 ms records still takes seconds now and then, and a worker restarted for it replays from the
#: last checkpoint, each restart a pause the bolt has to catch up with
PATIENT = {"supervisor.worker.timeout.secs": 30, "nimbus.task.timeout.secs": 30}


class PacedProducer:
    """Produces ``r0000000``, ``r0000001`` ... to a topic at ``rate`` records a second (changeable) in a thread."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic = topic
        self.rate = 0.0
        self.sent = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, rate: float) -> None:
        self.rate = rate
        self._thread.start()

    def _run(self) -> None:
        owed, last = 0.0, SYSTEM_CLOCK.now()
        while not self._stop.is_set():
            now = SYSTEM_CLOCK.now()
            owed += (now - last) * self.rate
            last = now
            while owed >= 1:
                value = b"r%07d" % self.sent
                try:
                    self.producer.produce(self.topic, value=value, partition=self.sent % PARTITIONS,
                                          on_delivery=self._delivered)
                except BufferError:  # the client's queue is full: deliver some first
                    self.producer.poll(0.05)
                    continue
                self.sent += 1
                owed -= 1
            self.producer.poll(0)
            self._stop.wait(0.01)  # the pace of the loop; the count owed follows the clock

    def _delivered(self, err: object, msg: object) -> None:
        if err is not None:
            self.errors.append(str(err))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(10)
        assert self.producer.flush(60) == 0
        del self.producer  # its connections close now, not when the broker is gone
        assert not self.errors, self.errors[:3]
        return self.sent
