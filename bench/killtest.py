"""The kill test (run by scripts/killtest.sh; see BENCHMARKS.md, "Fault runs").

With --redis-server, the spool is a Redis (started here on 127.0.0.1, AOF everysec) instead
of a directory: B takes over once A's heartbeat expires (timeout 5 s + 10 s), and with
--restart-redis Redis itself is SIGKILLed and restarted while A delivers.

Process A sends N `track` calls through the installed wheel, with a spool, to ingestion and
one signed webhook served by the chaos receiver (503s, resets, stalls past the timeout), and
is killed with SIGKILL while delivery is under way. Process B, started on the same spool,
takes over what A left and delivers it. Checks and prints: ids lost at either receiver
(must be 0), ids with no outcome in A or B (must be 0), ids reported by both (a delivery A
made but had not yet removed from disk: at least once), duplicates the receivers took, how
long B took, peak RSS of A and B, and that the spool is empty at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, List

from soak import SECRET, Receiver

# One process of the test: `role` A sends and waits to be killed; B resumes and reports.
CHILD = r"""
import json, os, resource, sys, threading, time, outbound
role, url, spool, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
ended = []
lock = threading.Lock()
log = None
def on_outcome(mid, kind, detail):
    with lock:
        ended.append((mid, kind))
        if log is not None:  # process A: on file at once, so a SIGKILL loses no line
            log.write(f"{kind} {mid}\n")
            log.flush()
c = outbound.Client("wk_kill", endpoint=url, webhooks=[outbound.Webhook(url + "/hook")],
                    shared_secret=sys.argv[5], spool=spool, max_queue_size=max(n, 10_000),
                    on_outcome=on_outcome)
out = open(sys.argv[6], "w")
if role == "A":
    for i in range(n):
        out.write(c.track(user_id=f"user-{i % 5000}", event="Killed", properties={"i": i}) + "\n")
    out.flush()
    with lock:
        for mid, kind in ended:
            out.write(f"{kind} {mid}\n")
        out.flush()
        log = out
    print("SENT", flush=True)
    time.sleep(3600)  # until SIGKILL
else:
    t0 = time.monotonic()
    deadline = t0 + float(sys.argv[7])
    while time.monotonic() < deadline:
        s = c.stats
        if s["resumed"] and s["queued"] + s["in_flight"] == 0 and len(ended) >= s["resumed"]:
            break
        if not s["resumed"] and time.monotonic() - t0 > float(os.environ.get("KILLTEST_IDLE", "15")):
            break  # A had delivered everything before it was killed
        time.sleep(0.1)
    took = time.monotonic() - t0
    c.close(timeout=10)
    for mid, kind in ended:
        out.write(f"{kind} {mid}\n")
    out.close()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": round(took, 1), "stats": c.stats, "rss_mib": round(rss)}),
          flush=True)
"""


class Redis:
    """A redis-server on 127.0.0.1 (a free port), AOF everysec in `workdir`."""

    def __init__(self, exe: str, workdir: str) -> None:
        import shutil
        import socket
        shutil.rmtree(workdir, ignore_errors=True)
        os.makedirs(workdir)
        self.exe, self.dir = exe, workdir
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.exe, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.dir,
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""],
            stdout=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while self.cli("PING") != "PONG":
            if time.monotonic() > end:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def restart(self) -> None:
        self.proc.kill()  # SIGKILL: no shutdown save; the AOF is all there is
        self.proc.wait()
        self.start()

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def cli(self, *args: str) -> str:
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True,
                             text=True)
        return out.stdout.strip()

    def entries(self, prefix: str) -> int:
        keys = self.cli("--raw", "KEYS", "{%s:*}:s" % prefix).split()
        return sum(int(self.cli("XLEN", k) or 0) for k in keys)


def peak_rss_mib(pid: int) -> float:
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--receiver-bin", required=True)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--kill-after", type=float, default=10.0,
                    help="seconds after A's last call at which A is killed")
    ap.add_argument("--deadline", type=float, default=300.0, help="B's time limit")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--json-out")
    ap.add_argument("--redis-server", help="redis-server binary: spool to Redis, not a directory")
    ap.add_argument("--restart-redis", action="store_true",
                    help="SIGKILL and restart Redis halfway between A's last call and A's kill")
    a = ap.parse_args()

    os.makedirs(a.workdir, exist_ok=True)
    spool = os.path.join(a.workdir, "spool")
    for f in os.listdir(a.workdir):
        if f.endswith(".log"):
            os.remove(os.path.join(a.workdir, f))
    if os.path.isdir(spool):
        for f in os.listdir(spool):
            os.remove(os.path.join(spool, f))
    load = open("/proc/loadavg").read().split()[:3]
    print(f"killtest: {a.n:,} tracks with a spool, SIGKILL {a.kill_after:.0f} s after the last "
          f"call, under 30 % 503 / 10 % resets / 5 % stalls; load average {' '.join(load)}",
          flush=True)
    redis = None
    if a.redis_server:
        redis = Redis(a.redis_server, os.path.join(a.workdir, "redis"))
        spool = f"redis://127.0.0.1:{redis.port}/0?prefix=killtest"
        os.environ["KILLTEST_IDLE"] = "60"
        print(f"killtest: spool {spool} (AOF everysec)", flush=True)
    rx = Receiver(a.receiver_bin, [])
    log_a, log_b = os.path.join(a.workdir, "a.log"), os.path.join(a.workdir, "b.log")

    proc_a = subprocess.Popen([sys.executable, "-c", CHILD, "A", rx.url, spool, str(a.n),
                               SECRET, log_a], stdout=subprocess.PIPE, text=True)
    assert proc_a.stdout is not None
    assert proc_a.stdout.readline().strip() == "SENT"
    if redis and a.restart_redis:
        time.sleep(a.kill_after / 2)
        redis.restart()
        print("killtest: Redis SIGKILLed and restarted (AOF replayed)", flush=True)
        time.sleep(a.kill_after / 2)
    else:
        time.sleep(a.kill_after)
    rss_a = peak_rss_mib(proc_a.pid)
    os.kill(proc_a.pid, signal.SIGKILL)
    proc_a.wait()
    at_kill = rx.get("/_stats")
    print(f"killtest: A killed; the receivers had taken {at_kill['batch']['unique_taken']:,} "
          f"(ingestion) and {at_kill['hook']['unique_taken']:,} (webhook) ids", flush=True)

    out_b = subprocess.run([sys.executable, "-c", CHILD, "B", rx.url, spool, str(a.n), SECRET,
                            log_b, str(a.deadline)], capture_output=True, text=True,
                           timeout=a.deadline + 120)
    if out_b.returncode != 0:
        print(out_b.stderr)
        return 1
    b: Dict[str, Any] = json.loads(out_b.stdout.strip().splitlines()[-1])
    rstats = rx.get("/_stats")
    taken = {d: set(rx.get(f"/_ids?dest={d}")) for d in ("batch", "hook")}
    rx.stop()

    accepted: List[str] = []
    outcomes_a: Dict[str, str] = {}
    for line in open(log_a):
        parts = line.split()
        if len(parts) == 1:
            accepted.append(parts[0])
        elif len(parts) == 2:
            outcomes_a[parts[1]] = parts[0]
    outcomes_b: Dict[str, str] = {}
    for line in open(log_b):
        kind, mid = line.split()
        outcomes_b[mid] = kind
    ids = set(accepted)
    lost = {d: len(ids - taken[d]) for d in taken}
    no_outcome = len(ids - set(outcomes_a) - set(outcomes_b))
    both = len(set(outcomes_a) & set(outcomes_b))
    not_delivered = sum(1 for k in list(outcomes_a.values()) + list(outcomes_b.values())
                        if k != "delivered")
    if redis:
        left = [f"{n} Redis entries"] if (n := redis.entries("killtest")) else []
        redis.stop()
    else:
        left = [f for f in os.listdir(spool) if f.endswith(".db")]

    rows = [
        ("messages accepted by A", f"{len(ids):,}"),
        ("outcomes reported by A before the kill", f"{len(outcomes_a):,}"),
        ("resumed and delivered by B", f"{b['stats']['resumed']:,} / {b['stats']['delivered']:,}"),
        ("lost at ingestion / at the webhook", f"{lost['batch']:,} / {lost['hook']:,}"),
        ("ids with no outcome in A or B", f"{no_outcome:,}"),
        ("ids reported by both A and B (at least once)", f"{both:,}"),
        ("outcomes other than delivered", f"{not_delivered:,}"),
        ("duplicates taken: ingestion / webhook",
         f"{rstats['batch']['duplicates']:,} / {rstats['hook']['duplicates']:,}"),
        ("B: seconds to deliver what A left", f"{b['seconds']}"),
        ("peak RSS: A / B", f"{rss_a:.0f} / {b['rss_mib']} MiB"),
        ("spool files (Redis: entries) left", f"{left[0] if left and redis else len(left)}"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    failures = []
    if lost["batch"] or lost["hook"]:
        failures.append(f"lost: {lost}")
    if no_outcome:
        failures.append(f"{no_outcome} ids with no outcome")
    if not_delivered:
        failures.append(f"{not_delivered} outcomes other than delivered")
    if left:
        failures.append(f"spool files left: {left}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"n": a.n, "spool": "redis" if redis else "sqlite",
                       "redis_restarted": bool(redis and a.restart_redis), "accepted": len(ids), "outcomes_a": len(outcomes_a),
                       "b": b, "lost": lost, "no_outcome": no_outcome, "reported_twice": both,
                       "rss_a_mib": round(rss_a), "receiver": rstats, "load": load,
                       "failures": failures}, f, indent=1)
    print()
    for f in failures:
        print(f"killtest: FAILED: {f}")
    if failures:
        return 1
    print(f"killtest: OK: {len(ids):,} messages, SIGKILL mid-delivery, 0 lost, every id an "
          f"outcome, B done in {b['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
