"""The relay's kill test (run by scripts/relay-killtest.sh): acknowledged means durable.

An SDK-like sender posts N `track` events in batches of 100 to the relay's /v1/batch (Basic
auth, several connections at once, each event with its own messageId), while the relay is
SIGKILLed `--kills` times at random moments and restarted on the same data_dir. The relay's
one webhook is the chaos receiver (bench/chaos: 30 % 503, 10 % resets, 5 % stalls past the
relay's timeout, every signature checked). The sender resends every batch that was not
acknowledged (a status other than 200, or a connection error), as the SDKs do.

With `--tenants H --hanging K` it is the many-tenants case instead: H sources with 5 webhook
URLs each behind the chaos receiver, and K more sources whose 5 URLs never answer; batches go
round the H + K write keys. Every acknowledged event of the H sources must reach at least one
of its source's URLs (success at any URL is success); the hanging sources' events stay in the
spool, counted apart.

With `--subscriptions` the source also has 3 subscriptions (Segment's Webhooks (Actions)),
each its own destination behind the chaos receiver (/sub/<name>, stalls past the 10 s
subscription timeout), and every event carries `properties.bucket` = i mod 10 so that what
each trigger matches is known: `all` (`type = "track"`, PUT, the body {messageId, i}),
`some` (`properties.bucket >= 7`, 30 %, the body {messageId, user}) and `batched` (Segment's
export form, `properties.bucket < 5`, 50 %, batches of up to 100: a JSON array of
{messageId, bucket}). Every acknowledged event must reach each subscription that matches it
(found in single bodies or inside batch arrays, its body as mapped, with the method set),
none a subscription that does not match it; duplicates (at-least-once across the SIGKILLs)
are counted per subscription.

At the end every acknowledged event must have reached the receiver: prints acknowledged,
delivered distinct, lost (must be 0), duplicates, seconds and the relay's peak RSS; then
SIGTERMs the relay, which must exit 0. Exits non-zero on a loss, a bad signature, a relay that
does not start, or a SIGTERM that does not end in exit 0.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Set

SECRET = "relay-kill-secret"
WRITE_KEY = "wk_relay_kill"

# --subscriptions: the source's subscriptions, in the order they are configured.
SUBS = ("all", "some", "batched")
SUB_BATCH = 100


def sub_config(chaos_url: str) -> str:
    """The 3 subscriptions' relay.toml tables (the last is in Segment's export form)."""
    mid = '{ "@path" = "$.messageId" }'
    return f"""
[[sources.subscriptions]]
name = "all"
trigger = 'type = "track"'
url = "{chaos_url}/sub/all"
method = "PUT"
headers = {{ "X-Kill-Test" = "all" }}
data = {{ messageId = {mid}, i = {{ "@path" = "$.properties.i" }} }}

[[sources.subscriptions]]
name = "some"
trigger = 'type = "track" and properties.bucket >= 7'
url = "{chaos_url}/sub/some"
data = {{ messageId = {mid}, user = {{ "@path" = "$.userId" }} }}

[[sources.subscriptions]]
name = "batched"
subscribe = 'type = "track" and properties.bucket < 5'
[sources.subscriptions.mapping]
url = "{chaos_url}/sub/batched"
enable_batching = true
batch_size = {SUB_BATCH}
data = {{ messageId = {mid}, bucket = {{ "@path" = "$.properties.bucket" }} }}
"""


def sub_matches(name: str, i: int) -> bool:
    """Whether subscription `name`'s trigger matches event i (properties.bucket = i % 10)."""
    return {"all": True, "some": i % 10 >= 7, "batched": i % 10 < 5}[name]


def sub_body(name: str, i: int) -> Dict[str, Any]:
    """The body subscription `name`'s mapping makes of event i (an element, when batched)."""
    extra: Dict[str, Any] = {"all": {"i": i}, "some": {"user": f"user-{i % 5000}"},
                             "batched": {"bucket": i % 10}}[name]
    return {"messageId": f"kill-{i}", **extra}


def event_index(message_id: str) -> Optional[int]:
    head, _, n = message_id.partition("-")
    return int(n) if head == "kill" and n.isdigit() else None


class Chaos:
    """bench/chaos: prints {"port":P}, serves until its stdin closes."""

    def __init__(self, binary: str, stall: str, seed: int) -> None:
        self.proc = subprocess.Popen(
            [binary, "-secret", SECRET, "-p503", "0.30", "-preset", "0.10", "-pstall", "0.05",
             "-stall", stall, "-seed", str(seed)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = json.loads(self.proc.stdout.readline())["port"]
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


class RelayProc:
    """The relay under test; restartable on the same config (and so the same data_dir)."""

    def __init__(self, binary: str, config: str, log: str) -> None:
        self.binary, self.config, self.log = binary, config, log
        self.proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]
        self.addr = ""
        self.peak_rss_mib = 0.0
        self.starts = 0
        self.lock = threading.Lock()

    def start(self, timeout: float = 60.0) -> None:
        with open(self.log, "ab") as logf:
            logf.write(f"\n=== start {self.starts + 1} at {time.strftime('%H:%M:%S')}\n".encode())
            proc = subprocess.Popen([self.binary, "--config", self.config], stdout=subprocess.PIPE,
                                    stderr=logf, stdin=subprocess.DEVNULL)
        assert proc.stdout is not None
        got: List[bytes] = []
        t = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout)
        if not got or not got[0].strip():
            proc.kill()
            raise RuntimeError(f"the relay printed no address within {timeout} s (see {self.log})")
        threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()  # type: ignore[union-attr]
        with self.lock:
            self.proc, self.addr = proc, got[0].decode().strip()
            self.starts += 1

    def sample_rss(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            for line in open(f"/proc/{proc.pid}/status"):
                if line.startswith("VmHWM:"):
                    self.peak_rss_mib = max(self.peak_rss_mib, int(line.split()[1]) / 1024)
        except OSError:
            pass

    def kill(self) -> None:
        with self.lock:
            proc = self.proc
            self.addr = ""
        assert proc is not None
        self.sample_rss()
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def terminate(self, timeout: float) -> Optional[int]:
        assert self.proc is not None
        self.sample_rss()
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None


class Sender:
    """Posts batches of 100 from a shared queue; a batch is done only when answered 200."""

    def __init__(self, relay: RelayProc, n: int, batch: int, threads: int,
                 keys: Optional[List[str]] = None) -> None:
        self.relay = relay
        self.batches = [list(range(i, min(i + batch, n))) for i in range(0, n, batch)]
        # Batch b goes to keys[b mod len(keys)] (one source's key by default).
        self.keys = keys or [WRITE_KEY]
        self.key_of: Dict[int, str] = {}
        self.next = 0
        self.lock = threading.Lock()
        self.acked: Set[int] = set()
        self.rejected: Dict[str, int] = {}
        self.posts = 0
        self.resends = 0
        self.statuses: Dict[str, int] = {}
        self.auth = "Basic " + base64.b64encode(f"{WRITE_KEY}:".encode()).decode()
        self.workers = [threading.Thread(target=self.work, daemon=True) for _ in range(threads)]
        self.after_ack = lambda: None  # set by main: the kills happen from here, mid-sending
        self.buckets = False  # --subscriptions: properties.bucket = i mod 10 (their triggers')

    def take(self) -> Optional[List[int]]:
        with self.lock:
            if self.next >= len(self.batches):
                return None
            b = self.batches[self.next]
            self.key_of[self.next] = self.keys[self.next % len(self.keys)]
            self.next += 1
            return b

    def auth_for(self, ids: List[int]) -> str:
        key = self.keys[(ids[0] // len(self.batches[0])) % len(self.keys)]
        return "Basic " + base64.b64encode(f"{key}:".encode()).decode()

    def count(self, what: str) -> None:
        with self.lock:
            self.statuses[what] = self.statuses.get(what, 0) + 1

    def work(self) -> None:
        conn: Optional[http.client.HTTPConnection] = None
        conn_addr = ""
        while True:
            ids = self.take()
            if ids is None:
                break
            body = json.dumps({"batch": [
                {"type": "track", "messageId": f"kill-{i}", "userId": f"user-{i % 5000}",
                 "event": "Relay Kill Test",
                 "properties": {"i": i, "bucket": i % 10} if self.buckets else {"i": i},
                 "timestamp": "2026-11-25T10:00:00.000Z"} for i in ids]}).encode()
            attempt = 0
            while True:
                addr = self.relay.addr
                if not addr:
                    time.sleep(0.05)
                    continue
                try:
                    if conn is None or conn_addr != addr:
                        if conn is not None:
                            conn.close()
                        host, port = addr.rsplit(":", 1)
                        conn, conn_addr = http.client.HTTPConnection(host, int(port), timeout=30), addr
                    with self.lock:
                        self.posts += 1
                        self.resends += attempt > 0
                    conn.request("POST", "/v1/batch", body=body, headers={
                        "Content-Type": "application/json", "Authorization": self.auth_for(ids)})
                    resp = conn.getresponse()
                    payload = resp.read()
                    self.count(str(resp.status))
                    if resp.status == 200:
                        answer = json.loads(payload)
                        with self.lock:
                            for r in answer.get("rejected") or []:
                                reason = str(r.get("reason", r)) if isinstance(r, dict) else str(r)
                                self.rejected[reason] = self.rejected.get(reason, 0) + 1
                            bad = {r.get("index") for r in answer.get("rejected") or []
                                   if isinstance(r, dict)}
                            self.acked.update(i for k, i in enumerate(ids) if k not in bad)
                        self.after_ack()
                        break
                except (OSError, http.client.HTTPException, ValueError) as e:
                    self.count(type(e).__name__)
                    if conn is not None:
                        conn.close()
                    conn = None
                attempt += 1
                time.sleep(min(0.05 * attempt, 1.0))  # the SDKs back off; the relay may be down
        if conn is not None:
            conn.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--chaos-bin", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=2.0, help="the relay's webhook timeout (s)")
    ap.add_argument("--deadline", type=float, default=600.0,
                    help="seconds after the last acknowledgement by which all must be delivered")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--max-queue-size", type=int, default=0,
                    help="the relay's max_queue_size (default: N, so no batch is refused for a "
                         "full queue; smaller values make the relay answer 429/503 and the "
                         "sender resend)")
    ap.add_argument("--tenants", type=int, default=0,
                    help="sources with 5 URLs each behind the chaos receiver (0: one source, "
                         "one URL)")
    ap.add_argument("--hanging", type=int, default=0,
                    help="with --tenants: more sources whose 5 URLs never answer")
    ap.add_argument("--subscriptions", action="store_true",
                    help="the source also has 3 subscriptions behind the chaos receiver (one "
                         "for every event, one for 30 % by its trigger, one batching 50 % by "
                         "100); each must get what its trigger matches, nothing else")
    ap.add_argument("--json-out")
    ap.add_argument("--extra-config", default="",
                    help="top-level relay.toml lines to add (e.g. to check the test fails with "
                         "spool = false)")
    a = ap.parse_args()
    if a.subscriptions and a.tenants:
        ap.error("--subscriptions is of the one-source case, not --tenants")
    subs = SUBS if a.subscriptions else ()
    rng = random.Random(a.seed)

    if os.path.isdir(a.workdir):
        shutil.rmtree(a.workdir)
    os.makedirs(a.workdir)
    chaos = Chaos(a.chaos_bin, f"{a.timeout + 1.5:.1f}s", a.seed)
    config = os.path.join(a.workdir, "relay.toml")
    if a.tenants:
        sources = []
        for i in range(a.tenants + a.hanging):
            path = "hang" if i >= a.tenants else "hook"
            hooks = "".join(f'[[sources.webhooks]]\nurl = "{chaos.url}/{path}/s{i}-{j}"\n'
                            for j in range(5))
            sources.append(f'[[sources]]\nname = "s{i}"\nwrite_keys = ["{WRITE_KEY}-{i}"]\n'
                           f'shared_secret = {json.dumps(SECRET)}\n{hooks}')
        keys = [f"{WRITE_KEY}-{i}" for i in range(a.tenants + a.hanging)]
        # Each source's own queue holds what it is sent, whatever the kills leave behind.
        queue = a.max_queue_size or max(a.n, 10_000)
    else:
        sources = [f"""[[sources]]
name = "kill"
write_keys = [{json.dumps(WRITE_KEY)}]
shared_secret = {json.dumps(SECRET)}

[[sources.webhooks]]
url = "{chaos.url}/hook"
""" + (sub_config(chaos.url) if subs else "")]
        keys = [WRITE_KEY]
        queue = a.max_queue_size or max(a.n, 10_000)
    with open(config, "w") as f:
        f.write(f"""listen = "127.0.0.1:0"
data_dir = {json.dumps(os.path.join(a.workdir, "data"))}
allowed_networks = ["127.0.0.0/8"]
timeout = {a.timeout}
max_backoff = 2
max_queue_size = {queue}
{a.extra_config}

""" + "\n".join(sources))
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    whom = (f"{a.tenants} sources x 5 URLs behind 30 % 503 / 10 % resets / 5 % stalls past the "
            f"{a.timeout:g} s timeout, {a.hanging} sources x 5 URLs that never answer"
            if a.tenants else
            f"webhook behind 30 % 503 / 10 % resets / 5 % stalls past the {a.timeout:g} s timeout")
    if subs:
        whom += (f", 3 subscriptions behind the same faults (stalls past their 10 s timeout): "
                 f"all, some (30 %), batched (50 %, by {SUB_BATCH})")
    print(f"relay-killtest: {a.n:,} events in batches of {a.batch} to /v1/batch, {a.kills} SIGKILLs, "
          f"{whom}; seed {a.seed}; load average {load}", flush=True)

    relay = RelayProc(a.relay_bin, config, os.path.join(a.workdir, "relay.log"))
    t0 = time.monotonic()
    relay.start()
    sender = Sender(relay, a.n, a.batch, a.threads, keys)
    sender.buckets = bool(subs)
    # Kill points: random shares of the events acknowledged, so every kill lands while
    # batches are being posted and the spool holds undelivered events.
    kill_at = sorted(rng.uniform(0.1, 0.9) * a.n for _ in range(a.kills))
    kills_done: List[Dict[str, Any]] = []
    failures: List[str] = []
    kill_lock = threading.Lock()

    def kill_and_restart() -> None:
        time.sleep(rng.uniform(0, 0.2))
        acked_then = len(sender.acked)
        relay.kill()
        now = chaos.get("/_stats")
        taken = now["hook"]["unique_taken"]
        kill: Dict[str, Any] = {"acked": acked_then, "delivered": taken,
                                "seconds": round(time.monotonic() - t0, 1)}
        if subs:
            kill["subscriptions"] = {s: now.get("subs", {}).get(s, {}).get("unique_taken", 0)
                                     for s in subs}
        kills_done.append(kill)
        print(f"relay-killtest: SIGKILL {len(kills_done)} at {acked_then:,} acknowledged, "
              f"{taken:,} delivered"
              + "".join(f", {s} {n:,}" for s, n in kill.get("subscriptions", {}).items()),
              flush=True)
        time.sleep(rng.uniform(0.0, 1.0))
        relay.start()

    def after_ack() -> None:
        # Called by a sender thread after each acknowledged batch: the thread that crosses a
        # kill point kills the relay (after a random delay) and restarts it on the same
        # data_dir, while the other threads keep posting (and get connection errors).
        if not kill_at or len(sender.acked) < kill_at[0] or not kill_lock.acquire(blocking=False):
            return
        try:
            if kill_at and len(sender.acked) >= kill_at[0]:
                kill_at.pop(0)
                kill_and_restart()
        except Exception as e:  # noqa: BLE001 (reported, and the run fails)
            failures.append(f"restart after SIGKILL {len(kills_done)}: {e}")
            sender.next = len(sender.batches)  # stop sending
        finally:
            kill_lock.release()

    sender.after_ack = after_ack
    for w in sender.workers:
        w.start()
    try:
        send_deadline = t0 + a.deadline
        while any(w.is_alive() for w in sender.workers):
            relay.sample_rss()
            proc = relay.proc
            if (proc is not None and proc.poll() is not None and not kill_lock.locked()
                    and relay.proc is proc):
                failures.append(f"the relay exited by itself (status {proc.returncode}); "
                                f"see {relay.log}")
                break
            if time.monotonic() > send_deadline:
                failures.append(f"sending did not finish within {a.deadline:.0f} s")
                break
            time.sleep(0.1)
        if failures:
            sender.next = len(sender.batches)
            relay.addr = "stopped"  # the senders' posts fail from here on; they are daemons
        sent_done = time.monotonic()
        # Kill points passed while a kill was under way (a small run acknowledges fast): the
        # remaining kills land at random moments of the delivery instead.
        while kill_at and not failures:
            kill_at.pop(0)
            time.sleep(rng.uniform(0.2, 1.5))
            kill_and_restart()
        if len(kills_done) < a.kills:
            failures.append(f"only {len(kills_done)} of {a.kills} kills happened")
        print(f"relay-killtest: all {a.n:,} acknowledged after {sent_done - t0:.1f} s "
              f"({sender.posts:,} posts, {sender.resends:,} resends); waiting for delivery",
              flush=True)
        # Events of the hanging sources cannot reach any URL: counted apart (they wait in the
        # spool for their URLs), not in the lost check.
        per = len(sender.batches[0])
        hanging_keys = set(keys[a.tenants:]) if a.tenants else set()
        parked = {f"kill-{i}" for i in sender.acked
                  if keys[(i // per) % len(keys)] in hanging_keys}
        acked_ids = {f"kill-{i}" for i in sender.acked} - parked
        if len(acked_ids) + len(parked) + sum(sender.rejected.values()) < a.n and not failures:
            failures.append(f"only {len(acked_ids) + len(parked):,} of {a.n:,} events acknowledged")
        # What each subscription must get: the acknowledged events its trigger matches.
        expected = {s: {f"kill-{i}" for i in sender.acked if sub_matches(s, i)} for s in subs}
        deadline = sent_done + a.deadline
        last_print = 0.0
        while True:
            relay.sample_rss()
            now = chaos.get("/_stats")
            taken = now["hook"]["unique_taken"]
            sub_taken = {s: now.get("subs", {}).get(s, {}).get("unique_taken", 0) for s in subs}
            if taken >= len(acked_ids) and all(sub_taken[s] >= len(expected[s]) for s in subs):
                got = set(chaos.get("/_ids?dest=hook"))
                if acked_ids <= got and all(expected[s] <= set(chaos.get(f"/_ids?dest=sub/{s}"))
                                            for s in subs):
                    break
            if time.monotonic() > deadline:
                break
            if time.monotonic() - last_print > 10:
                print(f"relay-killtest: {taken:,} of {len(acked_ids):,} delivered"
                      + "".join(f", {s} {sub_taken[s]:,} of {len(expected[s]):,}"
                                for s in subs), flush=True)
                last_print = time.monotonic()
            time.sleep(0.5)
        seconds = time.monotonic() - t0
        status = relay.terminate(60.0)
        if status != 0:
            failures.append(f"SIGTERM at the end: exit status {status} (expected 0)")
        stats = chaos.get("/_stats")
        got = set(chaos.get("/_ids?dest=hook"))
        sub_got = {s: set(chaos.get(f"/_ids?dest=sub/{s}")) for s in subs}
        sub_bodies = {s: chaos.get(f"/_bodies?dest=sub/{s}") for s in subs}
    finally:
        if relay.proc is not None and relay.proc.poll() is None:
            relay.proc.kill()
        chaos.stop()

    lost = acked_ids - got
    hook = stats["hook"]
    rows = [
        ("events sent / acknowledged", f"{a.n:,} / {len(acked_ids) + len(parked):,}"),
        ("of them to sources whose URLs hang (waiting)", f"{len(parked):,}"),
        ("rejected in 200 answers", f"{sum(sender.rejected.values()):,} {sender.rejected or ''}"),
        ("posts / resends", f"{sender.posts:,} / {sender.resends:,}"),
        ("answers and errors", json.dumps(dict(sorted(sender.statuses.items())))),
        ("SIGKILLs (acknowledged, delivered at each)",
         ", ".join(f"{k['acked']:,}/{k['delivered']:,}" for k in kills_done)),
        ("delivered distinct", f"{len(got):,}"),
        ("lost (acknowledged, never delivered)", f"{len(lost):,}"),
        ("duplicates taken by the receiver" + (" (5 URLs a source: each URL gets each event)"
                                               if a.tenants else ""), f"{hook['duplicates']:,}"),
        ("webhook requests (ok/503/reset/stall)",
         f"{hook['requests']:,} ({hook['ok']:,}/{hook['503']:,}/"
         f"{hook['reset_before'] + hook['reset_after']:,}/{hook['stall']:,})"),
        ("bad signatures / bad bodies", f"{stats['bad_signatures']} / {stats['bad_bodies']}"),
        ("seconds (start to all delivered)", f"{seconds:.1f}"),
        ("relay peak RSS (largest of its runs)", f"{relay.peak_rss_mib:.0f} MiB"),
        ("SIGTERM at the end", f"exit {status}"),
    ]
    # Per subscription: lost (acknowledged, matched, never taken), misrouted (taken, not
    # matched), bodies not as mapped, the method, and single bodies or batches as configured.
    sub_figures: Dict[str, Dict[str, Any]] = {}
    for s in subs:
        st = stats.get("subs", {}).get(s, {})
        sub_lost = expected[s] - sub_got[s]
        misrouted = sorted(m for m in sub_got[s]
                           if (i := event_index(m)) is None or not sub_matches(s, i))
        wrong_bodies = sorted(m for m, b in sub_bodies[s].items()
                              if (i := event_index(m)) is not None and sub_matches(s, i)
                              and b != sub_body(s, i))
        method = "PUT" if s == "all" else "POST"
        methods = st.get("methods", {})
        sub_figures[s] = {
            "matched": len(expected[s]), "delivered_distinct": len(sub_got[s]),
            "lost": len(sub_lost), "duplicates": st.get("duplicates", 0),
            "misrouted": len(misrouted), "wrong_bodies": len(wrong_bodies),
            "requests": st.get("requests", 0), "methods": methods,
            "objects_per_request_mean": round(st.get("objects_mean", 0.0), 2),
            "objects_per_request_max": st.get("objects_max", 0),
            "attempts_mean": round(st.get("attempts_mean", 0.0), 2),
            "attempts_max": st.get("attempts_max", 0),
        }
        f = sub_figures[s]
        rows.insert(-3, (f"subscription {s}: matched / delivered / lost / duplicates / misrouted",
                         f"{f['matched']:,} / {f['delivered_distinct']:,} / {f['lost']:,} / "
                         f"{f['duplicates']:,} / {f['misrouted']:,}"))
        rows.insert(-3, (f"subscription {s}: requests (ok/503/reset/stall), objects a request",
                         f"{st.get('requests', 0):,} ({st.get('ok', 0):,}/{st.get('503', 0):,}/"
                         f"{st.get('reset_before', 0) + st.get('reset_after', 0):,}/"
                         f"{st.get('stall', 0):,}), mean {f['objects_per_request_mean']:g} "
                         f"max {f['objects_per_request_max']} {json.dumps(methods)}"))
        if sub_lost:
            failures.append(f"subscription {s}: {len(sub_lost):,} acknowledged events it "
                            f"matches never delivered, e.g. {sorted(sub_lost)[:5]}")
        if misrouted:
            failures.append(f"subscription {s}: {len(misrouted):,} events its trigger does not "
                            f"match were delivered to it, e.g. {misrouted[:5]}")
        if wrong_bodies:
            failures.append(f"subscription {s}: {len(wrong_bodies):,} bodies not as mapped, e.g. "
                            f"{wrong_bodies[0]}: {sub_bodies[s][wrong_bodies[0]]}")
        if set(methods) - {method}:
            failures.append(f"subscription {s}: methods {methods}, expected only {method}")
        batched = s == "batched"
        if (batched and not 1 < f["objects_per_request_max"] <= SUB_BATCH) or (
                not batched and f["objects_per_request_max"] > 1):
            failures.append(f"subscription {s}: up to {f['objects_per_request_max']} objects a "
                            f"request ({'batches of up to ' + str(SUB_BATCH) if batched else 'single bodies'} "
                            f"expected)")
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if lost:
        failures.append(f"{len(lost):,} acknowledged events never delivered, e.g. {sorted(lost)[:5]}")
    if stats["bad_signatures"]:
        failures.append(f"{stats['bad_signatures']} webhook requests with a bad signature")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"n": a.n, "acknowledged": len(acked_ids), "delivered_distinct": len(got),
                       "lost": len(lost), "duplicates": hook["duplicates"],
                       "seconds": round(seconds, 1), "peak_rss_mib": round(relay.peak_rss_mib),
                       "kills": kills_done, "posts": sender.posts, "resends": sender.resends,
                       "answers": sender.statuses, "receiver": stats, "sigterm_exit": status,
                       "seed": a.seed, "load": load, "failures": failures,
                       **({"subscriptions": sub_figures,
                           "lost_pairs": sum(f["lost"] for f in sub_figures.values()),
                           "load_at_end": " ".join(open("/proc/loadavg").read().split()[:3])}
                          if subs else {})}, f, indent=1)
    print()
    for f in failures:
        print(f"relay-killtest: FAILED: {f}")
    if failures:
        return 1
    print(f"relay-killtest: OK: {len(acked_ids):,} acknowledged, {len(got):,} delivered, 0 lost, "
          f"{hook['duplicates']:,} duplicates, {len(kills_done)} SIGKILLs, {seconds:.1f} s, "
          f"peak RSS {relay.peak_rss_mib:.0f} MiB, SIGTERM exit 0")
    if subs:
        print("relay-killtest: OK: subscriptions (matched/delivered/lost/duplicates/misrouted): "
              + "; ".join(f"{s} {f['matched']:,}/{f['delivered_distinct']:,}/{f['lost']:,}/"
                          f"{f['duplicates']:,}/{f['misrouted']:,}"
                          for s, f in sub_figures.items())
              + f"; {sum(f['matched'] for f in sub_figures.values()):,} (event, subscription) "
              f"pairs, 0 lost, bodies as mapped, signatures valid; load average "
              f"{' '.join(open('/proc/loadavg').read().split()[:3])} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
