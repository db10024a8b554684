"""This module owns the throwaway certificate authority of ``storm-py dev-cluster --tls``: a CA and one server
certificate for this machine's names and addresses, written as PEM files with the keys readable by the owner only.

Never for production: the CA's key lies beside the certificates it signed.  Needs the ``cryptography`` package
(the ``tls`` extra).
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from storm_py.errors import ConfigError

#: Days the CA and the certificate stay valid.
VALID_DAYS = 30


def _write(path: Path, data: bytes, private: bool) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def make_dev_tls(directory: Path, hosts: Iterable[str] = ()) -> dict[str, Any]:
    """Write ``ca.pem``, ``server.pem`` and ``server-key.pem`` into ``directory``; the ``storm.tls.*`` keys."""
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError as err:
        raise ConfigError("dev-cluster --tls needs the cryptography package: pip install 'storm-py[tls]'") from err
    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=VALID_DAYS)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "storm-py dev CA")])
    ca = (
        x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number()).not_valid_before(start).not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names = {"localhost", socket.gethostname(), *hosts}
    ips = {"127.0.0.1", "::1"}
    alt: list[x509.GeneralName] = []
    for name in sorted(names):
        try:
            ips.add(str(ipaddress.ip_address(name)))
        except ValueError:
            alt.append(x509.DNSName(name))
    alt += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in sorted(ips)]
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "storm-py dev server")]))
        .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    private = serialization.PrivateFormat.PKCS8
    _write(directory / "ca.pem", ca.public_bytes(pem), private=False)
    _write(directory / "ca-key.pem", ca_key.private_bytes(pem, private, serialization.NoEncryption()), private=True)
    _write(directory / "server.pem", cert.public_bytes(pem), private=False)
    _write(directory / "server-key.pem", key.private_bytes(pem, private, serialization.NoEncryption()), private=True)
    return {
        "storm.tls.enabled": True,
        "storm.tls.cert": str(directory / "server.pem"),
        "storm.tls.key": str(directory / "server-key.pem"),
        "storm.tls.ca": str(directory / "ca.pem"),
    }
