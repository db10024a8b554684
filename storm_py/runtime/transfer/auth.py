"""This module owns the authentication of frames between the workers of one topology (pure: bytes in, bytes out).

Every frame a worker sends ends with a 16-byte keyed BLAKE2b tag over all the bytes before it; a receiver checks
the tag (in constant time) before anything of the frame is decoded, so a frame not made by a worker of the same
topology — forged, altered, or from another topology — never reaches the decoder, and is counted and logged.

The key is the topology's own: derived from the topology's ZooKeeper payload (``storm.zookeeper.topology.auth
.payload``, which the supervisor hands each worker in place of the cluster's, itself derived from the cluster
secret and the topology id: :func:`storm_py.cluster_state.acl.worker_auth`), else from ``nimbus.auth.token`` and the
topology id — the way Storm hands each topology its credentials without storing them anywhere else.  Workers of
another topology cannot compute it.  Without any secret frames are not authenticated (a loopback-only
development setup).

Chosen over ZeroMQ CURVE as the default by measurement (docs/benchmarks/security.md, "Authenticated frames"): one
keyed hash per frame of hundreds of tuples, no handshake.  Tags authenticate but do not hide tuple data;
``storm.messaging.encryption: curve`` adds ZeroMQ CURVE on top, with a key pair every worker derives the same way
(:func:`topology_curve_seed`).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

from storm_py.cluster_state.acl import topology_payload
from storm_py.errors import ConfigError

#: Bytes of the tag appended to each frame.
TAG_BYTES = 16


def topology_frame_key(conf: Mapping[str, Any], topology_id: str) -> bytes | None:
    """The frame key of ``topology_id`` from the cluster secret in ``conf``, or None when there is none."""
    return _topology_key(conf, topology_id, b"frames\x00")


def topology_curve_seed(conf: Mapping[str, Any], topology_id: str) -> bytes | None:
    """The seed of ``topology_id``'s CURVE key pair when ``storm.messaging.encryption`` is ``curve`` (None when
    it is ``none``); derived from the same secret as the frame key, so every worker of the topology, and no one
    else, computes it.  Encryption asked for without a secret is a :class:`ConfigError`."""
    mode = conf.get("storm.messaging.encryption")
    if mode is None or mode == "none":  # unset: a conf without the packaged defaults
        return None
    if mode != "curve":
        raise ConfigError(f"storm.messaging.encryption: 'none' or 'curve', got {mode!r}",
                          key="storm.messaging.encryption")  # fmt: skip
    seed = _topology_key(conf, topology_id, b"curve\x00")
    if seed is None:
        raise ConfigError("storm.messaging.encryption: curve needs a cluster secret (storm.zookeeper.auth.payload "
                          "or nimbus.auth.token) to derive the topology's keys from",
                          key="storm.messaging.encryption")  # fmt: skip
    return seed


def _topology_key(conf: Mapping[str, Any], topology_id: str, purpose: bytes) -> bytes | None:
    secret = conf.get("storm.zookeeper.topology.auth.payload")
    cluster = conf.get("storm.zookeeper.auth.payload")
    if not secret and cluster:
        secret = topology_payload(str(cluster), topology_id)
    secret = secret or conf.get("nimbus.auth.token")
    if not secret:
        return None
    return hmac.new(str(secret).encode("utf-8"), purpose + topology_id.encode("utf-8"), "sha256").digest()


class FrameAuth:
    """Seals frames with the topology's key and opens sealed ones."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a frame key needs at least 16 bytes")
        self._key = key[:64]

    def seal(self, frame: bytes) -> bytes:
        """``frame`` followed by its tag."""
        return frame + hashlib.blake2b(frame, digest_size=TAG_BYTES, key=self._key).digest()

    def open(self, data: bytes) -> bytes | None:
        """The frame inside ``data`` when its tag is right, else None."""
        if len(data) < TAG_BYTES:
            return None
        body = data[:-TAG_BYTES]
        tag = hashlib.blake2b(body, digest_size=TAG_BYTES, key=self._key).digest()
        return body if hmac.compare_digest(tag, data[-TAG_BYTES:]) else None
