"""Per-webhook endpoint settings (`outbound.Webhook(auth=, tls=, signature_header=,
signature_scheme=, rate_limit=)`): what a real receiver on 127.0.0.1 gets, the
`sign_sha256` / `verify_sha256` helpers, and a bad setting refused naming its field."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import ssl
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple
from urllib.parse import parse_qs

import pytest
import trustme
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

import outbound
from receiver import Receiver, start_receiver

Make = Callable[..., outbound.Client]


def hooks_only(make_client: Make, *hooks: outbound.Webhook, **kw: Any) -> outbound.Client:
    return make_client(write_key=None, webhooks=list(hooks), **kw)


def test_basic_and_bearer_arrive_as_the_authorization_header(
    make_client: Make, receiver: Receiver
) -> None:
    client = hooks_only(
        make_client,
        outbound.Webhook(
            receiver.hook("basic"),
            auth={"type": "basic", "user": "Aladdin", "password": "open sesame"},
        ),
        outbound.Webhook(receiver.hook("bearer"), auth={"type": "bearer", "token": "t0k3n.abc"}),
        outbound.Webhook(receiver.hook("none")),
    )
    client.track(user_id="u1", event="Paid")
    assert client.flush(timeout=10)
    # The first 2xx delivers a message: the other URLs' requests may still be on their way.
    assert receiver.wait_for(lambda r: len(r.requests) == 3)
    (basic,) = receiver.at("/basic")
    (bearer,) = receiver.at("/bearer")
    (none,) = receiver.at("/none")
    # RFC 7617's own example pair.
    assert basic.headers["authorization"] == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    assert base64.b64decode(basic.headers["authorization"][6:]) == b"Aladdin:open sesame"
    assert bearer.headers["authorization"] == "Bearer t0k3n.abc"
    assert "authorization" not in none.headers


def test_oauth2_token_is_asked_once_and_sent_as_a_bearer_token(
    make_client: Make, receiver: Receiver
) -> None:
    receiver.answer["/token"] = json.dumps(
        {"access_token": "tok-from-server", "token_type": "Bearer", "expires_in": 3600}
    ).encode()
    client = hooks_only(
        make_client,
        outbound.Webhook(
            receiver.hook(),
            auth={
                "type": "oauth2",
                "token_url": receiver.hook("token"),
                "client_id": "my-client",
                "client_secret": "my-secret",
                "scope": "events:write",
            },
        ),
    )
    for _ in range(3):
        client.track(user_id="u1", event="Paid")
    assert client.flush(timeout=10)
    (token_request,) = receiver.at("/token")
    assert token_request.headers["authorization"] == "Basic " + base64.b64encode(
        b"my-client:my-secret"
    ).decode()
    form = parse_qs(token_request.body.decode())
    assert form == {"grant_type": ["client_credentials"], "scope": ["events:write"]}
    hooks = receiver.at("/hook")
    assert len(hooks) == 3
    assert {r.headers["authorization"] for r in hooks} == {"Bearer tok-from-server"}


def b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def test_an_oauth2_client_proves_itself_with_a_signed_jwt_instead_of_a_secret(
    make_client: Make, receiver: Receiver
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    receiver.answer["/token"] = json.dumps(
        {"access_token": "tok-for-jwt", "token_type": "Bearer", "expires_in": 3600}
    ).encode()
    token_url = receiver.hook("token")
    client = hooks_only(
        make_client,
        outbound.Webhook(
            receiver.hook(),
            auth={
                "type": "oauth2",
                "token_url": token_url,
                "client_id": "my-client",
                "client_assertion_key": pem,
            },
        ),
    )
    client.track(user_id="u1", event="Paid")
    assert client.flush(timeout=10)
    (hook,) = receiver.at("/hook")
    assert hook.headers["authorization"] == "Bearer tok-for-jwt"
    (token_request,) = receiver.at("/token")
    assert "authorization" not in token_request.headers
    form = parse_qs(token_request.body.decode())
    (assertion,) = form.pop("client_assertion")
    assert form == {
        "grant_type": ["client_credentials"],
        "client_id": ["my-client"],
        "client_assertion_type": ["urn:ietf:params:oauth:client-assertion-type:jwt-bearer"],
    }
    header, claims, signature = assertion.split(".")
    assert json.loads(b64url(header))["alg"] == "ES256"
    body = json.loads(b64url(claims))
    assert body["iss"] == body["sub"] == "my-client"
    assert body["aud"] == token_url
    assert body["exp"] == body["iat"] + 300 and abs(body["iat"] - time.time()) < 60
    assert body["jti"]
    raw = b64url(signature)
    assert len(raw) == 64  # JWS's r || s, not DER
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    # Raises InvalidSignature unless the key's public half verifies it.
    key.public_key().verify(der, f"{header}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))


def test_signature_header_and_hmac_sha256_verify(make_client: Make, receiver: Receiver) -> None:
    client = hooks_only(
        make_client,
        outbound.Webhook(
            receiver.hook("gh"),
            signature_header="X-Hub-Signature-256",
            signature_scheme="hmac-sha256",
        ),
        outbound.Webhook(receiver.hook("default")),
        shared_secret="s3cret",
    )
    client.track(user_id="u1", event="Paid", properties={"total": 19.99})
    assert client.flush(timeout=10)
    assert receiver.wait_for(lambda r: len(r.at("/gh")) == 1)
    (gh,) = receiver.at("/gh")
    sig = gh.headers["x-hub-signature-256"]
    # The scheme's rule with the standard library alone, then the helpers.
    expected = "sha256=" + hmac.new(b"s3cret", gh.raw_body, hashlib.sha256).hexdigest()
    assert sig == expected
    assert outbound.verify_sha256("s3cret", gh.raw_body, sig)
    assert outbound.verify_sha256(b"s3cret", json.loads(gh.body), sig)  # parsed, re-serialized
    assert not outbound.verify_sha256("other", gh.raw_body, sig)
    assert not outbound.verify_sha256("s3cret", gh.raw_body, None)
    assert outbound.sign_sha256("s3cret", gh.raw_body) == sig
    assert "x-signature" not in gh.headers and "x-signature-256" not in gh.headers
    # The other webhook keeps the client's scheme.
    assert receiver.wait_for(lambda r: len(r.at("/default")) == 1)  # first 2xx delivers
    (default,) = receiver.at("/default")
    assert outbound.verify("s3cret", default.raw_body, default.headers["x-signature"])
    assert "x-hub-signature-256" not in default.headers


def test_sign_sha256_matches_github_s_published_vector() -> None:
    # docs.github.com, "Validating webhook deliveries".
    vector = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert outbound.sign_sha256("It's a Secret to Everybody", "Hello, World!") == vector
    assert outbound.verify_sha256(b"It's a Secret to Everybody", b"Hello, World!", vector)
    upper_hex = "sha256=" + vector[7:].upper()
    assert outbound.verify_sha256("It's a Secret to Everybody", "Hello, World!", upper_hex)
    assert not outbound.verify_sha256("It's a Secret to Everybody", "Hello, World!", vector[7:])
    with pytest.raises(TypeError, match="body must be bytes or str"):
        outbound.sign_sha256("k", 5)  # type: ignore[arg-type]


def test_rate_limit_spaces_requests_and_health_counts_the_waits(
    make_client: Make, receiver: Receiver
) -> None:
    client = hooks_only(
        make_client, outbound.Webhook(receiver.hook(), rate_limit={"per_second": 5, "burst": 1})
    )
    start = time.monotonic()
    for _ in range(4):
        client.track(user_id="u1", event="E")
    assert client.flush(timeout=10)
    took = time.monotonic() - start
    assert len(receiver.at("/hook")) == 4
    assert took >= 0.55, f"4 requests at 5 a second took {took:.3f} s"
    (health,) = client.webhook_health()
    assert health["throttled"] >= 3
    assert health["state"] in ("healthy", "throttled")


@pytest.mark.parametrize(
    "hook, field",
    [
        ({"rate_limit": {"per_second": 0}}, "webhooks[0].rate_limit.per_second"),
        ({"rate_limit": {"per_second": 5, "burst": 0}}, "webhooks[0].rate_limit.burst"),
        ({"rate_limit": {"per_second": -1}}, "webhooks[0].rate_limit.per_second"),
        ({"rate_limit": {"burst": 5}}, "webhooks[0].rate_limit.per_second"),
        ({"auth": {"type": "basic", "user": "a:b", "password": "p"}}, "webhooks[0].auth.user"),
        ({"auth": {"type": "basic", "user": "a"}}, "webhooks[0].auth.password"),
        ({"auth": {"type": "bearer", "token": ""}}, "webhooks[0].auth.token"),
        ({"auth": {"type": "bearer", "token": "t", "tokn": "t"}}, "webhooks[0].auth.tokn"),
        ({"auth": {"type": "digest"}}, "webhooks[0].auth.type"),
        (
            {"auth": {"type": "oauth2", "token_url": "ftp://x", "client_id": "i",
                      "client_secret": "s"}},
            "webhooks[0].auth.token_url",
        ),
        (
            {"auth": {"type": "oauth2", "token_url": "http://127.0.0.1:9/t", "client_id": "i",
                      "client_secret": "s", "client_assertion_key": "-----BEGIN PRIVATE KEY-----"}},
            "webhooks[0].auth.client_secret",
        ),
        (
            {"auth": {"type": "oauth2", "token_url": "http://127.0.0.1:9/t", "client_id": "i"}},
            "webhooks[0].auth.client_secret",
        ),
        (
            {"auth": {"type": "oauth2", "token_url": "http://127.0.0.1:9/t", "client_id": "i",
                      "client_assertion_key": "-----BEGIN CERTIFICATE-----\nAAAA\n"
                                              "-----END CERTIFICATE-----\n"}},
            "webhooks[0].auth.client_assertion_key",
        ),
        ({"tls": {"client_cert": "-----BEGIN CERTIFICATE-----"}}, "webhooks[0].tls.client_key"),
        ({"tls": {"ca_cert": "x"}}, "webhooks[0].tls.ca_cert"),
        ({"signature_header": "Content-Type"}, "webhooks[0].signature_header"),
        ({"signature_header": "bad header"}, "webhooks[0].signature_header"),
        ({"signature_scheme": "svix"}, "webhooks[0].signature_scheme"),
    ],
)
def test_a_bad_setting_raises_config_error_naming_the_field(
    receiver: Receiver, hook: Dict[str, Any], field: str
) -> None:
    with pytest.raises(outbound.ConfigError) as err:
        outbound.Client(webhooks=[outbound.Webhook(receiver.hook(), **hook)], shared_secret="s")
    assert err.value.setting == field
    assert field in str(err.value)


@pytest.mark.parametrize(
    "hook, field",
    [
        ({"auth": "Bearer t"}, "webhooks[0].auth"),
        ({"auth": {"type": "bearer", "token": 5}}, "webhooks[0].auth.token"),
        ({"rate_limit": {"per_second": "5"}}, "webhooks[0].rate_limit.per_second"),
        ({"rate_limit": {"per_second": True}}, "webhooks[0].rate_limit.per_second"),
        ({"tls": {"ca_certs": 5}}, "webhooks[0].tls.ca_certs"),
        (
            {"auth": {"type": "oauth2", "token_url": "http://127.0.0.1:9/t", "client_id": "i",
                      "client_assertion_key": b"-----BEGIN PRIVATE KEY-----"}},
            "webhooks[0].auth.client_assertion_key",
        ),
        ({"signature_header": 5}, "webhooks[0].signature_header"),
        ({"signature_scheme": b"hmac-sha256"}, "webhooks[0].signature_scheme"),
    ],
)
def test_a_value_of_the_wrong_type_raises_type_error_naming_the_field(
    receiver: Receiver, hook: Dict[str, Any], field: str
) -> None:
    with pytest.raises(outbound.UnsupportedType) as err:
        outbound.Client(webhooks=[outbound.Webhook(receiver.hook(), **hook)])
    assert isinstance(err.value, TypeError)
    assert err.value.field == field and field in str(err.value)


def test_the_second_webhook_s_error_names_its_index(receiver: Receiver) -> None:
    with pytest.raises(outbound.ConfigError, match=r"webhooks\[1\]\.auth: .*Authorization"):
        outbound.Client(
            webhooks=[
                receiver.hook(),
                outbound.Webhook(
                    receiver.hook(),
                    headers={"Authorization": "Bearer x"},
                    auth={"type": "bearer", "token": "t"},
                ),
            ]
        )


def test_repr_shows_no_credentials_and_eq_compares_every_setting() -> None:
    hook = outbound.Webhook(
        "https://hooks.example.com/in",
        auth={"type": "basic", "user": "me", "password": "pa55word"},
        tls={"client_cert": "CERT", "client_key": "-----BEGIN PRIVATE KEY-----s3cr3tkey"},
        rate_limit={"per_second": 10},
    )
    shown = repr(hook)
    assert "pa55word" not in shown and "s3cr3tkey" not in shown
    assert "auth='basic'" in shown and "client_key" in shown
    assert hook == outbound.Webhook(
        "https://hooks.example.com/in",
        auth={"type": "basic", "user": "me", "password": "pa55word"},
        tls={"client_cert": "CERT", "client_key": "-----BEGIN PRIVATE KEY-----s3cr3tkey"},
        rate_limit={"per_second": 10},
    )
    assert hook != outbound.Webhook("https://hooks.example.com/in", rate_limit={"per_second": 10})


# ---- mutual TLS: a receiver that requires a client certificate --------------------------


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def mtls_receiver(ca: trustme.CA) -> Iterator[Receiver]:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(ctx)
    ca.configure_trust(ctx)
    ctx.verify_mode = ssl.CERT_REQUIRED
    rec = start_receiver(ctx)
    yield rec
    rec.server.shutdown()
    rec.server.server_close()


def send_once(rec: Receiver, hook: outbound.Webhook) -> Tuple[bool, List[Tuple[str, str, str]]]:
    seen: List[Tuple[str, str, str]] = []
    client = outbound.Client(
        webhooks=[hook], flush_at=1, proxy_from_env=False, max_retry_duration=0.5,
        on_outcome=lambda *a: seen.append(a),
    )
    client.track(user_id="u", event="over mTLS")
    return client.close(timeout=10), seen


def test_client_certificate_and_the_webhook_s_own_roots(
    ca: trustme.CA, mtls_receiver: Receiver, tmp_path: Path
) -> None:
    cert = ca.issue_cert("client.example")
    roots = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(roots))
    ok, seen = send_once(
        mtls_receiver,
        outbound.Webhook(
            mtls_receiver.hook(),
            tls={
                "client_cert": b"".join(p.bytes() for p in cert.cert_chain_pems).decode(),
                "client_key": cert.private_key_pem.bytes().decode(),
                "ca_certs": roots,  # a path
            },
        ),
    )
    assert ok and [s[1] for s in seen] == ["delivered"], seen
    assert len(mtls_receiver.at("/hook")) == 1
    # The same roots without the client certificate: the receiver refuses the handshake.
    ok, seen = send_once(
        mtls_receiver, outbound.Webhook(mtls_receiver.hook(), tls={"ca_certs": roots})
    )
    assert not ok and [s[1] for s in seen] == ["failed"], seen
    assert len(mtls_receiver.at("/hook")) == 1
