#!/usr/bin/env python3
"""redis-server's CPU and memory per spooled message, by layout and commit group size.

Writes 100,000 random 470-byte records to a fresh redis-server on 127.0.0.1 (AOF,
appendfsync everysec) as the spool's commits do, in two layouts: "old" (one XADD per message
inside each commit's MULTI/EXEC: the layout without commit groups) and "grouped"
(one XADD per commit, its records packed into one field, as the spool's layout 2); then removes them (one XDEL per
commit). Groups of 10 (a quiet client: 500 msg/s at 50 commits/s) and of 2,000 (a busy one).
Raw RESP, pipelined, so the client's own cost stays out of the figures. Prints redis-server
CPU µs per message for writing and removing, and `used_memory` bytes per pending message,
3 rounds and medians. Used for the capacity model in ARCHITECTURE.md. Needs redis-server.

    python3 bench/redis_cost.py
"""
import os, socket, subprocess, sys, tempfile, time, statistics

def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str): a = a.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)

class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port)); self.buf = b""
    def send(self, data): self.s.sendall(data)
    def _line(self):
        while b"\r\n" not in self.buf:
            self.buf += self.s.recv(1 << 20)
        l, self.buf = self.buf.split(b"\r\n", 1); return l
    def read(self):
        l = self._line(); t = l[:1]
        if t in (b"+", b"-", b":"):
            if t == b"-": raise RuntimeError(l)
            return l
        if t == b"$":
            n = int(l[1:])
            if n < 0: return None
            while len(self.buf) < n + 2: self.buf += self.s.recv(1 << 20)
            v = self.buf[:n]; self.buf = self.buf[n+2:]; return v
        if t == b"*":
            n = int(l[1:]); return [self.read() for _ in range(max(n, 0))]
        raise RuntimeError(l)

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

# redis-server CPU and memory per message for commit groups of G messages, old layout (one
# XADD per message inside MULTI) vs grouped (one XADD of G fields inside MULTI), then removal
# (one XDEL per commit of its ids / entry). Raw RESP, pipelined; AOF everysec.
def info_mem(c):
    c.send(resp("INFO", "memory")); t = c.read().decode()
    return int([l for l in t.splitlines() if l.startswith("used_memory:")][0].split(":")[1])
def run(layout, G, N=100000):
    d = tempfile.mkdtemp(prefix="gate2-")
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d,
        "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""], stdout=subprocess.DEVNULL)
    for _ in range(100):
        try: c = Conn(port); break
        except OSError: time.sleep(0.05)
    c.send(resp("PING")); c.read()
    recs = [os.urandom(470) for _ in range(N)]; key = "{P:O}:s"
    writes, dels, seq = [], [], 1
    for i in range(0, N, G):
        g = recs[i:i+G]
        if layout == "old":
            cmds = [resp("XADD", key, "0-%d" % (seq + j), "r", r) for j, r in enumerate(g)]
            ids = ["0-%d" % (seq + j) for j in range(len(g))]; seq += len(g)
        else:
            # As the spool's layout 2: the group's records packed into the one field `r`
            # (here each record behind a 4-byte length).
            packed = b"\x02" + b"".join(len(r).to_bytes(4, "little") + r for r in g)
            cmds = [resp("XADD", key, "0-%d" % seq, "r", packed)]; ids = ["0-%d" % seq]; seq += 1
        writes.append((resp("MULTI") + b"".join(cmds) + resp("EXEC"), len(cmds) + 2))
        dels.append((resp("MULTI") + resp("XDEL", key, *ids) + resp("EXEC"), 3))
    m0 = info_mem(c); c0 = cpu(p.pid)
    for data, _ in writes: c.send(data)
    for _, n in writes:
        for _ in range(n): c.read()
    c1 = cpu(p.pid); m1 = info_mem(c)
    for data, _ in dels: c.send(data)
    for _, n in dels:
        for _ in range(n): c.read()
    c2 = cpu(p.pid)
    p.terminate(); p.wait()
    return (c1 - c0) / N * 1e6, (c2 - c1) / N * 1e6, (m1 - m0) / N
res = {}
for r in range(3):
    for layout, G in [("old", 10), ("grouped", 10), ("old", 2000), ("grouped", 2000)]:
        w, x, m = run(layout, G)
        res.setdefault((layout, G), []).append((w, x, m))
        print(f"round {r} {layout:8} G={G:5} write {w:.2f} µs/msg remove {x:.2f} µs/msg memory {m:.0f} B/msg load {open('/proc/loadavg').read().split()[0]}", flush=True)
for k, v in res.items():
    print(k, "medians: write %.2f remove %.2f total %.2f µs/msg, memory %.0f B/msg" % (
        statistics.median(a for a, _, _ in v), statistics.median(b for _, b, _ in v),
        statistics.median(a + b for a, b, _ in v), statistics.median(m for _, _, m in v)))
