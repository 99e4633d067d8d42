"""The control plane at many sources, run by scripts/relay-control-plane.sh: what a PUT costs
with 1 source and with N, how fast one client creates N sources through the admin API, how
long the relay takes to start with them (API-made, persisted) and its RSS then, and how long
a page of the sources list and a search take.

One client on one keep-alive connection (http.client), one request at a time. Each source has
one write key and one webhook (to a port nothing listens on: nothing is sent, since no event
arrives). Figures:

  create     sources made per second, per tenth of the run (the last tenth is the rate at N)
  put@1      median of 200 PUTs replacing one source while 1 source exists (ms)
  put@N      the same with N sources
  put_keys   a PUT of one source holding 10,000 write keys, with N sources (ms)
  restart    seconds from start until the relay answers /readyz with N sources, and its RSS
  page       GET /admin/sources?limit=50 (first page; after the middle name), median of 50 (ms)
  search     GET /admin/sources?q=... matching one source, median of 50 (ms)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List, Tuple

ADMIN = "adm-cp"


def start(binary: str, work: str) -> Tuple[subprocess.Popen, Tuple[str, int], float]:
    cfg = os.path.join(work, "relay.toml")
    with open(cfg, "w") as f:
        f.write(f'listen = "127.0.0.1:0"\ndata_dir = "data"\nadmin_token = "{ADMIN}"\n')
    log = open(os.path.join(work, "relay.log"), "ab")
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "--config", cfg], stdout=subprocess.PIPE, stderr=log,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    host, port = proc.stdout.readline().decode().strip().rsplit(":", 1)
    return proc, (host, int(port)), t0


def rss_mib(proc: subprocess.Popen) -> float:
    for line in open(f"/proc/{proc.pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Client:
    def __init__(self, addr: Tuple[str, int]) -> None:
        self.conn = http.client.HTTPConnection(*addr, timeout=120)

    def call(self, method: str, path: str, body: object = None) -> Tuple[int, bytes]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {ADMIN}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        return r.status, r.read()


def source(i: int, keys: int = 1) -> dict:
    return {"write_keys": [f"wk_{i:06}_{k}" for k in range(keys)],
            "webhooks": [{"url": f"https://hooks.example.com/in/{i}"}]}


def timed(c: Client, method: str, path: str, body: object = None) -> float:
    t0 = time.perf_counter()
    status, answer = c.call(method, path, body)
    took = (time.perf_counter() - t0) * 1000
    assert status in (200, 201), (method, path, status, answer[:300])
    return took


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--sources", type=int, default=100_000)
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    n = args.sources
    work = tempfile.mkdtemp(prefix="control-plane-")
    out = {"sources": n}
    try:
        proc, addr, _ = start(args.relay_bin, work)
        c = Client(addr)
        timed(c, "PUT", "/admin/sources/s000000", source(0))
        out["put@1_ms"] = statistics.median(
            timed(c, "PUT", "/admin/sources/s000000", source(0)) for _ in range(200))
        rates: List[float] = []
        tenth = max(1, (n - 1) // 10)
        t0 = time.monotonic()
        for i in range(1, n):
            timed(c, "PUT", f"/admin/sources/s{i:06}", source(i))
            if i % tenth == 0:
                now = time.monotonic()
                rates.append(tenth / (now - t0))
                t0 = now
        out["create_per_s"] = [round(r) for r in rates]
        out["put@N_ms"] = statistics.median(
            timed(c, "PUT", "/admin/sources/s000000", source(0)) for _ in range(200))
        out["put_10000_keys_ms"] = timed(c, "PUT", "/admin/sources/keys", source(n + 1, 10_000))
        mid = f"s{n // 2:06}"
        out["page_ms"] = statistics.median(
            timed(c, "GET", "/admin/sources?limit=50") for _ in range(50))
        out["page_after_ms"] = statistics.median(
            timed(c, "GET", f"/admin/sources?limit=50&after={mid}") for _ in range(50))
        out["search_ms"] = statistics.median(
            timed(c, "GET", f"/admin/sources?q={mid}") for _ in range(50))
        out["rss_mib"] = round(rss_mib(proc), 1)
        proc.terminate()
        proc.wait(60)
        proc, addr, t0 = start(args.relay_bin, work)
        c = Client(addr)
        while True:
            try:
                status, _ = c.call("GET", "/readyz")
                if status == 200:
                    break
            except (ConnectionError, http.client.HTTPException):
                c = Client(addr)
            time.sleep(0.05)
        out["restart_s"] = round(time.monotonic() - t0, 2)
        out["restart_rss_mib"] = round(rss_mib(proc), 1)
        status, body = c.call("GET", "/admin/sources?limit=1")
        out["after_restart_matched"] = json.loads(body)["matched"]
        proc.terminate()
        proc.wait(60)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"sources                         {n}")
    print(f"creating, per tenth (/s)        {out['create_per_s']}")
    print(f"PUT with 1 source (ms, median)  {out['put@1_ms']:.2f}")
    print(f"PUT with {n} sources (ms)      {out['put@N_ms']:.2f}")
    print(f"PUT of 10,000 write keys (ms)   {out['put_10000_keys_ms']:.1f}")
    print(f"first page of 50 (ms)           {out['page_ms']:.2f}")
    print(f"page after the middle (ms)      {out['page_after_ms']:.2f}")
    print(f"search for one (ms)             {out['search_ms']:.2f}")
    print(f"RSS with them (MiB)             {out['rss_mib']}")
    print(f"restart until ready (s)         {out['restart_s']}  RSS {out['restart_rss_mib']} MiB")
    print(f"sources after the restart       {out['after_restart_matched']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    ok = out["after_restart_matched"] == n + 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
