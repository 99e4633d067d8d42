"""The Redis spool through the installed wheel: `spool="redis://..."` against a
real redis-server (scripts/redis-env.sh installs it; each test starts its own on 127.0.0.1,
AOF in a temp dir). What a process leaves (close, SIGKILL) is delivered by another one."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from test_spool import ACCEPT_AND_CLOSE, ACCEPT_AND_WAIT, RESUME, Sink, run, sink  # noqa: F401


class Redis:
    def __init__(self, tmp: Path) -> None:
        exe = shutil.which("redis-server")
        assert exe, "redis-server is required: run scripts/redis-env.sh"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.argv = [exe, "--bind", "127.0.0.1", "--port", str(self.port), "--dir", str(tmp),
                     "--appendonly", "yes", "--appendfsync", "everysec", "--save", ""]
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL)
        end = time.monotonic() + 10
        while self.cli("PING") != "PONG":
            assert time.monotonic() < end, "redis-server did not start"
            time.sleep(0.05)

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def url(self, prefix: str) -> str:
        return f"redis://127.0.0.1:{self.port}/0?prefix={prefix}"

    def cli(self, *args: str) -> str:
        out = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True,
                             text=True)
        return out.stdout.strip()

    def query(self, *args: str) -> Any:
        """One command over RESP (values as bytes: records are binary)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            s.sendall(b"*%d\r\n" % len(args)
                      + b"".join(b"$%d\r\n%s\r\n" % (len(a.encode()), a.encode())
                                 for a in args))
            return _read_reply(s.makefile("rb"))

    def pending(self, prefix: str) -> int:
        """Messages held in Redis under `prefix`: a commit group's records not marked done
        in its bitmap (layouts 2 and 3), or one per entry of the older layouts."""
        held = 0
        for key in self.query("KEYS", "{%s:*}:s" % prefix):
            key = key.decode()
            progress = key[: -len(":s")] + ":p"
            for entry_id, fields in self.query("XRANGE", key, "-", "+"):
                value = dict(zip(fields[::2], fields[1::2])).get(b"r", b"")
                if value[:1] not in (b"\x02", b"\x03"):
                    held += 1
                    continue
                at = 1
                if value[:1] == b"\x03":  # layout 3: tenant names first
                    names, at = int.from_bytes(value[1:3], "little"), 3
                    for _ in range(names):
                        at += 2 + int.from_bytes(value[at:at + 2], "little")
                count = int.from_bytes(value[at:at + 4], "little")
                done = self.query("HGET", progress, entry_id.decode() + ":d") or b""
                held += sum(1 for i in range(count)
                            if not (i // 8 < len(done) and done[i // 8] >> (i % 8) & 1))
        return held


def _read_reply(f: Any) -> Any:
    line = f.readline()[:-2]
    kind, rest = line[:1], line[1:]
    if kind in (b"+", b":"):
        return rest
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RuntimeError(f"unexpected reply {line!r}")


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[Redis]:
    r = Redis(tmp_path)
    yield r
    r.proc.kill()
    r.proc.wait()


def test_messages_left_by_close_wait_in_redis_for_the_next_client(sink: Sink,  # noqa: F811
                                                                  redis: Redis) -> None:
    spool = redis.url("py")
    left = run(ACCEPT_AND_CLOSE, sink.url, spool, "500")
    assert left["stats"]["spooled"] == 500
    assert redis.pending("py") == 500
    sink.status = 200
    report = run(RESUME, sink.url, spool, "500")
    assert report["outcomes"] == 500
    assert report["stats"]["resumed"] == 500
    assert set(left["ids"]) <= set(sink.taken)
    assert redis.pending("py") == 0


def test_a_sigkilled_process_messages_are_delivered_by_another(sink: Sink,  # noqa: F811
                                                               redis: Redis) -> None:
    spool = redis.url("pykill")
    child = subprocess.Popen([sys.executable, "-c", ACCEPT_AND_WAIT, sink.url, spool, "2000"],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    ids = set(json.loads(child.stdout.readline()))
    assert child.stdout.readline().strip() == "READY"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert redis.pending("pykill") == 2000
    sink.status = 200
    # Taken over once the dead process's heartbeat expires (timeout 5 s + 10 s).
    report = run(RESUME, sink.url, spool, "2000", timeout=120)
    assert report["stats"]["resumed"] == 2000
    assert ids <= set(sink.taken)


def test_a_bad_redis_spool_is_a_spool_error_without_the_password() -> None:
    import outbound
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(outbound.SpoolError) as e:
        outbound.Client("wk", spool=f"redis://app:s3cret@127.0.0.1:{port}/0")
    assert "s3cret" not in str(e.value)
    assert e.value.setting == "spool"


def wait_until(cond: Callable[[], bool], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def test_spool_ok_is_false_while_redis_is_down_and_true_once_it_is_back(
        sink: Sink, redis: Redis, tmp_path: Path) -> None:  # noqa: F811
    import outbound
    assert outbound.Client("wk", send=False).spool_ok, "no spool: always true"
    c = outbound.Client("wk", endpoint=sink.url, spool=redis.url("pyok"), proxy_from_env=False)
    assert c.spool_ok
    redis.kill()
    c.track(user_id="u1", event="While Down")
    assert wait_until(lambda: not c.spool_ok, 15), "a failed commit makes spool_ok false"
    redis.start()
    c.track(user_id="u1", event="Back")
    assert wait_until(lambda: c.spool_ok, 30), "a commit that succeeds makes it true again"
    c.close(timeout=1)


def test_redis_ack_is_checked_and_a_commit_without_its_replica_is_not_acknowledged(
        sink: Sink, redis: Redis) -> None:  # noqa: F811
    import outbound
    with pytest.raises(outbound.ConfigError) as e:
        outbound.Client("wk", spool=redis.url("pyack"), redis_ack="disk")
    assert e.value.setting == "redis_ack"
    # fsync needs WAITAOF (Redis 7.2+): refused, saying so, on an older server.
    version = redis.cli("INFO", "server").split("redis_version:")[1].split()[0]
    older = tuple(int(p) for p in version.split(".")[:2]) < (7, 2)
    try:
        outbound.Client("wk", endpoint=sink.url, spool=redis.url("pyack"),
                        redis_ack="fsync").close(timeout=0)
        assert not older, f"fsync accepted on Redis {version}"
    except outbound.SpoolError as err:
        assert older and "WAITAOF" in str(err), str(err)
    # replicas:1 with no replica: the commit is not acknowledged (spool_ok goes false).
    c = outbound.Client("wk", endpoint=sink.url, spool=redis.url("pyack"),
                        redis_ack="replicas:1", proxy_from_env=False, timeout=1)
    assert c.spool_ok
    c.track(user_id="u1", event="Unconfirmed")
    assert wait_until(lambda: not c.spool_ok, 15), "an unconfirmed commit is not acknowledged"
    c.close(timeout=1)
