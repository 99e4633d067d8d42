"""Real HTTP(S) receivers on 127.0.0.1 for the tests: a Segment-style `/v1/batch` endpoint
and webhook paths in one ThreadingHTTPServer, run in a thread of the test process."""

from __future__ import annotations

import gzip
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Optional, Tuple

WRITE_KEY = "wk_live_SECRET_write_key_123"
SECRET = "shh_shared_SECRET_456"


@dataclass
class Request:
    path: str
    headers: Dict[str, str]
    body: bytes  # as received (gzip undone; `raw_body` keeps the bytes on the wire)
    raw_body: bytes
    method: str = "POST"

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A Segment-style `/v1/batch` endpoint and any number of webhook paths in one server."""

    server: ThreadingHTTPServer
    scheme: str = "http"
    requests: List[Request] = field(default_factory=list)
    status: Dict[str, int] = field(default_factory=dict)  # path -> status (default 200)
    delay: Dict[str, float] = field(default_factory=dict)  # path -> seconds before answering
    fail_first: Dict[str, int] = field(default_factory=dict)  # path -> 500s before its status
    script: Dict[str, List[int]] = field(default_factory=dict)  # path -> next statuses, in turn
    answer: Dict[str, bytes] = field(default_factory=dict)  # path -> body of its answers
    # path -> (header, value) a request must carry, else 401
    require: Dict[str, Tuple[str, str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{self.scheme}://{host}:{port}"

    def hook(self, name: str = "hook") -> str:
        return f"{self.url}/{name}"

    def record(self, req: Request) -> None:
        with self.lock:
            self.requests.append(req)

    def at(self, path: str) -> List[Request]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def batches(self) -> List[Dict[str, Any]]:
        return [r.json for r in self.at("/v1/batch")]

    def batch_messages(self) -> List[Dict[str, Any]]:
        return [m for b in self.batches() for m in b["batch"]]

    def wait_for(self, check: Callable[["Receiver"], bool], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while not check(self):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True


def _handler(receiver_ref: List[Receiver]) -> type:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            rec = receiver_ref[0]
            raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            body = gzip.decompress(raw) if self.headers.get("Content-Encoding") == "gzip" else raw
            headers = {k.lower(): v for k, v in self.headers.items()}
            rec.record(Request(self.path, headers, body, raw, self.command))
            time.sleep(rec.delay.get(self.path, 0.0))
            with rec.lock:
                failing = rec.fail_first.get(self.path, 0)
                if failing:
                    rec.fail_first[self.path] = failing - 1
                scripted = rec.script.get(self.path)
                status = scripted.pop(0) if scripted else rec.status.get(self.path, 200)
            status = 500 if failing else status
            need = rec.require.get(self.path)
            if need is not None and headers.get(need[0].lower()) != need[1]:
                status = 401
            payload = rec.answer.get(self.path, b'{"success":true}')
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        # Subscriptions may PUT or PATCH: recorded and answered alike.
        do_PUT = do_PATCH = do_POST  # noqa: N815

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def start_receiver(ssl_context: Optional[ssl.SSLContext] = None) -> Receiver:
    ref: List[Receiver] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(ref))
    server.daemon_threads = True
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
    rec = Receiver(server, scheme="https" if ssl_context else "http")
    ref.append(rec)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return rec
