"""A receiver's outage against the relay (run by scripts/relay-outage.sh): the spool is the
buffer, not a count of events.

Two sources on one relay: `down`, whose webhook answers 503 for the outage, and `up`, whose
webhook answers at once throughout. Events go to `down` in batches of 10 at --rate events a
second for --minutes; a batch answered 429 is sent again after its Retry-After, as the SDKs
do. Single events go to `up` 20 times a second before, during and after the outage, and their
send -> receiver latency is compared. Then `down`'s webhook answers 200 again, and every
acknowledged event must arrive. RSS is sampled every 0.2 s throughout.

Prints a table; writes every figure to --json. Exits non-zero when an acknowledged event never
arrives (a loss), or when nothing was acknowledged.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import http.server
import json
import os
import shutil
import socketserver
import statistics
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import Relay  # noqa: E402


class Receiver:
    """/down answers 503 until `recover`, then 200 (recording ids); /up answers 200, recording
    when each id arrived."""

    def __init__(self) -> None:
        self.down_ok = threading.Event()
        self.delivered: set = set()
        self.arrived: Dict[str, float] = {}
        self.tries = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now = time.monotonic()
                mid = json.loads(body).get("messageId")
                status = 200
                with outer.lock:
                    if self.path == "/up":
                        outer.arrived.setdefault(mid, now)
                    else:
                        outer.tries += 1
                        if outer.down_ok.is_set():
                            outer.delivered.add(mid)
                        else:
                            status = 503
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            request_queue_size = 1024

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def recover(self) -> None:
        self.down_ok.set()


def toml(receiver: Receiver, spool: Optional[str]) -> str:
    spool_line = f'spool = "{spool}"\n' if spool else ""
    return (f'listen = "127.0.0.1:0"\ndata_dir = "data"\nallowed_networks = ["127.0.0.0/8"]\n'
            f'{spool_line}'
            f'[[sources]]\nname = "down"\nwrite_keys = ["wk_down"]\nshared_secret = "s1"\n'
            f'[[sources.webhooks]]\nurl = "{receiver.url}/down"\n'
            f'[[sources]]\nname = "up"\nwrite_keys = ["wk_up"]\nshared_secret = "s2"\n'
            f'[[sources.webhooks]]\nurl = "{receiver.url}/up"\n')


def auth(key: str) -> str:
    return "Basic " + base64.b64encode(f"{key}:".encode()).decode()


class Sender:
    """Batches of 10 to `down` at `rate` events a second; 429s sent again after Retry-After."""

    def __init__(self, host: str, port: int, rate: int, seconds: float, pad: int) -> None:
        self.acked: List[str] = []
        self.refused = 0
        self.errors = 0
        self.host, self.port, self.rate, self.seconds, self.pad = host, port, rate, seconds, pad
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        start = time.monotonic()
        n = 0
        per = 10
        pending: List[List[str]] = []
        total = int(self.rate * self.seconds)
        # Every planned event is sent (late when the machine is slower than the pace).
        while n * per < total or pending:
            due = start + n * per / self.rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            if pending:
                ids = pending.pop(0)
            else:
                ids = [f"d-{n * per + i}" for i in range(per)]
                n += 1
            body = json.dumps({"batch": [
                {"type": "track", "userId": f"u{i}", "event": "Order Completed", "messageId": m,
                 "properties": {"revenue": 12.5, "currency": "USD", "note": "x" * self.pad}}
                for i, m in enumerate(ids)]}).encode()
            try:
                c.request("POST", "/v1/batch", body, {"Authorization": auth("wk_down"),
                                                       "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
            except (OSError, http.client.HTTPException):
                self.errors += 1
                c = http.client.HTTPConnection(self.host, self.port, timeout=30)
                pending.append(ids)
                continue
            if r.status == 200:
                self.acked.extend(ids)
            else:
                self.refused += 1
                pending.append(ids)
                time.sleep(float(r.getheader("Retry-After") or 1))


class Prober:
    """Single events to `up`, 20 a second: when each was sent, by phase."""

    def __init__(self, host: str, port: int) -> None:
        self.sent: Dict[str, tuple] = {}
        self.phase = "before"
        self.stop = threading.Event()
        self.host, self.port = host, port
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        i = 0
        while not self.stop.is_set():
            mid = f"p-{i}"
            i += 1
            body = json.dumps({"userId": "p", "event": "Probe", "messageId": mid}).encode()
            t = time.monotonic()
            try:
                c.request("POST", "/v1/track", body, {"Authorization": auth("wk_up"),
                                                      "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status == 200:
                    self.sent[mid] = (t, self.phase)
            except (OSError, http.client.HTTPException):
                c = http.client.HTTPConnection(self.host, self.port, timeout=30)
            self.stop.wait(0.05)

    def latencies(self, arrived: Dict[str, float], phase: str) -> List[float]:
        return sorted((arrived[m] - t) * 1000 for m, (t, p) in self.sent.items()
                      if p == phase and m in arrived)


def pct(xs: List[float], q: float) -> float:
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--pad", type=int, default=100, help="bytes of padding an event")
    ap.add_argument("--redis", help="a redis:// URL: the fleet's spool instead of SQLite")
    ap.add_argument("--json")
    a = ap.parse_args()
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    receiver = Receiver()
    relay = Relay(a.relay_bin, a.workdir, "outage", toml(receiver, a.redis))
    host, port = relay.url[len("http://"):].rsplit(":", 1)
    peak = {"rss": 0.0}
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peak["rss"] = max(peak["rss"], relay.status().get("VmRSS", 0) / 1024)
            sampling.wait(0.2)

    threading.Thread(target=sample, daemon=True).start()
    prober = Prober(host, int(port))
    prober.thread.start()
    time.sleep(5)
    prober.phase = "outage"
    seconds = a.minutes * 60
    sender = Sender(host, int(port), a.rate, seconds, a.pad)
    t0 = time.monotonic()
    sender.thread.start()
    sender.thread.join()
    outage_s = time.monotonic() - t0
    rss_outage = peak["rss"]
    prober.phase = "after"
    receiver.recover()
    t1 = time.monotonic()
    acked = set(sender.acked)
    deadline = t1 + max(600, seconds)
    while True:
        with receiver.lock:
            missing = len(acked - receiver.delivered)
        if missing == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    drain_s = time.monotonic() - t1
    prober.stop.set()
    prober.thread.join()
    time.sleep(0.5)
    sampling.set()
    relay.stop()
    before = prober.latencies(receiver.arrived, "before")
    during = prober.latencies(receiver.arrived, "outage")
    result = {
        "spool": "redis" if a.redis else "sqlite", "rate": a.rate, "minutes": a.minutes,
        "offered": int(seconds * a.rate), "acknowledged": len(acked),
        "refused_requests": sender.refused, "errors": sender.errors,
        "outage_s": round(outage_s, 1), "tries_while_down": receiver.tries,
        "delivered_after": len(acked & receiver.delivered), "lost": missing,
        "drain_s": round(drain_s, 1), "peak_rss_mib": round(peak["rss"], 1),
        "peak_rss_outage_mib": round(rss_outage, 1),
        "up_p50_ms_before": round(pct(before, 0.5), 2), "up_p99_ms_before": round(pct(before, 0.99), 2),
        "up_p50_ms_outage": round(pct(during, 0.5), 2), "up_p99_ms_outage": round(pct(during, 0.99), 2),
        "load": open("/proc/loadavg").read().split()[0],
    }
    print(f"| spool | offered | acknowledged | 429s | lost | drained in | peak RSS | `up` p50/p99 before | during |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {result['spool']} | {result['offered']:,} at {a.rate}/s for {a.minutes:g} min "
          f"| {result['acknowledged']:,} | {sender.refused} | {missing} | {drain_s:.1f} s "
          f"| {peak['rss']:.0f} MiB | {result['up_p50_ms_before']}/{result['up_p99_ms_before']} ms "
          f"| {result['up_p50_ms_outage']}/{result['up_p99_ms_outage']} ms |")
    print(f"(load average {result['load']})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    if not acked:
        print("nothing was acknowledged", file=sys.stderr)
        return 1
    if missing:
        print(f"{missing} acknowledged events never arrived", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
