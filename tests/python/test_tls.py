"""HTTPS receivers with a private CA (made here with trustme): trusted through `ca_certs`
(PEM text or a path), refused without it, and then no request reaches the receiver."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest
import trustme

import outbound
from receiver import Receiver, start_receiver


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def tls_receiver(ca: trustme.CA) -> Iterator[Receiver]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    rec = start_receiver(ctx)
    yield rec
    rec.server.shutdown()
    rec.server.server_close()


def send(rec: Receiver, **kw: object) -> Tuple[outbound.Client, List[Tuple[str, str, str]]]:
    seen: List[Tuple[str, str, str]] = []
    client = outbound.Client(
        "k", endpoint=rec.url, webhooks=[rec.hook()], shared_secret="s", flush_at=1,
        proxy_from_env=False, on_outcome=lambda *a: seen.append(a), **kw,  # type: ignore[arg-type]
    )
    client.track(user_id="u", event="over TLS")
    return client, seen


def test_private_ca_as_pem_text(ca: trustme.CA, tls_receiver: Receiver) -> None:
    client, seen = send(tls_receiver, ca_certs=ca.cert_pem.bytes().decode())
    assert client.close(timeout=10)
    assert [s[1] for s in seen] == ["delivered"]
    assert len(tls_receiver.batch_messages()) == 1 and len(tls_receiver.at("/hook")) == 1


def test_private_ca_as_a_path(ca: trustme.CA, tls_receiver: Receiver, tmp_path: Path) -> None:
    pem = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(pem))
    client, seen = send(tls_receiver, ca_certs=pem)
    assert client.close(timeout=10)
    assert [s[1] for s in seen] == ["delivered"]


def test_untrusted_certificate_fails_and_sends_nothing(tls_receiver: Receiver) -> None:
    client, seen = send(tls_receiver)
    assert client.close(timeout=10) is False
    assert [s[1] for s in seen] == ["failed"]
    assert "certificate" in seen[0][2]
    assert tls_receiver.requests == []
