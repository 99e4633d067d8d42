"""Instructions the relay executes per request, two builds paired (callgrind): a figure the
machine's load does not move, for comparing the HTTP path of two commits.

    python3 bench/relay/instructions.py BEFORE_BIN AFTER_BIN single|batch|webhook [--rounds N]

Each build runs under `valgrind --tool=callgrind` with a source that forwards to the sink of
`relaybench` (scripts/relay-bench.sh builds it), twice: with few and with many requests (4
connections, keep-alive). The per-request figure is the difference of the two totals over the
difference of the counts, so start-up and shutdown cancel out. `single` is /v1/track with one
event; `batch` is /v1/batch with 100 events (the figure is per request: divide by 100 for an
event); `webhook` is the same batches to a source with one signed webhook, counted once the
sink has every delivery (per request: 100 deliveries, each accepted, spooled, signed, sent
and ended). Under valgrind the SHA-1 of each signature runs without the CPU's SHA
instructions, so `webhook` overstates signing next to a real run. Needs valgrind
(scripts/fault-env.sh installs it)."""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import Served  # noqa: E402

TOOL = os.path.join(HERE, "..", ".build", "relaybench")
AUTH = "Basic " + base64.b64encode(b"wk_fwd:").decode()
CONNECTIONS = 4


def event(i: int) -> dict:
    return {"userId": f"user-{i}", "event": "Order Completed", "messageId": f"m-{i}-{time.time_ns()}",
            "properties": {"revenue": 12.5, "currency": "USD", "items": [{"sku": "a", "n": 2}]},
            "context": {"library": {"name": "analytics-node", "version": "1.0"}}}


def total_instructions(binary: str, kind: str, n: int, work: str) -> int:
    """Runs `binary` under callgrind, sends `n` requests, returns the process's instruction total."""
    sink = Served(TOOL, "sink")
    try:
        os.makedirs(work)
        cfg = os.path.join(work, "relay.toml")
        with open(cfg, "w") as f:
            f.write('listen = "127.0.0.1:0"\ndata_dir = "data"\nallowed_networks = ["127.0.0.0/8"]\n'
                    'forward_allowed_networks = ["127.0.0.0/8"]\n[[sources]]\nname = "fwd"\n'
                    'write_keys = ["wk_fwd"]\nflush_at = 100\nmax_queue_size = 200000\n')
            if kind == "webhook":
                f.write(f'shared_secret = "s3cret"\n[[sources.webhooks]]\nurl = "{sink.url}/hook/one"\n')
            else:
                f.write(f'[sources.forward]\nendpoint = "{sink.url}"\nwrite_key = "fwd"\n')
        out = os.path.join(work, "callgrind.out")
        with open(os.path.join(work, "log"), "wb") as log:
            p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                  binary, "--config", cfg], stdout=subprocess.PIPE, stderr=log, cwd=work)
        host, port = p.stdout.readline().decode().strip().rsplit(":", 1)

        def worker(lo: int, hi: int) -> None:
            c = http.client.HTTPConnection(host, int(port), timeout=120)
            for i in range(lo, hi):
                if kind == "single":
                    path, body = "/v1/track", event(i)
                else:
                    path = "/v1/batch"
                    body = {"batch": [dict(event(i * 100 + j), type="track") for j in range(100)]}
                    if kind == "webhook":
                        # The sink counts deliveries by the number ending each id.
                        for j, e in enumerate(body["batch"]):
                            e["messageId"] = f"m-{i * 100 + j}"
                c.request("POST", path, json.dumps(body).encode(),
                          {"Authorization": AUTH, "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                if r.status != 200:
                    raise SystemExit(f"{binary}: {path} answered {r.status}")

        threads = [threading.Thread(target=worker, args=(n * w // CONNECTIONS, n * (w + 1) // CONNECTIONS))
                   for w in range(CONNECTIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if kind == "webhook":
            deadline = time.time() + 600
            while sink.get("/_stats")["deliveries"] < n * 100:
                if time.time() > deadline:
                    raise SystemExit(f"{binary}: {n * 100} deliveries not made in 600 s")
                time.sleep(0.5)
        time.sleep(2)  # the forward's last batch, so both counts include the same tail
        p.terminate()
        p.wait(300)
        for line in open(out):
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
        raise SystemExit(f"{out}: no totals line")
    finally:
        sink.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("kind", choices=["single", "batch", "webhook"])
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    lo, hi = {"single": (500, 2500), "batch": (20, 120), "webhook": (10, 50)}[a.kind]
    work = tempfile.mkdtemp(prefix="relay-instructions-")
    try:
        print(f"| round | build | instructions a request ({a.kind}) |\n|---|---|---|")
        for r in range(a.rounds):
            for side, binary in (("before", a.before), ("after", a.after)):
                few = total_instructions(binary, a.kind, lo, os.path.join(work, f"{side}-{r}-{lo}"))
                many = total_instructions(binary, a.kind, hi, os.path.join(work, f"{side}-{r}-{hi}"))
                print(f"| {r} | {side} | {(many - few) / (hi - lo):,.0f} |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
