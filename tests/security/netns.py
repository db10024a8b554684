"""A small network of Linux network namespaces for tests: one namespace per cluster node, joined by veth pairs
to a bridge in a hub namespace, plus one veth from the test's own namespace so the test can reach every node.

Each node has its own address (``10.213.<net>.<n>/24``), its own loopback and its own port space, so a cluster
run across them really crosses a network.  Everything made here (namespaces, links, processes started in the
namespaces) is removed by :meth:`NetNamespaces.close`.  Needs root (CAP_NET_ADMIN); :func:`unavailable_reason`
says why not when namespaces cannot be made here.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from storm_py.clock import Deadline, wait_until
from storm_py.dev.zookeeper import find_classpath, find_java, four_letter_word, server_command, zoo_cfg

_IP = shutil.which("ip") or "/usr/sbin/ip"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_IP, *args], capture_output=True, text=True, check=check, timeout=30)


def _empty(netns: str) -> bool:
    return not _ip("netns", "pids", netns, check=False).stdout.split()


def unavailable_reason() -> str | None:
    """None when this machine lets us create network namespaces, else what stops it."""
    if not Path(_IP).exists():
        return "the `ip` command (iproute2) is not installed"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    probe = f"spprobe{uuid.uuid4().hex[:6]}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"`ip netns add` failed: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


@dataclass
class Node:
    """One namespace of the network."""

    name: str
    netns: str
    address: str
    device: str = ""  # its end of the veth pair to the hub
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def link(self, up: bool) -> None:
        """Bring this node's link to the network up or down (a host cut off: its processes run on, unreachable)."""
        _ip("-n", self.netns, "link", "set", self.device, "up" if up else "down")

    def block(self, address: str, blocked: bool) -> None:
        """Drop (or stop dropping) everything this node sends to ``address``: cut off from that one host."""
        _ip("-n", self.netns, "route", "add" if blocked else "del", "blackhole", f"{address}/32")

    def listeners(self) -> list[tuple[str, int]]:
        """``(address, port)`` of every TCP socket listening in this namespace."""
        out = self.run("ss", "-ltnH").stdout
        found = []
        for line in out.splitlines():
            local = line.split()[3]
            address, _, port = local.rpartition(":")
            address = address.strip("[]").split("%")[0].removeprefix("::ffff:")  # IPv4 on an IPv6 socket
            found.append((address, int(port)))
        return found

    def popen(self, cmd: Sequence[str], log: IO[bytes], cwd: Path | None = None) -> subprocess.Popen[bytes]:
        """Start ``cmd`` inside this node's namespace (stopped by :meth:`NetNamespaces.close`)."""
        proc = subprocess.Popen(
            [_IP, "netns", "exec", self.netns, *cmd], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, cwd=cwd, start_new_session=True,
        )  # fmt: skip
        self.procs.append(proc)
        return proc

    def run(self, *cmd: str) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` to completion inside the namespace."""
        return subprocess.run([_IP, "netns", "exec", self.netns, *cmd], capture_output=True, text=True,
                              timeout=60, check=False)  # fmt: skip


class NetNamespaces:
    """The network: :meth:`add` nodes, reach them at ``node.address`` from the test (``gateway``)."""

    def __init__(self) -> None:
        self.tag = uuid.uuid4().hex[:5]
        self.net = 100 + int(self.tag, 16) % 150
        self.hub = f"sp{self.tag}hub"
        self.nodes: dict[str, Node] = {}
        self._links: list[str] = []  # veth ends left in this namespace
        self._count = 0
        _ip("netns", "add", self.hub)
        _ip("-n", self.hub, "link", "set", "lo", "up")
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        # The test's own end, so that it can talk to every node.
        self.gateway = self._address(1)
        here = self._veth_to_hub(0)
        _ip("addr", "add", f"{self.gateway}/24", "dev", here)
        _ip("link", "set", here, "up")
        self._links.append(here)

    def _address(self, n: int) -> str:
        return f"10.213.{self.net}.{n}"

    def _veth_to_hub(self, index: int) -> str:
        """A veth pair with one end on the hub's bridge; returns the other end's name (in this namespace)."""
        near, far = f"sp{self.tag}{index}a", f"sp{self.tag}{index}b"
        _ip("link", "add", near, "type", "veth", "peer", "name", far)
        _ip("link", "set", far, "netns", self.hub)
        _ip("-n", self.hub, "link", "set", far, "master", "br0")
        _ip("-n", self.hub, "link", "set", far, "up")
        return near

    def add(self, name: str) -> Node:
        """A new node with the next address."""
        self._count += 1
        index = self._count
        netns = f"sp{self.tag}{name}"
        _ip("netns", "add", netns)
        near = self._veth_to_hub(index)
        node = Node(name, netns, self._address(index + 1), near)
        self.nodes[name] = node
        _ip("link", "set", near, "netns", node.netns)
        _ip("-n", node.netns, "addr", "add", f"{node.address}/24", "dev", near)
        _ip("-n", node.netns, "link", "set", near, "up")
        _ip("-n", node.netns, "link", "set", "lo", "up")
        return node

    def close(self) -> None:
        """Stop every process started in the namespaces, then remove links and namespaces.

        Every process is asked to stop first and all are waited for together (one deadline), so the close costs
        the slowest daemon's stop, not the sum of them."""
        procs = [proc for node in self.nodes.values() for proc in node.procs if proc.poll() is None]
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = Deadline(20.0)
        for proc in procs:
            try:
                proc.wait(deadline.remaining())
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for node in self.nodes.values():
            # Anything still in the namespace was started by those processes (workers): end it.
            pids = _ip("netns", "pids", node.netns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            wait_until(functools.partial(_empty, node.netns), 20.0, what=f"processes of {node.netns} to end")
        for link in self._links:
            _ip("link", "del", link, check=False)
        for node in self.nodes.values():
            _ip("netns", "del", node.netns, check=False)
        _ip("netns", "del", self.hub, check=False)

    def leftovers(self) -> list[str]:
        """Namespaces and links of this network still present (empty after :meth:`close`)."""
        names = _ip("netns", "list", check=False).stdout
        links = _ip("-o", "link", "show", check=False).stdout
        return [n for n in [self.hub, *(n.netns for n in self.nodes.values())] if n in names] + [
            link for link in self._links if f" {link}@" in links or f" {link}:" in links
        ]


@contextmanager
def namespaces(untested: str) -> Iterator[NetNamespaces]:
    """Network namespaces for one test, every one of them gone after it; where this machine cannot make them the
    test is skipped loudly, saying what was ``untested``."""
    reason = unavailable_reason()
    if reason is not None:
        message = f"NETWORK NAMESPACE TEST SKIPPED: {reason} — {untested}"
        warnings.warn(message, stacklevel=1)
        print(f"\n{'!' * 100}\n{message}\n{'!' * 100}", file=sys.stderr)
        pytest.skip(message)
    net = NetNamespaces()
    try:
        yield net
    finally:
        net.close()
        assert net.leftovers() == [], f"network namespace test left behind {net.leftovers()}"


def write_conf(path: Path, conf: dict[str, Any]) -> Path:
    """A daemon's config file, readable by its owner only (it holds the cluster's secrets)."""
    path.write_text(yaml.safe_dump(conf, sort_keys=True), encoding="utf-8")
    path.chmod(0o600)
    return path


def start_zookeeper(node: Node, workdir: Path, logs: Path, port: int) -> None:
    """A ZooKeeper server in ``node``'s namespace, listening on its address only, its log in ``logs``; returns
    once it answers."""
    workdir.mkdir()
    (workdir / "zoo.cfg").write_text(zoo_cfg(workdir / "data", node.address, port), encoding="utf-8")
    with (logs / "zookeeper.log").open("ab") as out:
        node.popen(server_command(find_java(), find_classpath(), workdir / "zoo.cfg"), out, cwd=workdir)
    wait_until(lambda: b"Zookeeper version" in four_letter_word(node.address, port), 60.0, interval=0.2,
               what=f"ZooKeeper at {node.address}:{port}")
