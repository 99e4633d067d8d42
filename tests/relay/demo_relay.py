"""The relay part of scripts/demo.sh: Segment's own Python SDK sends to outbound-relay, and the
demo's local receiver shows each forwarded call with its X-Signature verified.

Starts a receiver on 127.0.0.1 (a free port, `POST /webhook`), writes a relay.toml with one
source ("demo", write key demo-relay-key, signed) whose webhook is that receiver, starts the
relay binary, sends every call type with segment-analytics-python (`host` = the relay) plus a
track with `integrations: {"Webhooks": false}`, which must not arrive, and prints what came.
SIGTERM stops the relay (it must exit 0). Exits 1 if anything is missing or does not verify.

    python tests/relay/demo_relay.py target/release/outbound-relay
"""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, List, Tuple

from segment.analytics.client import Client

WRITE_KEY = "demo-relay-key"
SECRET = "demo-relay-secret"


class Receiver:
    def __init__(self) -> None:
        self.arrivals: List[Tuple[Dict[str, str], bytes]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.arrivals.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200 if self.path == "/webhook" else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


def main() -> int:
    relay_bin = sys.argv[1]
    receiver = Receiver()
    work = Path(tempfile.mkdtemp(prefix="outbound-relay-demo-"))
    config = work / "relay.toml"
    config.write_text(f"""listen = "127.0.0.1:0"
data_dir = {json.dumps(str(work / "data"))}
allowed_networks = ["127.0.0.0/8"]   # the demo's receiver is on this machine

[[sources]]
name = "demo"
write_keys = [{json.dumps(WRITE_KEY)}]
shared_secret = {json.dumps(SECRET)}

[[sources.webhooks]]
url = "{receiver.url}/webhook"
headers = {{ "X-Team" = "growth" }}
""")
    log = open(work / "relay.log", "wb")
    relay = subprocess.Popen([relay_bin, "--config", str(config)], stdout=subprocess.PIPE,
                             stderr=log, stdin=subprocess.DEVNULL)
    assert relay.stdout is not None
    addr = relay.stdout.readline().decode().strip()
    if not addr:
        print(f"the relay did not start; its log: {work / 'relay.log'}")
        return 1
    print(f"outbound-relay on {addr} (config {config})")
    print(f"  source 'demo': write key {WRITE_KEY!r} -> webhook {receiver.url}/webhook, signed\n")

    client = Client(WRITE_KEY, host=f"http://{addr}", gzip=True)
    sent: List[Tuple[str, str]] = []  # (call, messageId the SDK made)

    def keep(call: str, result: Tuple[bool, Dict[str, Any]]) -> None:
        sent.append((call, result[1]["messageId"]))

    keep("identify", client.identify("user-42", {"email": "ada@example.com", "plan": "pro"}))
    keep("track", client.track("user-42", "Order Completed", {"orderId": "o-1001", "total": 99.5}))
    keep("page", client.page("user-42", name="Pricing",
                             properties={"path": "/pricing", "title": "Pricing",
                                         "url": "https://shop.example/pricing", "referrer": ""}))
    keep("screen", client.screen("user-42", name="Dashboard", properties={"tab": "main"}))
    keep("group", client.group("user-42", "acme", {"name": "Acme", "employee count": 12}))
    keep("alias", client.alias("anon-7", "user-42"))
    hidden = client.track("user-42", "Not For Webhooks", integrations={"Webhooks": False})[1]
    client.flush()
    client.shutdown()
    print(f"segment-analytics-python sent {len(sent) + 1} calls to http://{addr}/v1/batch "
          f"(one with integrations {{\"Webhooks\": false}})\n")

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with receiver.lock:
            if len(receiver.arrivals) >= len(sent):
                break
        time.sleep(0.05)
    time.sleep(1.0)  # anything that should not come has had its chance
    relay.send_signal(signal.SIGTERM)
    status = relay.wait(30)

    problems: List[str] = []
    by_id: Dict[str, Tuple[Dict[str, str], bytes]] = {}
    for headers, body in receiver.arrivals:
        by_id[json.loads(body).get("messageId", "?")] = (headers, body)
    rows = [("call", "messageId (the SDK's)", "X-Signature", "body")]
    for call, mid in sent:
        if mid not in by_id:
            problems.append(f"{call} {mid} did not arrive")
            rows.append((call, mid, "-", "MISSING"))
            continue
        headers, body = by_id[mid]
        want = hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
        ok = hmac.compare_digest(headers.get("x-signature", ""), want)
        if not ok:
            problems.append(f"{call} {mid}: X-Signature does not verify")
        text = body.decode()
        rows.append((call, mid, "verified" if ok else "BAD", text[:70] + ("..." if len(text) > 70 else "")))
    if hidden["messageId"] in by_id:
        problems.append("the track with integrations {\"Webhooks\": false} reached the webhook")
    if len(receiver.arrivals) != len(sent):
        problems.append(f"{len(receiver.arrivals)} webhook requests for {len(sent)} calls")
    if status != 0:
        problems.append(f"the relay exited {status} on SIGTERM (log {work / 'relay.log'})")
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    print(f"\nwebhook: {len(receiver.arrivals)} POST /webhook; the Webhooks:false track kept back; "
          f"relay stopped with SIGTERM, exit {status}")
    if problems:
        print("\nFAILED:")
        for p in problems:
            print("  -", p)
        return 1
    print(f"\nOK: {len(sent)} calls from Segment's Python SDK went through outbound-relay to the "
          f"webhook, every signature verified.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
