"""Quick measurements of outbound alone, for iterating on the caller path and memory (the
full comparison is scripts/bench.sh). Uses the outbound wheel installed in the running
Python and the bench receiver (bench/.build/receiver: `cd bench/receiver && go build -o
../.build/receiver .`).

    python bench/quick.py caller  [-r 5] [-n 100000]  runner.py's caller case, R processes
    python bench/quick.py nosend  [-r 5] [-n 100000]  the same calls with send=False
    python bench/quick.py memory  [-r 1] [-n 100000]  runner.py's memory case
    python bench/quick.py spool   [-r 3] [-n 100000]  runner.py's e2e and caller cases without
                                                      and with a spool, alternating
    python bench/quick.py callgrind [-n 20000]        instructions per track() on the caller's
                                                      thread (valgrind), send=False
    python bench/quick.py queue [--max-in-flight M] [--hooks K]
                                                      the memory case in this process, with
                                                      other settings (M=4: without the lane's
                                                      512 stalled requests), RSS by mapping

Prints each run and the median. `callgrind` runs the loop twice (N/10 and N calls) and
reports the difference per call, so start-up and warm-up cancel out.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
RECEIVER = os.path.join(HERE, ".build", "receiver")

LOOP = """
import sys, time, outbound
sys.path.insert(0, {here!r})
from runner import EVENT, USER, PROPS
c = outbound.Client("k", endpoint="http://127.0.0.1:9", send=False, max_queue_size=10**7)
track = c.track
def send(n):
    for _ in range(n):
        track(user_id=USER, event=EVENT, properties=PROPS)
send(1000)
t0 = time.perf_counter()
send({n})
dt = time.perf_counter() - t0
print(dt / {n} * 1e6)
"""


def receiver() -> subprocess.Popen[str]:
    p = subprocess.Popen([RECEIVER, "receiver"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    p.info = json.loads(p.stdout.readline())  # type: ignore[attr-defined]
    return p


def runner(case: str, n: int, rcv: Any, lib: str = "outbound") -> Dict[str, Any]:
    args = [sys.executable, os.path.join(HERE, "runner.py"), case, lib,
            "--port", str(rcv.info["port"]), "-n", str(n)]
    if case == "memory":
        args += ["--stall-port", str(rcv.info["stall_port"])]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr
    return json.loads(line)  # type: ignore[no-any-return]


def reset(rcv: Any) -> None:
    import http.client

    c = http.client.HTTPConnection("127.0.0.1", rcv.info["port"])
    c.request("GET", "/_reset")
    c.getresponse().read()


def report(name: str, xs: List[float], unit: str) -> None:
    shown = ", ".join(f"{x:.2f}" for x in xs)
    print(f"{name}: median {statistics.median(xs):.2f} {unit} (runs: {shown})")


def callgrind(n: int) -> None:
    per = []
    for count in (n // 10, n):
        with tempfile.TemporaryDirectory() as d:
            code = LOOP.format(here=HERE, n=count)
            subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                            f"--callgrind-out-file={d}/cg.out", sys.executable, "-c", code],
                           check=True, capture_output=True)
            # The caller is the main thread: the file for thread 1.
            main = sorted(glob.glob(f"{d}/cg.out*-01"))[0]
            text = open(main).read()
            m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
            assert m, "no totals in callgrind output"
            per.append(int(m.group(1)))
    diff = (per[1] - per[0]) / (n - n // 10)
    print(f"callgrind: {diff:,.0f} instructions per track() on the caller's thread "
          f"({n - n // 10} calls; totals {per[0]:,} and {per[1]:,})")


QUEUE = """
import collections, json, os, re, sys, time
sys.path.insert(0, {here!r})
from runner import EVENT, USER, PROPS, current_rss
import outbound
stall = "http://127.0.0.1:{stall}"
hooks = [f"{{stall}}/hook/{{i}}" for i in range({hooks})]
extra = dict(webhooks=hooks, shared_secret="s") if hooks else {{}}
c = outbound.Client("k", endpoint=stall, max_queue_size=101000, max_in_flight={mif}, **extra)
base = current_rss()
for _ in range({n}):
    c.track(user_id=USER, event=EVENT, properties=PROPS)
time.sleep(1)
grow = current_rss() - base
threads = [l.split()[1] for l in open("/proc/self/status") if l.startswith("Threads")][0]
rss = collections.Counter()
kind = None
for line in open("/proc/self/smaps"):
    m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$", line)
    if m:
        size = int(m.group(2), 16) - int(m.group(1), 16)
        name = m.group(3)
        kind = name if name.startswith("[") else "file" if name else (
            "thread stacks" if size == 2 << 20 else "anonymous")
    elif line.startswith("Rss:"):
        rss[kind] += int(line.split()[1]) * 1024
print(f"queue: max_in_flight={mif} webhooks={hooks}: growth {{grow / 2**20:.1f}} MiB = "
      f"{{grow / {n}:.0f}} B/message, {{threads}} threads; RSS by mapping: " +
      ", ".join(f"{{k}} {{v / 2**20:.1f}} MiB" for k, v in rss.most_common(5)))
os._exit(0)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["caller", "nosend", "memory", "queue", "callgrind", "spool"])
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--max-in-flight", type=int, default=512)
    ap.add_argument("--hooks", type=int, default=0)
    a = ap.parse_args()
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")
    if a.case == "callgrind":
        return callgrind(a.n if a.n != 100_000 else 20_000)
    if a.case == "nosend":
        xs = []
        for _ in range(a.r):
            out = subprocess.run([sys.executable, "-c", LOOP.format(here=HERE, n=a.n)],
                                 capture_output=True, text=True, check=True)
            xs.append(float(out.stdout.strip()))
        return report("nosend µs/call", xs, "µs")
    rcv = receiver()
    try:
        if a.case == "queue":
            code = QUEUE.format(here=HERE, stall=rcv.info["stall_port"], hooks=a.hooks,
                                mif=a.max_in_flight, n=a.n)
            subprocess.run([sys.executable, "-c", code], check=True)
        elif a.case == "caller":
            xs = []
            for _ in range(a.r):
                reset(rcv)
                x = runner("caller", a.n, rcv)
                if not x.get("complete"):
                    raise SystemExit(f"incomplete: {x}")
                xs.append(x["us_per_call"])
            report("caller µs/call", xs, "µs")
        elif a.case == "spool":
            rates: Dict[str, List[float]] = {"outbound": [], "outbound-spool": []}
            cpus: Dict[str, List[float]] = {"outbound": [], "outbound-spool": []}
            calls: Dict[str, List[float]] = {"outbound": [], "outbound-spool": []}
            for _ in range(a.r):
                for lib in rates:
                    reset(rcv)
                    x = runner("e2e", a.n, rcv, lib)
                    if not x.get("complete"):
                        raise SystemExit(f"incomplete: {x}")
                    rates[lib].append(x["msgs_per_s"] / 1000)
                    cpus[lib].append(x["cpu_s"] * 100_000 / a.n)
                    reset(rcv)
                    x = runner("caller", a.n, rcv, lib)
                    if not x.get("complete"):
                        raise SystemExit(f"incomplete: {x}")
                    calls[lib].append(x["us_per_call"])
            for lib in rates:
                report(f"{lib}: e2e k msg/s", rates[lib], "k msg/s")
                report(f"{lib}: CPU-s per 100,000", cpus[lib], "CPU-s")
                report(f"{lib}: caller µs/call", calls[lib], "µs")
            ratio = statistics.median(rates["outbound-spool"]) / statistics.median(rates["outbound"])
            print(f"spool / memory only: {ratio:.0%} (target: at least 50%)")
        else:
            for _ in range(a.r):
                reset(rcv)
                x = runner("memory", a.n, rcv)
                grow = x["rss_after"] - x["rss_before"]
                print(f"memory: growth {grow / 2**20:.1f} MiB = {grow / a.n:.0f} B/message, "
                      f"peak RSS {x['maxrss'] / 2**20:.1f} MiB, stats {x.get('stats')}")
    finally:
        assert rcv.stdin is not None
        rcv.stdin.close()
        rcv.wait()


if __name__ == "__main__":
    main()
