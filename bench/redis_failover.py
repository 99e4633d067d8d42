"""A fleet losing its Redis primary (run by scripts/failover-redis.sh).

On 127.0.0.1: a primary and a replica (Debian's redis-server, AOF everysec) and three
Sentinels (redis-sentinel, quorum 2, down after 1 s). Two phases, one run:

1. The cost of each `redis_ack` mode, paired: one relay per mode (`memory`, `replicas:1`,
   `fsync`) on the same Redis, each posted single-event batches by the same closed loop of
   connections for the same time, the modes in turn, round after round (ABC, CAB, BCA...).
   Prints, per mode, events acknowledged per second and the p50/p99 of the time to the 200.
   A mode the server cannot honour (`fsync` before Redis 7.2) is printed with its refusal.
2. The failover: two relays on `redis+sentinel://` (`redis_ack` as given, default the
   relay's own default, "auto"), each posted events at a steady rate; the webhook receiver
   answers 503 to a share of requests, so events stay pending and retry. The primary is
   SIGKILLed; Sentinel promotes the replica. With --restart-primary, the killed server is
   started again after the promotion (as its supervisor would) and Sentinel makes it a
   replica. Later relay A is SIGKILLed too: relay B takes over its pending events from the
   new primary once A has been silent for timeout + 10 s. The senders resend nothing: an
   event answered anything but 200 is simply not acknowledged.

Checks: every acknowledged event reaches the receiver at least once (0 lost), and the relays
acknowledge again within --accept-within seconds of the promotion. Prints the promotion time,
when each relay acknowledged again, acknowledged / refused / delivered / lost, and the load
average. Exits non-zero on a loss, a relay that never acknowledges again in time, or a
Redis or Sentinel that does not start.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import http.server
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Set, Tuple

WRITE_KEY = "wk_failover"
MASTER = "fleet"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp(port: int, *args: str, timeout: float = 1.0) -> Any:
    """One command over RESP; None when the server does not answer."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"*%d\r\n" % len(args) + b"".join(
                b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode()) for a in args))
            return read_reply(s.makefile("rb"))
    except OSError:
        return None


def read_reply(f: Any) -> Any:
    line = f.readline()[:-2]
    kind, rest = line[:1], line[1:]
    if kind in (b"+", b":"):
        return rest.decode()
    if kind == b"-":
        return RuntimeError(rest.decode())
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2].decode("utf-8", "replace")
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [read_reply(f) for _ in range(n)]
    raise RuntimeError(f"unexpected reply {line!r}")


class Redis:
    """A redis-server on its own port and directory; SIGKILL and restart keep both."""

    def __init__(self, exe: str, work: str, name: str, replica_of: Optional[int] = None) -> None:
        self.port = free_port()
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir, exist_ok=True)
        self.argv = [exe, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", self.dir,
                     "--appendonly", "yes", "--appendfsync", "everysec", "--save", "",
                     "--protected-mode", "no", "--loglevel", "warning"]
        if replica_of:
            self.argv += ["--replicaof", "127.0.0.1", str(replica_of)]
        self.proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while resp(self.port, "PING") != "PONG":
            if time.monotonic() > end:
                raise RuntimeError(f"redis-server on {self.port} did not start")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def info(self, section: str) -> Dict[str, str]:
        text = resp(self.port, "INFO", section) or ""
        return dict(line.split(":", 1) for line in str(text).splitlines() if ":" in line)


class Sentinel:
    def __init__(self, exe: str, work: str, i: int, primary: int) -> None:
        self.port = free_port()
        d = os.path.join(work, f"sentinel-{i}")
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "sentinel.conf")
        with open(conf, "w") as f:
            f.write(f"port {self.port}\nbind 127.0.0.1\ndaemonize no\nprotected-mode no\n"
                    f"dir {d}\nloglevel warning\n"
                    f"sentinel monitor {MASTER} 127.0.0.1 {primary} 2\n"
                    f"sentinel down-after-milliseconds {MASTER} 1000\n"
                    f"sentinel failover-timeout {MASTER} 3000\n")
        self.proc = subprocess.Popen([exe, conf], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def primary(self) -> Optional[int]:
        addr = resp(self.port, "SENTINEL", "get-master-addr-by-name", MASTER)
        return int(addr[1]) if isinstance(addr, list) and len(addr) == 2 else None

    def ready(self) -> bool:
        info = resp(self.port, "SENTINEL", "master", MASTER)
        if not isinstance(info, list):
            return False
        fields = dict(zip(info[::2], info[1::2]))
        return fields.get("num-slaves") == "1" and fields.get("num-other-sentinels") == "2"

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


class Receiver:
    """The sources' webhook: records each messageId; answers 503 to a share of requests."""

    def __init__(self, p503: float) -> None:
        self.got: Set[str] = set()
        self.requests = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with receiver.lock:
                    receiver.requests += 1
                    refuse = (receiver.requests * 0.618) % 1.0 < p503
                if refuse:
                    self.send_response(503)
                else:
                    # A webhook's one event, or a forward's batch.
                    doc = json.loads(body)
                    events = doc.get("batch", [doc])
                    with receiver.lock:
                        receiver.got.update(e.get("messageId") for e in events)
                    self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Relay:
    def __init__(self, binary: str, work: str, name: str, spool: str, hook: str,
                 ack: Optional[str], forward: bool = False) -> None:
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        self.config = os.path.join(d, "relay.toml")
        self.log = os.path.join(d, "relay.log")
        # A webhook (one request an event), or a forward (batches of 100: the receiver then
        # costs the machine little, and the relay's acceptance is what is measured).
        out = (f'[sources.forward]\nendpoint = "{hook.rsplit("/", 1)[0]}"\nwrite_key = "x"\n'
               if forward else f'[[sources.webhooks]]\nurl = "{hook}"\n')
        with open(self.config, "w") as f:
            f.write(f'listen = "127.0.0.1:0"\ndata_dir = "{d}/data"\n'
                    f'allowed_networks = ["127.0.0.0/8"]\nspool = "{spool}"\ntimeout = 1\n'
                    f'max_backoff = 0.2\nmax_queue_size = 1000000\n'
                    + (f'redis_ack = "{ack}"\n' if ack else "")
                    + f'[[sources]]\nname = "web"\nwrite_keys = ["{WRITE_KEY}"]\n' + out)
        self.binary = binary
        self.proc: Optional[subprocess.Popen] = None  # type: ignore[type-arg]
        self.addr = ""

    def start(self, timeout: float = 30) -> Optional[str]:
        """Starts it; None once it prints its address, else the reason it gave."""
        with open(self.log, "ab") as logf:
            self.proc = subprocess.Popen([self.binary, "--config", self.config],
                                         stdout=subprocess.PIPE, stderr=logf,
                                         stdin=subprocess.DEVNULL)
        got: List[bytes] = []
        t = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()),  # type: ignore
                             daemon=True)
        t.start()
        t.join(timeout)
        if not got or not got[0].strip():
            self.kill()
            lines = open(self.log, encoding="utf-8", errors="replace").read().splitlines()
            return next((ln for ln in reversed(lines) if ln.strip()), "no address printed")
        threading.Thread(target=lambda: self.proc.stdout.read(), daemon=True).start()  # type: ignore
        self.addr = got[0].decode().strip()
        return None

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.addr = ""


AUTH = "Basic " + base64.b64encode(f"{WRITE_KEY}:".encode()).decode()


def post(conn: http.client.HTTPConnection, mid: str) -> int:
    body = json.dumps({"batch": [{"type": "track", "messageId": mid, "userId": "u1",
                                  "event": "Failover"}]}).encode()
    conn.request("POST", "/v1/batch", body=body, headers={
        "Content-Type": "application/json", "Authorization": AUTH})
    r = conn.getresponse()
    r.read()
    return r.status


class Sender:
    """Posts one event a request to a relay, `rate` a second (0: as fast as answered), from
    `threads` connections; records each answer."""

    def __init__(self, relay: Relay, tag: str, rate: float, threads: int) -> None:
        self.relay, self.tag, self.rate, self.threads = relay, tag, rate, threads
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.answers: List[Tuple[str, int, float, float]] = []  # id, status, at, latency
        self.n = 0
        self.workers = [threading.Thread(target=self.work, args=(k,), daemon=True)
                        for k in range(threads)]

    def run(self) -> "Sender":
        for w in self.workers:
            w.start()
        return self

    def work(self, k: int) -> None:
        conn: Optional[http.client.HTTPConnection] = None
        period = self.threads / self.rate if self.rate else 0.0
        next_at = time.monotonic() + k * period / max(self.threads, 1)
        while not self.stop.is_set():
            if period:
                wait = next_at - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                next_at += period
            with self.lock:
                mid = f"{self.tag}-{self.n}"
                self.n += 1
            t0 = time.monotonic()
            try:
                if conn is None:
                    if not self.relay.addr:
                        raise OSError("relay down")
                    host, port = self.relay.addr.rsplit(":", 1)
                    conn = http.client.HTTPConnection(host, int(port), timeout=10)
                status = post(conn, mid)
            except (OSError, http.client.HTTPException):
                status = 0
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.05)
            with self.lock:
                self.answers.append((mid, status, t0, time.monotonic() - t0))

    def halt(self) -> None:
        self.stop.set()
        for w in self.workers:
            w.join(15)

    def acked(self) -> List[Tuple[str, float]]:
        with self.lock:
            return [(m, at) for m, s, at, _ in self.answers if s == 200]


def load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def cost(args: argparse.Namespace, spool: str, hook: str) -> Dict[str, Any]:
    """Phase 1: each mode's accept rate and acknowledgement latency, paired."""
    modes = ["memory", "replicas:1", "fsync"]
    relays: Dict[str, Relay] = {}
    out: Dict[str, Any] = {}
    for m in modes:
        prefix_spool = spool.replace("prefix=fo", "prefix=cost-" + m.replace(":", ""))
        r = Relay(args.relay_bin, args.workdir, "cost-" + m.replace(":", ""), prefix_spool,
                  hook, m, forward=True)
        why = r.start()
        if why:
            out[m] = {"refused": why}
        else:
            relays[m] = r
            out[m] = {"latencies": [], "acked": 0, "seconds": 0.0, "other": {}}
    order = list(relays)
    for rnd in range(args.cost_rounds):
        turn = order[rnd % len(order):] + order[:rnd % len(order)]
        for m in turn:
            s = Sender(relays[m], f"cost{rnd}{m}", 0, args.cost_connections).run()
            time.sleep(args.cost_seconds)
            s.halt()
            with s.lock:
                ok = [lat for _, st, _, lat in s.answers if st == 200]
                for _, st, _, _ in s.answers:
                    if st != 200:
                        out[m]["other"][str(st)] = out[m]["other"].get(str(st), 0) + 1
            out[m]["latencies"] += ok
            out[m]["acked"] += len(ok)
            out[m]["seconds"] += args.cost_seconds
    for m, r in relays.items():
        r.kill()
        lat = sorted(out[m].pop("latencies"))
        q = statistics.quantiles(lat, n=100) if len(lat) >= 2 else [float("nan")] * 99
        out[m].update(per_second=out[m]["acked"] / out[m]["seconds"],
                      p50_ms=q[49] * 1000, p99_ms=q[98] * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--relay-bin", required=True)
    ap.add_argument("--redis-server", default=shutil.which("redis-server") or "redis-server")
    ap.add_argument("--redis-sentinel",
                    default=shutil.which("redis-sentinel") or "redis-sentinel")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--rate", type=float, default=100, help="events/s posted to each relay")
    ap.add_argument("--before", type=float, default=3, help="seconds of traffic before the kill")
    ap.add_argument("--after", type=float, default=12,
                    help="seconds of traffic after the promotion")
    ap.add_argument("--redis-ack", default=None, help="the relays' redis_ack (default: unset)")
    ap.add_argument("--restart-primary", action="store_true")
    ap.add_argument("--p503", type=float, default=0.3)
    ap.add_argument("--accept-within", type=float, default=10)
    ap.add_argument("--cost-seconds", type=float, default=2)
    ap.add_argument("--cost-rounds", type=int, default=3)
    ap.add_argument("--cost-connections", type=int, default=8)
    ap.add_argument("--deadline", type=float, default=90)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    version = "?"
    primary = Redis(args.redis_server, args.workdir, "primary")
    replica = Redis(args.redis_server, args.workdir, "replica", replica_of=primary.port)
    sentinels: List[Sentinel] = []
    relays: List[Relay] = []
    try:
        version = primary.info("server").get("redis_version", "?")
        end = time.monotonic() + 15
        while replica.info("replication").get("master_link_status") != "up":
            if time.monotonic() > end:
                raise RuntimeError("the replica did not sync")
            time.sleep(0.05)
        sentinels = [Sentinel(args.redis_sentinel, args.workdir, i, primary.port)
                     for i in range(3)]
        end = time.monotonic() + 30
        while not all(s.ready() for s in sentinels):
            if time.monotonic() > end:
                raise RuntimeError("the Sentinels did not see each other and the replica")
            time.sleep(0.1)
        hosts = ",".join(f"127.0.0.1:{s.port}" for s in sentinels)
        spool = f"redis+sentinel://{hosts}/{MASTER}/0?prefix=fo"
        print(f"failover: Redis {version}, primary :{primary.port}, replica :{replica.port}, "
              f"Sentinels {hosts}; load average {load()}", flush=True)

        rx_cost = Receiver(0.0)
        costs = cost(args, spool, rx_cost.url)
        print("failover: the cost of each redis_ack mode (paired, one run; single-event "
              f"batches, {args.cost_connections} connections, {args.cost_rounds} rounds of "
              f"{args.cost_seconds:g} s each; load average {load()}):", flush=True)
        for m, c in costs.items():
            if "refused" in c:
                why = c["refused"]
                print(f"  {m:<11} refused: {why[why.find('redis_ack'):] if 'redis_ack' in why else why}")
            else:
                print(f"  {m:<11} {c['per_second']:8.0f} events/s acknowledged   "
                      f"p50 {c['p50_ms']:6.2f} ms   p99 {c['p99_ms']:6.2f} ms"
                      + (f"   (not 200: {c['other']})" if c["other"] else ""))

        rx = Receiver(args.p503)
        relays = [Relay(args.relay_bin, args.workdir, f"relay-{n}", spool, rx.url,
                        args.redis_ack) for n in "ab"]
        for r in relays:
            why = r.start()
            if why:
                raise RuntimeError(f"a relay did not start: {why}")
        senders = [Sender(r, f"ev-{n}", args.rate, 4).run() for r, n in zip(relays, "ab")]
        time.sleep(args.before)
        primary.kill()
        killed = time.monotonic()
        print(f"failover: primary SIGKILLed; load average {load()}", flush=True)
        promoted = None
        while time.monotonic() - killed < 60:
            if sentinels[0].primary() == replica.port:
                promoted = time.monotonic()
                break
            time.sleep(0.02)
        if promoted is None:
            raise RuntimeError("Sentinel did not promote the replica in 60 s")
        print(f"failover: replica promoted {promoted - killed:.1f} s after the kill",
              flush=True)
        if args.restart_primary:
            primary.start()
        time.sleep(args.after / 2)
        # Relay A dies with events pending (the receiver refuses a share): B takes them over
        # from the new primary.
        relays[0].kill()
        a_killed = time.monotonic()
        time.sleep(args.after / 2)
        for s in senders:
            s.halt()
        again = []
        for s in senders:
            after = [at for _, at in s.acked() if at > promoted]
            again.append(min(after) - promoted if after else None)
        acked: Dict[str, float] = {}
        for s in senders:
            acked.update(dict(s.acked()))
        refused = sum(1 for s in senders for _, st, _, _ in s.answers if st != 200)
        deadline = time.monotonic() + args.deadline
        while time.monotonic() < deadline:
            with rx.lock:
                missing = set(acked) - rx.got
            if not missing:
                break
            time.sleep(0.2)
        with rx.lock:
            lost = sorted(set(acked) - rx.got)
            delivered = len(set(acked) & rx.got)
        took = time.monotonic() - a_killed
        ok = not lost and all(a is not None and a <= args.accept_within for a in again)
        result = {
            "redis_version": version, "redis_ack": args.redis_ack or "auto (default)",
            "restart_primary": args.restart_primary, "load_average": load(),
            "promoted_s": promoted - killed,
            "acknowledging_again_s": again, "acknowledged": len(acked),
            "not_acknowledged": refused, "delivered": delivered, "lost": len(lost),
            "all_delivered_s_after_relay_a_killed": took, "cost": costs,
        }
        print("failover: relays acknowledging again "
              + ", ".join(f"{n}: {a:.2f} s" if a is not None else f"{n}: never"
                          for n, a in zip("ab", again))
              + f" after the promotion (limit {args.accept_within:g} s)")
        print(f"failover: {len(acked):,} acknowledged, {refused:,} not (503 while the "
              f"primary was gone, or A dead), {delivered:,} of them delivered, "
              f"{len(lost)} lost; relay A SIGKILLed too, B done {took:.1f} s later; "
              f"load average {load()}")
        if lost:
            print(f"failover: LOST {lost[:10]}", file=sys.stderr)
        if args.json_out:
            with open(args.json_out, "w") as f:
                json.dump(result, f, indent=2)
        print("failover: " + ("OK" if ok else "FAILED"))
        return 0 if ok else 1
    finally:
        for r in relays:
            r.kill()
        for s in sentinels:
            s.stop()
        primary.kill()
        replica.kill()


if __name__ == "__main__":
    sys.exit(main())
