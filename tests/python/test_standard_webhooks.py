"""Standard Webhooks signing (`signature_scheme="standard-webhooks"`): the requests a real
receiver gets, checked with Python's own hmac/base64 and with the spec's reference library
(`standardwebhooks` from PyPI), and the `sign_standard_webhook` / `verify_standard_webhook`
helpers against the spec's published vector."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from typing import Any, Callable, List

import pytest
import standardwebhooks

import outbound
from outbound import _native
from receiver import Receiver

# The spec's reference vector: github.com/standard-webhooks/standard-webhooks,
# libraries/python/tests/test_webhooks.py (test_sign_function) and the JavaScript library's
# "sign function works".
SW_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
SW_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
SW_TS = 1614265330
SW_BODY = b'{"test": 2432232314}'
SW_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
OLD_SECRET = "whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"


def python_signature(secret: str, msg_id: str, ts: str, body: bytes) -> str:
    """The spec's rule written with the standard library only (no outbound code)."""
    key = base64.b64decode(secret[len("whsec_"):])
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(mac).decode()


def standard_client(
    make_client: Callable[..., outbound.Client], receiver: Receiver, **kw: Any
) -> outbound.Client:
    kw.setdefault("shared_secret", SW_SECRET)
    return make_client(
        write_key=None,
        webhooks=[receiver.hook()],
        signature_scheme="standard-webhooks",
        **kw,
    )


def test_requests_verify_with_python_hmac_and_the_reference_library(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    client = standard_client(make_client, receiver)
    before = int(time.time())
    msg_id = client.track(user_id="u1", event="Paid", properties={"total": 19.99})
    assert client.flush(timeout=10)
    (req,) = receiver.at("/hook")
    assert req.headers["webhook-id"] == msg_id
    ts = req.headers["webhook-timestamp"]
    assert before <= int(ts) <= int(time.time())
    assert "x-signature" not in req.headers
    assert req.headers["webhook-signature"] == python_signature(SW_SECRET, msg_id, ts, req.body)
    # The spec's own library accepts the request as received and gives back the body.
    parsed = standardwebhooks.Webhook(SW_SECRET).verify(req.body, req.headers)
    assert parsed["messageId"] == msg_id and parsed["event"] == "Paid"
    assert outbound.verify_standard_webhook(
        SW_SECRET, req.body, msg_id, ts, req.headers["webhook-signature"]
    )


def test_two_secrets_give_two_signatures_each_accepted_by_the_reference_library(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    client = standard_client(make_client, receiver, shared_secret=f"{SW_SECRET} {OLD_SECRET}")
    msg_id = client.identify(user_id="u1")
    assert client.flush(timeout=10)
    (req,) = receiver.at("/hook")
    ts = req.headers["webhook-timestamp"]
    assert req.headers["webhook-signature"].split(" ") == [
        python_signature(SW_SECRET, msg_id, ts, req.body),
        python_signature(OLD_SECRET, msg_id, ts, req.body),
    ]
    for secret in (SW_SECRET, OLD_SECRET):
        standardwebhooks.Webhook(secret).verify(req.body, req.headers)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        standardwebhooks.Webhook("whsec_" + "A" * 32).verify(req.body, req.headers)


def test_the_body_is_the_same_bytes_under_both_schemes(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    bodies: List[bytes] = []
    for scheme in ("x-signature", "standard-webhooks"):
        client = make_client(
            write_key=None,
            webhooks=[receiver.hook(scheme)],
            shared_secret=SW_SECRET,
            signature_scheme=scheme,
        )
        client.track(
            user_id="u1",
            event="E",
            properties={"n": 1.5},
            message_id="m1",
            timestamp="2026-11-21T09:30:00.123Z",
        )
        assert client.flush(timeout=10)
        (req,) = receiver.at(f"/{scheme}")
        bodies.append(req.body)
    assert bodies[0] == bodies[1]


def test_sign_and_verify_match_the_published_vector() -> None:
    assert outbound.sign_standard_webhook(SW_SECRET, SW_ID, SW_TS, SW_BODY) == SW_SIG
    assert outbound.sign_standard_webhook(SW_SECRET, SW_ID, SW_TS, SW_BODY.decode()) == SW_SIG
    # 2021's timestamp is outside today's tolerance...
    assert not outbound.verify_standard_webhook(SW_SECRET, SW_BODY, SW_ID, str(SW_TS), SW_SIG)
    # ...and inside one reaching back to it (the int form of the header works too).
    reach = time.time() - SW_TS + 60
    assert outbound.verify_standard_webhook(
        SW_SECRET, SW_BODY, SW_ID, SW_TS, SW_SIG, tolerance=reach
    )
    assert not outbound.verify_standard_webhook(
        SW_SECRET, SW_BODY + b" ", SW_ID, SW_TS, SW_SIG, tolerance=reach
    )


def test_the_default_tolerance_is_five_minutes_before_and_after() -> None:
    assert _native.standard_webhook_tolerance() == 300.0
    now = int(time.time())
    for offset, ok in ((-290, True), (290, True), (-310, False), (310, False)):
        ts = now + offset
        sig = python_signature(SW_SECRET, "msg_1", str(ts), SW_BODY)
        assert outbound.verify_standard_webhook(SW_SECRET, SW_BODY, "msg_1", str(ts), sig) is ok


def test_verify_accepts_a_request_signed_by_the_reference_library() -> None:
    now = int(time.time())
    from datetime import datetime, timezone

    sig = standardwebhooks.Webhook(SW_SECRET).sign(
        "msg_2", datetime.fromtimestamp(now, tz=timezone.utc), SW_BODY.decode()
    )
    assert outbound.verify_standard_webhook(SW_SECRET, SW_BODY, "msg_2", str(now), sig)
    assert outbound.verify_standard_webhook(f"{OLD_SECRET} {SW_SECRET}", SW_BODY, "msg_2", now, sig)
    assert not outbound.verify_standard_webhook(OLD_SECRET, SW_BODY, "msg_2", now, sig)
    assert not outbound.verify_standard_webhook(SW_SECRET, SW_BODY, "msg_3", now, sig)
    assert not outbound.verify_standard_webhook(SW_SECRET, SW_BODY, "msg_2", "soon", sig)


def test_bad_secrets_and_schemes_are_refused() -> None:
    with pytest.raises(ValueError, match="invalid secret"):
        outbound.verify_standard_webhook("whsec_!!!", SW_BODY, SW_ID, SW_TS, SW_SIG)
    with pytest.raises(ValueError, match="not a whsec_ secret"):
        outbound.sign_standard_webhook("whsec_!!!", SW_ID, SW_TS, SW_BODY)
    with pytest.raises(outbound.ConfigError, match="signature_scheme"):
        outbound.Client(webhooks=["http://127.0.0.1:9/h"], signature_scheme="svix")  # type: ignore[arg-type]
    with pytest.raises(outbound.ConfigError, match="decodes to 5 bytes"):
        outbound.Client(
            webhooks=["http://127.0.0.1:9/h"],
            shared_secret="whsec_c2hvcnQ=",
            signature_scheme="standard-webhooks",
        )


def test_a_message_id_that_cannot_be_a_webhook_id_is_refused_at_the_call(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    client = standard_client(make_client, receiver)
    with pytest.raises(outbound.ValidationError, match="message_id"):
        client.identify(user_id="u1", message_id="a.b")
