"""What the deploy tests share: a signed webhook receiver on 127.0.0.1, Segment's Python SDK
(segment-analytics-python) as the sender with each message's acknowledgement tracked, and
podman helpers. Run with .tools/relay/venv's python (scripts/relay-env.sh installs the SDK)."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Set, Tuple

from segment.analytics.client import Client

# The SDK logs each retry of a refused or 503 request; the tests count outcomes instead.
logging.getLogger("segment").setLevel(logging.CRITICAL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SignedReceiver:
    """A webhook on 127.0.0.1: answers `status` (settable), counts a message as delivered when
    it answered 2xx to a body whose X-Signature verifies with `secret`."""

    def __init__(self, secret: str, host: str = "127.0.0.1") -> None:
        self.secret = secret.encode()
        self.status = 200
        self.lock = threading.Lock()
        self.delivered: Set[str] = set()
        self.attempts = 0
        self.bad_signatures = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                want = hmac.new(outer.secret, body, hashlib.sha1).hexdigest()
                good = hmac.compare_digest(self.headers.get("X-Signature", ""), want)
                with outer.lock:
                    outer.attempts += 1
                    status = outer.status
                    if not good:
                        outer.bad_signatures += 1
                    elif 200 <= status < 300:
                        outer.delivered.add(json.loads(body).get("messageId", ""))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = int(self.server.server_address[1])

    def wait_for(self, ids: Set[str], timeout: float) -> Set[str]:
        """Waits until every id in `ids` was delivered; returns the missing ones."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                missing = ids - self.delivered
            if not missing or time.monotonic() > deadline:
                return missing
            time.sleep(0.1)


class Sender:
    """Segment's Python SDK sending to `host`; a message counts as acknowledged when it was
    queued and the SDK never reported its batch failed (it retries 5xx and refused
    connections, so a relay restarting meanwhile is retried, not failed)."""

    def __init__(self, write_key: str, host: str, max_retries: int = 12) -> None:
        self.lock = threading.Lock()
        self.sent: List[str] = []
        self.failed: Set[str] = set()
        self.client = Client(write_key, host=host, gzip=True, on_error=self._on_error,
                             upload_interval=0.05, upload_size=50, max_retries=max_retries)

    def _on_error(self, e: Exception, batch: List[Dict[str, Any]]) -> None:
        with self.lock:
            self.failed.update(m.get("messageId", "") for m in batch)

    def send(self, n: int, tag: str, pace: float = 0.0) -> None:
        calls = ["identify", "track", "page", "screen", "group", "alias"]
        for i in range(n):
            user = f"user-{tag}-{i}"
            call = calls[i % len(calls)]
            if call == "identify":
                ok, msg = self.client.identify(user, {"plan": "pro", "i": i})
            elif call == "track":
                ok, msg = self.client.track(user, "Order Completed", {"total": i + 0.5})
            elif call == "page":
                ok, msg = self.client.page(user, name="Pricing", properties={"path": "/pricing"})
            elif call == "screen":
                ok, msg = self.client.screen(user, name="Dashboard")
            elif call == "group":
                ok, msg = self.client.group(user, "acme", {"name": "Acme"})
            else:
                ok, msg = self.client.alias(f"anon-{tag}-{i}", user)
            if ok:
                with self.lock:
                    self.sent.append(msg["messageId"])
            if pace:
                time.sleep(pace)

    def flush(self) -> None:
        self.client.flush()

    def acknowledged(self) -> Set[str]:
        with self.lock:
            return set(self.sent) - self.failed

    def close(self) -> None:
        self.client.shutdown()


def http_get(url: str, token: Optional[str] = None, timeout: float = 5.0) -> Tuple[int, str]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def http_send(method: str, url: str, body: Any, token: str, timeout: float = 10.0) -> Tuple[int, str]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method=method,
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def wait_ready(base: str, timeout: float = 30.0, path: str = "/readyz") -> None:
    deadline = time.monotonic() + timeout
    last: Tuple[int, str] = (0, "")
    while time.monotonic() < deadline:
        last = http_get(base + path, timeout=2)
        if last[0] == 200:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{base}{path} not 200 within {timeout} s: {last}")


def run(*cmd: str, check: bool = True, capture: bool = True, timeout: float = 300) -> str:
    """Runs a command; returns its stdout. A failure raises with its output."""
    p = subprocess.run(cmd, capture_output=capture, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL, env=os.environ.copy())
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p.stdout if capture else ""


def container_logs(name: str) -> str:
    """A container's output, stdout and stderr together (the relay logs to stderr)."""
    p = subprocess.run(["podman", "logs", name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    return p.stdout


def report(name: str, acked: Set[str], missing: Set[str], bad: int) -> bool:
    ok = not missing and bad == 0
    print(f"{name}: {len(acked)} acknowledged, {len(acked) - len(missing)} delivered and verified, "
          f"{len(missing)} lost, {bad} bad signatures -> {'OK' if ok else 'FAILED'}")
    return ok
