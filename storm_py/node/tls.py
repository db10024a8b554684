"""This module owns TLS for the HTTP endpoints: the server context of a daemon and the verifying client context,
both from ``storm.tls.enabled``, ``storm.tls.cert``, ``storm.tls.key`` and ``storm.tls.ca``."""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any

from storm_py.errors import ConfigError


def enabled(conf: Mapping[str, Any]) -> bool:
    """Whether this config serves and calls HTTP endpoints over TLS."""
    return bool(conf.get("storm.tls.enabled"))


def scheme(conf: Mapping[str, Any]) -> str:
    """``https`` or ``http``."""
    return "https" if enabled(conf) else "http"


def server_context(conf: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The context a daemon serves with (None without TLS); a missing certificate or key is a config error."""
    if not enabled(conf):
        return None
    cert, key = conf.get("storm.tls.cert"), conf.get("storm.tls.key")
    if not cert or not key:
        missing = "storm.tls.cert" if not cert else "storm.tls.key"
        raise ConfigError(f"storm.tls.enabled needs {missing} (a PEM file)", key=missing)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.num_tickets = 0  # clients here do not resume sessions: tickets would be bytes and time for nothing
    try:
        context.load_cert_chain(str(cert), str(key))
    except (OSError, ssl.SSLError) as err:
        raise ConfigError(f"cannot load storm.tls.cert {cert} / storm.tls.key {key}: {err}",
                          key="storm.tls.cert") from err
    return context


def client_context(conf: Mapping[str, Any]) -> ssl.SSLContext | None:
    """The context clients verify servers with: ``storm.tls.ca`` when set, else the system's CAs (None without TLS)."""
    if not enabled(conf):
        return None
    ca = conf.get("storm.tls.ca")
    try:
        context = ssl.create_default_context(cafile=str(ca) if ca else None)
    except (OSError, ssl.SSLError) as err:
        raise ConfigError(f"cannot load storm.tls.ca {ca}: {err}", key="storm.tls.ca") from err
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context
