"""``storm-py logs NAME [-f]``: a topology's worker logs, from this machine or from the supervisors' log viewers.

Logs kept under this machine's ``storm.log.dir/workers-artifacts`` are read directly (that also finds a
killed topology's logs by its name).  Otherwise the leading nimbus says which supervisors run the topology's
workers, and each supervisor's log viewer serves their files.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import click

from storm_py.cli.options import command_error, config_options, load_conf, nimbus_client
from storm_py.client import LogViewerClient, NimbusClient
from storm_py.clock import SYSTEM_CLOCK
from storm_py.errors import NotAliveException, StormPyError
from storm_py.node.local_state import workers_artifacts_root
from storm_py.supervisor.logviewer import LogFiles

FOLLOW_POLL_SECS = 0.5

#: ``(file label, new text, whether this is the file's first text)``
Chunk = tuple[str, str, bool]


class LogReader(Protocol):
    """Where worker files are read: :class:`LogFiles` here, :class:`LogViewerClient` on another host."""

    def files(self, topology_id: str) -> list[dict[str, Any]]: ...

    def read(self, rel: str, start: int = 0) -> dict[str, Any]: ...


class LogSource:
    """A topology's worker files read from one or more readers, remembering how far each file was shown."""

    def __init__(self, topology_id: str) -> None:
        self.topology_id = topology_id
        self._offsets: dict[tuple[str, str], int] = {}

    def readers(self) -> list[tuple[str, LogReader]]:
        """``(where, reader)`` pairs; ``where`` follows each file's name in its header."""
        raise NotImplementedError

    def poll(self) -> Iterator[Chunk]:
        """What the files gained since the last poll."""
        for where, reader in self.readers():
            for entry in reader.files(self.topology_id):
                rel = entry["file"]
                start = self._offsets.get((where, rel), 0)
                first = start == 0
                while start < int(entry["size"]):
                    chunk = reader.read(rel, start)
                    if chunk["next"] <= start:
                        break
                    start = int(chunk["next"])
                    self._offsets[(where, rel)] = start
                    yield f"{rel}{where}", chunk["data"], first
                    first = False


class LocalLogs(LogSource):
    """Worker files of one topology under this machine's log directory."""

    def __init__(self, root: Path, topology_id: str) -> None:
        super().__init__(topology_id)
        self.log_files = LogFiles(root)

    def readers(self) -> list[tuple[str, LogReader]]:
        return [("", self.log_files)]


class RemoteLogs(LogSource):
    """Worker files of one topology read from the log viewers of the supervisors that run its workers."""

    def __init__(self, client: NimbusClient, name: str) -> None:
        self.client = client
        self.name = name
        tid, self.viewers = self._locate()
        super().__init__(tid)

    def _locate(self) -> tuple[str, list[str]]:
        page = self.client.topology(self.name)
        viewers = sorted({w["logviewerUrl"] for w in page.get("workers", []) if w.get("logviewerUrl")})
        return str(page["id"]), viewers

    def readers(self) -> list[tuple[str, LogReader]]:
        try:
            self.topology_id, self.viewers = self._locate()  # follow workers that moved
        except StormPyError:
            pass  # keep the last known viewers (nimbus may be failing over)
        return [(f" on {base}", LogViewerClient(base, conf=self.client.conf)) for base in self.viewers]


def _topology_id(client: NimbusClient, name: str, root: Path) -> str:
    """The id nimbus knows ``name`` by, else that of the newest local logs of that name."""
    try:
        return client.topology_id(name)
    except NotAliveException:
        pattern = re.compile(rf"^{re.escape(name)}-\d+-\d+$")
        found = sorted((d for d in root.glob("*") if pattern.match(d.name)), key=lambda d: d.stat().st_mtime)
        if not found:
            raise
        return found[-1].name


def open_logs(conf: Mapping[str, Any], name: str) -> LogSource:
    """Local files when this machine has the topology's logs, else its supervisors' log viewers."""
    root = workers_artifacts_root(conf)
    client = nimbus_client(conf)
    local = LocalLogs(root, _topology_id(client, name, root))
    if local.log_files.files(local.topology_id):
        return local
    remote = RemoteLogs(client, name)
    if not remote.viewers:
        raise StormPyError(f"no worker logs of {name} under {root}, and no log viewer serves its workers")
    return remote


@click.command("logs")
@click.argument("name")
@click.option("-f", "--follow", is_flag=True, help="Keep printing what the workers write (Ctrl-C stops).")
@config_options
def logs(name: str, follow: bool, config_file: str | None, overrides: tuple[str, ...]) -> None:
    """Print the worker logs of topology NAME (this machine's, or its supervisors' log viewers')."""
    conf = load_conf(config_file, overrides)
    if follow:  # Ctrl-C stops even when this process was started with SIGINT ignored (a parent's disposition)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        source = open_logs(conf, name)
        while True:
            for label, text, first in source.poll():
                if first or not follow:
                    click.echo(f"==> {label} <==")
                sys.stdout.write(text)
                sys.stdout.flush()
            if not follow:
                return
            SYSTEM_CLOCK.sleep(FOLLOW_POLL_SECS)
    except StormPyError as err:
        raise command_error(err, config_file) from err
    except KeyboardInterrupt:
        return
