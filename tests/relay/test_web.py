"""Web source: analytics.js (@segment/analytics-next from npm) in headless Chromium, loaded by a
local page on 127.0.0.1 whose settings point at the relay. analytics.js sends each call to the
relay's short paths (/v1/p, /v1/i, /v1/t, ...) with the write key in an Authorization header,
so every request is a CORS preflight first: nothing arrives unless the relay answers it."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, List

import pytest

from conftest import NODE_MODULES, ROOT, Relay, check_delivery, node_env, plan, run_sender

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
    sent = run_sender(["node", str(ROOT / "tests/relay/node/browser.cjs"), page_server + "/",
                       relay.hostport + "/v1", page_server], steps, tmp_path, env=node_env(),
                      timeout=180)
    got = check_delivery(relay, steps, sent, check_fields=False)
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
    # analytics.js's own context is kept (its `library` is the core's to set) and so is the
    # anonymousId it made.
    ctx = got["track@alpha"]["context"]
    assert ctx["page"]["url"].startswith(page_server), ctx
    assert "Chrome" in ctx["userAgent"], ctx
    assert got["track@alpha"]["anonymousId"], got["track@alpha"]
