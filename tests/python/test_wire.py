"""What each call puts on the wire, as a real receiver sees it: the ingestion batch and the
signed webhook request."""

from __future__ import annotations

import base64
import re
import time
from typing import Any, Callable, Dict, List, Tuple

import outbound
from receiver import SECRET, WRITE_KEY, Receiver, start_receiver

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")

MakeClient = Callable[..., outbound.Client]


def send_one(make_client: MakeClient, receiver: Receiver, call: str, **kw: Any) -> str:
    client = make_client()
    mid = getattr(client, call)(**kw)
    assert isinstance(mid, str)
    assert client.flush(timeout=10)
    return mid


def ingested(receiver: Receiver, mid: str) -> Dict[str, Any]:
    [msg] = [m for m in receiver.batch_messages() if m["messageId"] == mid]
    return msg


def hooked(receiver: Receiver, mid: str) -> Dict[str, Any]:
    found = [r for r in receiver.at("/hook") if r.json.get("messageId") == mid]
    assert len(found) == 1
    req = found[0]
    assert outbound.verify(SECRET, req.raw_body, req.headers["x-signature"])
    body: Dict[str, Any] = req.json
    return body


def test_track_batch_body_and_headers(make_client: MakeClient, receiver: Receiver) -> None:
    mid = send_one(
        make_client, receiver, "track",
        user_id="u1", event="Signed Up", properties={"plan": "pro", "seats": 3},
        context={"ip": "1.2.3.4"}, integrations={"Mixpanel": False},
    )
    [req] = receiver.at("/v1/batch")
    expected_auth = "Basic " + base64.b64encode(f"{WRITE_KEY}:".encode()).decode()
    assert req.headers["authorization"] == expected_auth
    assert req.headers["content-type"] == "application/json"
    assert req.headers["user-agent"] == f"outbound/{outbound.__version__}"
    body = req.json
    assert set(body) == {"batch", "sentAt"} and TS.match(body["sentAt"])
    msg = ingested(receiver, mid)
    assert UUID4.match(mid)
    assert msg["type"] == "track" and msg["userId"] == "u1" and msg["event"] == "Signed Up"
    assert msg["properties"] == {"plan": "pro", "seats": 3}
    assert msg["context"]["ip"] == "1.2.3.4"
    assert msg["context"]["library"] == {"name": "outbound", "version": outbound.__version__}
    assert msg["integrations"] == {"Mixpanel": False}
    assert TS.match(msg["timestamp"])


def test_track_webhook_is_signed_and_carries_static_headers(
    make_client: MakeClient, receiver: Receiver
) -> None:
    mid = send_one(make_client, receiver, "track", user_id="u1", event="E", properties={"a": 1})
    [req] = receiver.at("/hook")
    assert req.headers["user-agent"] == "Outbound/1.0"
    assert req.headers["x-team"] == "growth"
    assert req.headers["content-type"] == "application/json"
    assert re.fullmatch(r"[0-9a-f]{40}", req.headers["x-signature"])
    body = hooked(receiver, mid)
    assert body["version"] == 1 and body["type"] == "track"
    assert body["event"] == "E" and body["properties"] == {"a": 1} and body["userId"] == "u1"


def test_identify(make_client: MakeClient, receiver: Receiver) -> None:
    mid = send_one(make_client, receiver, "identify", user_id="u2", traits={"email": "a@b.c"})
    for msg in (ingested(receiver, mid), hooked(receiver, mid)):
        assert msg["type"] == "identify" and msg["userId"] == "u2"
        assert msg["traits"] == {"email": "a@b.c"}


def test_page(make_client: MakeClient, receiver: Receiver) -> None:
    props = {"url": "https://x.test/p", "title": "P", "referrer": "", "path": "/p"}
    mid = send_one(make_client, receiver, "page", anonymous_id="anon-1", name="Pricing",
                   category="Docs", properties=props)
    for msg in (ingested(receiver, mid), hooked(receiver, mid)):
        assert msg["type"] == "page" and msg["anonymousId"] == "anon-1"
        assert msg["name"] == "Pricing" and msg["category"] == "Docs"
        assert msg["properties"] == props
        assert "userId" not in msg


def test_screen(make_client: MakeClient, receiver: Receiver) -> None:
    mid = send_one(make_client, receiver, "screen", user_id="u3", name="Home",
                   properties={"tab": 2})
    for msg in (ingested(receiver, mid), hooked(receiver, mid)):
        assert msg["type"] == "screen" and msg["name"] == "Home"
        assert msg["properties"] == {"tab": 2} and "context" in msg


def test_group(make_client: MakeClient, receiver: Receiver) -> None:
    mid = send_one(make_client, receiver, "group", user_id="u4", group_id="acme",
                   traits={"plan": "enterprise"})
    for msg in (ingested(receiver, mid), hooked(receiver, mid)):
        assert msg["type"] == "group" and msg["groupId"] == "acme"
        assert msg["traits"] == {"plan": "enterprise"}


def test_alias(make_client: MakeClient, receiver: Receiver) -> None:
    mid = send_one(make_client, receiver, "alias", previous_id="anon-9", user_id="u5")
    msg = ingested(receiver, mid)
    assert msg["type"] == "alias" and msg["previousId"] == "anon-9" and msg["userId"] == "u5"
    hook = hooked(receiver, mid)
    assert hook["Previous ID"] == "anon-9" and hook["User ID"] == "u5"
    assert "userId" not in hook and hook["version"] == 1


def test_delete_goes_to_webhooks_only_with_exact_keys(
    make_client: MakeClient, receiver: Receiver
) -> None:
    client = make_client()
    mid = client.delete(user_id="u6")
    assert mid is not None and client.flush(timeout=10)
    assert receiver.batch_messages() == []
    [req] = receiver.at("/hook")
    assert outbound.verify(SECRET, req.raw_body, req.headers["x-signature"])
    body = req.json
    assert list(body) == ["type", "userId", "timestamp"]
    assert body["type"] == "delete" and body["userId"] == "u6" and TS.match(body["timestamp"])


def test_given_message_id_and_timestamp_are_sent(
    make_client: MakeClient, receiver: Receiver
) -> None:
    mid = send_one(make_client, receiver, "track", user_id="u", event="E",
                   message_id="my-id-1", timestamp="2026-11-21T11:30:00.123987+02:00")
    assert mid == "my-id-1"
    for msg in (ingested(receiver, mid), hooked(receiver, mid)):
        assert msg["timestamp"] == "2026-11-21T09:30:00.123Z"


def test_gzip_batches(make_client: MakeClient, receiver: Receiver) -> None:
    client = make_client(gzip=True, webhooks=[], shared_secret=None)
    mid = client.track(user_id="u", event="Zipped")
    assert client.flush(timeout=10)
    [req] = receiver.at("/v1/batch")
    assert req.headers["content-encoding"] == "gzip" and req.raw_body[:2] == b"\x1f\x8b"
    assert req.json["batch"][0]["messageId"] == mid


def test_unsigned_webhook_has_no_signature(make_client: MakeClient, receiver: Receiver) -> None:
    client = make_client(write_key=None, shared_secret=None, webhooks=[receiver.hook()])
    client.track(user_id="u", event="E")
    assert client.flush(timeout=10)
    [req] = receiver.at("/hook")
    assert "x-signature" not in req.headers


def test_integrations_can_keep_a_message_from_webhooks(
    make_client: MakeClient, receiver: Receiver
) -> None:
    client = make_client()
    mid = client.track(user_id="u", event="E", integrations={"Webhooks": False})
    assert client.flush(timeout=10)
    assert ingested(receiver, mid)["integrations"] == {"Webhooks": False}
    assert receiver.at("/hook") == []


def test_fan_out_to_several_webhooks(make_client: MakeClient, receiver: Receiver) -> None:
    hooks = [outbound.Webhook(receiver.hook(f"h{i}")) for i in range(3)]
    client = make_client(write_key=None, webhooks=hooks)
    mid = client.identify(user_id="u")
    assert client.flush(timeout=10)
    # Delivered once any webhook says 2xx; the others may still be answering.
    assert receiver.wait_for(lambda r: all(r.at(f"/h{i}") for i in range(3)))
    for i in range(3):
        [req] = receiver.at(f"/h{i}")
        assert req.json["messageId"] == mid


def test_a_disabled_webhook_gets_nothing_and_the_enabled_one_gets_all() -> None:
    # Two receivers of their own: the disabled webhook's gets no request at all.
    on, off = start_receiver(), start_receiver()
    try:
        client = outbound.Client(
            webhooks=[
                outbound.Webhook(off.hook(), enabled=False),
                outbound.Webhook(on.hook(), headers={"X-Team": "growth"}),
            ],
            shared_secret=SECRET,
            proxy_from_env=False,
        )
        n = 20
        ids = {client.track(user_id="u", event="E", properties={"i": i}) for i in range(n)}
        assert client.flush(timeout=10)
        assert client.stats["delivered"] == n
        client.close(timeout=5)
        assert {r.json["messageId"] for r in on.at("/hook")} == ids
        assert len(on.at("/hook")) == n
        assert off.requests == []
        assert outbound.Webhook("http://x/h", enabled=False) != outbound.Webhook("http://x/h")
        assert "enabled=False" in repr(outbound.Webhook("http://x/h", enabled=False))
        assert outbound.Webhook("http://x/h").enabled is True
    finally:
        for rec in (on, off):
            rec.server.shutdown()
            rec.server.server_close()


def test_gone_410_fails_at_once_with_a_gone_detail(
    make_client: MakeClient, receiver: Receiver
) -> None:
    seen: List[Tuple[str, str, str]] = []
    receiver.status["/gone"] = 410
    client = make_client(
        write_key=None, webhooks=[receiver.hook("gone")], on_outcome=lambda *o: seen.append(o)
    )
    mid = client.identify(user_id="u")
    assert client.flush(timeout=10) is False
    time.sleep(0.3)
    assert len(receiver.at("/gone")) == 1  # never retried
    assert seen == [(mid, "failed", seen[0][2])]
    assert seen[0][2].startswith("webhooks: gone (status 410)")
    assert client.stats["retries"] == 0
