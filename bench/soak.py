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

With `--subscriptions` the client also has 3 subscriptions (Segment's Webhooks (Actions)),
each its own destination at the receiver's /sub/<name> (stalls past the 10 s subscription
timeout), and every track carries `properties.bucket` = i mod 10 so that what each trigger
matches is known: `all` (`type = "track"`, PUT, the body {messageId, i}), `some`
(`properties.bucket >= 7`, 30 %, the body {messageId, user}) and `batched` (Segment's export
form, `properties.bucket < 5`, 50 %, batches of up to 100: a JSON array of {messageId,
bucket}). Then every (message, subscription it matches) must have exactly one outcome, named
by the outcome's subscription, and be delivered; no other pair has one; each subscription took
every message it matches, as mapped, and none it does not match.

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
from typing import Any, Dict, List, Optional, Tuple

import outbound

SECRET = "soak-secret"
# With --endpoint-auth: the bearer token the webhook must carry (the receiver answers 401
# otherwise, so a request without it would never count as taken).
TOKEN = "soak-bearer-token"

# --subscriptions: the client's subscriptions, in the order they are given.
SUBS = ("all", "some", "batched")
SUB_BATCH = 100


def sub_settings(url: str, rate_limit: Optional[int] = None) -> List[Dict[str, Any]]:
    """The 3 subscriptions, as dicts (the last in Segment's export form); with `rate_limit`
    (--endpoint-auth), each behind the bearer token the receiver requires, the first also
    limited to that many requests a second."""
    mid = {"@path": "$.messageId"}
    subs: List[Dict[str, Any]] = [
        {"name": "all", "trigger": 'type = "track"', "url": f"{url}/sub/all", "method": "PUT",
         "headers": {"X-Soak": "all"},
         "data": {"messageId": mid, "i": {"@path": "$.properties.i"}}},
        {"name": "some", "trigger": 'type = "track" and properties.bucket >= 7',
         "url": f"{url}/sub/some", "data": {"messageId": mid, "user": {"@path": "$.userId"}}},
        {"name": "batched", "subscribe": 'type = "track" and properties.bucket < 5',
         "mapping": {"url": f"{url}/sub/batched", "enable_batching": True,
                     "batch_size": SUB_BATCH,
                     "data": {"messageId": mid, "bucket": {"@path": "$.properties.bucket"}}}},
    ]
    if rate_limit is not None:
        for sub in subs:
            sub["auth"] = {"type": "bearer", "token": TOKEN}
        subs[0]["rate_limit"] = {"per_second": rate_limit}
    return subs


def sub_matches(name: str, i: int) -> bool:
    """Whether subscription `name`'s trigger matches track i (properties.bucket = i % 10)."""
    return {"all": True, "some": i % 10 >= 7, "batched": i % 10 < 5}[name]


def sub_body(name: str, message_id: str, i: int) -> Dict[str, Any]:
    """The body subscription `name`'s mapping makes of track i (an element, when batched)."""
    extra: Dict[str, Any] = {"all": {"i": i}, "some": {"user": f"user-{i % 5000}"},
                             "batched": {"bucket": i % 10}}[name]
    return {"messageId": message_id, **extra}


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
    ap.add_argument("--subscriptions", action="store_true",
                    help="the client also has 3 subscriptions at the receiver (one for every "
                         "track, one for 30 % by its trigger, one batching 50 % by 100)")
    ap.add_argument("--sub-stall", default="11.5s",
                    help="with --subscriptions: how long a subscription's stalled request is "
                         "held (past their 10 s timeout)")
    ap.add_argument("--ingestion-only", action="store_true",
                    help="no webhook: every message goes to ingestion alone (the scheduler "
                         "keeps no per-message record for those)")
    a = ap.parse_args()
    dests = ("batch",) if a.ingestion_only else ("batch", "hook")
    subs = SUBS if a.subscriptions else ()

    load = open("/proc/loadavg").read().split()[:3]
    print(f"soak: {a.n:,} tracks to ingestion"
          f"{'' if a.ingestion_only else ' + 1 signed webhook'}"
          f"{f' (bearer auth, {a.rate_limit}/s)' if a.endpoint_auth else ''}"
          f"{' + 3 subscriptions: all, some (30 %), batched (50 %, by 100)' if subs else ''}"
          f"; faults: 503 {a.p503}, "
          f"reset {a.preset}, stall {a.pstall} for {a.stall}; outbound {outbound.__version__}; "
          f"load average {' '.join(load)}", flush=True)
    rx = Receiver(a.receiver_bin, ["-p503", a.p503, "-preset", a.preset, "-pstall", a.pstall,
                                   "-stall", a.stall, "-sub-stall", a.sub_stall,
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

    # --subscriptions: each outcome keyed by (message, subscription); None is the message's own.
    pairs: "collections.Counter[Tuple[str, Optional[str]]]" = collections.Counter()
    pair_kinds: "collections.Counter[Tuple[Optional[str], str]]" = collections.Counter()
    pairs_lock = threading.Lock()
    # Until the calls are done, more than there can be.
    expected_box = [a.n * (1 + len(SUBS))]

    def on_sub_outcome(message_id: str, kind: str, detail: str,
                       subscription: Optional[str]) -> None:
        with pairs_lock:
            pairs[(message_id, subscription)] += 1
            pair_kinds[(subscription, kind)] += 1
            if subscription is None:
                reported.append(message_id)
                kinds[kind] += 1
            if kind != "delivered":
                details[f"{subscription or 'own'}: {detail[:80]}"] += 1
            if sum(pair_kinds.values()) >= expected_box[0]:
                all_reported.set()

    hook = (outbound.Webhook(f"{rx.url}/hook", auth={"type": "bearer", "token": TOKEN},
                             rate_limit={"per_second": a.rate_limit})
            if a.endpoint_auth else outbound.Webhook(f"{rx.url}/hook"))
    hooks = {} if a.ingestion_only else dict(webhooks=[hook], shared_secret=SECRET)
    if subs:
        hooks["shared_secret"] = SECRET  # the subscriptions' requests are signed with it too
    client = outbound.Client(
        "wk_soak",
        endpoint=rx.url,
        max_queue_size=a.n,
        on_outcome=on_sub_outcome if subs else on_outcome,
        **hooks,
        **({"subscriptions": sub_settings(rx.url, a.rate_limit if a.endpoint_auth else None)} if subs else {}),
    )
    ids: List[str] = []
    index: Dict[str, int] = {}  # message id -> i
    refused = 0
    t0 = time.monotonic()
    for i in range(a.n):
        mid = client.track(user_id=f"user-{i % 5000}", event="Soak Tested",
                           properties={"i": i, "plan": "pro", "bucket": i % 10} if subs
                           else {"i": i, "plan": "pro"})
        if mid is None:
            refused += 1
        else:
            ids.append(mid)
            index[mid] = i
    t_last = time.monotonic()
    accepted_box[0] = len(ids)
    # --subscriptions: each subscription's matches among the accepted.
    expected = {s: {m for m in ids if sub_matches(s, index[m])} for s in subs}
    if subs:
        with pairs_lock:
            expected_box[0] = len(ids) + sum(len(e) for e in expected.values())
            if sum(pair_kinds.values()) >= expected_box[0]:
                all_reported.set()
    elif len(reported) >= len(ids):
        all_reported.set()
    print(f"soak: {len(ids):,} calls accepted in {t_last - t0:.2f} s "
          f"({(t_last - t0) / max(1, a.n) * 1e6:.1f} µs/call), {refused} refused", flush=True)

    deadline = t_last + a.deadline
    while not all_reported.wait(10):
        if time.monotonic() > deadline:
            break
        s = client.stats
        print(f"soak: +{time.monotonic() - t_last:5.0f} s  delivered {s['delivered']:,}  "
              f"queued {s['queued']:,}  in flight {s['in_flight']:,}  retries {s['retries']:,}"
              + "".join(f"  {n} {client.subscription_stats(n)['delivered']:,}/{len(expected[n]):,}"
                        for n in subs), flush=True)
    t_done = time.monotonic()
    within = all_reported.is_set() and t_done <= deadline
    client.close(timeout=5)
    stats = client.stats
    sub_stats = {s: client.subscription_stats(s) for s in subs}
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rstats = rx.get("/_stats")
    taken = {d: set(rx.get(f"/_ids?dest={d}")) for d in dests}
    sub_taken = {s: set(rx.get(f"/_ids?dest=sub/{s}")) for s in subs}
    sub_bodies = {s: rx.get(f"/_bodies?dest=sub/{s}") for s in subs}
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
    failures = []
    # Per subscription: each pair it matches exactly one outcome, delivered; no outcome for a
    # pair it does not match; lost (matched, never taken), misrouted (taken, not matched),
    # bodies not as mapped, the method, single bodies or batches as configured, its counters.
    sub_figures: Dict[str, Dict[str, Any]] = {}
    with pairs_lock:
        pairs_now = dict(pairs)
    for s in subs:
        st = rstats.get("subs", {}).get(s, {})
        matched = expected[s]
        not_once_s = sum(1 for m in matched if pairs_now.get((m, s), 0) != 1)
        stray = sum(1 for (m, name) in pairs_now if name == s and m not in matched)
        lost_s = matched - sub_taken[s]
        misrouted = sorted(m for m in sub_taken[s] if m not in matched)
        wrong_bodies = sorted(m for m, b in sub_bodies[s].items()
                              if m in matched and b != sub_body(s, m, index[m]))
        methods = st.get("methods", {})
        method = "PUT" if s == "all" else "POST"
        cs = sub_stats[s]
        sub_figures[s] = {
            "matched": len(matched), "delivered_distinct": len(sub_taken[s]),
            "lost": len(lost_s), "duplicates": st.get("duplicates", 0),
            "misrouted": len(misrouted), "wrong_bodies": len(wrong_bodies),
            "outcomes_delivered": pair_kinds[(s, "delivered")],
            "outcomes_failed": pair_kinds[(s, "failed")],
            "outcomes_dropped": pair_kinds[(s, "dropped")],
            "not_once": not_once_s, "outcomes_unmatched": stray,
            "requests": st.get("requests", 0), "methods": methods,
            "objects_per_request_mean": round(st.get("objects_mean", 0.0), 2),
            "objects_per_request_max": st.get("objects_max", 0),
            "attempts_mean": round(st.get("attempts_mean", 0.0), 2),
            "attempts_max": st.get("attempts_max", 0),
            "client_stats": cs,
        }
        f = sub_figures[s]
        rows.insert(-1, (f"subscription {s}: matched / delivered / lost / duplicates / misrouted",
                         f"{f['matched']:,} / {f['delivered_distinct']:,} / {f['lost']:,} / "
                         f"{f['duplicates']:,} / {f['misrouted']:,}"))
        rows.insert(-1, (f"subscription {s}: outcomes delivered / failed / dropped; not once",
                         f"{f['outcomes_delivered']:,} / {f['outcomes_failed']:,} / "
                         f"{f['outcomes_dropped']:,}; {not_once_s:,}"
                         + (f" (+{stray:,} for messages it does not match)" if stray else "")))
        rows.insert(-1, (f"subscription {s}: requests (ok/503/reset/stall), objects a request",
                         f"{st.get('requests', 0):,} ({st.get('ok', 0):,}/{st.get('503', 0):,}/"
                         f"{st.get('reset_before', 0) + st.get('reset_after', 0):,}/"
                         f"{st.get('stall', 0):,}), mean {f['objects_per_request_mean']:g} "
                         f"max {f['objects_per_request_max']} {json.dumps(methods)}"))
        if lost_s:
            failures.append(f"subscription {s}: {len(lost_s):,} matching messages never taken")
        if not_once_s or stray:
            failures.append(f"subscription {s}: {not_once_s:,} matching messages without exactly "
                            f"one outcome, {stray:,} outcomes for messages it does not match")
        if f["outcomes_delivered"] != len(matched):
            failures.append(f"subscription {s}: {f['outcomes_delivered']:,} delivered outcomes of "
                            f"{len(matched):,} matching messages")
        if misrouted:
            failures.append(f"subscription {s}: {len(misrouted):,} messages its trigger does not "
                            f"match were taken, e.g. {misrouted[:3]}")
        if wrong_bodies:
            failures.append(f"subscription {s}: {len(wrong_bodies):,} bodies not as mapped, e.g. "
                            f"{sub_bodies[s][wrong_bodies[0]]}")
        if set(methods) - {method}:
            failures.append(f"subscription {s}: methods {methods}, expected only {method}")
        batched = s == "batched"
        if (batched and not 1 < f["objects_per_request_max"] <= SUB_BATCH) or (
                not batched and f["objects_per_request_max"] > 1):
            failures.append(f"subscription {s}: up to {f['objects_per_request_max']} objects a "
                            "request")
        if (cs.get("accepted"), cs.get("delivered")) != (len(matched), len(matched)):
            failures.append(f"subscription {s}: its counters say accepted {cs.get('accepted')}, "
                            f"delivered {cs.get('delivered')}, of {len(matched):,} matching")
    if subs:
        unknown_subs = sorted({str(name) for (_, name) in pairs_now
                               if name is not None and name not in subs})
        if unknown_subs:
            failures.append(f"outcomes named by unknown subscriptions: {unknown_subs}")
        total_pairs = sum(len(e) for e in expected.values())
        rows.insert(-1, ("(message, subscription) pairs: outcomes checked",
                         f"{total_pairs:,} matched, "
                         f"{sum(f['not_once'] for f in sub_figures.values()):,} not exactly once"))

    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if details:
        print("  not delivered, by detail:", dict(details.most_common(5)))

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
                       "failures": failures,
                       **({"subscriptions": sub_figures,
                           "pairs": sum(len(e) for e in expected.values()),
                           "load_at_end": open("/proc/loadavg").read().split()[:3]}
                          if subs else {})}, f, indent=1)
    print()
    if failures:
        for f in failures:
            print(f"soak: FAILED: {f}")
        return 1
    print(f"soak: OK: {len(ids):,} messages, 0 lost, each exactly one outcome, all delivered "
          f"{t_done - t_last:.1f} s after the last call")
    if subs:
        print("soak: OK: subscriptions (matched/delivered/lost/duplicates/misrouted): "
              + "; ".join(f"{s} {f['matched']:,}/{f['delivered_distinct']:,}/{f['lost']:,}/"
                          f"{f['duplicates']:,}/{f['misrouted']:,}"
                          for s, f in sub_figures.items())
              + f"; {sum(len(e) for e in expected.values()):,} (message, subscription) pairs "
              f"each exactly one outcome, delivered; peak RSS {rss_mib:.0f} MiB; load average "
              f"{' '.join(open('/proc/loadavg').read().split()[:3])} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
