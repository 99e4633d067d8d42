"""What a hostile request costs the relay: the CPU time of the worst body of
500,000 bytes of each shape, before and after the write key, run by scripts/relay-hostile.sh.

The relay runs on 127.0.0.1 with one browser source (`wk_web`, the write key anyone can read
in a page) and a second source holding 1,999 more keys (2,000 configured keys: a `writeKey`
is looked up among all of them). Each case is one request on a fresh connection; its cost is
the CPU time of the relay's request threads (`relay-io`: the runtime's workers and its
blocking pool, where bodies are read, parsed and events encoded), from
/proc/PID/task/*/schedstat (nanoseconds) before the request and after its answer. The core's
own threads (spool writer, delivery) are not counted: they work for accepted events, and a
hostile body has few.

Shapes (each as large as fits in 500,000 bytes, raw and gzipped):

  many_keys    62,498 distinct short keys in one object (the body, or one event of a batch)
  long_keys    keys of 100 bytes sharing a 96-byte prefix; two keys of 250 KB
  deep         arrays and objects nested 127 levels, repeated
  wide         {"batch":[0,0,...]}, [{},{},...], [[],[],...]; an event with a 250,000-element array
  write_key    a 500 KB writeKey in the body (2,000 keys configured)
  gzip         each of the above gzipped (Content-Encoding: gzip)

Each is sent to /v1/track and /v1/batch, with no key, an unknown key and the browser key,
and once with a trailing comma (invalid JSON). The printed table has, per shape, the worst
case (median of --repeat runs), its status and answer size, and the relay's peak RSS growth.
Exits non-zero when a case is over --limit-ms (full mode) or the relay stops answering.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

BODY = 500_000
BROWSER_KEY = "wk_web"


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


class Relay:
    def __init__(self, binary: str, workdir: str) -> None:
        keys = ", ".join(json.dumps(f"wk_other_{i:04}_{'k' * 24}") for i in range(1999))
        toml = f"""listen = "127.0.0.1:0"
data_dir = "data"
allowed_networks = ["127.0.0.0/8"]
request_timeout = 30

[[sources]]
name = "web"
write_keys = ["{BROWSER_KEY}"]
allowed_origins = ["*"]
spool = false
[[sources.webhooks]]
url = "http://127.0.0.1:9/hook"

[[sources]]
name = "other"
write_keys = [{keys}]
spool = false
[[sources.webhooks]]
url = "http://127.0.0.1:9/hook"
"""
        cfg = os.path.join(workdir, "relay.toml")
        with open(cfg, "w") as f:
            f.write(toml)
        self.log = open(os.path.join(workdir, "relay.log"), "wb")
        self.proc = subprocess.Popen([binary, "--config", cfg], stdout=subprocess.PIPE,
                                     stderr=self.log, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        host, port = self.proc.stdout.readline().decode().strip().rsplit(":", 1)
        self.addr = (host, int(port))

    def io_cpu_ns(self) -> Dict[int, int]:
        """CPU time (ns) of each of the relay's request threads now."""
        out = {}
        base = f"/proc/{self.proc.pid}/task"
        for tid in os.listdir(base):
            try:
                if open(f"{base}/{tid}/comm").read().strip() != "relay-io":
                    continue
                out[int(tid)] = int(open(f"{base}/{tid}/schedstat").read().split()[0])
            except OSError:
                pass  # the thread ended meanwhile
        return out

    def peak_rss_kib(self) -> int:
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        return 0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def request(addr: Tuple[str, int], path: str, body: bytes, headers: Dict[str, str]) -> Tuple[int, int]:
    """POSTs on a new connection; (status, answer bytes)."""
    head = f"POST {path} HTTP/1.1\r\nHost: relay\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection(addr, timeout=120) as s:
        s.sendall(head.encode() + body)
        got = bytearray()
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    status = int(got.split(b" ", 2)[1]) if got.startswith(b"HTTP/1.1 ") else 0
    return status, len(got)


def fill(prefix: str, item, suffix: str, limit: int = BODY) -> str:
    """prefix + items (item(i), comma-separated) + suffix, as many as fit in `limit` bytes."""
    parts, size, i = [], len(prefix) + len(suffix), 0
    while True:
        piece = item(i)
        if size + len(piece) + 1 > limit:
            break
        parts.append(piece)
        size += len(piece) + 1
        i += 1
    return prefix + ",".join(parts) + suffix


def short_key(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = ""
    for _ in range(3):
        out = letters[i % 26] + out
        i //= 26
    return out + (str(i) if i else "")


def shapes() -> Dict[str, List[Tuple[str, str]]]:
    """shape -> [(variant, JSON text without its closing brace handled by the caller)]."""
    deep_array = "[" * 126 + "]" * 126
    deep_object = '{"a":' * 126 + "0" + "}" * 126
    prefix96 = "p" * 96
    half = BODY // 2 - 20
    return {
        "many_keys": [
            ("body", fill("{", lambda i: f'"{short_key(i)}":0', "}")),
            ("event", fill('{"batch":[{', lambda i: f'"{short_key(i)}":0', "}]}")),
            ("context", fill('{"type":"track","userId":"u","event":"E","context":{',
                             lambda i: f'"{short_key(i)}":0', "}}")),
        ],
        "long_keys": [
            ("shared_prefix", fill("{", lambda i: f'"{prefix96}{i:04}":0', "}")),
            ("event_prefix", fill('{"batch":[{', lambda i: f'"{prefix96}{i:04}":0', "}]}")),
            ("two_250kb", '{"' + "k" * half + '":0,"' + "k" * (half - 1) + 'j":0}'),
            ("dup_250kb", '{"' + "k" * half + '":0,"' + "k" * half + '":1}'),
        ],
        "deep": [
            ("arrays", fill('{"batch":[', lambda i: deep_array, "]}")),
            ("objects", fill('{"batch":[', lambda i: deep_object, "]}")),
            ("in_event", fill('{"batch":[{"type":"track","userId":"u","event":"E","properties":{"x":[',
                              lambda i: deep_array, "]}}]}")),
        ],
        "wide": [
            ("zeros", fill('{"batch":[', lambda i: "0", "]}")),
            ("empty_objects", fill('{"batch":[', lambda i: "{}", "]}")),
            ("empty_arrays", fill('{"batch":[', lambda i: "[]", "]}")),
            ("tracks_no_event", fill('{"batch":[', lambda i: '{"type":"track","userId":"u"}', "]}")),
            ("property_array", fill('{"type":"track","userId":"u","event":"E","properties":{"x":[',
                                    lambda i: "0", "]}}")),
        ],
        "write_key": [
            ("500kb", '{"batch":[],"writeKey":"' + "w" * (BODY - 30) + '"}'),
        ],
    }


def with_key(text: str, key: Optional[str]) -> str:
    """The body with `writeKey` set (first field), unless it has one or `key` is None."""
    if key is None or '"writeKey"' in text:
        return text
    return '{"writeKey":' + json.dumps(key) + "," + text[1:] if text != "{}" else text


def cases():
    """(shape, name, path, body bytes, headers)."""
    keys = {"no_key": None, "unknown_key": "wk_nope", "browser_key": BROWSER_KEY}
    for shape, variants in shapes().items():
        for variant, text in variants:
            for key_name, key in keys.items():
                paths = ["/v1/track", "/v1/batch"]
                for path in paths:
                    headers: Dict[str, str] = {"Content-Type": "text/plain"}
                    body = text.encode()
                    if key is not None:
                        # The key goes in Basic auth when the body has no room for it.
                        candidate = with_key(text, key).encode()
                        if len(candidate) <= BODY:
                            body = candidate
                        else:
                            cred = base64.b64encode(f"{key}:".encode()).decode()
                            headers["Authorization"] = f"Basic {cred}"
                    name = f"{variant} {key_name} {path}"
                    yield shape, name, path, body, headers
                    if path == "/v1/batch" and body.endswith(b"}"):
                        yield shape, name + " trailing-comma", path, body[:-1] + b",}", headers
                    gz = gzip.compress(body, 6)
                    yield "gzip", f"{shape}:{name}", path, gz, dict(headers, **{"Content-Encoding": "gzip"})


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--relay-bin", required=True)
    p.add_argument("--repeat", type=int, default=5, help="runs per case; the median counts")
    p.add_argument("--limit-ms", type=float, default=20.0, help="worst CPU per request allowed")
    p.add_argument("--smoke", action="store_true",
                   help="each case once, no limit checked (a dev build): checks the script works")
    p.add_argument("--json-out")
    a = p.parse_args()
    repeat = 1 if a.smoke else a.repeat
    work = tempfile.mkdtemp(prefix="outbound-hostile-")
    relay = Relay(a.relay_bin, work)
    print(f"--- hostile_cost: {os.cpu_count()} cores, load average {loadavg()} at the start; "
          f"relay {a.relay_bin}")
    worst: Dict[str, Tuple[float, str, int, int]] = {}
    rows = []
    failed = False
    try:
        # Warm up: the first request pays for lazily made things (the metrics registry, ...).
        request(relay.addr, "/v1/batch", b'{"batch":[]}', {})
        rss_idle = relay.peak_rss_kib()
        for shape, name, path, body, headers in cases():
            costs = []
            for _ in range(repeat):
                before = relay.io_cpu_ns()
                status, size = request(relay.addr, path, body, headers)
                after = relay.io_cpu_ns()
                costs.append(sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e6)
                if status == 0:
                    print(f"no answer to {shape} {name}", file=sys.stderr)
                    failed = True
            ms = statistics.median(costs)
            rows.append({"shape": shape, "case": name, "bytes": len(body), "status": status,
                         "answer_bytes": size, "cpu_ms": round(ms, 3)})
            if shape not in worst or ms > worst[shape][0]:
                worst[shape] = (ms, name, status, size)
        rss_peak = relay.peak_rss_kib()
        alive = request(relay.addr, "/v1/batch", b'{"batch":[]}', {})[0] != 0
    finally:
        relay.stop()
    print(f"{'shape':<10} {'worst CPU':>10}  {'status':>6} {'answer':>9}  case")
    for shape, (ms, name, status, size) in worst.items():
        over = "" if a.smoke or ms <= a.limit_ms else f"  OVER {a.limit_ms} ms"
        failed |= bool(over)
        print(f"{shape:<10} {ms:>7.2f} ms  {status:>6} {size:>7} B  {name}{over}")
    print(f"{len(rows)} cases, median of {repeat} each; relay peak RSS {rss_idle // 1024} MiB idle -> "
          f"{rss_peak // 1024} MiB after all; load average {loadavg()} at the end")
    if a.smoke:
        print("smoke: a dev build, one run each: the figures are no measurement")
    if not alive:
        print("the relay stopped answering", file=sys.stderr)
        failed = True
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"loadavg_end": loadavg(), "limit_ms": a.limit_ms, "repeat": repeat,
                       "worst": {k: {"cpu_ms": round(v[0], 3), "case": v[1], "status": v[2],
                                     "answer_bytes": v[3]} for k, v in worst.items()},
                       "cases": rows}, f, indent=1)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
