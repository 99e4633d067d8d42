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
  fsync      a 4 KiB write and its fsync in the relay's data_dir, median of 200 (ms), taken
             just before the sources are made: a create is one SQLite commit, one fsync, so
             one client makes at most about 1000/fsync sources a second on this disk
  stop       seconds from SIGTERM until the relay with N sources has exited (killed after
             STOP_WAIT: its sources are in its store, so the restart finds them all)
  restart    seconds from start until the relay answers /readyz with N sources, and its RSS
  page       GET /admin/sources?limit=50 (first page; after the middle name), median of 50 (ms)
  search     GET /admin/sources?q=... matching one source, median of 50 (ms); search_first,
             the same right after a PUT (the first search of a changed set), median of 5

With --redis, the relay's spool and its admin API's store are on a redis-server started here on
127.0.0.1 (AOF, appendfsync everysec, as a fleet runs it); its RSS is shown besides.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import List, Tuple

ADMIN = "adm-cp"
STOP_WAIT = 300.0


def fsync_ms(directory: str, n: int = 200) -> float:
    """The median time of a 4 KiB write and its fsync in `directory`."""
    path = os.path.join(directory, "fsync-probe")
    took = []
    with open(path, "wb") as f:
        for _ in range(n):
            t0 = time.perf_counter()
            f.write(b"x" * 4096)
            f.flush()
            os.fsync(f.fileno())
            took.append((time.perf_counter() - t0) * 1000)
    os.unlink(path)
    return statistics.median(took)


def stop(proc: subprocess.Popen) -> float:
    """SIGTERM, and the seconds until it exited (SIGKILL after STOP_WAIT)."""
    t0 = time.monotonic()
    proc.terminate()
    try:
        proc.wait(STOP_WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(60)
    return time.monotonic() - t0


def start_redis(work: str) -> Tuple[subprocess.Popen, int]:
    """A redis-server on a free port of 127.0.0.1, its files in `work`."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--dir", work, "--appendonly", "yes", "--appendfsync", "everysec",
                             "--save", ""], stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def start(binary: str, work: str,
          redis: int = 0) -> Tuple[subprocess.Popen, Tuple[str, int], float]:
    cfg = os.path.join(work, "relay.toml")
    with open(cfg, "w") as f:
        f.write(f'listen = "127.0.0.1:0"\ndata_dir = "data"\nadmin_token = "{ADMIN}"\n')
        if redis:
            f.write(f'spool = "redis://127.0.0.1:{redis}"\n')
    log = open(os.path.join(work, "relay.log"), "ab")
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "--config", cfg], stdout=subprocess.PIPE, stderr=log,
                            stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    host, port = proc.stdout.readline().decode().strip().rsplit(":", 1)
    return proc, (host, int(port)), t0


def rss_mib(proc: subprocess.Popen) -> float:
    return rss_of(proc.pid)


def rss_of(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
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
    ap.add_argument("--redis", action="store_true",
                    help="the spool and the admin API's store on a redis-server started here")
    args = ap.parse_args()
    n = args.sources
    work = tempfile.mkdtemp(prefix="control-plane-")
    out: dict = {"sources": n, "store": "redis" if args.redis else "sqlite"}
    redis = None
    proc = None
    port = 0
    try:
        if args.redis:
            redis, port = start_redis(work)
        proc, addr, _ = start(args.relay_bin, work, port)
        c = Client(addr)
        timed(c, "PUT", "/admin/sources/s000000", source(0))
        out["put@1_ms"] = statistics.median(
            timed(c, "PUT", "/admin/sources/s000000", source(0)) for _ in range(200))
        out["fsync_ms"] = round(fsync_ms(os.path.join(work, "data")), 3)
        rates: List[float] = []
        tenth = max(1, (n - 1) // 10)
        t0 = time.monotonic()
        for i in range(1, n):
            timed(c, "PUT", f"/admin/sources/s{i:06}", source(i))
            if i % tenth == 0:
                now = time.monotonic()
                rates.append(tenth / (now - t0))
                print(f"{i} made, {rates[-1]:.0f}/s", file=sys.stderr, flush=True)
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
        first = []
        for _ in range(5):
            timed(c, "PUT", "/admin/sources/s000000", source(0))
            first.append(timed(c, "GET", f"/admin/sources?q={mid}"))
        out["search_first_ms"] = statistics.median(first)
        out["rss_mib"] = round(rss_mib(proc), 1)
        out["stop_s"] = round(stop(proc), 1)
        proc, addr, t0 = start(args.relay_bin, work, port)
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
        # A scrape with every source (the default metrics settings): its size and series.
        status, body = c.call("GET", "/metrics")
        assert status == 200, status
        out["metrics_bytes"] = len(body)
        out["metrics_series"] = sum(1 for line in body.splitlines()
                                    if line and not line.startswith(b"#"))
        if redis is not None:
            out["redis_rss_mib"] = round(rss_of(redis.pid), 1)
        stop(proc)
    except BaseException:
        print(f"figures so far: {json.dumps(out)}", file=sys.stderr)
        raise
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(60)
        if redis is not None:
            redis.terminate()
            redis.wait(60)
        shutil.rmtree(work, ignore_errors=True)
    print(f"sources                         {n}  (store: {out['store']})")
    print(f"fsync in data_dir (ms, median)  {out['fsync_ms']}")
    print(f"creating, per tenth (/s)        {out['create_per_s']}")
    print(f"PUT with 1 source (ms, median)  {out['put@1_ms']:.2f}")
    print(f"PUT with {n} sources (ms)      {out['put@N_ms']:.2f}")
    print(f"PUT of 10,000 write keys (ms)   {out['put_10000_keys_ms']:.1f}")
    print(f"first page of 50 (ms)           {out['page_ms']:.2f}")
    print(f"page after the middle (ms)      {out['page_after_ms']:.2f}")
    print(f"search for one (ms)             {out['search_ms']:.2f}")
    print(f"  the first after a change (ms) {out['search_first_ms']:.2f}")
    print(f"RSS with them (MiB)             {out['rss_mib']}")
    print(f"stop with them (s)              {out['stop_s']}"
          f"{'  (killed)' if out['stop_s'] >= STOP_WAIT else ''}")
    print(f"restart until ready (s)         {out['restart_s']}  RSS {out['restart_rss_mib']} MiB")
    print(f"sources after the restart       {out['after_restart_matched']}")
    print(f"/metrics after the restart      {out['metrics_bytes']:,} bytes, "
          f"{out['metrics_series']:,} series")
    if redis is not None:
        print(f"redis-server RSS (MiB)          {out['redis_rss_mib']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    ok = out["after_restart_matched"] == n + 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
