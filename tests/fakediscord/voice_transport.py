"""The fake voice server's TLS (a throwaway CA and a certificate for 127.0.0.1 that aiohttp's
default context trusts) and its UDP endpoint."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import os
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

import aiohttp
import aiohttp.connector
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

if TYPE_CHECKING:
    from .voice import FakeVoiceServer


# --------------------------------------------------------------------------
# TLS


@dataclass(frozen=True)
class _Certificate:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes


_certificate: _Certificate | None = None


def _make_certificate() -> _Certificate:
    """A throwaway CA and a server certificate it signs for IP 127.0.0.1."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake discord test CA")])
    ca = _make_ca(ca_key, ca_name, now)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return _Certificate(
        ca_pem=ca.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def _make_ca(
    ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, now: datetime.datetime
) -> x509.Certificate:
    """The throwaway CA's self-signed certificate."""
    return (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )


def _test_certificate() -> _Certificate:
    """The process-wide test certificate, trusted by aiohttp's default context."""
    global _certificate
    if _certificate is None:
        _certificate = _make_certificate()
        default_context = getattr(aiohttp.connector, "_SSL_CONTEXT_VERIFIED", None)
        if not isinstance(default_context, ssl.SSLContext):
            raise RuntimeError(
                "aiohttp no longer exposes connector._SSL_CONTEXT_VERIFIED; "
                "give the client a connector with FakeVoiceServer.client_ssl_context()"
            )
        default_context.load_verify_locations(cadata=_certificate.ca_pem.decode("ascii"))
    return _certificate


def _server_ssl_context(certificate: _Certificate) -> ssl.SSLContext:
    import tempfile

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as directory:
        cert_path = os.path.join(directory, "cert.pem")
        key_path = os.path.join(directory, "key.pem")
        with open(cert_path, "wb") as cert_file:
            cert_file.write(certificate.cert_pem)
        with open(key_path, "wb") as key_file:
            key_file.write(certificate.key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context


class _UDPProtocol(asyncio.DatagramProtocol):
    """Hands every datagram to the server."""

    def __init__(self, server: FakeVoiceServer) -> None:
        self.server = server

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.server._on_datagram(data, addr)
