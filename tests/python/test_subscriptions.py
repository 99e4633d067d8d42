"""Subscriptions (``Client(subscriptions=[...])``) against two receivers on 127.0.0.1: each
gets only what its trigger matches, as its mapping says (method, headers, body), signed;
outcomes name their subscription; the counters are each subscription's; a refused
subscription names its field."""

from __future__ import annotations

import hashlib
import hmac
import json
import pathlib
import threading
from typing import Any, Iterator, List, Optional, Tuple

import pytest

import outbound
from outbound.testing import RecordedOutcome, RecordingClient
from receiver import Receiver, start_receiver

SECRET = "sub-secret"


@pytest.fixture
def two() -> Iterator[Tuple[Receiver, Receiver]]:
    a, b = start_receiver(), start_receiver()
    yield a, b
    for rec in (a, b):
        rec.server.shutdown()
        rec.server.server_close()


def hmac_sha1(body: bytes) -> str:
    return hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()


def test_each_subscription_gets_what_its_trigger_matches_mapped_and_signed(
    two: Tuple[Receiver, Receiver],
) -> None:
    a, b = two
    lock = threading.Lock()
    outcomes: List[Tuple[str, str, str, Optional[str]]] = []

    def on_outcome(message_id: str, outcome: str, detail: str, subscription: Optional[str]) -> None:
        with lock:
            outcomes.append((message_id, outcome, detail, subscription))

    client = outbound.Client(
        subscriptions=[
            # As Segment exports a subscription.
            {
                "name": "orders",
                "subscribe": 'type = "track" and event = "Order Completed"',
                "mapping": {
                    "url": a.hook("orders"),
                    "method": "PUT",
                    "headers": {"X-Team": "growth"},
                    "data": {
                        "order": {"@path": "$.properties.order_id"},
                        "who": {"@template": "{{userId}}"},
                    },
                },
            },
            # In outbound's own settings: the whole event, POSTed.
            {"name": "ids", "trigger": 'type = "identify"', "url": b.hook("ids")},
        ],
        shared_secret=SECRET,
        on_outcome=on_outcome,
        proxy_from_env=False,
    )
    try:
        order = client.track(
            user_id="u1", event="Order Completed", properties={"order_id": "o-1", "total": 12.5}
        )
        client.track(user_id="u1", event="Cart Viewed", properties={"order_id": "o-2"})
        who = client.identify(user_id="u2", traits={"plan": "pro"})
        client.page(user_id="u3", name="Home")
        assert client.flush(timeout=10)

        (put,) = a.requests
        (post,) = b.requests
        assert (put.method, put.path) == ("PUT", "/orders")
        assert put.body == b'{"order":"o-1","who":"u1"}'
        assert put.headers["x-team"] == "growth"
        assert put.headers["content-type"] == "application/json"
        assert (post.method, post.path) == ("POST", "/ids")
        event = post.json
        assert (event["type"], event["userId"], event["messageId"]) == ("identify", "u2", who)
        assert event["traits"] == {"plan": "pro"}
        for req in (put, post):
            assert req.headers["x-signature"] == hmac_sha1(req.body), req.path

        with lock:
            got = sorted(outcomes, key=lambda o: o[3] or "")
        assert got == [(who, "delivered", "", "ids"), (order, "delivered", "", "orders")], (
            "one outcome per match; a client of subscriptions alone has none of its own"
        )
        assert client.unmatched == 2, "the Cart Viewed track and the page"
        orders = client.subscription_stats("orders")
        assert (orders["accepted"], orders["delivered"]) == (1, 1)
        assert client.subscription_stats("ids")["delivered"] == 1
        assert client.stats["accepted"] == 0, "the client's own counters"
        with pytest.raises(outbound.ValidationError, match='no subscription named "nope"') as e:
            client.subscription_stats("nope")
        assert e.value.field == "name"
    finally:
        client.close(timeout=5)


def test_a_three_argument_callback_gets_every_outcome_as_before(
    two: Tuple[Receiver, Receiver],
) -> None:
    a, _ = two
    seen: List[Any] = []
    hook = a.hook("hook")
    with outbound.Client(
        webhooks=[hook],
        subscriptions=[{"name": "all", "trigger": 'type = "track"', "url": a.hook("sub")}],
        on_outcome=lambda *args: seen.append(args),
        proxy_from_env=False,
    ) as client:
        mid = client.track(user_id="u", event="E")
        assert client.flush(timeout=10)
    assert seen == [(mid, "delivered", ""), (mid, "delivered", "")], "its own and the subscription's"
    assert [r.path for r in sorted(a.requests, key=lambda r: r.path)] == ["/hook", "/sub"]


def test_a_batching_subscription_sends_arrays_of_mapped_bodies_signed(
    two: Tuple[Receiver, Receiver],
) -> None:
    a, _ = two
    with outbound.Client(
        subscriptions=[{"name": "batched", "trigger": 'type = "track"', "url": a.hook("batch"),
                        "batch_size": 3, "data": {"n": {"@path": "$.properties.n"}}}],
        shared_secret=SECRET,
        proxy_from_env=False,
    ) as client:
        for n in range(5):
            client.track(user_id="u", event="E", properties={"n": n})
        assert client.flush(timeout=10)
        assert client.subscription_stats("batched")["delivered"] == 5
    bodies = [json.loads(r.body) for r in a.requests]
    assert sorted(len(b) for b in bodies) == [2, 3], bodies
    assert sorted(e["n"] for b in bodies for e in b) == list(range(5))
    for req in a.requests:
        assert req.headers["x-signature"] == hmac_sha1(req.body)


@pytest.mark.parametrize(
    "subscription, field",
    [
        ({"name": "s", "subscribe": 'type = "track"', "mapping": {"url": 7}}, "mapping.url"),
        (
            {"name": "s", "subscribe": 'type = "track"',
             "mapping": {"url": "http://127.0.0.1:9/s", "method": "GET"}},
            "mapping.method",
        ),
        ({"name": "s", "trigger": '(event = "a"', "url": "http://127.0.0.1:9/s"}, "trigger"),
        ({"name": "s", "trigger": 'type = "track"'}, "url"),
        ({"name": "s", "trigger": 'type = "track"', "url": "http://127.0.0.1:9/s",
          "batch_size": 4001}, "batch_size"),
        ({"trigger": 'type = "track"', "url": "http://127.0.0.1:9/s"}, "name"),
    ],
)
def test_a_refused_subscription_names_its_field(subscription: Any, field: str) -> None:
    first = {"name": "first", "trigger": 'type = "track"', "url": "http://127.0.0.1:9/first"}
    with pytest.raises(outbound.ConfigError) as e:
        outbound.Client(subscriptions=[first, subscription], proxy_from_env=False)
    assert e.value.setting == f"subscriptions[1].{field}", e.value
    assert f"subscriptions[1].{field}" in str(e.value)


def test_what_is_not_a_dict_of_json_values_is_refused_naming_where() -> None:
    with pytest.raises(outbound.UnsupportedType, match=r"subscriptions\[0\]: must be a dict"):
        outbound.Client(subscriptions=["type = track"])  # type: ignore[list-item]
    with pytest.raises(outbound.UnsupportedType, match="subscriptions must be a list of dict"):
        outbound.Client(subscriptions={"name": "s"})  # type: ignore[arg-type]
    bad = {"name": "s", "trigger": 'type = "track"', "url": "http://127.0.0.1:9/s",
           "data": {"x": {1, 2}}}
    with pytest.raises(outbound.UnsupportedType, match=r"subscriptions\[0\]\['data'\]\['x'\]"):
        outbound.Client(subscriptions=[bad])


def test_a_recording_client_records_each_outcome_with_its_subscription() -> None:
    # A recording client sends nothing: the URLs are never called.
    with RecordingClient(
        webhooks=["http://127.0.0.1:9/hook"],
        subscriptions=[{"name": "signups", "trigger": 'event = "Signed Up"',
                        "url": "http://127.0.0.1:9/crm"}],
    ) as client:
        client.track(user_id="u1", event="Signed Up", message_id="m-1")
        assert client.flush(timeout=10)
        assert sorted(client.outcomes, key=lambda o: o.subscription or "") == [
            RecordedOutcome("m-1", "delivered", "", None),
            RecordedOutcome("m-1", "delivered", "", "signups"),
        ]
        (sub,) = [r for r in client.requests if r.url.endswith("/crm")]
        assert json.loads(sub.body)["event"] == "Signed Up"


def test_a_subscription_s_endpoint_is_called_as_a_webhook_s(
    two: Tuple[Receiver, Receiver],
) -> None:
    a, _ = two
    # Without the token the receiver answers 401: a failed delivery.
    a.require["/crm"] = ("Authorization", "Bearer t0k-sub")
    with outbound.Client(
        subscriptions=[{"name": "crm", "trigger": 'type = "track"', "url": a.hook("crm"),
                        "auth": {"type": "bearer", "token": "t0k-sub"}}],
        proxy_from_env=False,
    ) as client:
        client.track(user_id="u", event="E")
        assert client.flush(timeout=10)
        assert client.subscription_stats("crm")["delivered"] == 1
    (req,) = a.requests
    assert req.headers["authorization"] == "Bearer t0k-sub"
    url = "http://127.0.0.1:9/s"
    refused = [
        ({"auth": {"type": "bearer", "token": ""}}, "subscriptions[0].auth.token"),
        ({"auth": {"type": "bearer", "token": 7}}, "subscriptions[0].auth.token"),
        ({"auth": {"type": "digest"}}, "subscriptions[0].auth.type"),
        # A path (os.PathLike) is read as a webhook's is.
        ({"tls": {"client_cert": pathlib.Path("/nonexistent/c.pem"),
                  "client_key": pathlib.Path("/nonexistent/k.pem")}},
         "subscriptions[0].tls.client_cert"),
    ]
    for extra, field in refused:
        sub = {"name": "s", "trigger": 'type = "track"', "url": url, **extra}
        with pytest.raises(outbound.ConfigError) as e:
            outbound.Client(subscriptions=[sub], proxy_from_env=False)
        assert e.value.setting == field, e.value
        assert "t0k" not in str(e.value)
