"""What dead letters cost, one sitting (run by scripts/dead-letters-bench.sh): the release
relay with dead letters on (its default) against the same binary with `dead_letters = false`,
paired and alternated (on, off, on, off, ...), in two of bench.py's cases:

  accept   /v1/batch, 100 events a request, 32 connections, to a forwarding source
           (flush_at 100): events acknowledged per second
  tenants  --tenants sources × 5 webhook URLs answering after 100 ms, --tenant-rate events/s
           offered: deliveries per second to the last delivery, peak RSS

and then the list: a source whose webhook answers 404 is given --dead events, which all
become dead letters; `GET /admin/sources/{name}/dead-letters` is timed (first page of 100
and of 1,000, a page 1,000 deep through the cursor, a time window), --samples each.

Prints a table: each pair's figures with the load average at its start, the median of the
on/off ratios, and the list's p50/p99/max. Exits non-zero when a case breaks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import Relay, Served, config, fmt, load, loadavg, wait_unique  # noqa: E402

SECRET = "bench-secret"
TOKEN = "bench-admin"


def accept(a: argparse.Namespace, dead: bool, run: int) -> Tuple[float, float, str]:
    sink = Served(a.tool_bin, "sink")
    src = (f'[[sources]]\nname = "fwd"\nwrite_keys = ["wk_fwd"]\nflush_at = 100\n'
           f'max_queue_size = 200000\ndead_letters = {str(dead).lower()}\n'
           f'[sources.forward]\nendpoint = "{sink.url}"\nwrite_key = "fwd"\n')
    relay = Relay(a.relay_bin, a.workdir, f"accept-{dead}-{run}", config(a.workdir, src))
    la = loadavg()
    r = load(a.tool_bin, relay.url, "-c", "32", "-batch", "100", "-d", str(a.seconds), "-key", "wk_fwd")
    st = wait_unique(sink, r["events"], 120)
    us = relay.cpu_s() * 1e6 / max(1, r["events"])
    relay.stop()
    sink.stop()
    if st["unique"] < r["events"] or r["events"] == 0:
        raise RuntimeError(f"accept: {st['unique']} of {r['events']} delivered")
    return r["events_per_s"], us, la


def tenants(a: argparse.Namespace, dead: bool, run: int) -> Tuple[float, float, float, str]:
    sink = Served(a.tool_bin, "sink", "-delay", "100ms")
    srcs = []
    for i in range(a.tenants):
        hooks = "".join(f'[[sources.webhooks]]\nurl = "{sink.url}/hook/t{i}-{j}"\n' for j in range(5))
        srcs.append(f'[[sources]]\nname = "t{i}"\nwrite_keys = ["wk_t{i}"]\n'
                    f'shared_secret = "{SECRET}"\n{hooks}')
    toml = config(a.workdir, "\n".join(srcs), f"dead_letters = {str(dead).lower()}")
    relay = Relay(a.relay_bin, a.workdir, f"tenants-{dead}-{run}", toml)
    la = loadavg()
    r = load(a.tool_bin, relay.url, "-c", "32", "-batch", "10", "-d", str(a.tenant_seconds),
             "-rate", str(a.tenant_rate), "-key", "wk_t", "-keys", str(a.tenants))
    deadline = time.time() + 300
    while time.time() < deadline:
        st = sink.get("/_stats")
        if st["deliveries"] >= 5 * r["events"]:
            break
        time.sleep(0.5)
    rss = relay.peak_rss_mib()
    us = relay.cpu_s() * 1e6 / max(1, st["deliveries"])
    relay.stop()
    sink.stop()
    if st["deliveries"] < 5 * r["events"] or r["events"] == 0:
        raise RuntimeError(f"tenants: {st['deliveries']} of {5 * r['events']} delivered")
    total_s = (st["last_ms"] - r["start_ms"]) / 1000
    return st["deliveries"] / max(1e-3, total_s), us, rss, la


def admin(relay: Relay, path: str) -> Tuple[float, Any]:
    req = urllib.request.Request(relay.url + path, headers={"Authorization": f"Bearer {TOKEN}"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as r:
        body = r.read()
    return (time.perf_counter() - t0) * 1000, json.loads(body)


def listing(a: argparse.Namespace) -> List[List[str]]:
    sink = Served(a.tool_bin, "sink")
    # The sink answers 404 to any path but /hook/ and /v1/batch: every event is refused for good.
    src = (f'[[sources]]\nname = "dead"\nwrite_keys = ["wk_dead"]\nmax_queue_size = 200000\n'
           f'[[sources.webhooks]]\nurl = "{sink.url}/refused"\n')
    relay = Relay(a.relay_bin, a.workdir, "list", config(a.workdir, src, f'admin_token = "{TOKEN}"'))
    load(a.tool_bin, relay.url, "-c", "8", "-batch", "100", "-n", str(a.dead // 100), "-key", "wk_dead")
    deadline = time.time() + 600
    count = 0
    while time.time() < deadline:
        _, v = admin(relay, "/admin/sources/dead/dead-letters?limit=1")
        count = v["stats"]["count"]
        if count >= a.dead:
            break
        time.sleep(0.5)
    if count < a.dead:
        raise RuntimeError(f"list: only {count} of {a.dead} dead letters")
    # A cursor 1,000 deep, and a window in the middle.
    _, first = admin(relay, "/admin/sources/dead/dead-letters?limit=1000")
    deep = urllib.parse.quote(first["next"])
    mid = first["dead_letters"][500]["failed_at"]
    cases = [("first page of 100", "/admin/sources/dead/dead-letters"),
             ("first page of 1,000", "/admin/sources/dead/dead-letters?limit=1000"),
             ("page of 1,000 after a cursor", f"/admin/sources/dead/dead-letters?limit=1000&cursor={deep}"),
             ("1,000 until a time", "/admin/sources/dead/dead-letters?limit=1000&until="
              + urllib.parse.quote(mid))]
    rows = []
    for name, path in cases:
        la = loadavg()
        ms = sorted(admin(relay, path)[0] for _ in range(a.samples))
        p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
        rows.append([f"list {fmt(count)} dead letters: {name}",
                     f"p50 {statistics.median(ms):.1f} ms, p99 {p99:.1f} ms, max {ms[-1]:.1f} ms "
                     f"({a.samples} requests)",
                     "< 50 ms", "met" if p99 < 50 else "MISSED", la])
    relay.stop()
    sink.stop()
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--tool-bin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--tenants", type=int, default=200)
    ap.add_argument("--tenant-rate", type=float, default=5000)
    ap.add_argument("--tenant-seconds", type=float, default=20)
    ap.add_argument("--dead", type=int, default=100_000)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--cases", default="accept,tenants,list")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    cases = a.cases.split(",")
    rows: List[List[str]] = []
    # Throughput moves with whatever else the machine runs; the relay's CPU time per event
    # much less: both are compared, each as the median of the pairs' on/off ratios.
    def verdict(name: str, rates: List[float], cpus: List[float]) -> None:
        r, c = statistics.median(rates), statistics.median(cpus)
        rows.append([f"{name}: median on/off", f"rate {r:.3f}; relay CPU per event {c:.3f}",
                     "within 5 %", "met" if abs(r - 1) <= 0.05 and c <= 1.05 else "MISSED", ""])

    if "accept" in cases:
        rates, cpus = [], []
        for run in range(a.pairs):
            on, us_on, la_on = accept(a, True, run)
            off, us_off, la_off = accept(a, False, run)
            rates.append(on / off)
            cpus.append(us_on / us_off)
            rows.append([f"accept pair {run + 1}: dead letters on / off",
                         f"{fmt(on)} / {fmt(off)} ev/s acked = {on / off:.3f}; relay CPU "
                         f"{us_on:.2f} / {us_off:.2f} µs/event", "", "", f"{la_on} / {la_off}"])
        verdict("accept", rates, cpus)
    if "tenants" in cases:
        rates, cpus = [], []
        for run in range(a.pairs):
            on, us_on, rss_on, la_on = tenants(a, True, run)
            off, us_off, rss_off, la_off = tenants(a, False, run)
            rates.append(on / off)
            cpus.append(us_on / us_off)
            rows.append([f"tenants pair {run + 1} ({a.tenants} sources × 5 URLs): on / off",
                         f"{fmt(on)} / {fmt(off)} deliveries/s = {on / off:.3f}; relay CPU "
                         f"{us_on:.1f} / {us_off:.1f} µs/delivery; peak RSS {rss_on:.0f} / "
                         f"{rss_off:.0f} MiB", "", "", f"{la_on} / {la_off}"])
        verdict("tenants", rates, cpus)
    if "list" in cases:
        rows += listing(a)
    print()
    print("| case | measured | goal | | load avg (1 min) at start |")
    print("|---|---|---|---|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
