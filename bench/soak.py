"""The fault soak (run by scripts/soak.sh; see BENCHMARKS.md).

Sends N `track` calls through the installed outbound wheel to ingestion and one signed
webhook, both served by the chaos receiver (bench/chaos) on 127.0.0.1, which answers 503 to
30 % of requests, resets 10 % of connections (half of them after taking the message, so the
retry is a duplicate) and stalls 5 % past the 5 s timeout. Then it checks, and prints:

- lost: accepted ids the receiver never took, per destination (must be 0);
- outcomes: every accepted id reported exactly once to on_outcome, all delivered, within the
  deadline (180 s after the last call in the full run);
- duplicates the receiver took (a retried success: at-least-once), attempts per message
  (mean, max) per destination, the client's retries, peak RSS of this process.

Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import resource
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List

import outbound

SECRET = "soak-secret"
# With --endpoint-auth: the bearer token the webhook must carry (the receiver answers 401
# otherwise, so a request without it would never count as taken).
TOKEN = "soak-bearer-token"


class Receiver:
    def __init__(self, binary: str, args: List[str]) -> None:
        self.proc = subprocess.Popen([binary, "-secret", SECRET, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port: int = json.loads(self.proc.stdout.readline())["port"]
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", path)
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--receiver-bin", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--deadline", type=float, default=180.0,
                    help="seconds after the last call by which every message must be delivered")
    ap.add_argument("--p503", default="0.30")
    ap.add_argument("--preset", default="0.10")
    ap.add_argument("--pstall", default="0.05")
    ap.add_argument("--stall", default="6s")
    ap.add_argument("--json-out", help="also write the figures to this file")
    ap.add_argument("--endpoint-auth", action="store_true",
                    help="the webhook with a bearer token (which the receiver requires) and a "
                         "rate limit of --rate-limit requests a second")
    ap.add_argument("--rate-limit", type=int, default=1000,
                    help="with --endpoint-auth: the webhook's requests a second at most")
    ap.add_argument("--ingestion-only", action="store_true",
                    help="no webhook: every message goes to ingestion alone (the scheduler "
                         "keeps no per-message record for those)")
    a = ap.parse_args()
    dests = ("batch",) if a.ingestion_only else ("batch", "hook")

    load = open("/proc/loadavg").read().split()[:3]
    print(f"soak: {a.n:,} tracks to ingestion"
          f"{'' if a.ingestion_only else ' + 1 signed webhook'}"
          f"{f' (bearer auth, {a.rate_limit}/s)' if a.endpoint_auth else ''}; faults: 503 {a.p503}, "
          f"reset {a.preset}, stall {a.pstall} for {a.stall}; outbound {outbound.__version__}; "
          f"load average {' '.join(load)}", flush=True)
    rx = Receiver(a.receiver_bin, ["-p503", a.p503, "-preset", a.preset, "-pstall", a.pstall,
                                   "-stall", a.stall,
                                   *(["-authorization", f"Bearer {TOKEN}"] if a.endpoint_auth
                                     else [])])
    reported: List[str] = []
    kinds: "collections.Counter[str]" = collections.Counter()
    details: "collections.Counter[str]" = collections.Counter()
    all_reported = threading.Event()
    accepted_box = [a.n]

    def on_outcome(message_id: str, kind: str, detail: str) -> None:
        reported.append(message_id)
        kinds[kind] += 1
        if kind != "delivered":
            details[detail[:80]] += 1
        if len(reported) >= accepted_box[0]:
            all_reported.set()

    hook = (outbound.Webhook(f"{rx.url}/hook", auth={"type": "bearer", "token": TOKEN},
                             rate_limit={"per_second": a.rate_limit})
            if a.endpoint_auth else outbound.Webhook(f"{rx.url}/hook"))
    hooks = {} if a.ingestion_only else dict(webhooks=[hook], shared_secret=SECRET)
    client = outbound.Client(
        "wk_soak",
        endpoint=rx.url,
        max_queue_size=a.n,
        on_outcome=on_outcome,
        **hooks,
    )
    ids: List[str] = []
    refused = 0
    t0 = time.monotonic()
    for i in range(a.n):
        mid = client.track(user_id=f"user-{i % 5000}", event="Soak Tested",
                           properties={"i": i, "plan": "pro"})
        if mid is None:
            refused += 1
        else:
            ids.append(mid)
    t_last = time.monotonic()
    accepted_box[0] = len(ids)
    if len(reported) >= len(ids):
        all_reported.set()
    print(f"soak: {len(ids):,} calls accepted in {t_last - t0:.2f} s "
          f"({(t_last - t0) / max(1, a.n) * 1e6:.1f} µs/call), {refused} refused", flush=True)

    deadline = t_last + a.deadline
    while not all_reported.wait(10):
        if time.monotonic() > deadline:
            break
        s = client.stats
        print(f"soak: +{time.monotonic() - t_last:5.0f} s  delivered {s['delivered']:,}  "
              f"queued {s['queued']:,}  in flight {s['in_flight']:,}  retries {s['retries']:,}",
              flush=True)
    t_done = time.monotonic()
    within = all_reported.is_set() and t_done <= deadline
    client.close(timeout=5)
    stats = client.stats
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rstats = rx.get("/_stats")
    taken = {d: set(rx.get(f"/_ids?dest={d}")) for d in dests}
    rx.stop()

    accepted = set(ids)
    lost = {d: len(accepted - taken[d]) for d in taken}
    per_id = collections.Counter(reported)
    not_once = sum(1 for i in accepted if per_id.get(i, 0) != 1)
    unknown = sum(1 for i in per_id if i not in accepted)
    sums = (stats["delivered"] + stats["failed"] + stats["dropped"] - stats["queue_full"]
            + stats["spooled"])

    rows = [
        ("messages accepted", f"{len(ids):,}"),
        ("lost at ingestion", f"{lost['batch']:,}"),
        ("lost at the webhook", f"{lost.get('hook', 0):,}"),
        ("outcomes: delivered / failed / dropped",
         f"{kinds['delivered']:,} / {kinds['failed']:,} / {kinds['dropped']:,}"),
        ("ids without exactly one outcome", f"{not_once:,}"),
        ("stats add up (accepted = outcomes)", f"{stats['accepted'] == sums}"),
        ("all delivered after the last call", f"{t_done - t_last:.1f} s"
         + ("" if within else f" (NOT within {a.deadline:.0f} s)")),
        ("duplicates taken: ingestion / webhook",
         f"{rstats['batch']['duplicates']:,} / {rstats['hook']['duplicates']:,}"),
        ("attempts per message, ingestion: mean / max",
         f"{rstats['batch']['attempts_mean']:.2f} / {rstats['batch']['attempts_max']}"),
        ("attempts per message, webhook: mean / max",
         f"{rstats['hook']['attempts_mean']:.2f} / {rstats['hook']['attempts_max']}"),
        ("requests: ingestion / webhook",
         f"{rstats['batch']['requests']:,} / {rstats['hook']['requests']:,}"),
        ("client retries", f"{stats['retries']:,}"),
        ("bad signatures / bad bodies / bad auth",
         f"{rstats['bad_signatures']} / {rstats['bad_bodies']} / {rstats.get('bad_auth', 0)}"),
        ("peak RSS of the sending process", f"{rss_mib:.0f} MiB"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if details:
        print("  not delivered, by detail:", dict(details.most_common(5)))

    failures = []
    if any(lost.values()):
        failures.append(f"lost messages: {lost}")
    if not_once or unknown:
        failures.append(f"{not_once} ids without exactly one outcome, {unknown} unknown ids")
    if stats["accepted"] != sums:
        failures.append(f"stats do not add up: {stats}")
    if not within or kinds["delivered"] != len(ids):
        failures.append(f"not all delivered within {a.deadline:.0f} s: {dict(kinds)}")
    if rstats["bad_signatures"] or rstats["bad_bodies"] or rstats.get("bad_auth"):
        failures.append("bad signatures, bodies or authorization at the receiver")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"n": a.n, "endpoint_auth": a.endpoint_auth,
                       "rate_limit": a.rate_limit if a.endpoint_auth else None,
                       "accepted": len(ids), "lost": lost, "outcomes": dict(kinds),
                       "not_once": not_once, "seconds_after_last_call": round(t_done - t_last, 1),
                       "call_seconds": round(t_last - t0, 2), "peak_rss_mib": round(rss_mib),
                       "receiver": rstats, "stats": stats, "load": load,
                       "failures": failures}, f, indent=1)
    print()
    if failures:
        for f in failures:
            print(f"soak: FAILED: {f}")
        return 1
    print(f"soak: OK: {len(ids):,} messages, 0 lost, each exactly one outcome, all delivered "
          f"{t_done - t_last:.1f} s after the last call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
