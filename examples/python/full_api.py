"""Every part of outbound's Python API in one program. `mypy --strict` checks it in
scripts/test-python.sh; run it to send to a receiver of your own:

    python examples/python/full_api.py http://127.0.0.1:8080
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
import sys
import time
import uuid
from decimal import Decimal
from typing import Dict, List, Optional, Tuple

import outbound
import outbound.testing


class Plan(enum.Enum):
    PRO = "pro"


def main(base_url: str) -> int:
    logging.basicConfig(level=logging.INFO)
    outcomes: List[Tuple[str, str, str]] = []

    def on_outcome(message_id: str, outcome: str, detail: str) -> None:
        outcomes.append((message_id, outcome, detail))

    hook = outbound.Webhook(f"{base_url}/hook", headers={"X-Team": "growth"}, enabled=True)
    with outbound.Client(
        "WRITE_KEY",
        endpoint=base_url,
        webhooks=[hook, f"{base_url}/second-hook"],
        shared_secret="s3cret",
        webhook_user_agent="Outbound/1.0",
        flush_at=20,
        flush_interval=5.0,
        max_queue_size=10_000,
        timeout=5.0,
        max_retry_duration=60.0,
        gzip=False,
        ca_certs=None,
        workers=4,
        on_outcome=on_outcome,
        debug=False,
        send=True,
        proxy_from_env=False,
        atexit_timeout=2.0,
    ) as client:
        now = dt.datetime.now(dt.timezone.utc)
        ids: List[Optional[str]] = [
            client.identify(user_id="u1", traits={"email": "u1@example.com", "plan": Plan.PRO}),
            client.track(
                user_id=42,
                event="Order Completed",
                properties={"total": Decimal("19.99"), "at": now, "items": [{"sku": "a"}]},
                context={"ip": "203.0.113.7"},
                integrations={"All": True},
                timestamp=now,
                message_id=str(uuid.uuid4()),
            ),
            client.page(anonymous_id=uuid.uuid4(), name="Pricing", properties={"path": "/p"}),
            client.screen(user_id="u1", name="Home", category="Main"),
            client.group(user_id="u1", group_id="acme", traits={"seats": 10}),
            client.alias(previous_id="anon-1", user_id="u1"),
            client.delete(user_id="u1", timestamp="2026-11-21T09:30:00.000Z"),
        ]
        try:
            client.track(user_id="u1", event="Bad", properties={"tags": {"a", "b"}})
        except outbound.UnsupportedType as e:
            print("refused:", e, "at", e.field)
        except outbound.ValidationError as e:
            print("refused:", e)
        delivered: bool = client.flush(timeout=10.0)
        stats: Dict[str, int] = client.stats
        print("queued ids:", ids, "flushed:", delivered, "stats:", stats, client.closed)
        for attempt in client.webhook_attempts(0)[:3]:
            print("attempt:", attempt["message_id"], attempt["status"], attempt["error"])
        print("health:", [(h["state"], h["throttled"]) for h in client.webhook_health()])

    # Dead letters live in the spool: kept, listed, discarded and replayed.
    spool = f"/tmp/outbound-full-api-{uuid.uuid4()}"
    with outbound.Client(
        webhooks=[hook],
        spool=spool,
        dead_letters=True,
        dead_letter_retention=7 * 86400.0,
        dead_letter_max_bytes=64 << 20,
        attempt_log_size=500,
        attempt_retention=6 * 3600.0,
        proxy_from_env=False,
    ) as dead:
        page = dead.dead_letters(limit=100, since=now - dt.timedelta(days=1))
        for letter in page["dead_letters"]:
            print("dead:", letter["message_id"], letter["reason"], letter["last_attempts"])
        found = dead.dead_letter("some-message-id")
        replay = dead.replay_dead_letter("some-message-id", webhook=0)
        deleted: bool = dead.delete_dead_letter("some-message-id")
        job = dead.replay_dead_letters(since=now - dt.timedelta(hours=1))
        progress = dead.replay_progress(job["id"])
        print("dead letters:", found, replay, deleted, progress, dead.dead_letter_stats())

    try:
        client.track(user_id="u1", event="Late")
    except outbound.ClientClosed:
        pass
    try:
        outbound.Client()
    except outbound.ConfigError as e:
        print("config:", e.setting)
    except outbound.OutboundError:
        raise

    body = b'{"cool":true}'
    signature: str = outbound.sign("abc123", body)
    checks: List[bool] = [
        outbound.verify("abc123", body, signature),
        outbound.verify(b"abc123", body.decode(), signature),
        outbound.verify("abc123", {"cool": True}, signature),
    ]
    whsec = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    unix_now = int(time.time())
    standard: str = outbound.sign_standard_webhook(whsec, "msg_1", unix_now, body)
    checks.append(
        outbound.verify_standard_webhook(whsec, body, "msg_1", str(unix_now), standard, tolerance=60)
    )
    sha256: str = outbound.sign_sha256("abc123", body)
    checks.append(outbound.verify_sha256("abc123", body, sha256))
    auth: outbound.WebhookAuth = {"type": "bearer", "token": "t0k3n"}
    oauth: outbound.OAuth2Auth = {"type": "oauth2", "token_url": "https://auth.example.com/token",
                                  "client_id": "me", "client_secret": "s3cret", "scope": "events"}
    jwt: outbound.OAuth2Auth = {"type": "oauth2", "token_url": "https://auth.example.com/token",
                                "client_id": "me", "client_assertion_key": "/etc/outbound/key.pem"}
    tls: outbound.WebhookTls = {"ca_certs": "/etc/ssl/private-ca.pem"}
    rate: outbound.RateLimit = {"per_second": 50, "burst": 100}
    endpoints = [
        outbound.Webhook("http://127.0.0.1:9/a", auth=auth, signature_header="X-Hub-Signature-256",
                         signature_scheme="hmac-sha256", rate_limit=rate),
        outbound.Webhook("http://127.0.0.1:9/b", auth=oauth, tls=tls),
        outbound.Webhook("http://127.0.0.1:9/c",
                         auth=outbound.BasicAuth(type="basic", user="me", password="pw")),
        outbound.Webhook("http://127.0.0.1:9/d", auth=jwt),
    ]
    try:
        outbound.Client(webhooks=endpoints, shared_secret="s3cret", send=False).close()
    except outbound.ConfigError as e:  # the CA and key files are not there
        print("config:", e.setting)
    scheme: outbound.SignatureScheme = "standard-webhooks"
    with outbound.Client(webhooks=["http://127.0.0.1:9/h"], shared_secret=whsec,
                         signature_scheme=scheme, block_private_networks=True,
                         allowed_networks=["127.0.0.0/8"], send=False) as signed:
        signed.identify(user_id="u1")
    with outbound.testing.RecordingClient(webhooks=["https://hooks.example.com/in"]) as rec:
        rec.identify(user_id="u1")
        rec.flush(timeout=5)
        recorded: List[outbound.testing.RecordedRequest] = rec.requests
        checks.append(len(recorded) == 1 and rec.messages("webhook")[0]["userId"] == "u1")
    # Subscriptions (Segment's Webhooks (Actions)): a 4-parameter on_outcome gets the name.
    def on_subscription_outcome(
        message_id: str, outcome: str, detail: str, subscription: Optional[str]
    ) -> None:
        outcomes.append((message_id, outcome, subscription or "own"))

    orders: Dict[str, object] = {
        "name": "orders",
        "subscribe": 'type = "track" and event = "Order Completed"',
        "mapping": {"url": f"{base_url}/orders", "method": "PUT",
                    "data": {"total": {"@path": "$.properties.total"}}},
    }
    with outbound.Client(subscriptions=[orders], shared_secret="s3cret",
                         on_outcome=on_subscription_outcome, proxy_from_env=False) as subs:
        subs.track(user_id="u1", event="Order Completed", properties={"total": 19.99})
        subs.flush(timeout=10.0)
        sub_stats: Dict[str, int] = subs.subscription_stats("orders")
        unmatched: int = subs.unmatched
        print("orders:", sub_stats, "unmatched:", unmatched)
    with outbound.testing.RecordingClient(subscriptions=[orders]) as rec_subs:
        rec_subs.track(user_id="u1", event="Order Completed", properties={"total": 1})
        rec_subs.flush(timeout=5)
        named: List[Optional[str]] = [o.subscription for o in rec_subs.outcomes]
        print("recorded:", named)
    too_large: type = outbound.MessageTooLarge
    print(outbound.__version__, checks, too_large.__name__, outcomes)
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:9"))


def audience_sync(client: outbound.Client) -> None:
    sync = outbound.AudienceSync(client, state_path=None)
    joined: outbound.AudienceResult = sync.sync_audience("High Value Users", ["u1", 2])
    traits: outbound.TraitResult = sync.sync_trait("Lifetime Value", {"u1": 10.5})
    print(joined.joined, joined.left, joined.unchanged, traits.set, traits.cleared)
