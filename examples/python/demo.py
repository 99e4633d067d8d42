"""outbound, end to end on one machine.

Starts a local receiver on 127.0.0.1 (a free port) that is both a Segment-style ingestion
endpoint (`POST /v1/batch`) and a customer webhook (`POST /webhook`), sends a handful of
each call through outbound to both, waits with `flush`, then prints what arrived: every
webhook request's `X-Signature` checked with `outbound.verify`, every batch's
`Authorization` header checked against the write key. Exits 1 if anything is missing or
does not verify.

    scripts/demo.sh                  # builds and installs the wheel, then runs this
    python examples/python/demo.py   # with outbound already installed
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

import outbound

WRITE_KEY = "demo-write-key"
SECRET = "demo-shared-secret"


@dataclass
class Arrival:
    path: str
    headers: Dict[str, str]
    body: bytes


class Receiver:
    """Both destinations in one small HTTP server, recording what it is sent."""

    def __init__(self) -> None:
        self.arrivals: List[Arrival] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    receiver.arrivals.append(Arrival(self.path, headers, body))
                known = self.path in ("/v1/batch", "/webhook")
                self.send_response(200 if known else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def at(self, path: str) -> List[Arrival]:
        with self.lock:
            return [a for a in self.arrivals if a.path == path]


def send_everything(client: outbound.Client) -> List[Tuple[str, str, Optional[str]]]:
    """A handful of each call type; returns (call, who, message id)."""
    sent: List[Tuple[str, str, Optional[str]]] = []
    for n in range(1, 4):
        user = f"user-{n}"
        sent.append(("identify", user, client.identify(
            user_id=user, traits={"email": f"{user}@example.com", "plan": "pro"})))
        sent.append(("track", user, client.track(
            user_id=user, event="Order Completed",
            properties={"order": 1000 + n, "total": 19.99 * n, "currency": "EUR"})))
        sent.append(("page", user, client.page(
            user_id=user, name="Pricing", properties={"url": "https://example.com/pricing",
                                                      "path": "/pricing", "title": "Pricing"})))
        sent.append(("screen", user, client.screen(
            user_id=user, name="Dashboard", properties={"tab": n})))
        sent.append(("group", user, client.group(
            user_id=user, group_id=f"team-{n}", traits={"name": f"Team {n}", "seats": 5 * n})))
        sent.append(("alias", user, client.alias(previous_id=f"anon-{n}", user_id=user)))
    sent.append(("delete", "user-3", client.delete(user_id="user-3")))  # webhooks only
    return sent


def main() -> int:
    receiver = Receiver()
    print(f"outbound {outbound.__version__} demo: receiver on {receiver.url}")
    print(f"  ingestion  POST {receiver.url}/v1/batch   (write key {WRITE_KEY!r})")
    print(f"  webhook    POST {receiver.url}/webhook    (signed with the shared secret)\n")

    outcomes: Dict[str, Tuple[str, str]] = {}

    def on_outcome(message_id: str, outcome: str, detail: str) -> None:
        outcomes[message_id] = (outcome, detail)

    with outbound.Client(
        WRITE_KEY,
        endpoint=receiver.url,
        webhooks=[outbound.Webhook(f"{receiver.url}/webhook", headers={"X-Demo": "yes"})],
        shared_secret=SECRET,
        flush_at=5,
        on_outcome=on_outcome,
        proxy_from_env=False,
    ) as client:
        sent = send_everything(client)
        flushed = client.flush(timeout=15)
        stats = client.stats

    # What arrived at the ingestion endpoint, and whether each batch was authenticated.
    expected_auth = "Basic " + base64.b64encode(f"{WRITE_KEY}:".encode()).decode()
    batches = receiver.at("/v1/batch")
    batch_auth_ok = [b.headers.get("authorization") == expected_auth for b in batches]
    ingested = {m["messageId"]: m for b in batches for m in json.loads(b.body)["batch"]}

    # What arrived at the webhook, each request's signature checked over the raw body.
    hooks: Dict[str, bool] = {}
    for req in receiver.at("/webhook"):
        body = json.loads(req.body)
        signature = req.headers.get("x-signature", "")
        key = body.get("messageId") or f"delete:{body.get('userId')}"
        hooks[key] = outbound.verify(SECRET, req.body, signature)

    problems: List[str] = []
    rows: List[Tuple[str, ...]] = []
    for i, (call, who, mid) in enumerate(sent, 1):
        if mid is None:
            problems.append(f"{call} for {who} was dropped (queue full)")
            continue
        hook_key = f"delete:{who}" if call == "delete" else mid
        want_ingest = call != "delete"  # the ingestion API has no delete
        got_ingest = mid in ingested
        got_hook = hook_key in hooks
        verified = hooks.get(hook_key, False)
        outcome = outcomes.get(mid, ("?", ""))[0]
        rows.append((str(i), call, who,
                     ("yes" if got_ingest else "MISSING") if want_ingest else "-",
                     "yes" if got_hook else "MISSING",
                     "verified" if verified else "BAD",
                     outcome, mid))
        if want_ingest and not got_ingest:
            problems.append(f"{call} {mid} did not reach the ingestion endpoint")
        if not got_hook:
            problems.append(f"{call} {mid} did not reach the webhook")
        elif not verified:
            problems.append(f"{call} {mid}: webhook signature did not verify")
        if outcome != "delivered":
            problems.append(f"{call} {mid}: outcome {outcome}")

    header = ("#", "call", "user", "ingestion", "webhook", "signature", "outcome", "message id")
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    for r in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())

    tampered = outbound.verify(SECRET, b'{"type":"track","event":"Forged"}',
                               receiver.at("/webhook")[0].headers.get("x-signature", ""))
    if tampered:
        problems.append("a forged body verified")
    if not all(batch_auth_ok) or not batches:
        problems.append("a batch arrived without the right Authorization header")
    if not flushed:
        problems.append("flush did not finish cleanly")

    print(f"\nbatches: {len(batches)} POST /v1/batch carrying {len(ingested)} messages, "
          f"Authorization checked on {sum(batch_auth_ok)}/{len(batches)}")
    print(f"webhook: {len(receiver.at('/webhook'))} POST /webhook, "
          f"signatures verified {sum(hooks.values())}/{len(hooks)}; "
          f"a forged body {'VERIFIED (bad)' if tampered else 'is refused'}")
    print("stats:", ", ".join(f"{k} {v}" for k, v in stats.items()))
    receiver.server.shutdown()

    if problems:
        print("\nFAILED:")
        for p in problems:
            print("  -", p)
        return 1
    print(f"\nOK: all {len(sent)} messages arrived where they should, every signature verified.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
