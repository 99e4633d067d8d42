"""The on-disk spool through the installed wheel, with real processes: SIGKILL after the
messages were flushed, a receiver down for a process's whole life, and pre-fork workers of
which some are killed (the live ones take over the dead ones' files)."""

from __future__ import annotations

import ast
import collections
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import outbound


class Sink:
    """A receiver on 127.0.0.1 answering `status`; counts every id it took (2xx)."""

    def __init__(self) -> None:
        self.status = 503
        self.taken: "collections.Counter[str]" = collections.Counter()
        self.lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = sink.status
                if status == 200:
                    ids = [m["messageId"] for m in body["batch"]] if "batch" in body \
                        else [body["messageId"]]
                    with sink.lock:
                        sink.taken.update(ids)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, ids: "set[str]", timeout: float) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if ids <= set(self.taken):
                    return True
            time.sleep(0.05)
        return False


@pytest.fixture
def sink() -> Iterator[Sink]:
    s = Sink()
    yield s
    s.server.shutdown()
    s.server.server_close()


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


PRELUDE = textwrap.dedent("""
    import json, os, sys, time, outbound
    url, spool, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    def client(**kw):
        return outbound.Client("wk", endpoint=url, webhooks=[url + "/hook"], spool=spool,
                               max_queue_size=50_000, proxy_from_env=False, **kw)
""")

# Accepts n messages, flushes them to disk (delivery fails: 503 or a dead port), prints
# their ids and READY, then waits to be killed.
ACCEPT_AND_WAIT = PRELUDE + textwrap.dedent("""
    c = client()
    ids = [c.track(user_id=f"u{i}", event="Spooled") for i in range(n)]
    assert not c.flush(timeout=3)
    print(json.dumps(ids), flush=True)
    print("READY", flush=True)
    time.sleep(120)
""")

# Accepts n messages against a dead receiver, closes (they stay in the spool), reports.
ACCEPT_AND_CLOSE = PRELUDE + textwrap.dedent("""
    c = client()
    ids = [c.track(user_id=f"u{i}", event="Spooled") for i in range(n)]
    c.close(timeout=0.5)
    print(json.dumps({"ids": ids, "stats": c.stats}), flush=True)
""")

# Delivers what the spool holds, then reports.
RESUME = PRELUDE + textwrap.dedent("""
    got = []
    c = client(on_outcome=lambda mid, kind, detail: got.append(kind))
    end = time.monotonic() + 60
    while time.monotonic() < end and (len(got) < n or c.stats["queued"] + c.stats["in_flight"]):
        time.sleep(0.05)
    c.close(timeout=5)
    print(json.dumps({"outcomes": got.count("delivered"), "stats": c.stats}), flush=True)
""")


def run(script: str, *args: str, timeout: float = 120) -> Dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                         timeout=timeout)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_sigkill_after_flush_loses_none_of_10000_messages(sink: Sink, tmp_path: Path) -> None:
    spool = str(tmp_path / "spool")
    child = subprocess.Popen([sys.executable, "-c", ACCEPT_AND_WAIT, sink.url, spool, "10000"],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    ids = set(json.loads(child.stdout.readline()))
    assert child.stdout.readline().strip() == "READY"
    assert len(ids) == 10_000
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert not sink.taken, "nothing was delivered before the kill (the receiver said 503)"

    sink.status = 200
    report = run(RESUME, sink.url, spool, "10000")
    assert report["stats"]["resumed"] == 10_000, report
    assert report["outcomes"] == 10_000, report
    assert sink.wait_for(ids, 10)
    # Ingestion and the webhook each take every id; any more is a duplicate we can know of.
    duplicates = sum(n - 2 for n in sink.taken.values() if n > 2)
    print(f"10,000 resumed after SIGKILL: {duplicates} duplicates at the receiver")
    assert set(sink.taken) == ids
    assert os.listdir(spool) == [], "delivered: nothing left in the spool"


def test_a_receiver_down_for_one_process_is_served_by_the_next(sink: Sink,
                                                               tmp_path: Path) -> None:
    spool = str(tmp_path / "spool")
    first = run(ACCEPT_AND_CLOSE, _dead_url(), spool, "1000")
    assert first["stats"]["spooled"] == 1000, first
    assert first["stats"]["dropped"] == 0, first
    # The inspection command of docs/python.md, as written there, on what close left.
    docs = (Path(__file__).resolve().parents[2] / "docs" / "python.md").read_text()
    snippet = re.search(r"python3 -c '(.*?)' \\\n", docs, re.S)
    assert snippet, "docs/python.md: the spool inspection command is gone"
    [db] = [f for f in os.listdir(spool) if f.endswith(".db")]
    code = snippet.group(1).replace("\n  ", "\n")  # as rendered: the list item's indent goes
    shown = subprocess.run([sys.executable, "-c", code, os.path.join(spool, db)],
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    pending, oldest, ingest, hook = ast.literal_eval(shown.stdout)
    assert (pending, ingest, hook) == (1000, 1000, 1000) and oldest > 0, shown.stdout
    sink.status = 200
    report = run(RESUME, sink.url, spool, "1000")
    assert report["outcomes"] == 1000, report
    assert set(sink.taken) == set(first["ids"])


# A pre-fork server: the master makes one client, then forks 3 workers (each gets a client of
# its own through the fork hook, and its own spool file); all 4 accept and flush `n` messages
# each, print their pid and READY, then deliver what they hold and adopt dead siblings' files
# until told to stop (stdin closes).
PREFORK = PRELUDE + textwrap.dedent("""
    c = client()
    workers = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            workers = None
            break
        workers.append(pid)
    ids = [c.track(user_id=f"u{i}", event="Forked") for i in range(n)]
    c.flush(timeout=2)
    # Four processes share stdout: a line longer than PIPE_BUF (4 KiB) would interleave
    # with another's, so the ids go to a file and only the short pid line to the pipe.
    with open(f"{spool}.{os.getpid()}.json", "w") as f:
        json.dump(ids, f)
    # One write(2) per line: print() makes two (the number, then the newline) when Python
    # runs unbuffered (PYTHONUNBUFFERED=1), and two workers' lines then interleave
    # ("83768375" was read once).
    os.write(1, f"{os.getpid()}\\n".encode())
    sys.stdin.read()
    closed = c.close(timeout=30)
    # What close saw, for the test's message when a spool file is left behind.
    with open(f"{spool}.{os.getpid()}.closed", "w") as f:
        f.write(f"close returned {closed}; {c.stats}")
    if workers is None:
        os._exit(0)
    for w in workers:
        try:
            os.waitpid(w, 0)
        except ChildProcessError:
            pass
""")


def test_prefork_workers_share_a_spool_and_the_living_adopt_the_dead(sink: Sink,
                                                                     tmp_path: Path) -> None:
    spool = str(tmp_path / "spool")
    master = subprocess.Popen([sys.executable, "-c", PREFORK, sink.url, spool, "500"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert master.stdout is not None and master.stdin is not None
    workers: List[Dict[str, Any]] = []
    for _ in range(4):
        pid = int(master.stdout.readline())
        with open(f"{spool}.{pid}.json") as f:
            workers.append({"pid": pid, "ids": json.load(f)})
    pids = {w["pid"] for w in workers}
    assert len(pids) == 4 and master.pid in pids
    files = [f for f in os.listdir(spool) if f.endswith(".db")]
    assert len(files) == 4, f"one spool file per process: {files}"
    all_ids = {i for w in workers for i in w["ids"]}
    assert len(all_ids) == 2000
    killed = [w["pid"] for w in workers if w["pid"] != master.pid][:2]
    for pid in killed:
        os.kill(pid, signal.SIGKILL)
    sink.status = 200
    # The two living processes deliver their own and, within a few seconds, the dead ones'.
    assert sink.wait_for(all_ids, 60), f"{len(all_ids - set(sink.taken))} ids never arrived"
    master.stdin.close()
    master.wait(90)
    left = [f for f in os.listdir(spool) if f.endswith(".db")]
    closes = {pid: open(f"{spool}.{pid}.closed").read()
              for pid in pids - set(killed) if os.path.exists(f"{spool}.{pid}.closed")}
    assert left == [], f"spool files left {left}; killed {killed}; the living's close: {closes}"


def test_a_second_client_on_one_spool_names_the_path(tmp_path: Path) -> None:
    spool = tmp_path / "one"
    first = outbound.Client("wk", spool=spool, send=False)
    with pytest.raises(outbound.SpoolError) as info:
        outbound.Client("wk", spool=spool, send=False)
    assert info.value.path is not None and "one" in info.value.path
    first.close()
    outbound.Client("wk", spool=spool, send=False).close()
