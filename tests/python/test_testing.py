"""`outbound.testing.RecordingClient`: the real client's checks, bytes, signatures and
outcomes, with nothing sent; compared byte for byte with what `outbound.Client` sends to a
real receiver on 127.0.0.1."""

from __future__ import annotations

import json
import time
from typing import Any, Callable, List

import pytest

import outbound
from outbound.testing import RecordedOutcome, RecordingClient
from receiver import SECRET, WRITE_KEY, Receiver

MESSAGE: Any = dict(
    user_id="u1",
    event="Order Completed",
    properties={"total": 19.99, "items": [{"sku": "a"}], "note": "caf\u00e9 \u2603"},
    message_id="m-1",
    timestamp="2026-11-21T09:30:00.123Z",
)


def test_records_the_bytes_the_real_client_sends_and_sends_nothing(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    real = make_client()
    real.track(**MESSAGE)
    assert real.flush(timeout=10)
    (real_hook,) = receiver.at("/hook")
    (real_batch,) = receiver.at("/v1/batch")

    settings: Any = dict(
        write_key=WRITE_KEY, endpoint=receiver.url, flush_at=1, proxy_from_env=False,
        webhooks=[outbound.Webhook(receiver.hook(), headers={"X-Team": "growth"})],
        shared_secret=SECRET,
    )
    seen: List[Any] = []
    with RecordingClient(on_outcome=lambda *a: seen.append(a), **settings) as client:
        assert client.track(**MESSAGE) == "m-1"
        assert client.flush(timeout=10)
        time.sleep(0.1)
        assert len(receiver.requests) == 2, "the recording client sent nothing"
        hook = [r for r in client.requests if r.destination == "webhook"]
        batch = [r for r in client.requests if r.destination == "ingestion"]
        assert len(hook) == 1 and len(batch) == 1
        assert hook[0].url == receiver.hook()
        assert hook[0].body == real_hook.body
        for name in ("x-signature", "content-type", "user-agent", "x-team"):
            assert hook[0].headers[name] == real_hook.headers[name], name
        assert outbound.verify(SECRET, hook[0].body, hook[0].headers["x-signature"])
        assert batch[0].url == receiver.url + "/v1/batch"
        assert batch[0].headers["authorization"] == real_batch.headers["authorization"]
        mine, theirs = batch[0].json(), json.loads(real_batch.body)
        mine.pop("sentAt"), theirs.pop("sentAt")
        assert mine == theirs
        assert [m["messageId"] for m in client.messages()] == ["m-1", "m-1"]
        assert client.messages("webhook") == [json.loads(real_hook.body)]
        assert client.outcomes == [RecordedOutcome("m-1", "delivered", "")]
        assert seen == [("m-1", "delivered", "")]


def test_standard_webhooks_and_gzip_are_recorded_as_sent() -> None:
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    with RecordingClient(
        "wk", webhooks=["https://hooks.example.com/in"], shared_secret=secret,
        signature_scheme="standard-webhooks", gzip=True, flush_at=1,
    ) as client:
        msg_id = client.identify(user_id="u1", traits={"plan": "pro"})
        assert client.flush(timeout=10)
        (hook,) = [r for r in client.requests if r.destination == "webhook"]
        (batch,) = [r for r in client.requests if r.destination == "ingestion"]
        assert hook.headers["webhook-id"] == msg_id
        assert outbound.verify_standard_webhook(
            secret, hook.body, msg_id, hook.headers["webhook-timestamp"],
            hook.headers["webhook-signature"],
        )
        assert batch.body[:2] == b"\x1f\x8b" and batch.json()["batch"][0]["messageId"] == msg_id


def test_respond_with_plays_failures_through_the_real_rules() -> None:
    with RecordingClient(webhooks=["https://hooks.example.com/in"]) as client:
        client.respond_with(410)
        msg_id = client.identify(user_id="u1")
        assert not client.flush(timeout=10)
        (o,) = client.outcomes
        assert (o.message_id, o.outcome) == (msg_id, "failed") and "gone" in o.detail
        client.clear()
        assert client.requests == [] and client.outcomes == []
        client.respond_with(200)
        client.identify(user_id="u2")
        assert client.flush(timeout=10)
        assert len(client.requests) == 1


def test_calls_and_settings_are_checked_as_by_the_real_client() -> None:
    with pytest.raises(outbound.ConfigError):
        RecordingClient()
    with RecordingClient(webhooks=["https://hooks.example.com/in"]) as client:
        with pytest.raises(outbound.ValidationError, match="event"):
            client.track(user_id="u1", event="")
        with pytest.raises(outbound.UnsupportedType):
            client.identify(user_id="u1", traits={"s": {1, 2}})
        assert client.requests == []


def test_the_real_client_has_no_recording() -> None:
    with outbound.Client(webhooks=["http://127.0.0.1:9/h"], send=False) as client:
        with pytest.raises(RuntimeError, match="not a recording client"):
            client._native.recorded_requests()
