"""What a hostile admin body costs the relay: memory and time of the worst body of each shape
sent to `PUT /admin/sources/{name}` (a source's own token, and the admin token) and to the
admin-only routes, run by scripts/relay-hostile.sh after the tracking API's cases.

A source's PUT may hold 1 MiB once inflated (gzip counts inflated, as the tracking API's
bodies do). Shapes, each as large as fits, raw and gzipped:

  unknown_key     {"webhooks":[],"x":[0,0,...]}: a key no source has, with a huge value
  admin_field     {"write_keys":[0,0,...]}: a field a source token may not change
  wrong_type      {"write_keys":[0,0,...]} with the admin token: a value of the wrong type
  many_origins    {"allowed_origins":["","",...]}: past the 10,000 entries a list may hold
  long_origins    origins of 1 KB each up to 1 MiB: a legal list of the largest bytes
  counted_origins 10,000 origins of 100 bytes: a legal list of the most entries
  headers         one webhook with headers {"a0":"v",...}: past max_webhook_headers
  deep            {"webhooks":[[[[...]]]]}: nesting
  over_limit      8 MiB of zeros gzipped to a few KB: refused while inflating (413)
  audience_bomb   the admin's audience route (64 MiB limit) with a source token: refused
                  before the body is read

For each case: status, answer time, and the relay's peak RSS growth over its idle size
(VmHWM, reset before each case through /proc/PID/clear_refs). Then the worst shape four times
at once, with /healthz asked every 50 ms meanwhile: the peak growth and the slowest /healthz.
Exits non-zero when the four at once grow the peak past --limit-mib (64 by default), or a case
is answered 5xx or not at all. Smoke mode (--smoke) is the same run on a dev build.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Dict, List, Optional, Tuple

MAX_SOURCE_BODY = 1 << 20
ADMIN = "adm-hostile"


class Relay:
    def __init__(self, binary: str, workdir: str) -> None:
        toml = f"""listen = "127.0.0.1:0"
data_dir = "data"
admin_token = "{ADMIN}"
request_timeout = 30
"""
        cfg = os.path.join(workdir, "relay.toml")
        with open(cfg, "w") as f:
            f.write(toml)
        self.log = open(os.path.join(workdir, "relay.log"), "wb")
        self.proc = subprocess.Popen([binary, "--config", cfg], stdout=subprocess.PIPE,
                                     stderr=self.log, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        host, port = self.proc.stdout.readline().decode().strip().rsplit(":", 1)
        self.addr = (host, int(port))

    def status(self, field: str) -> int:
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1])
        return 0

    def reset_peak(self) -> None:
        # 5: the peak RSS (VmHWM) starts again from the RSS now.
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def request(addr: Tuple[str, int], method: str, path: str, body: bytes,
            headers: Dict[str, str]) -> Tuple[int, bytes]:
    head = (f"{method} {path} HTTP/1.1\r\nHost: relay\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n")
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection(addr, timeout=120) as s:
        s.sendall(head.encode() + body)
        got = bytearray()
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
    status = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.1 ") else 0
    return status, bytes(got.split(b"\r\n\r\n", 1)[-1])


def fill(prefix: str, item, suffix: str, limit: int = MAX_SOURCE_BODY, most: int = 1 << 30) -> str:
    parts, size, i = [], len(prefix) + len(suffix), 0
    while i < most:
        piece = item(i)
        if size + len(piece) + 1 > limit:
            break
        parts.append(piece)
        size += len(piece) + 1
        i += 1
    return prefix + ",".join(parts) + suffix


def shapes() -> List[Tuple[str, str, str, bytes]]:
    """(shape, who, path, body)."""
    hook = '{"url":"https://hooks.example.com/in"}'
    out = [
        ("unknown_key", "token", fill('{"webhooks":[' + hook + '],"x":[', lambda i: "0", "]}")),
        ("admin_field", "token", fill('{"write_keys":[', lambda i: "0", "]}")),
        ("wrong_type", "admin", fill('{"write_keys":[', lambda i: "0", "]}")),
        ("many_origins", "token", fill('{"write_keys":["wk_acme"],"allowed_origins":[',
                                       lambda i: '""', "]}")),
        ("long_origins", "token", fill('{"write_keys":["wk_acme"],"webhooks":[' + hook
                                       + '],"allowed_origins":[',
                                       lambda i: '"https://' + "o" * 1030 + f'{i}.example"',
                                       "]}", most=10_000)),
        ("counted_origins", "token", fill('{"write_keys":["wk_acme"],"webhooks":[' + hook
                                          + '],"allowed_origins":[',
                                          lambda i: f'"https://{i:05}' + "o" * 70 + '.example"',
                                          "]}", most=10_000)),
        ("headers", "token", fill('{"write_keys":["wk_acme"],"webhooks":[{"url":'
                                  '"https://hooks.example.com/in","headers":{',
                                  lambda i: f'"h{i}":"v"', "}}]}")),
        ("deep", "admin", '{"write_keys":["wk_acme"],"webhooks":' + "[" * 100_000
         + "]" * 100_000 + "}"),
    ]
    cases = []
    for shape, who, text in out:
        body = text.encode()
        cases.append((shape, who, "raw", body))
        cases.append((shape, who, "gzip", body))
    return cases


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--limit-mib", type=float, default=64.0)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="admin-cost-")
    relay = Relay(args.relay_bin, work)
    failures: List[str] = []
    try:
        admin = {"Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json"}
        made = request(relay.addr, "PUT", "/admin/sources/acme",
                       json.dumps({"write_keys": ["wk_acme"],
                                   "webhooks": [{"url": "https://hooks.example.com/in"}]}).encode(),
                       admin)
        assert made[0] == 201, made
        status, body = request(relay.addr, "POST", "/admin/sources/acme/tokens", b"", admin)
        assert status == 201, (status, body)
        token = {"Authorization": "Bearer " + json.loads(body)["token"],
                 "Content-Type": "application/json"}
        time.sleep(0.5)
        idle = relay.status("VmRSS")
        rows = []
        worst: Optional[Tuple[str, str, str, bytes, Dict[str, str]]] = None
        worst_growth = -1
        for shape, who, enc, text in shapes():
            headers = dict(token if who == "token" else admin)
            body = text
            if enc == "gzip":
                body = gzip.compress(text, 6)
                headers["Content-Encoding"] = "gzip"
            relay.reset_peak()
            base = relay.status("VmRSS")
            t0 = time.monotonic()
            status, answer = request(relay.addr, "PUT", "/admin/sources/acme", body, headers)
            took = time.monotonic() - t0
            growth = relay.status("VmHWM") - base
            field = ""
            try:
                field = json.loads(answer).get("field") or ""
            except ValueError:
                pass
            rows.append((shape, who, enc, len(body), status, field, took, growth))
            if status == 0 or status >= 500:
                failures.append(f"{shape} {enc}: answered {status}")
            if growth > worst_growth:
                worst_growth, worst = growth, (shape, who, enc, body, headers)
        # The inflated limit: 8 MiB of zeros as a few KB of gzip, and an admin-only route.
        bomb = gzip.compress(b'{"webhooks":[],"x":[' + b"0," * (4 << 20) + b"0]}", 9)
        for shape, path in [("over_limit", "/admin/sources/acme"),
                            ("audience_bomb", "/admin/sources/acme/audiences/vip")]:
            relay.reset_peak()
            base = relay.status("VmRSS")
            t0 = time.monotonic()
            status, answer = request(relay.addr, "PUT", path, bomb,
                                     {**token, "Content-Encoding": "gzip"})
            rows.append((shape, "token", "gzip", len(bomb), status, "", time.monotonic() - t0,
                         relay.status("VmHWM") - base))
        print(f"{'shape':<14} {'who':<6} {'enc':<5} {'bytes':>9} {'status':>6} "
              f"{'field':<22} {'ms':>8} {'peak +MiB':>9}")
        for shape, who, enc, n, status, field, took, growth in rows:
            print(f"{shape:<14} {who:<6} {enc:<5} {n:>9} {status:>6} {field[:22]:<22} "
                  f"{took * 1000:>8.1f} {growth / 1024:>9.1f}")
        # The worst shape four times at once, /healthz asked meanwhile.
        assert worst is not None
        shape, who, enc, body, headers = worst
        relay.reset_peak()
        slowest = [0.0]
        done = threading.Event()

        def probe() -> None:
            while not done.is_set():
                t0 = time.monotonic()
                s, _ = request(relay.addr, "GET", "/healthz", b"", {})
                slowest[0] = max(slowest[0], time.monotonic() - t0)
                if s != 200:
                    failures.append(f"/healthz answered {s} under load")
                time.sleep(0.05)

        prober = threading.Thread(target=probe)
        prober.start()
        threads = [threading.Thread(target=request, args=(relay.addr, "PUT", "/admin/sources/acme",
                                                          body, headers)) for _ in range(4)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.monotonic() - t0
        done.set()
        prober.join()
        peak = relay.status("VmHWM") - idle
        print(f"four at once ({shape}, {who}, {enc}): {took * 1000:.0f} ms, peak "
              f"{peak / 1024:.1f} MiB over the idle {idle / 1024:.1f} MiB; slowest /healthz "
              f"meanwhile {slowest[0] * 1000:.1f} ms")
        if peak / 1024 > args.limit_mib:
            failures.append(f"four at once grew {peak / 1024:.1f} MiB (limit {args.limit_mib})")
        if relay.proc.poll() is not None:
            failures.append("the relay stopped")
    finally:
        relay.stop()
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
