"""How a daemon process takes SIGTERM: whatever its threads are doing, the signal ends the wait for it, and a
signal that comes while the daemon is still starting (its start waiting for ZooKeeper) stops it cleanly too."""

from __future__ import annotations

import subprocess
import sys

#: A main thread waiting for a stop that a signal sets, while the kernel hands every signal to another thread
#: (as it may for a signal sent to the process); the other thread keeps signalling until the stop is seen.
SIGNAL_ON_ANOTHER_THREAD = """
import signal, threading
from storm_py.node.loop import until_stopped
stop = threading.Event()
signal.signal(signal.SIGUSR1, lambda signum, frame: stop.set())
def signal_this_thread():
    while not stop.wait(0.05):
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
threading.Thread(target=signal_this_thread, daemon=True).start()
until_stopped(stop)
print("stopped")
"""

#: A daemon whose start waits (as for a ZooKeeper that is gone) until it is interrupted, and is sent SIGTERM
#: meanwhile; the process must end at once, cleanly, having stopped the daemon.
SIGNAL_DURING_THE_START = """
import logging, os, signal, sys, threading
from storm_py.cli.daemons import _run_daemon
from storm_py.errors import StormPyError
logging.basicConfig(stream=sys.stdout, format="%(message)s")

class StartWaitingForZooKeeper:
    def __init__(self):
        self.interrupted = threading.Event()
    def start(self):
        os.kill(os.getpid(), signal.SIGTERM)
        if not self.interrupted.wait(30):
            raise SystemExit("the start was not interrupted")
        raise StormPyError("no connection, and the session's owner is shutting down")
    def run(self, stop=None):
        raise SystemExit("ran after a start that failed")
    def interrupt(self):
        self.interrupted.set()
    def stop(self):
        print("daemon stopped")

_run_daemon(StartWaitingForZooKeeper, "fake")
"""


def test_a_signal_handled_while_the_main_thread_waits_for_the_stop_ends_the_wait() -> None:
    proc = subprocess.run([sys.executable, "-c", SIGNAL_ON_ANOTHER_THREAD], capture_output=True, text=True,
                          timeout=20)
    assert (proc.returncode, proc.stdout.strip()) == (0, "stopped"), proc.stderr


def test_sigterm_while_the_daemon_starts_interrupts_the_start_and_exits_cleanly() -> None:
    proc = subprocess.run([sys.executable, "-c", SIGNAL_DURING_THE_START], capture_output=True, text=True,
                          timeout=20)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        "fake stopped while starting (no connection, and the session's owner is shutting down)",
        "fake stopping",
        "daemon stopped",
    ]
