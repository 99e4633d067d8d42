"""One measurement of one library in its own process (so CPU and peak RSS are its own).

    python bench/runner.py CASE LIB --port P [--stall-port S] [-n N] [--urls K] [--batch B]

CASE: caller | e2e | memory | webhooks.
LIB: outbound | outbound-spool (outbound with a spool) | segment | posthog.
--batch: the most messages one request carries (outbound `flush_at`, segment-analytics-python
`upload_size`, posthog `flush_at`); 0, the default: the library's own. The JSON line says the
batch size the run used (`batch`), read back from the client.
Prints one JSON line on stdout and leaves with os._exit (no library's exit hook may wait on
a receiver that does not answer). Run by bench/run.py; the receiver is reset before each run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Tuple

HOST = "127.0.0.1"
EVENT = "Order Completed"
USER = "user-12345"
# A realistic event: 5 properties of mixed types (str, float, int, bool, list).
PROPS: Dict[str, Any] = {
    "order_id": "ord-0001",
    "revenue": 49.99,
    "items": 3,
    "express": True,
    "tags": ["books", "gift"],
}
WARMUP = 1000


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def receiver(port: int, path: str, timeout: float = 30.0) -> Dict[str, Any]:
    # http.client, not urllib: no proxy settings apply to the loopback receiver.
    conn = http.client.HTTPConnection(HOST, port, timeout=timeout + 10)
    try:
        conn.request("GET", path)
        return json.loads(conn.getresponse().read())  # type: ignore[no-any-return]
    finally:
        conn.close()


def wait_for(port: int, n: int, timeout: float) -> Dict[str, Any]:
    return receiver(port, f"/_wait?n={n}&timeout={timeout}", timeout)


# The spool of the outbound-spool case: a fresh directory per run, on the same disk as /tmp,
# deleted when the run ends.
SPOOL_DIR = tempfile.mkdtemp(prefix="outbound-bench-spool-")


def make(lib: str, endpoint: str, max_queue: int, batch: int = 0,
         **extra: Any) -> Tuple[Any, Callable[[int], None], Callable[[], None], int]:
    """(client, send(n): n track calls, flush(), batch size) with each library's defaults
    except the endpoint, a queue big enough that nothing is dropped, and `batch` when not 0:
    the most messages one request carries, set by each library's own setting."""
    if lib in ("outbound", "outbound-spool"):
        import outbound

        if batch:
            extra["flush_at"] = batch
        if lib == "outbound-spool":  # durable delivery: every message committed to disk first
            extra["spool"] = SPOOL_DIR
        c = outbound.Client("bench-write-key" if not extra.get("webhooks") else None,
                            endpoint=endpoint, max_queue_size=max_queue, **extra)
        used = batch or 20  # outbound's default flush_at, also the most a request carries

        def send(n: int) -> None:
            track = c.track
            for _ in range(n):
                track(user_id=USER, event=EVENT, properties=PROPS)

        def flush() -> None:
            if not c.flush(timeout=300):
                raise SystemExit("outbound: flush timed out")

        return c, send, flush, used
    if lib == "segment":
        from segment.analytics import Client

        kw = {"upload_size": batch} if batch else {}
        c = Client("bench-write-key", host=endpoint, max_queue_size=max_queue, **kw)

        def send(n: int) -> None:
            track = c.track
            for _ in range(n):
                track(user_id=USER, event=EVENT, properties=PROPS)

        return c, send, c.flush, c.consumers[0].upload_size
    if lib == "posthog":
        from posthog import Posthog

        kw = {"flush_at": batch} if batch else {}
        c = Posthog("bench-api-key", host=endpoint, max_queue_size=max_queue, **kw)

        def send(n: int) -> None:
            capture = c.capture
            for _ in range(n):
                capture(EVENT, distinct_id=USER, properties=PROPS)

        return c, send, c.flush, c.consumers[0].flush_at
    raise SystemExit(f"unknown library {lib!r}")


def main() -> Dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["caller", "e2e", "memory", "webhooks"])
    ap.add_argument("lib", choices=["outbound", "outbound-spool", "segment", "posthog"])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--stall-port", type=int)
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--urls", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--batch", type=int, default=0)
    a = ap.parse_args()
    endpoint = f"http://{HOST}:{a.port}"
    out: Dict[str, Any] = {"case": a.case, "lib": a.lib, "n": a.n}

    if a.case == "caller":
        # Delivery runs in the background as in an application; warm up, then time n calls.
        _, send, _, out["batch"] = make(a.lib, endpoint, a.n + WARMUP + 1000, a.batch)
        send(WARMUP)
        t0 = time.perf_counter()
        send(a.n)
        dt = time.perf_counter() - t0
        out.update(seconds=dt, us_per_call=dt / a.n * 1e6)
        # Everything accepted must arrive (a drop would flatter the caller cost).
        snap = wait_for(a.port, a.n + WARMUP, a.timeout)
        out.update(complete=snap["complete"], received=snap["unique"])

    elif a.case == "e2e":
        _, send, flush, out["batch"] = make(a.lib, endpoint, a.n + 1000, a.batch)
        cpu0 = cpu_seconds()
        t0 = time.perf_counter()
        send(a.n)
        calls = time.perf_counter() - t0
        flush()
        snap = wait_for(a.port, a.n, a.timeout)
        dt = time.perf_counter() - t0
        out.update(seconds=dt, calls_s=calls, msgs_per_s=a.n / dt, cpu_s=cpu_seconds() - cpu0,
                   maxrss=peak_rss(), complete=snap["complete"], received=snap["unique"],
                   body_bytes=snap["bytes"])

    elif a.case == "webhooks":
        if a.lib != "outbound":
            raise SystemExit("webhooks: outbound only")
        hooks = [f"{endpoint}/hook/{k}" for k in range(1, a.urls + 1)]
        _, send, flush, _ = make(a.lib, endpoint, a.n + 1000, webhooks=hooks,
                                 shared_secret="bench-shared-secret")
        cpu0 = cpu_seconds()
        t0 = time.perf_counter()
        send(a.n)
        flush()
        want = a.n * a.urls
        snap = wait_for(a.port, want, a.timeout)
        dt = time.perf_counter() - t0
        out.update(urls=a.urls, deliveries=want, seconds=dt, deliveries_per_s=want / dt,
                   cpu_s=cpu_seconds() - cpu0, maxrss=peak_rss(), complete=snap["complete"],
                   received=snap["unique"])

    elif a.case == "memory":
        if a.stall_port is None:
            raise SystemExit("memory: --stall-port is required")
        client, send, _, out["batch"] = make(a.lib, f"http://{HOST}:{a.stall_port}", a.n + 1000,
                                             a.batch)
        base = current_rss()
        t0 = time.perf_counter()
        send(a.n)
        calls = time.perf_counter() - t0
        time.sleep(1.0)  # let the background threads pick up and batch what they can
        out.update(calls_s=calls, rss_before=base, rss_after=current_rss(), maxrss=peak_rss())
        if a.lib == "outbound":
            st = client.stats
            out.update(stats=st)
            out["complete"] = st.get("dropped", 0) == 0 and st.get("delivered", 0) == 0
        elif a.lib == "segment":
            out["complete"] = client.queue.qsize() >= a.n - 2 * 100  # minus what a consumer holds
        else:
            out["complete"] = True
    return out


if __name__ == "__main__":
    try:
        result = main()
    except SystemExit as e:
        if e.code not in (0, None):
            print(json.dumps({"error": str(e.code)}), flush=True)
            shutil.rmtree(SPOOL_DIR, ignore_errors=True)
            os._exit(1)
        raise
    except BaseException as e:  # noqa: BLE001 - reported to the orchestrator
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        shutil.rmtree(SPOOL_DIR, ignore_errors=True)
        os._exit(1)
    print(json.dumps(result), flush=True)
    sys.stdout.flush()
    shutil.rmtree(SPOOL_DIR, ignore_errors=True)
    os._exit(0 if result.get("complete", True) else 1)
