"""Web source: analytics.js (@segment/analytics-next from npm) in headless Chromium, loaded by a
local page on 127.0.0.1 with only `cdnURL` pointing at the relay, as a site self-hosting it
would: analytics.js loads its settings from the relay (GET /v1/projects/{writeKey}/settings),
whose apiHost sends each call to the relay's short paths (/v1/p, /v1/i, /v1/t, ...) with the
write key in an Authorization header, so every request is a CORS preflight first: nothing
arrives unless the relay answers it. Then the fields Segment's API adds (context.ip,
receivedAt, a timestamp corrected for a clock an hour fast), a field no SDK call has, kept,
and analytics.js's own telemetry sent to the relay's /v1/m."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from datetime import datetime
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, List

import pytest

from conftest import NODE_MODULES, ROOT, Relay, check_delivery, metric, node_env, plan, run_sender

UMD = NODE_MODULES / "@segment" / "analytics-next" / "dist" / "umd"
WEB = ROOT / "tests" / "relay" / "web"


class PageHandler(SimpleHTTPRequestHandler):
    """/ is tests/relay/web/index.html; /ajs/* and /analytics-next/bundles/* are
    analytics-next's UMD build (its chunks are fetched from cdnURL + that path)."""

    def do_GET(self) -> None:  # noqa: N802
        if self.path.startswith("/favicon"):
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0]
        for prefix in ("/ajs/", "/analytics-next/bundles/"):
            if path.startswith(prefix):
                return str(UMD / Path(path[len(prefix):]).name)
        return str(WEB / (Path(path).name or "index.html"))

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def page_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), PageHandler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def origins(page_server: str) -> List[str]:
    return [page_server]


def preflight(relay: Relay, origin: str, path: str = "/v1/t") -> "tuple[int, dict]":
    req = urllib.request.Request(relay.url + path, method="OPTIONS", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,x-retry-count"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}


def browser(relay: Relay, page_server: str, steps: list, tmp_path: Path, **env: str) -> list:
    """Runs analytics.js in Chromium on the plan; CDN_URL is the relay."""
    return run_sender(["node", str(ROOT / "tests/relay/node/browser.cjs"), page_server + "/",
                       relay.url], steps, tmp_path, env=dict(node_env(), **env), timeout=180)


def at(body: dict, field: str) -> datetime:
    return datetime.fromisoformat(body[field].replace("Z", "+00:00"))


def test_analytics_js_in_chromium(relay: Relay, page_server: str, tmp_path: Path) -> None:
    # The preflight analytics.js's requests need, from the page's origin: allowed.
    status, headers = preflight(relay, page_server)
    assert 200 <= status < 300, (status, headers)
    assert headers.get("access-control-allow-origin") in (page_server, "*"), headers
    allowed = headers.get("access-control-allow-headers", "").lower()
    for h in ("authorization", "content-type"):
        assert h in allowed or allowed == "*", headers
    # From another origin: no CORS grant.
    status, headers = preflight(relay, "http://evil.example")
    assert headers.get("access-control-allow-origin") not in ("http://evil.example", "*"), headers

    steps = plan(relay, "web", types=["identify", "track", "page", "group", "alias"])
    sent = browser(relay, page_server, steps, tmp_path)
    got = check_delivery(relay, steps, sent, check_fields=False)
    # Its settings came from the relay, once per write key (a page each).
    assert metric(relay, 'outbound_relay_requests_total{route="settings",status="200"}') == 2
    # analytics.js fills the page's properties itself; the body keeps them and our own.
    page = got["page@alpha"]
    for k in ("path", "referrer", "title", "url"):
        assert k in page["properties"], page
    assert page["properties"]["title"] == "Home", page
    assert got["track@alpha"]["event"] == "Order Completed"
    assert got["track@alpha"]["userId"] == "web-u1"
    assert got["identify@alpha"]["traits"]["plan"] == "pro"
    assert got["alias@alpha"]["Previous ID"] == "web-anon"
    assert got["alias@alpha"]["User ID"] == "web-u1"
    assert got["beta_track@beta"]["event"] == "Beta Event"
    # analytics.js's own context is kept, its library too, and so is the anonymousId it made;
    # Segment's API adds the client's address and when the event was received.
    for label in ("page@alpha", "identify@alpha", "track@alpha"):
        body = got[label]
        ctx = body["context"]
        if label != "page@alpha":  # a page call's context.page is the page it names
            assert ctx["page"]["url"].startswith(page_server), ctx
        assert "Chrome" in ctx["userAgent"], ctx
        assert ctx["library"]["name"] == "analytics.js", ctx
        assert ctx["ip"] == "127.0.0.1", ctx
        assert body["anonymousId"], body
        assert body["receivedAt"] and body["sentAt"] and body["originalTimestamp"], body
        assert abs((at(body, "receivedAt") - at(body, "timestamp")).total_seconds()) < 60, body


def test_analytics_js_on_a_clock_an_hour_fast(relay: Relay, page_server: str,
                                               tmp_path: Path) -> None:
    steps = plan(relay, "skew", types=["track", "page"])
    sent = browser(relay, page_server, steps, tmp_path, CLOCK_SHIFT_MS=str(3600 * 1000))
    got = check_delivery(relay, steps, sent, check_fields=False)
    for label in ("track@alpha", "page@alpha"):
        body = got[label]
        # The device's own stamp is kept as sent, an hour ahead; the timestamp is corrected
        # by how far sentAt is from receivedAt.
        ahead = (at(body, "originalTimestamp") - at(body, "receivedAt")).total_seconds()
        assert 3540 < ahead < 3660, body
        assert abs((at(body, "receivedAt") - at(body, "timestamp")).total_seconds()) < 60, body


def test_analytics_js_event_fields_no_call_has_are_kept(relay: Relay, page_server: str,
                                                        tmp_path: Path) -> None:
    steps = plan(relay, "extra", types=["track", "identify"])
    field = {"name": "sessionId", "value": 1732700000123}
    sent = browser(relay, page_server, steps, tmp_path, EXTRA_FIELD=json.dumps(field))
    got = check_delivery(relay, steps, sent, check_fields=False)
    for label in ("track@alpha", "identify@alpha", "beta_track@beta"):
        assert got[label]["sessionId"] == 1732700000123, got[label]


def test_analytics_js_telemetry_is_answered_by_the_relay(relay: Relay, page_server: str,
                                                        tmp_path: Path) -> None:
    # A page whose own settings sample analytics.js's telemetry, to the relay.
    steps = plan(relay, "metrics", types=["track"])
    sent = browser(relay, page_server, steps, tmp_path, METRICS_HOST=relay.hostport + "/v1")
    check_delivery(relay, steps, sent, check_fields=False)
    assert metric(relay, "outbound_relay_telemetry_dropped_total") >= 1
