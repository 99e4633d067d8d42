"""The benchmark orchestrator (run by scripts/bench.sh; see BENCHMARKS.md).

Starts one receiver on 127.0.0.1, then runs every case for every library in alternation
(round 1: each library once, in a rotating order; round 2: ...), each run in its own process,
all against that receiver. Writes bench/results/latest.json and bench/results/ratios.png and
prints the table. Exits non-zero if any run failed (a crash, a timeout, a missing message),
or if two runs compared at equal batch sizes did not use the same batch size.

Every comparison with a peer is made twice, so neither side's batch size decides it: at
equal batch sizes (the most messages one request carries: outbound's `flush_at` set to the
peer's default, 100 for the Python peers and 250 for analytics-go v3 and v2), and default
against default (outbound's 20 against the peer's own), each row labelled. A variant `LIB@B` is LIB run with batch size B.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY_PEERS = ["segment", "posthog"]
PEER_NAMES = {
    "outbound": "outbound",
    "segment": "segment-analytics-python",
    "posthog": "posthog",
    "go": "analytics-go v3",
    "outbound-go": "outbound (Go package)",
    "go-v2": "analytics-go v2 (v2.0.0)",
    "outbound-go-v2": "outbound (Go v2 package)",
    "outbound-spool": "outbound with a spool",
}
# Each peer's default batch size, and the outbound variant run at it: (peer, ours at equal
# batch size, ours at its default). The runs report the batch size they used, and the
# summary refuses a pair whose sizes differ.
PY_PAIRS = [("segment", "outbound@100", "outbound"), ("posthog", "outbound@100", "outbound"),
            ("go", "outbound@250", "outbound")]
GO_PAIRS = [("go", "outbound-go@250", "outbound-go"), ("go-v2", "outbound-go-v2@250", "outbound-go-v2")]
CALLER_LIBS = ["outbound@100", "outbound", "segment", "posthog", "outbound-spool"]
E2E_LIBS = ["outbound@100", "outbound@250", "outbound", "segment", "posthog", "outbound-spool"]
MEMORY_LIBS = ["outbound@100", "outbound", "segment", "posthog"]


def split(variant: str) -> Tuple[str, int]:
    """("outbound", 100) for "outbound@100"; batch 0: the library's default."""
    lib, _, batch = variant.partition("@")
    return lib, int(batch or 0)


def name(variant: str, batch: Optional[int] = None) -> str:
    """A row's label: the library and the batch size it ran with (`batch`: as measured)."""
    lib, b = split(variant)
    size = batch or b
    if not size:
        return PEER_NAMES[lib]
    return f"{PEER_NAMES[lib]}, batch {size}" + ("" if b else " (its default)")


# go_rounds: the Go programs' end-to-end rounds. A round of the four takes about 2 s and one
# program's rate moves by about ±10 % between rounds on a 2-core machine, so five rounds made
# the ≥ 2× verdict flip between runs of the same code; fifteen, compared round by round.
FULL = dict(rounds=5, e2e_rounds=5, go_rounds=15, hook_rounds=3, caller_n=100_000, e2e_n=100_000, mem_n=100_000,
            hook_n=20_000, load_s=3.0, cap_s=3.0, run_timeout=600.0)
SMOKE = dict(rounds=1, e2e_rounds=1, go_rounds=1, hook_rounds=1, caller_n=1_000, e2e_n=1_000, mem_n=1_000,
             hook_n=200, load_s=0.3, cap_s=0.3, run_timeout=30.0)

failures: List[str] = []


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Receiver:
    def __init__(self, binary: str) -> None:
        self.proc = subprocess.Popen([binary, "receiver"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        info = json.loads(self.proc.stdout.readline())
        self.port: int = info["port"]
        self.stall_port: int = info["stall_port"]
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path: str) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"receiver {path}: {resp.status}")
            return json.loads(body)
        finally:
            conn.close()

    def reset(self) -> Dict[str, Any]:
        return self.get("/_reset")  # type: ignore[no-any-return]

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def run_json(cmd: List[str], label: str, timeout: float) -> Optional[Dict[str, Any]]:
    """Run one measurement process; its last stdout line is its JSON result."""
    env = dict(os.environ, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    for k in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(k, None)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        failures.append(f"{label}: timed out after {timeout:.0f} s")
        log(f"  FAIL {label}: timed out")
        return None
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    res: Optional[Dict[str, Any]] = None
    if lines:
        try:
            res = json.loads(lines[-1])
        except json.JSONDecodeError:
            res = None
    if p.returncode != 0 or res is None or "error" in res:
        why = (res or {}).get("error") or (p.stderr.strip().splitlines() or ["no output"])[-1]
        if res is not None and res.get("complete") is False:
            why = f"incomplete: receiver has {res.get('received')} of the expected ids"
        failures.append(f"{label}: exit {p.returncode}: {why}")
        log(f"  FAIL {label}: exit {p.returncode}: {why}")
        if p.stderr.strip():
            log("    " + "\n    ".join(p.stderr.strip().splitlines()[-15:]))
        return None
    return res


def med(xs: List[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def spread(xs: List[float]) -> Optional[float]:
    """(max - min) / median, the run-to-run spread."""
    return (max(xs) - min(xs)) / statistics.median(xs) if len(xs) > 1 and statistics.median(xs) else None


def steal_seconds() -> float:
    """CPU time the hypervisor gave to others (all CPUs), from /proc/stat."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def loadavg() -> List[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> Dict[str, Any]:
    cpu = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for ln in out.splitlines():
            if ln.startswith("Model name:"):
                cpu = ln.split(":", 1)[1].strip()
    except OSError:
        pass
    mem = 0
    with open("/proc/meminfo") as f:
        for ln in f:
            if ln.startswith("MemTotal:"):
                mem = int(ln.split()[1]) * 1024
    return {"nproc": os.cpu_count(), "cpu": cpu, "mem_bytes": mem, "kernel": platform.release(),
            "python": platform.python_version()}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--receiver-bin", required=True)
    ap.add_argument("--go-bin", default="")
    ap.add_argument("--outbound-go-bin", default="", help="bench/outbound-go, built against liboutbound")
    ap.add_argument("--go-v2-bin", default="", help="bench/go-v2: analytics-go v2 (the proxy's v2.0.0)")
    ap.add_argument("--only-go", action="store_true",
                    help="only the end-to-end rows of the Go clients (outbound's two packages, analytics-go v3 and v2)")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--versions", default="{}", help="JSON of library versions (from bench.sh)")
    a = ap.parse_args()
    P = SMOKE if a.smoke else FULL
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    runner = str(HERE / "runner.py")
    wrk = shutil.which("wrk")
    if not a.smoke:
        # Let the load of our own build (just before, in bench.sh) settle: at most 2 minutes.
        settle_until = time.time() + 120
        while os.getloadavg()[0] > 0.7 and time.time() < settle_until:
            log(f"waiting for the load average to settle: {loadavg()}")
            time.sleep(15)
    started = time.time()
    load_start = loadavg()
    steal_start = steal_seconds()

    rcv = Receiver(a.receiver_bin)
    log(f"receiver on {rcv.url} (stall port {rcv.stall_port}); load average {load_start}")
    res: Dict[str, Any] = {
        "mode": ("smoke" if a.smoke else "full") + (", Go rows only" if a.only_go else ""),
        "only_go": a.only_go,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "versions": json.loads(a.versions),
        "params": P,
        "load_average_start": load_start,
        "runs": {"caller": [], "e2e": [], "memory": [], "webhooks": [], "limit": [], "capacity": []},
    }
    runs = res["runs"]

    def rotate(xs: List[str], r: int) -> List[str]:
        return xs[r % len(xs):] + xs[:r % len(xs)]

    def with_receiver(r: Optional[Dict[str, Any]], before: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        if r is not None:
            r["receiver"] = after = rcv.get("/_stats")
            r["receiver_cpu_s"] = after["cpu_s"] - before["cpu_s"]
        return r

    def py_run(case: str, variant: str, n: int, **kw: Any) -> Optional[Dict[str, Any]]:
        before = rcv.reset()
        lib, batch = split(variant)
        cmd = [py, runner, case, lib, "--port", str(rcv.port), "-n", str(n),
               "--timeout", str(P["run_timeout"] * 0.8), "--batch", str(batch)]
        for k, v in kw.items():
            cmd += [f"--{k.replace('_', '-')}", str(v)]
        r = run_json(cmd, f"{case}/{variant}" + (f"/{kw['urls']}url" if "urls" in kw else ""),
                     P["run_timeout"])
        if r is not None:
            r["lib"] = variant
        return with_receiver(r, before)

    def load(url: str, seconds: float, conns: int, body: Optional[str] = None,
             headers: Optional[Dict[str, str]] = None, batch: int = 0) -> Optional[Dict[str, Any]]:
        cmd = [a.receiver_bin, "load", "-url", url, "-c", str(conns), "-d", str(seconds)]
        tmp = None
        if batch:
            cmd += ["-batch", str(batch)]
        else:
            tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            tmp.write(body or "")
            tmp.close()
            cmd += ["-body", tmp.name]
        for k, v in (headers or {}).items():
            cmd += ["-header", f"{k}: {v}"]
        try:
            return run_json(cmd, f"load/{conns}c", seconds + 30)
        finally:
            if tmp:
                os.unlink(tmp.name)

    def wrk_run(url: str, seconds: float, conns: int, body: str, headers: Dict[str, str]) -> Optional[Dict[str, Any]]:
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
            f.write('wrk.method = "POST"\n')
            f.write(f"wrk.body = {json.dumps(body)}\n")
            f.write('wrk.headers["Content-Type"] = "application/json"\n')
            for k, v in headers.items():
                f.write(f"wrk.headers[{json.dumps(k)}] = {json.dumps(v)}\n")
            f.write('done = function(summary, latency, requests)\n'
                    '  io.write(string.format("WRKJSON %d %d %d\\n", summary.requests, summary.duration,'
                    ' summary.errors.status + summary.errors.connect + summary.errors.read'
                    ' + summary.errors.write + summary.errors.timeout))\nend\n')
            script = f.name
        try:
            p = subprocess.run([wrk, "-t1", f"-c{conns}", f"-d{max(1, round(seconds))}s", "-s", script, url],
                               capture_output=True, text=True, timeout=seconds + 30)
        finally:
            os.unlink(script)
        for ln in p.stdout.splitlines():
            if ln.startswith("WRKJSON"):
                n, us, errs = (int(x) for x in ln.split()[1:])
                return {"requests": n, "failed": errs, "seconds": us / 1e6, "rps": (n - errs) / (us / 1e6),
                        "connections": conns, "tool": "wrk"}
        failures.append(f"wrk: no result ({p.stderr.strip()[-200:]})")
        return None

    # -- receiver capacity: unique-id batches from the load generator ----------------------
    log("-- receiver capacity")
    for conns in (() if a.only_go else (2, 8)):
        before = rcv.reset()
        r = with_receiver(load(f"{rcv.url}/v1/batch", P["cap_s"], conns, batch=100), before)
        if r:
            runs["capacity"].append(r)
            log(f"   {conns} connections: {r['ids_per_s']:,.0f} ids/s ({r['rps']:,.0f} batches/s)")

    # -- Python caller cost ----------------------------------------------------------------
    log("-- caller cost")
    for r in range(0 if a.only_go else P["rounds"]):
        for lib in rotate(CALLER_LIBS, r):
            x = py_run("caller", lib, P["caller_n"])
            if x:
                runs["caller"].append(x)
                log(f"   round {r + 1} {lib}: {x['us_per_call']:.2f} us/call")

    # -- end to end (Python peers and the Go peer) -----------------------------------------
    log("-- end to end")
    # outbound@100 and outbound@250: outbound at the Python peers' and analytics-go's batch
    # sizes (the equal-size rows); outbound: its default 20 (default against default).
    # outbound-go-v2: the same program as outbound-go, through bindings/go/v2 (-api v2).
    # The Go programs take -batch (0: the library's default).
    go_cmds = {lib: cmd for lib, cmd in (("go", [a.go_bin]), ("outbound-go", [a.outbound_go_bin]),
                                         ("go-v2", [a.go_v2_bin]),
                                         ("outbound-go-v2", [a.outbound_go_bin, "-api", "v2"])) if cmd[0]}
    go_bins = {v: go_cmds[split(v)[0]] + ["-batch", str(split(v)[1])]
               for pair in GO_PAIRS for v in pair if split(v)[0] in go_cmds}
    # outbound-spool: the cost of durable delivery (the spool's target: end to end against
    # memory only, the caller's cost unchanged within noise).
    e2e_libs = ([] if a.only_go else E2E_LIBS) + list(go_bins)
    # The Go programs go on alone after the others' rounds (go_rounds ≥ e2e_rounds).
    for r in range(max(P["e2e_rounds"], P["go_rounds"] if go_bins else 0)):
        libs = e2e_libs if r < P["e2e_rounds"] else list(go_bins)
        for lib in rotate(libs, r):
            if lib in go_bins:
                # The Go programs (bench/go, bench/go-v2, bench/outbound-go) take the same flags.
                before = rcv.reset()
                x = with_receiver(run_json(go_bins[lib] + ["-endpoint", rcv.url, "-n", str(P["e2e_n"]),
                                            "-timeout", str(P["run_timeout"] * 0.8)],
                                           f"e2e/{lib}", P["run_timeout"]), before)
                if x:
                    x["lib"] = lib
                    x["round"] = r  # the Go ratios compare each round's pair
                    # analytics-go v2.0.0 loses the messages still in its channel at Close
                    # (bench/go-v2): its rate counts only those that arrived.
                    x["msgs_per_s"] = x.get("received", x["n"]) / x["seconds"]
                    x["body_bytes"] = x["receiver"]["bytes"]
            else:
                x = py_run("e2e", lib, P["e2e_n"])
            if x:
                runs["e2e"].append(x)
                log(f"   round {r + 1} {lib}: {x['msgs_per_s']:,.0f} msg/s, cpu {x['cpu_s']:.2f} s, "
                    f"peak RSS {x['maxrss'] / 2**20:.1f} MiB; receiver busy {x['receiver_cpu_s'] / x['seconds']:.0%} of a core")

    # -- webhooks against the loopback limit ------------------------------------------------
    log("-- webhooks")
    for r in range(0 if a.only_go else P["hook_rounds"]):
        for urls in (1, 5):
            x = py_run("webhooks", "outbound", P["hook_n"], urls=urls)
            if x:
                runs["webhooks"].append(x)
                log(f"   round {r + 1} outbound {urls} URL(s): {x['deliveries_per_s']:,.0f} deliveries/s, "
                    f"cpu {x['cpu_s']:.2f} s; receiver busy {x['receiver_cpu_s'] / x['seconds']:.0%} of a core")
            if urls == 1:
                try:
                    sample = rcv.get("/_sample?kind=hook")
                except RuntimeError:
                    sample = None
                    failures.append("webhooks: no sample body at the receiver")
        if not sample:
            continue
        body = sample["body"]
        hdrs = {k: v for k, v in sample["headers"].items()
                if k.lower() in ("user-agent", "x-signature")}
        for conns in (4, 16):
            before = rcv.reset()
            y = with_receiver(load(f"{rcv.url}/hook/1", P["load_s"], conns, body=body, headers=hdrs), before)
            if y:
                y["tool"] = "bench load generator"
                runs["limit"].append(y)
                log(f"   round {r + 1} loopback limit, load generator {conns}c: {y['rps']:,.0f} req/s")
            if wrk:
                before = rcv.reset()
                y = with_receiver(wrk_run(f"{rcv.url}/hook/1", P["load_s"], conns, body, hdrs), before)
                if y:
                    runs["limit"].append(y)
                    log(f"   round {r + 1} loopback limit, wrk {conns}c: {y['rps']:,.0f} req/s")
        res["webhook_body_bytes"] = len(body.encode())

    # -- memory: 100,000 messages queued behind a receiver that never answers --------------
    log("-- memory")
    for r in range(0 if a.only_go else 1 if a.smoke else 2):
        for lib in rotate(MEMORY_LIBS, r):
            x = py_run("memory", lib, P["mem_n"], stall_port=rcv.stall_port)
            if x:
                runs["memory"].append(x)
                log(f"   round {r + 1} {lib}: peak RSS {x['maxrss'] / 2**20:.1f} MiB "
                    f"(+{(x['rss_after'] - x['rss_before']) / 2**20:.1f} MiB for the queue)")

    rcv.stop()
    res["load_average_end"] = loadavg()
    res["wall_seconds"] = round(time.time() - started, 1)
    res["steal_seconds"] = round(steal_seconds() - steal_start, 2)
    res["wrk"] = bool(wrk)
    res["summary"] = summarize(res)
    res["failures"] = failures
    # A Go-only run never overwrites the results of a whole run.
    result_file = "go-latest.json" if a.only_go else "latest.json"
    (out_dir / result_file).write_text(json.dumps(res, indent=2) + "\n")
    table = render_table(res)
    print(table)
    if a.only_go:
        log(f"wrote {out_dir / result_file}")
    else:
        try:
            plot(res, out_dir / "ratios.png")
            log(f"wrote {out_dir / result_file} and {out_dir / 'ratios.png'}")
        except Exception as e:  # noqa: BLE001
            failures.append(f"plot: {type(e).__name__}: {e}")
    if failures:
        log(f"{len(failures)} failure(s):\n  " + "\n  ".join(failures))
        return 1
    return 0


def batch_of(xs: List[Dict[str, Any]], variant: str) -> Optional[int]:
    """The batch size the runs of `variant` used (each run reports it); a failure when they
    disagree."""
    sizes = {x.get("batch") for x in xs}
    if len(sizes) > 1:
        failures.append(f"{variant}: runs used different batch sizes {sorted(map(str, sizes))}")
    return sizes.pop() if len(sizes) == 1 else None


def same_batch(s: Dict[str, Any], case: str, ours: str, peer: str) -> bool:
    """Whether the equal-size pair did run at one batch size (a failure if not)."""
    a, b = s[case][ours].get("batch"), s[case][peer].get("batch")
    if a != b:
        failures.append(f"{case}: {ours} ran at batch {a}, {peer} at {b}: not an equal-size pair")
    return bool(a == b)


def summarize(res: Dict[str, Any]) -> Dict[str, Any]:
    runs = res["runs"]
    s: Dict[str, Any] = {"caller": {}, "e2e": {}, "webhooks": {}, "memory": {}, "ratios": {}}
    for lib in sorted({x["lib"] for x in runs["caller"]}):
        xs = [x for x in runs["caller"] if x["lib"] == lib]
        us = [x["us_per_call"] for x in xs]
        s["caller"][lib] = {"us_per_call": med(us), "spread": spread(us), "rounds": len(xs),
                            "batch": batch_of(xs, lib)}
    for lib in sorted({x["lib"] for x in runs["e2e"]}):
        xs = [x for x in runs["e2e"] if x["lib"] == lib]
        s["e2e"][lib] = {
            "us_per_call": med([x["calls_s"] / x["n"] * 1e6 for x in xs]) if "calls_s" in xs[0] else None,
            "msgs_per_s": med([x["msgs_per_s"] for x in xs]),
            "spread": spread([x["msgs_per_s"] for x in xs]),
            "cpu_s": med([x["cpu_s"] for x in xs]),
            "maxrss": max(x["maxrss"] for x in xs),
            "receiver_busy": med([x["receiver_cpu_s"] / x["seconds"] for x in xs]),
            # HTTP requests the receiver took for the 100,000 messages (batches).
            "requests": med([x["receiver"]["requests"] for x in xs]) if "receiver" in xs[0] else None,
            "lost": max(x.get("lost", 0) for x in xs),
            "rounds": len(xs),
            "batch": batch_of(xs, lib),
        }
    # Outbound against each peer: at equal batch sizes, and default against default.
    for case in ("caller", "e2e"):
        c = s[case]
        for kind, pick in (("equal", 1), ("default", 2)):
            out = s["ratios"].setdefault(case, {}).setdefault(kind, {})
            for pair in PY_PAIRS:
                peer, ours = pair[0], pair[pick]
                if peer not in c or ours not in c or (kind == "equal" and not same_batch(s, case, ours, peer)):
                    continue
                if case == "caller":
                    out[peer] = {"ours": ours, "ratio": c[peer]["us_per_call"] / c[ours]["us_per_call"]}
                else:
                    out[peer] = {"ours": ours, "throughput": c[ours]["msgs_per_s"] / c[peer]["msgs_per_s"],
                                 "cpu": c[peer]["cpu_s"] / c[ours]["cpu_s"] if c[ours]["cpu_s"] else None,
                                 "rss": c[peer]["maxrss"] / c[ours]["maxrss"]}
    # The Go packages against analytics-go v3 and v2: at equal batch sizes ("go", "go-v2"),
    # and default against default ("go-default", "go-v2-default").
    by_round = {(x["lib"], x["round"]): x for x in runs["e2e"] if "round" in x}
    for peer, equal, default in GO_PAIRS:
        for key, ours in ((peer, equal), (f"{peer}-default", default)):
            og, ag = s["e2e"].get(ours), s["e2e"].get(peer)
            if not (og and ag) or (key == peer and not same_batch(s, "e2e", ours, peer)):
                continue
            # Each round's ratio of the pair: the two ran back to back in that round, so what
            # slowed the machine for a while slows both (the verdict's figure).
            pairs = [(by_round[(ours, r)], by_round[(peer, r)]) for (lib, r) in by_round
                     if lib == ours and (peer, r) in by_round]
            tp = sorted(o["msgs_per_s"] / p["msgs_per_s"] for o, p in pairs)
            cp = sorted(p["calls_s"] / o["calls_s"] for o, p in pairs if o.get("calls_s") and p.get("calls_s"))
            s[key] = {"ours": ours, "peer": peer, "throughput_ratio": og["msgs_per_s"] / ag["msgs_per_s"],
                      "paired_throughput_ratio": med(tp), "paired_min": tp[0] if tp else None,
                      "paired_max": tp[-1] if tp else None, "pairs": len(tp),
                      "paired_below_2": sum(1 for t in tp if t < 2),
                      "paired_call_ratio": med(cp),
                      "cpu_ratio": ag["cpu_s"] / og["cpu_s"] if og["cpu_s"] else None,
                      "rss_ratio": ag["maxrss"] / og["maxrss"],
                      "call_ratio": ag["us_per_call"] / og["us_per_call"] if og.get("us_per_call") else None}
    lim = [x["rps"] for x in runs["limit"]]
    # The limit is the best any generator reached at any connection count in any round: the
    # strictest yardstick for the webhook target.
    limit = max(lim) if lim else None
    s["webhooks"]["limit_rps_max"] = limit
    s["webhooks"]["limit_runs"] = [{"tool": x.get("tool"), "connections": x["connections"], "rps": x["rps"]}
                                   for x in runs["limit"]]
    for urls in (1, 5):
        xs = [x["deliveries_per_s"] for x in runs["webhooks"] if x["urls"] == urls]
        if xs:
            busy = [x["receiver_cpu_s"] / x["seconds"] for x in runs["webhooks"] if x["urls"] == urls]
            s["webhooks"][f"{urls}"] = {"deliveries_per_s": med(xs), "spread": spread(xs),
                                        "of_limit": med(xs) / limit if limit else None,
                                        "receiver_busy": med(busy)}
    if runs["limit"]:
        best = max(runs["limit"], key=lambda x: x["rps"])
        s["webhooks"]["limit_receiver_busy"] = best["receiver_cpu_s"] / best["seconds"]
    cap = [x["ids_per_s"] for x in runs["capacity"]]
    s["receiver_capacity_ids_per_s"] = max(cap) if cap else None
    bytes_per_msg = None
    ob_e2e = [x for x in runs["e2e"] if x["lib"] == "outbound" and x.get("received")]
    if ob_e2e:
        x = ob_e2e[0]
        bytes_per_msg = x["body_bytes"] / x["received"]
    s["memory"]["wire_bytes_per_message"] = bytes_per_msg
    for lib in MEMORY_LIBS:
        xs = [x for x in runs["memory"] if x["lib"] == lib]
        if xs:
            grow = max(x["rss_after"] - x["rss_before"] for x in xs)
            n = xs[0]["n"]
            s["memory"][lib] = {"maxrss": max(x["maxrss"] for x in xs), "queue_rss": grow,
                                "bytes_per_message": grow / n, "batch": batch_of(xs, lib),
                                "vs_wire": (grow / n) / bytes_per_msg if bytes_per_msg else None}
    return s


def fmt(x: Optional[float], spec: str = ",.0f") -> str:
    return "n/a" if x is None else format(x, spec)


def render_go_table(res: Dict[str, Any]) -> List[str]:
    s = res["summary"]
    L = ["| Go, end to end (first call → receiver has every id) | msg/s (median) | spread | CPU s | peak RSS MiB "
         "| µs per call | requests |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for peer, equal, default in GO_PAIRS:
        for lib in (equal, default, peer):
            e = s["e2e"].get(lib)
            if not e:
                continue
            lost = f" (lost {e['lost']:,} at Close)" if e.get("lost") else ""
            L.append(f"| {name(lib, e.get('batch'))}{lost} | {e['msgs_per_s']:,.0f} | {fmt(e['spread'], '.0%')} | "
                     f"{e['cpu_s']:.2f} | {e['maxrss'] / 2**20:.1f} | {fmt(e.get('us_per_call'), '.2f')} | "
                     f"{fmt(e.get('requests'))} |")
    L += ["", "| outbound's Go package ÷ analytics-go | batch sizes | × throughput (median of the rounds' ratios) "
          "| range | × µs per call | × CPU | × RSS |", "|---|---|---:|---:|---:|---:|---:|"]
    for key, what in (("go", "v3 package ÷ analytics-go v3"), ("go-v2", "v2 package ÷ analytics-go v2")):
        for k, how in ((key, "equal"), (f"{key}-default", "default against default")):
            g = s.get(k)
            if not g:
                continue
            sizes = f"{s['e2e'][g['ours']].get('batch')} and {s['e2e'][g['peer']].get('batch')}"
            L.append(f"| {what}, {how} | {sizes} | {fmt(g.get('paired_throughput_ratio'), '.2f')} | "
                     f"{fmt(g.get('paired_min'), '.2f')}–{fmt(g.get('paired_max'), '.2f')} | "
                     f"{fmt(g.get('paired_call_ratio') or g.get('call_ratio'), '.2f')} | "
                     f"{fmt(g.get('cpu_ratio'), '.2f')} | {fmt(g.get('rss_ratio'), '.2f')} |")
    # The Go packages' goals against their analytics-go counterparts (end to end, per call;
    # the v2 package's memory too), judged at equal batch sizes; the throughput verdict is the
    # median of the rounds' own ratios (each pair ran back to back).
    for key, what in (("go", "Go package ÷ analytics-go v3"), ("go-v2", "Go v2 package ÷ analytics-go v2")):
        g = s.get(key)
        if not g:
            continue
        tr = g.get("paired_throughput_ratio") or g["throughput_ratio"]
        cr = g.get("paired_call_ratio") or g.get("call_ratio") or 0
        fast = tr >= 2 and cr > 1
        L.append("")
        L.append(f"{what}, equal batch sizes ({s['e2e'][g['ours']].get('batch')}): end to end {tr:.2f}× "
                 f"(median of {g.get('pairs', 1)} rounds' ratios, "
                 f"{fmt(g.get('paired_min'), '.2f')}–{fmt(g.get('paired_max'), '.2f')}, "
                 f"{g.get('paired_below_2', 0)} below 2×; ratio of the medians {g['throughput_ratio']:.2f}×; goal ≥ 2×), "
                 f"µs per call {cr:.2f}× lower — {'MET' if fast else 'MISSED'}"
                 + ("" if key == "go" else f"; peak RSS {g['rss_ratio']:.2f}× lower (goal > 1) — "
                    + ("MET" if g["rss_ratio"] > 1 else "MISSED")))
    return L


def render_spool_table(res: Dict[str, Any]) -> List[str]:
    """The cost of durable delivery: outbound with and without a spool, same run, same batch."""
    s = res["summary"]
    mc, sc = s["caller"].get("outbound"), s["caller"].get("outbound-spool")
    me, se = s["e2e"].get("outbound"), s["e2e"].get("outbound-spool")
    if not (mc and sc and me and se):
        return []
    return ["",
            "| Durable delivery (outbound, same run, batch 20 each) | caller µs/call (median) | spread | end to end msg/s (median) | spread | CPU s | peak RSS MiB |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| memory only | {mc['us_per_call']:.2f} | {fmt(mc['spread'], '.0%')} | {me['msgs_per_s']:,.0f} | "
            f"{fmt(me['spread'], '.0%')} | {me['cpu_s']:.2f} | {me['maxrss'] / 2**20:.1f} |",
            f"| with a spool | {sc['us_per_call']:.2f} | {fmt(sc['spread'], '.0%')} | {se['msgs_per_s']:,.0f} | "
            f"{fmt(se['spread'], '.0%')} | {se['cpu_s']:.2f} | {se['maxrss'] / 2**20:.1f} |",
            f"| spool ÷ memory only | {sc['us_per_call'] / mc['us_per_call']:.2f} | | "
            f"{se['msgs_per_s'] / me['msgs_per_s']:.0%} | | {se['cpu_s'] / me['cpu_s']:.2f} | |"]


def ratio_rows(s: Dict[str, Any], case: str) -> List[str]:
    """outbound against each peer, at equal batch sizes and default against default."""
    L = []
    for kind, how in (("equal", "equal batch sizes"), ("default", "default against default")):
        for peer, r in s["ratios"].get(case, {}).get(kind, {}).items():
            sizes = f"{s[case][r['ours']].get('batch')} and {s[case][peer].get('batch')}"
            if case == "caller":
                L.append(f"| {PEER_NAMES[peer]} ÷ outbound, {how} | {sizes} | {r['ratio']:.1f} |")
            else:
                L.append(f"| outbound ÷ {PEER_NAMES[peer]}, {how} | {sizes} | {r['throughput']:.1f} | "
                         f"{fmt(r['cpu'], '.1f')} | {r['rss']:.1f} |")
    return L


def render_table(res: Dict[str, Any]) -> str:
    s = res["summary"]
    L: List[str] = []
    L.append(f"outbound benchmarks ({res['mode']}) {res['date']}  nproc={res['machine']['nproc']} "
             f"load average at start {res['load_average_start']}, at end {res['load_average_end']} (the bench's own); "
             f"{res['wall_seconds']:.0f} s; CPU steal {res['steal_seconds']:.1f} s")
    L.append("")
    if res.get("only_go"):
        return "\n".join(L + render_go_table(res))
    L.append("| Python caller cost (track) | µs per call (median) | spread |")
    L.append("|---|---:|---:|")
    for lib in CALLER_LIBS[:-1]:
        c = s["caller"].get(lib)
        if c:
            L.append(f"| {name(lib, c.get('batch'))} | {c['us_per_call']:.2f} | {fmt(c['spread'], '.0%')} |")
    L += ["", "| caller cost | batch sizes | × lower for outbound |", "|---|---|---:|"] + ratio_rows(s, "caller")
    L.append("")
    L.append("| End to end (first call → receiver has every id) | msg/s (median) | spread | CPU s | peak RSS MiB | requests |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for lib in E2E_LIBS[:-1] + ["go"]:
        e = s["e2e"].get(lib)
        if e:
            L.append(f"| {name(lib, e.get('batch'))} | {e['msgs_per_s']:,.0f} | {fmt(e['spread'], '.0%')} | "
                     f"{e['cpu_s']:.2f} | {e['maxrss'] / 2**20:.1f} | {fmt(e.get('requests'))} |")
    L += ["", "| end to end | batch sizes | outbound × throughput | × CPU | × RSS |", "|---|---|---:|---:|---:|"]
    L += ratio_rows(s, "e2e")
    if s["e2e"].get("outbound-go"):
        L.append("")
        L.extend(render_go_table(res))
    L.extend(render_spool_table(res))
    L.append("")
    w = s["webhooks"]
    L.append("| Webhooks (signed, loopback) | deliveries/s (median) | spread | of loopback limit |")
    L.append("|---|---:|---:|---:|")
    L.append(f"| loopback limit (best of load generator{' / wrk' if res.get('wrk') else ''}, 4 and 16 connections) | {fmt(w.get('limit_rps_max'))} | | 100% |")
    for urls in (1, 5):
        x = w.get(str(urls))
        if x:
            L.append(f"| outbound → {urls} URL{'s' if urls > 1 else ''} | {x['deliveries_per_s']:,.0f} | "
                     f"{fmt(x['spread'], '.0%')} | {fmt(x['of_limit'], '.0%')} |")
    L.append("")
    m = s["memory"]
    n = res["params"]["mem_n"]
    L.append(f"| Memory: {n:,} messages queued, receiver never answers | peak RSS MiB | queue growth MiB | bytes/message | × wire bytes |")
    L.append("|---|---:|---:|---:|---:|")
    for lib in MEMORY_LIBS:
        x = m.get(lib)
        if x:
            L.append(f"| {name(lib, x.get('batch'))} | {x['maxrss'] / 2**20:.1f} | {x['queue_rss'] / 2**20:.1f} | "
                     f"{x['bytes_per_message']:,.0f} | {fmt(x['vs_wire'], '.2f')} |")
    L.append(f"| (wire bytes of one message in a batch body) | | | {fmt(m.get('wire_bytes_per_message'))} | 1.0 |")
    L.append("")
    cap = s.get("receiver_capacity_ids_per_s")
    best = max((e["msgs_per_s"] for e in s["e2e"].values()), default=None)
    busy = {lib: e.get("receiver_busy") for lib, e in s["e2e"].items()}
    L.append(f"Receiver capacity: {fmt(cap)} unique ids/s (load generator, 100-message batches); "
             f"fastest library end to end: {fmt(best)} msg/s. Receiver CPU while serving (share of one core): "
             + ", ".join(f"{name(k, s['e2e'][k].get('batch'))} {fmt(v, '.0%')}" for k, v in busy.items())
             + f"; at the loopback limit {fmt(w.get('limit_receiver_busy'), '.0%')}.")
    L.append("")
    L.append("Targets:" if res["mode"] == "full" else
             "Targets (smoke mode: debug build and tiny counts, so these say nothing about performance):")
    for line in targets(res):
        L.append(f"- {line}")
    return "\n".join(L)


def targets(res: Dict[str, Any]) -> List[str]:
    """The library's targets (numbered) and the spool's, judged on this run's medians; each
    comparison with a peer at equal batch sizes, then default against default."""
    s = res["summary"]
    out = []

    def line(text: str, ok: bool) -> None:
        out.append(f"{text} — " + ("MET" if ok else "MISSED"))

    for kind, how in (("equal", "equal batch sizes"), ("default", "default against default")):
        r = s["ratios"].get("caller", {}).get(kind, {}).get("segment")
        oc = s["caller"].get(r["ours"], {}).get("us_per_call") if r else None
        sizes = f"{s['caller'][r['ours']].get('batch')} and {s['caller']['segment'].get('batch')}" if r else "n/a"
        line(f"1. caller cost ≤ 2.5 µs per call and ≥ 18× below segment-analytics-python, {how} "
             f"({sizes}): {fmt(oc, '.2f')} µs, {fmt(r and r['ratio'], '.1f')}×",
             bool(oc and r and oc <= 2.5 and r["ratio"] >= 18))
    e100 = s["e2e"].get("outbound@100", {}).get("msgs_per_s")
    line(f"2. end to end at batch 100 ≥ 250,000 msg/s: {fmt(e100)} msg/s", bool(e100 and e100 >= 250_000))
    for kind, how, floor in (("equal", "equal batch sizes", 0), ("default", "default against default", 200_000)):
        r = s["ratios"].get("e2e", {}).get(kind, {}).get("go")
        e = s["e2e"].get(r["ours"], {}).get("msgs_per_s") if r else None
        sizes = f"{s['e2e'][r['ours']].get('batch')} and {s['e2e']['go'].get('batch')}" if r else "n/a"
        floor_text = f" ≥ {floor:,} msg/s and" if floor else ""
        line(f"2. end to end{floor_text} ≥ 2× analytics-go v3, {how} ({sizes}): "
             f"{fmt(e)} msg/s, {fmt(r and r['throughput'], '.2f')}×",
             bool(e and r and e >= floor and r["throughput"] >= 2))
    for urls in (1, 5):
        w = s["webhooks"].get(str(urls), {}).get("of_limit")
        line(f"3. signed webhooks to {urls} URL{'s' if urls > 1 else ''} ≥ 50% of the loopback limit: "
             f"{fmt(w, '.0%')}", bool(w and w >= 0.5))
    v = s["memory"].get("outbound", {}).get("vs_wire")
    line(f"4. memory ≤ 1.3× the wire bytes per queued message: {fmt(v, '.2f')}×", bool(v and v <= 1.3))
    me, se = s["e2e"].get("outbound"), s["e2e"].get("outbound-spool")
    if me and se:
        r = se["msgs_per_s"] / me["msgs_per_s"]
        line(f"(spool) end to end with a spool ≥ 50% of memory only: {r:.0%}", r >= 0.5)
    return out


def plot(res: Dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = res["summary"]
    short = {"segment": "segment-analytics-python", "posthog": "posthog", "go": "analytics-go (Go)"}
    rows = []  # (label, value, is_target_metric): equal batch sizes, then default against default
    for kind, how in (("equal", "equal batch"), ("default", "defaults")):
        ratios = s["ratios"]
        for lib, r in ratios.get("caller", {}).get(kind, {}).items():
            rows.append((f"caller cost: {short[lib]} ÷ outbound ({how})", r["ratio"], lib == "segment"))
        for lib, r in ratios.get("e2e", {}).get(kind, {}).items():
            rows.append((f"end-to-end msg/s: outbound ÷ {short[lib]} ({how})", r["throughput"], lib == "segment"))
            if r["cpu"]:
                rows.append((f"end-to-end CPU s: {short[lib]} ÷ outbound ({how})", r["cpu"], False))
        g = s.get("go" if kind == "equal" else "go-default", {})
        for key, label in (("throughput_ratio", f"end-to-end msg/s: outbound-go ÷ analytics-go ({how})"),
                           ("cpu_ratio", f"end-to-end CPU s: analytics-go ÷ outbound-go ({how})")):
            if g.get(key):
                rows.append((label, g[key], False))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 0.5 * max(len(rows), 4) + 1.8),
                                   gridspec_kw={"width_ratios": [3, 1]})
    ys = list(range(len(rows)))[::-1]
    vals = [v for _, v, _ in rows]
    colors = ["#2e7d32" if v >= 10 else ("#e0913a" if v >= 1 else "#c62828") for v in vals]
    ax1.barh(ys, vals, color=colors, edgecolor=["black" if t else "none" for _, _, t in rows])
    ax1.set_xscale("log")
    ax1.set_yticks(ys)
    ax1.set_yticklabels([lbl for lbl, _, _ in rows], fontsize=8)
    lo = min(vals + [0.5]) / 1.5
    hi = max(vals + [20.0]) * 2
    ax1.set_xlim(lo, hi)
    ax1.axvline(1, color="#555", linewidth=0.8)
    ax1.axvline(10, color="#b22", linestyle="--", linewidth=1)
    ax1.text(10, len(rows) - 0.4, " target 10×", color="#b22", fontsize=8, va="bottom")
    for y, v in zip(ys, vals):
        ax1.text(v * 1.05, y, f"{v:.1f}×", va="center", fontsize=8)
    ax1.set_xlabel("outbound advantage (×, log scale; >1 = outbound better; outlined = a target's own metric)")
    w = s["webhooks"]
    wl, wv = [], []
    for urls in (1, 5):
        x = w.get(str(urls), {}).get("of_limit")
        if x is not None:
            wl.append(f"{urls} URL{'s' if urls > 1 else ''}")
            wv.append(x * 100)
    ax2.bar(range(len(wv)), wv, color=["#2e7d32" if v >= 50 else "#c62828" for v in wv])
    ax2.axhline(50, color="#b22", linestyle="--", linewidth=1)
    ax2.text(len(wv) - 0.5, 51, "target 50%", color="#b22", fontsize=8, ha="right", va="bottom")
    ax2.set_ylim(0, max([100.0] + [v * 1.15 for v in wv]))
    ax2.set_xticks(range(len(wv)))
    ax2.set_xticklabels(wl)
    ax2.set_ylabel("% of the loopback limit")
    ax2.set_title("signed webhook deliveries/s", fontsize=9)
    for i, v in enumerate(wv):
        ax2.text(i, v + 1, f"{v:.0f}%", ha="center", va="bottom", fontsize=8)
    fig.suptitle(f"outbound benchmarks ({res['mode']} run, {res['date'][:10]}, "
                 f"{res['machine']['nproc']} cores, load {res['load_average_start'][0]})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
