"""Delivery under hostile receivers, through the installed wheel: the per-destination
in-flight cap, exact accounting when close gives up on a dead receiver, and a full queue
waited on (``queue_full_wait``) without holding the GIL."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator, List, Tuple

import pytest

import outbound
from receiver import Receiver


class _Slow(BaseHTTPRequestHandler):
    """Answers 200 after 50 ms, counting requests under way and the most at once."""

    lock = threading.Lock()
    now = 0
    most = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        cls = type(self)
        with cls.lock:
            cls.now += 1
            cls.most = max(cls.most, cls.now)
        time.sleep(0.05)
        with cls.lock:
            cls.now -= 1
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def slow_server() -> Iterator[Tuple[str, type]]:
    handler = type("Slow", (_Slow,), {"lock": threading.Lock(), "now": 0, "most": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_max_in_flight_caps_requests_to_a_destination(slow_server: Tuple[str, type]) -> None:
    url, handler = slow_server
    with outbound.Client("wk", endpoint=url, flush_at=1, max_in_flight=4,
                         proxy_from_env=False) as client:
        # 200 messages of 30 KB: about 12 full requests of 500,000 bytes (small messages
        # would all join one request while a young one is out).
        big = "x" * 30_000
        for i in range(200):
            client.identify(user_id=f"u{i}", traits={"big": big})
        assert client.flush(timeout=30)
    assert handler.most == 4  # type: ignore[attr-defined]


def test_max_in_flight_must_be_positive() -> None:
    with pytest.raises(outbound.ConfigError, match="max_in_flight: must be at least 1"):
        outbound.Client("wk", max_in_flight=0)


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_close_ends_50k_pending_messages_each_exactly_once() -> None:
    dead = _dead_url()
    seen: List[str] = []
    client = outbound.Client("wk", endpoint=dead, webhooks=[f"{dead}/hook"],
                             max_queue_size=60_000, proxy_from_env=False,
                             on_outcome=lambda mid, kind, detail: seen.append(mid))
    ids = {client.track(user_id=f"u{i}", event="Pending") for i in range(50_000)}
    assert None not in ids and len(ids) == 50_000
    assert client.close(timeout=1) is False
    s = client.stats
    assert s["accepted"] == 50_000
    assert s["delivered"] + s["failed"] + s["dropped"] == 50_000, s
    assert (s["queued"], s["in_flight"]) == (0, 0), s
    assert len(seen) == 50_000 and set(seen) == ids
    time.sleep(0.2)
    assert len(seen) == 50_000


def test_queue_full_wait_waits_for_room_without_holding_the_gil(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    # The outcome callback needs the GIL to free the slot: a call that held it while waiting
    # would wait the whole 10 s and then return None.
    receiver.delay["/v1/batch"] = 0.3
    seen: List[str] = []
    client = make_client(webhooks=[], max_queue_size=1, queue_full_wait=10.0,
                         on_outcome=lambda mid, kind, detail: seen.append(kind))
    assert client.track(user_id="u", event="First") is not None
    start = time.monotonic()
    assert client.track(user_id="u", event="Second") is not None
    waited = time.monotonic() - start
    assert 0.2 <= waited < 5.0, waited
    assert client.flush(timeout=10)
    assert seen == ["delivered", "delivered"]
    assert client.stats["queue_full"] == 0


def test_an_audience_sync_waits_for_room_through_queue_full_wait(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    # A sync runs without the GIL: its calls wait for room through the same hook, which
    # takes the GIL only to let it go for the wait, and every change arrives.
    receiver.delay["/v1/batch"] = 0.05
    seen: List[str] = []
    client = make_client(webhooks=[], max_queue_size=1, queue_full_wait=10.0,
                         on_outcome=lambda mid, kind, detail: seen.append(kind))
    sync = outbound.AudienceSync(client)
    assert sync.sync_audience("VIP", [f"u{i}" for i in range(5)]) == (5, 0, 0)
    assert client.flush(timeout=10)
    assert seen == ["delivered"] * 5
    assert client.stats["queue_full"] == 0
    ids = sorted(m["userId"] for b in receiver.batches() for m in b["batch"])
    assert ids == [f"u{i}" for i in range(5)]


def test_queue_full_wait_gives_up_after_its_time(make_client: Callable[..., outbound.Client],
                                                 receiver: Receiver) -> None:
    receiver.delay["/v1/batch"] = 2.0
    client = make_client(webhooks=[], max_queue_size=1, queue_full_wait=0.2)
    assert client.track(user_id="u", event="First") is not None
    start = time.monotonic()
    assert client.track(user_id="u", event="Second") is None
    assert 0.15 <= time.monotonic() - start < 1.5
    assert client.stats["queue_full"] == 1
    with pytest.raises(outbound.ConfigError, match="queue_full_wait"):
        outbound.Client("wk", queue_full_wait=3601.0)
