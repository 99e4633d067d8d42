"""The relay's soak under faults (run by scripts/relay-soak.sh).

The release relay with two sources, each behind a faulty receiver (`relaybench sink` with the
fault soak's mix: 30 % answer 503, 10 % connection resets — half of them after taking the
message — and 5 % stalls of 6 s, past the relay's 5 s timeout):

  soak-fwd   forwards to a Segment-compatible endpoint (batched): takes --rate minus --hook-rate
  soak-hook  one signed webhook (one POST per event): takes --hook-rate (a webhook under these
             faults clears about 650 events/s: a stall holds one of the lane's 512 slots for the
             whole timeout)

Two load generators (/v1/batch, 100 events a request, 16 connections each, paced) run for
--minutes. Every minute: acknowledged so far, delivered so far, the relay's RSS and threads,
the load average. Then the load stops and the relay is given --drain seconds to deliver; every
acknowledged messageId must have reached its receiver (lost must be 0), and on runs of 10
minutes or more RSS must be flat: the second half's highest within 15 % of the first half's.
Exits non-zero on a loss, on RSS that is not flat, or when a load generator fails outright.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(__file__))
from bench import Relay, Served, config, loadavg  # noqa: E402

SECRET = "soak-secret"
FAULTS = ["-p503", "0.30", "-preset", "0.10", "-pstall", "0.05", "-stall", "6s"]


def lost(acked_file: str, sink: Served, per: int) -> Dict[str, int]:
    acked = open(acked_file, "rb").read() if os.path.exists(acked_file) else b""
    with urllib.request.urlopen(sink.url + "/_bitmap", timeout=120) as r:
        got = r.read()
    full = (1 << per) - 1
    n_acked = n_lost = 0
    for byte_i, byte in enumerate(acked):
        if not byte:
            continue
        for bit in range(8):
            if byte >> bit & 1:
                k = byte_i * 8 + bit
                b = k * per
                chunk = got[b // 8:(b + per) // 8 + 1]
                have = (int.from_bytes(chunk, "little") >> (b % 8)) & full
                n_acked += per
                if have != full:
                    n_lost += per - bin(have).count("1")
    return {"acked": n_acked, "lost": n_lost}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--tool-bin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--rate", type=float, required=True, help="events/s in all")
    ap.add_argument("--hook-rate", type=float, default=500)
    ap.add_argument("--drain", type=float, default=300)
    ap.add_argument("--tick", type=float, default=60)
    ap.add_argument("--json-out")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    fwd_sink = Served(a.tool_bin, "sink", *FAULTS, "-seed", "1")
    hook_sink = Served(a.tool_bin, "sink", *FAULTS, "-seed", "2")
    srcs = (f'[[sources]]\nname = "soak-fwd"\nwrite_keys = ["wk_fwd"]\nflush_at = 100\n'
            f'max_queue_size = 1000000\n[sources.forward]\nendpoint = "{fwd_sink.url}"\n'
            f'write_key = "fwd"\n\n'
            f'[[sources]]\nname = "soak-hook"\nwrite_keys = ["wk_hook"]\n'
            f'shared_secret = "{SECRET}"\nmax_queue_size = 1000000\n'
            f'[[sources.webhooks]]\nurl = "{hook_sink.url}/hook/soak"\n')
    relay = Relay(a.relay_bin, a.workdir, "soak", config(a.workdir, srcs))
    secs = str(a.minutes * 60)
    print(f"soak: {a.minutes:g} min at {a.rate:,.0f} events/s ({a.hook_rate:,.0f} to the webhook "
          f"source), faults 30 % 503 / 10 % resets / 5 % stalls of 6 s; load average {loadavg()}",
          flush=True)
    gens = {}
    progress: Dict[str, Dict[str, Any]] = {}
    for name, key, rate in (("fwd", "wk_fwd", a.rate - a.hook_rate), ("hook", "wk_hook", a.hook_rate)):
        acked = os.path.join(a.workdir, f"acked-{name}.bin")
        p = subprocess.Popen([a.tool_bin, "load", "-url", relay.url, "-c", "16", "-batch", "100",
                              "-d", secs, "-rate", str(rate), "-key", key, "-prefix", name,
                              "-acked", acked, "-progress", str(a.tick / 6)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        gens[name] = (p, acked)
        progress[name] = {"events": 0, "failed": 0}

        def follow(name: str = name, p: subprocess.Popen = p) -> None:  # type: ignore[type-arg]
            assert p.stderr is not None
            for line in p.stderr:
                try:
                    progress[name] = json.loads(line)
                except ValueError:
                    pass
        threading.Thread(target=follow, daemon=True).start()
    t0 = time.time()
    ticks: List[Dict[str, Any]] = []
    print("| minute | acknowledged | non-200 | delivered fwd / hook | RSS MiB | threads | load avg |")
    print("|---:|---:|---:|---:|---:|---:|---:|", flush=True)
    while any(p.poll() is None for p, _ in gens.values()):
        time.sleep(min(a.tick, 1.0))
        if time.time() - t0 < a.tick * (len(ticks) + 1):
            continue
        s = relay.status()
        f, h = fwd_sink.get("/_stats"), hook_sink.get("/_stats")
        acked = sum(p["events"] for p in progress.values())
        failed = sum(p["failed"] for p in progress.values())
        tick = {"minute": round((time.time() - t0) / 60, 1), "acked": acked, "failed": failed,
                "delivered_fwd": f["unique"], "delivered_hook": h["unique"],
                "rss_mib": s.get("VmRSS", 0) / 1024, "threads": s.get("Threads", 0),
                "load_avg": loadavg()}
        ticks.append(tick)
        print(f"| {tick['minute']:g} | {acked:,} | {failed:,} | {f['unique']:,} / {h['unique']:,} | "
              f"{tick['rss_mib']:.0f} | {tick['threads']} | {tick['load_avg']} |", flush=True)
    results = {}
    ok = True
    for name, (p, _) in gens.items():
        out = p.stdout.read() if p.stdout else ""
        if p.returncode != 0:
            print(f"load generator {name} failed: {out}", file=sys.stderr)
            ok = False
            results[name] = {}
        else:
            results[name] = json.loads(out)
    # Drain: until every acknowledged event is at its receiver, or --drain seconds.
    want = {n: r.get("events", 0) for n, r in results.items()}
    t_load_end = time.time()
    while time.time() - t_load_end < a.drain:
        if fwd_sink.get("/_stats")["unique"] >= want["fwd"] and \
                hook_sink.get("/_stats")["unique"] >= want["hook"]:
            break
        time.sleep(1)
    drain_s = time.time() - t_load_end
    check = {"fwd": lost(gens["fwd"][1], fwd_sink, 100), "hook": lost(gens["hook"][1], hook_sink, 100)}
    peak = relay.peak_rss_mib()
    relay.stop()
    fs, hs = fwd_sink.get("/_stats"), hook_sink.get("/_stats")
    fwd_sink.stop()
    hook_sink.stop()
    total_acked = check["fwd"]["acked"] + check["hook"]["acked"]
    total_lost = check["fwd"]["lost"] + check["hook"]["lost"]
    ok &= total_lost == 0 and total_acked > 0
    summary = {"minutes": a.minutes, "rate": a.rate, "hook_rate": a.hook_rate, "acked": total_acked,
               "lost": total_lost, "check": check, "drain_s": drain_s, "peak_rss_mib": peak,
               "rss_first_mib": ticks[0]["rss_mib"] if ticks else None,
               "rss_last_mib": ticks[-1]["rss_mib"] if ticks else None,
               "load": results, "sinks": {"fwd": fs, "hook": hs}, "ticks": ticks}
    print(f"\nacknowledged {total_acked:,} (fwd {check['fwd']['acked']:,}, hook "
          f"{check['hook']['acked']:,}); lost {total_lost:,}; drained in {drain_s:.0f} s; "
          f"ack p50/p99 fwd {results['fwd'].get('p50_ms', 0):.1f}/{results['fwd'].get('p99_ms', 0):.1f} ms; "
          f"faults fwd 503 {fs['f503']:,} resets {fs['resets']:,} stalls {fs['stalls']:,}, hook 503 "
          f"{hs['f503']:,} resets {hs['resets']:,} stalls {hs['stalls']:,}; peak RSS {peak:.0f} MiB")
    # Flat: the second half's highest RSS within 15 % of the first half's (which holds the
    # warm-up: the spools' files and caches growing to their working size). Checked on runs
    # of 10 ticks or more; a smoke run is too short to say.
    if len(ticks) >= 10:
        half = len(ticks) // 2
        first = max(t["rss_mib"] for t in ticks[:half])
        second = max(t["rss_mib"] for t in ticks[half:])
        flat = second <= first * 1.15
        summary["rss_halves_mib"] = [first, second]
        summary["rss_flat"] = flat
        print(f"RSS: highest {first:.0f} MiB in the first half, {second:.0f} MiB in the second: "
              f"{'flat' if flat else 'NOT FLAT'} (limit +15 %)")
        ok &= flat
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(summary, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
