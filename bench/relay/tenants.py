"""The relay with many tenants (scripts/relay-tenants.sh): one run, a printed table.

Every case runs the release relay on 127.0.0.1 with its own data_dir (the default spool:
SQLite, acknowledgement after the commit), the load generator `relaybench load` and the
receiver `relaybench sink` (bench/relay/loadgen), all on this machine:

  idle     --idle sources × 5 webhook URLs, no traffic: seconds from the start to the first
           200 on /readyz, the CPU used idle over the next 12 s, then RSS and threads, and
           the seconds from SIGTERM to the exit
  tenants  --healthy sources × 5 URLs answering after 100 ms, plus --hanging sources whose 5
           URLs never answer (past the 5 s timeout), --rate events/s as batches of 10 over all
           the write keys for --seconds: deliveries/s reaching the healthy URLs while loading,
           peak RSS and threads, p99 from the SDK's send to the healthy URL (100 ms of it the
           receiver's)
  bare     right after the tenants case, on the same receiver with the relay stopped: a bare
           hyper client (crates/outbound-relay/examples/bare_hyper_client.rs, one thread)
           posting bodies of the relay's mean size to the same healthy URLs for as long,
           on as many connections as the relay kept open to them (the receiver's samples
           while loading), one request in flight on each: the relay's deliveries/s as a
           percentage of its requests/s, the machine's limit for this work
  wide     --wide sources × 5 URLs at 100 ms, 10 % of them hanging, the same load
  latency  single events (/v1/track) at --single-rate/s to one signed URL answering at once:
           p50/p99 from the SDK's send to the URL

Each figure is printed with the load average (1 min) at its start. Exits non-zero when a case
breaks (nothing acknowledged, an acknowledged event of a healthy source never delivered); a
goal missed is reported, not an error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from typing import Any, Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import SECRET, Relay, Served, config, fmt, load, loadavg  # noqa: E402


def sources(n: int, hang: int, base: str, tag: str) -> str:
    """`n` sources named <tag><i> with 5 URLs each; the first `hang` of them hang."""
    out: List[str] = []
    for i in range(n):
        path = "hang" if i < hang else "hook"
        hooks = "".join(f'[[sources.webhooks]]\nurl = "{base}/{path}/{tag}{i}-{j}"\n'
                        for j in range(5))
        out.append(f'[[sources]]\nname = "{tag}{i}"\nwrite_keys = ["wk_{tag}{i}"]\n'
                   f'shared_secret = "{SECRET}"\n{hooks}')
    return "\n".join(out)


def ready_after(relay: Relay, started: float, timeout: float = 120) -> float:
    """Seconds from `started` to the first 200 on /readyz."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(relay.url + "/readyz", timeout=5) as r:
                if r.status == 200:
                    return time.time() - started
        except OSError:
            pass
        time.sleep(0.01)
    raise RuntimeError("the relay never became ready")


def many(a: argparse.Namespace, n: int, hang: int, tag: str, rows: List[List[str]],
         res: Dict[str, Any], goal_rate: Optional[int], goal_mib: int, goal_threads: int,
         bare: bool = False) -> bool:
    """The tenants and wide cases: `n` sources, the first `hang` hanging, under load; with
    `bare`, the bare client after it on the same receiver. A `goal_rate` of None: no rate
    goal in the row (the tenants case's is the bare client's ratio)."""
    sink = Served(a.tool_bin, "sink", "-delay", "100ms")
    healthy = n - hang
    relay = Relay(a.relay_bin, a.workdir, tag, config(a.workdir, sources(n, hang, sink.url, "s"),
                                                      a.extra_config))
    la = loadavg()
    before = sink.get("/_stats")
    # Events spread over every write key (batches of 10): a healthy source's events reach
    # its 5 URLs, a hanging one's none.
    r = load(a.tool_bin, relay.url, "-c", "32", "-batch", "10", "-d", str(a.seconds),
             "-rate", str(a.rate), "-key", "wk_s", "-keys", str(n), "-stamp")
    mid = sink.get("/_stats")
    # Request k goes to key k mod n and the first `hang` keys hang: what the healthy URLs
    # must get is 5 deliveries per event of the other keys' acknowledged requests.
    cycles, rest = divmod(r["requests"], n)
    want = 5 * 10 * (cycles * healthy + max(0, rest - hang))
    deadline = time.time() + 120
    st = mid
    while time.time() < deadline:
        st = sink.get("/_stats")
        if st["deliveries"] >= want:
            break
        time.sleep(0.5)
    during = mid["deliveries"] / max(1e-3, r["seconds"])
    total_s = (st["last_ms"] - r["start_ms"]) / 1000
    overall = st["deliveries"] / max(1e-3, total_s)
    rss = relay.peak_rss_mib()
    threads = relay.peak_threads
    # CPU per delivery: what the relay spent (intake, spool and delivery) over what reached
    # the healthy URLs; less sensitive to a loaded machine than the rates.
    cpu_us = relay.cpu_s() * 1e6 / max(1, st["deliveries"])
    # And the receiver's, on the same 2 cores: what the machine has left for the relay.
    sink_us = st.get("cpu_s", 0) * 1e6 / max(1, st["deliveries"])
    relay.stop()
    yardstick = bare_client(a, sink, before, mid, during, overall, hang, healthy) if bare else None
    sink.stop()
    complete = st["deliveries"] >= want
    res[tag] = {"load": r, "sink": st, "during_per_s": during, "overall_per_s": overall,
                "offered_per_s": 5 * a.rate * healthy / n, "peak_rss_mib": rss,
                "peak_threads": threads, "complete": complete, "load_avg": la,
                "relay_cpu_us_per_delivery": cpu_us, "sink_cpu_us_per_delivery": sink_us}
    met = ((goal_rate is None or during >= goal_rate) and rss <= goal_mib
           and threads <= goal_threads and complete)
    goal = f"≤ {goal_mib} MiB, ≤ {goal_threads} threads"
    if goal_rate is not None:
        goal = f"≥ {fmt(goal_rate)}/s, " + goal
    rows.append([f"{tag}: {healthy} sources × 5 URLs at 100 ms + {hang} hanging, "
                 f"{fmt(a.rate)} ev/s offered (batches of 10, {fmt(n)} keys), {a.seconds} s",
                 f"{fmt(during)} deliveries/s to the healthy URLs while loading "
                 f"(offered {fmt(5 * a.rate * healthy / n)}), {fmt(overall)}/s to the last "
                 f"({fmt(st['deliveries'])}/{fmt(want)}); acked {fmt(r['events_per_s'])} ev/s, "
                 f"non-200 {r['failed']}, ack p99 {r['p99_ms']:.1f} ms; send → URL p50 "
                 f"{st['lat_p50_ms']:.0f} ms, p99 {st['lat_p99_ms']:.0f} ms; peak RSS {rss:.0f} "
                 f"MiB; threads {threads} peak; CPU per delivery: relay {cpu_us:.0f} µs, "
                 f"receiver {sink_us:.0f} µs",
                 goal, "met" if met else "MISSED", la])
    if yardstick is not None:
        res[tag]["bare"], row = yardstick
        rows.append(row)
        if not res[tag]["bare"].get("requests"):
            return False
    return r["events"] > 0 and complete


def bare_client(a: argparse.Namespace, sink: Served, before: Dict[str, Any],
                mid: Dict[str, Any], during: float, overall: float, first: int,
                healthy: int) -> Tuple[Dict[str, Any], List[str]]:
    """The bare client on `sink` (the relay stopped) with as many connections as the relay
    kept open to the healthy URLs between the `before` and `mid` readings: its figures and
    its row (the relay's `during` deliveries/s against its requests/s, the goal's ratio; and
    its `overall` rate, load and drain, which intake no longer shares with delivery at the
    end)."""
    samples = max(1, mid["samples"] - before["samples"])
    conns = (mid["conn_sum"] - before["conn_sum"]) / samples
    hanging = (mid["hang_sum"] - before["hang_sum"]) / samples
    # The connections to hanging URLs cost either side nothing while they wait: the bare
    # client matches the ones that carry deliveries.
    n = max(1, round(conns - hanging))
    size = round(mid.get("hook_bytes", 0) / max(1, mid["deliveries"]))
    la = loadavg()
    b0 = sink.get("/_stats")
    p = subprocess.run([a.bare_bin, f"{sink.url}/hook/s", str(first), str(healthy), str(n),
                        str(a.seconds), str(size)], stdout=subprocess.PIPE, text=True)
    b1 = sink.get("/_stats")
    out = json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else {}
    rps = out.get("requests_per_s", 0.0)
    pct = 100 * during / rps if rps else 0.0
    pct_overall = 100 * overall / rps if rps else 0.0
    figures = {**out, "connections": n, "relay_conns_avg": conns, "relay_hanging_avg": hanging,
               "body_bytes": size, "sink_deliveries": b1["deliveries"] - b0["deliveries"],
               "percent": pct, "percent_to_the_last": pct_overall, "load_avg": la}
    row = [f"tenants against a bare hyper client (one thread; the same receiver, "
           f"{fmt(5 * healthy)} URLs and 100 ms answers, {a.seconds} s, right after; "
           f"{fmt(n)} connections with a request in flight on each = the relay's "
           f"average open connections to the healthy URLs while loading, sampled by "
           f"the receiver: {conns:,.0f} open, {hanging:,.0f} of them held by the "
           f"hanging URLs)",
           f"relay's deliveries/s while loading **{pct:.0f} %** of the bare client's "
           f"requests/s: {fmt(during)} against {fmt(rps)}; to the last (load and drain) "
           f"{pct_overall:.0f} % ({fmt(overall)}/s); bodies of {fmt(size)} bytes as the "
           f"relay's; failed {out.get('failed', '?')}; the receiver counted "
           f"{fmt(b1['deliveries'] - b0['deliveries'])}",
           "≥ 90 %", "met" if pct >= 90 else "MISSED", la]
    return figures, row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--tool-bin", required=True)
    ap.add_argument("--bare-bin", help="bare_hyper_client: the tenants case's yardstick "
                                       "(without it, not run)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--cases", default="idle,tenants,wide,latency")
    ap.add_argument("--idle", type=int, default=10_000)
    ap.add_argument("--healthy", type=int, default=200)
    ap.add_argument("--hanging", type=int, default=20)
    ap.add_argument("--wide", type=int, default=2_000)
    ap.add_argument("--rate", type=int, default=10_000)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--single-rate", type=int, default=100)
    ap.add_argument("--single-seconds", type=int, default=20)
    ap.add_argument("--json-out")
    ap.add_argument("--extra-config", default="",
                    help="lines added to the top of the tenants and wide cases' relay.toml "
                         "(for experiments; the published figures use none)")
    a = ap.parse_args()
    cases = a.cases.split(",")
    os.makedirs(a.workdir, exist_ok=True)
    rows: List[List[str]] = []
    res: Dict[str, Any] = {"cores": os.cpu_count()}
    ok = True

    if "idle" in cases:
        sink = Served(a.tool_bin, "sink")
        la = loadavg()
        started = time.time()
        relay = Relay(a.relay_bin, a.workdir, "idle",
                      config(a.workdir, sources(a.idle, 0, sink.url, "i")))
        ready = ready_after(relay, started)
        # Past the relay's first return of free heap pages to the system (every 10 s); the
        # CPU it uses meanwhile, idle, is what 10,000 idle sources cost.
        time.sleep(2)
        cpu_before = relay.cpu_s()
        time.sleep(10)
        idle_cpu = (relay.cpu_s() - cpu_before) / 10
        s = relay.status()
        rss, threads = s.get("VmRSS", 0) / 1024, s.get("Threads", 0)
        stopping = time.time()
        relay.stop()
        stop_s = time.time() - stopping
        sink.stop()
        met = rss <= 128 and threads <= 32 and ready <= 3
        res["idle"] = {"ready_s": ready, "rss_mib": rss, "threads": threads,
                       "idle_cpu": idle_cpu, "stop_s": stop_s, "load_avg": la}
        rows.append([f"idle: {fmt(a.idle)} sources × 5 URLs",
                     f"ready in {ready:.2f} s; RSS {rss:.0f} MiB; {threads} threads; "
                     f"idle CPU {idle_cpu * 100:.1f} % of a core; SIGTERM to exit {stop_s:.1f} s",
                     "≤ 3 s, ≤ 128 MiB, ≤ 32 threads", "met" if met else "MISSED", la])

    if "tenants" in cases:
        # Its rate's goal is the bare client's row: ≥ 90 % of what the machine gets from
        # plain HTTP, not a figure of another machine's.
        ok &= many(a, a.healthy + a.hanging, a.hanging, "tenants", rows, res, None, 256, 64,
                   bare=bool(a.bare_bin))

    if "wide" in cases:
        ok &= many(a, a.wide, a.wide // 10, "wide", rows, res, 20_000, 512, 64)

    if "latency" in cases:
        sink = Served(a.tool_bin, "sink")
        src = (f'[[sources]]\nname = "one"\nwrite_keys = ["wk_one"]\n'
               f'shared_secret = "{SECRET}"\n[[sources.webhooks]]\nurl = "{sink.url}/hook/one"\n')
        relay = Relay(a.relay_bin, a.workdir, "latency", config(a.workdir, src))
        la = loadavg()
        r = load(a.tool_bin, relay.url, "-c", "4", "-batch", "0", "-d", str(a.single_seconds),
                 "-rate", str(a.single_rate), "-key", "wk_one", "-stamp")
        st = sink.get(f"/_wait?n={r['events']}&timeout=30", timeout=40)
        st = sink.get("/_stats")
        relay.stop()
        sink.stop()
        ok &= st["unique"] >= r["events"] > 0
        met = st["lat_p99_ms"] <= 5
        res["latency"] = {"load": r, "sink": st, "load_avg": la}
        rows.append([f"latency: single events at {a.single_rate}/s to one signed URL",
                     f"send → URL p50 {st['lat_p50_ms']:.2f} ms, p99 {st['lat_p99_ms']:.2f} ms "
                     f"({fmt(st['lat_n'])} events); ack p99 {r['p99_ms']:.2f} ms",
                     "p99 ≤ 5 ms", "met" if met else "MISSED", la])

    print()
    print("| case | measured | goal | | load avg (1 min) at start |")
    print("|---|---|---|---|---:|")
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    res["rows"] = rows
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(res, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
