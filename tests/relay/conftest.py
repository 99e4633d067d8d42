"""Shared set-up of the relay tests (scripts/test-relay.sh runs them).

Each test starts the real `outbound-relay` binary (OUTBOUND_RELAY_BIN) with a temporary
config: two sources, `alpha` and `beta`, each with its own write keys, shared secret and
webhook on its own real receiver on 127.0.0.1 (tests/python/receiver.py, the receivers the
Python tests use). Senders are the real SDKs; `check_delivery` then counts, per source, the
exact requests that arrived, their bodies' shapes and their signatures.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from receiver import Receiver, Request, start_receiver  # noqa: E402

TOOLS = ROOT / ".tools" / "relay"
NODE_MODULES = TOOLS / "node" / "node_modules"
ADMIN_TOKEN = "adm_SECRET_token_789"
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@dataclass
class Source:
    name: str
    write_keys: List[str]
    secret: str
    receiver: Receiver
    path: str  # the webhook's path at its receiver

    @property
    def key(self) -> str:
        return self.write_keys[0]

    def hooks(self) -> List[Request]:
        return self.receiver.at(self.path)


@dataclass
class Relay:
    proc: subprocess.Popen  # type: ignore[type-arg]
    url: str
    config: Path
    log: Path
    sources: Dict[str, Source] = field(default_factory=dict)

    @property
    def hostport(self) -> str:
        return self.url.split("://", 1)[1]

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait; returns the exit status (SIGKILL after `timeout`)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def relay_bin() -> str:
    path = os.environ.get("OUTBOUND_RELAY_BIN") or str(ROOT / "target" / "debug" / "outbound-relay")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no relay binary at {path} (scripts/test-relay.sh builds it)")
    return path


def toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string for these values


def write_config(path: Path, data_dir: Path, sources: List[Source], origins: List[str],
                 extra: str = "") -> None:
    lines = [
        'listen = "127.0.0.1:0"',
        f"data_dir = {toml_str(str(data_dir))}",
        f"admin_token = {toml_str(ADMIN_TOKEN)}",
        'allowed_networks = ["127.0.0.0/8"]',
        extra,
    ]
    for s in sources:
        lines += [
            "",
            "[[sources]]",
            f"name = {toml_str(s.name)}",
            "write_keys = [" + ", ".join(toml_str(k) for k in s.write_keys) + "]",
            f"shared_secret = {toml_str(s.secret)}",
            "allowed_origins = [" + ", ".join(toml_str(o) for o in origins) + "]",
            "",
            "[[sources.webhooks]]",
            f"url = {toml_str(s.receiver.url + s.path)}",
            f'headers = {{ "X-Source" = {toml_str(s.name)} }}',
        ]
    path.write_text("\n".join(lines) + "\n")


def start_relay(config: Path, log: Path, timeout: float = 30.0) -> Relay:
    """Starts the binary; its first stdout line is host:port."""
    logf = open(log, "ab")
    proc = subprocess.Popen([relay_bin(), "--config", str(config)], stdout=subprocess.PIPE,
                            stderr=logf, stdin=subprocess.DEVNULL)
    logf.close()
    assert proc.stdout is not None
    first: List[bytes] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not first or not first[0].strip():
        proc.kill()
        proc.wait()
        pytest.fail(f"the relay printed no address within {timeout} s; log:\n"
                    + log.read_text(errors="replace")[-4000:])
    addr = first[0].decode().strip()
    assert re.fullmatch(r"127\.0\.0\.1:\d+", addr), f"first stdout line is {addr!r}, not host:port"
    # Keep draining stdout so the relay never blocks on a full pipe.
    threading.Thread(target=lambda: proc.stdout.read(), daemon=True).start()  # type: ignore[union-attr]
    return Relay(proc, f"http://{addr}", config, log)


@pytest.fixture
def receivers() -> Iterator[List[Receiver]]:
    recs = [start_receiver(), start_receiver()]
    yield recs
    for r in recs:
        r.server.shutdown()
        r.server.server_close()


@pytest.fixture
def origins() -> List[str]:
    """Allowed CORS origins of both sources (the browser test adds its page's)."""
    return []


@pytest.fixture
def relay(tmp_path: Path, receivers: List[Receiver], origins: List[str]) -> Iterator[Relay]:
    a, b = receivers
    sources = [
        Source("alpha", ["wk_alpha_1", "wk_alpha_2"], "alpha_SECRET_1", a, "/alpha"),
        Source("beta", ["wk_beta_1"], "beta_SECRET_2", b, "/beta"),
    ]
    config = tmp_path / "relay.toml"
    write_config(config, tmp_path / "data", sources, origins)
    r = start_relay(config, tmp_path / "relay.log")
    r.sources = {s.name: s for s in sources}
    yield r
    status = r.stop()
    if status != 0:
        print(r.log_text(), file=sys.stderr)
    assert status == 0, f"the relay exited {status} on SIGTERM"


# ---------------------------------------------------------------------------------------------
# The plan every SDK sends: per source, a fixed list of calls, some that webhooks must not get.

HIDDEN = {"hidden_all": {"All": False}, "hidden_webhooks": {"Webhooks": False}}


def plan(relay: Relay, tag: str, types: Optional[List[str]] = None,
         key_index: int = 0) -> List[Dict[str, Any]]:
    """Steps {label, key, source, msg}; `msg` is a Segment call (camelCase, as on the wire).
    `types` limits the plain calls (an SDK without `screen`, say)."""
    alpha, beta = relay.sources["alpha"], relay.sources["beta"]
    ak = alpha.write_keys[min(key_index, len(alpha.write_keys) - 1)]
    u = f"{tag}-u1"
    calls: List[Dict[str, Any]] = [
        {"label": "identify", "msg": {"type": "identify", "userId": u,
                                      "traits": {"name": "Ada", "plan": "pro", "logins": 3}}},
        {"label": "track", "msg": {"type": "track", "userId": u, "event": "Order Completed",
                                   "properties": {"orderId": f"{tag}-o1", "total": 99.5}}},
        {"label": "page", "msg": {"type": "page", "userId": u, "name": "Home",
                                  "properties": {"path": "/home", "referrer": "https://ref.example/",
                                                 "title": "Home", "url": "https://shop.example/home"}}},
        {"label": "screen", "msg": {"type": "screen", "userId": u, "name": "Dashboard",
                                    "properties": {"tab": "main"}}},
        {"label": "group", "msg": {"type": "group", "userId": u, "groupId": f"{tag}-g1",
                                   "traits": {"name": "Initech", "employee count": 12}}},
        {"label": "alias", "msg": {"type": "alias", "userId": u, "previousId": f"{tag}-anon"}},
    ]
    if types is not None:
        calls = [c for c in calls if c["msg"]["type"] in types]
    for label, integ in HIDDEN.items():
        calls.append({"label": label, "msg": {"type": "track", "userId": u, "event": f"Hidden {label}",
                                              "properties": {"n": 1}, "integrations": integ}})
    calls.append({"label": "shown_explicit",
                  "msg": {"type": "track", "userId": u, "event": "Shown Explicit", "properties": {"n": 2},
                          "integrations": {"All": False, "Webhooks": True}}})
    steps = [dict(c, key=ak, source="alpha") for c in calls]
    steps.append({"label": "beta_track", "key": beta.key, "source": "beta",
                  "msg": {"type": "track", "userId": f"{tag}-b1", "event": "Beta Event",
                          "properties": {"source": "beta"}}})
    return steps


def check_shape(body: Dict[str, Any]) -> None:
    """The webhook bodies' shapes (docs/receivers.md)."""
    t = body["type"]
    assert TIMESTAMP.match(body.get("timestamp", "")), f"timestamp shape: {body.get('timestamp')!r}"
    if t == "delete":
        assert set(body) == {"type", "userId", "timestamp"}, body
        return
    assert body.get("version") == 1, body
    if t == "alias":
        assert "userId" not in body, body
        assert isinstance(body["Previous ID"], str) and isinstance(body["User ID"], str), body
    else:
        assert isinstance(body.get("userId") or body.get("anonymousId"), str), body
    if t == "page":
        assert isinstance(body["properties"], dict), body
    elif t == "screen":
        assert isinstance(body["name"], str) and isinstance(body["context"], dict), body
    elif t == "identify":
        assert isinstance(body["traits"], dict), body
    elif t == "track":
        assert isinstance(body["event"], str) and isinstance(body["properties"], dict), body
    elif t == "group":
        assert isinstance(body["groupId"], str) and isinstance(body["traits"], dict), body
    else:
        assert t in ("alias",), f"unexpected type {t}"


def verify(secret: str, req: Request) -> None:
    want = hmac.new(secret.encode(), req.body, hashlib.sha1).hexdigest()
    assert req.headers.get("x-signature") == want, (
        f"X-Signature {req.headers.get('x-signature')!r} is not HMAC-SHA1 of the body")
    assert req.headers.get("content-type", "").startswith("application/json")


def check_delivery(relay: Relay, steps: List[Dict[str, Any]], sent: List[Dict[str, Any]],
                   settle: float = 1.5, timeout: float = 30.0,
                   check_fields: bool = True) -> Dict[str, Dict[str, Any]]:
    """Waits until each source's receiver has what it should get, waits `settle` more for
    anything that should not come, then checks exactly: per source the set of messageIds the
    SDK reported (hidden ones excluded), one request each, nothing at the other source's
    receiver, signatures, shapes, and the calls' fields. Returns label -> body."""
    by_label = {s["label"] + "@" + s["source"]: s for s in steps}
    ids: Dict[str, str] = {}
    for line in sent:
        step = next(s for s in steps if s["label"] == line["label"])
        assert line.get("messageId"), f"the SDK reported no messageId for {line}"
        ids[line["messageId"]] = step["label"] + "@" + step["source"]
    assert sorted(ids.values()) == sorted(by_label), f"sender reported {sorted(ids.values())}"
    want: Dict[str, set] = {name: set() for name in relay.sources}
    for mid, lab in ids.items():
        s = by_label[lab]
        if s["label"] not in HIDDEN:
            want[s["source"]].add(mid)

    def arrived(_: Receiver) -> bool:
        return all(len(relay.sources[n].hooks()) >= len(want[n]) for n in want)

    ok = relay.sources["alpha"].receiver.wait_for(arrived, timeout)
    time.sleep(settle)
    got: Dict[str, Dict[str, Any]] = {}
    for name, src in relay.sources.items():
        reqs = src.hooks()
        others = [r.path for r in src.receiver.requests if r.path != src.path]
        assert not others, f"{name}'s receiver got requests at {others}"
        mids = [r.json.get("messageId") for r in reqs]
        missing = want[name] - set(mids)
        extra = [ids.get(m, m) for m in mids if m not in want[name]]
        assert ok and not missing and not extra and len(mids) == len(want[name]), (
            f"source {name}: expected {len(want[name])} webhook requests, got {len(mids)}; "
            f"missing {[ids[m] for m in missing]}, unexpected {extra}\nrelay log:\n{relay.log_text()}")
        for r in reqs:
            verify(src.secret, r)
            assert r.headers.get("x-source") == name
            body = r.json
            check_shape(body)
            got[ids[body["messageId"]]] = body
    if check_fields:
        for lab, body in got.items():
            msg = by_label[lab]["msg"]
            assert body["type"] == msg["type"], (lab, body)
            if msg["type"] == "alias":
                assert body["Previous ID"] == msg["previousId"] and body["User ID"] == msg["userId"], body
                continue
            assert body["userId"] == msg["userId"], (lab, body)
            for k in ("event", "groupId", "name"):
                if k in msg and msg["type"] != "page":
                    assert body[k] == msg[k], (lab, k, body)
            for k in ("traits", "properties"):
                for pk, pv in msg.get(k, {}).items():
                    assert body[k].get(pk) == pv, (lab, k, pk, body)
            if "integrations" in msg:
                assert body.get("integrations") == msg["integrations"], (lab, body)
    return got


def run_sender(cmd: List[str], steps: List[Dict[str, Any]], tmp_path: Path,
               env: Optional[Dict[str, str]] = None, timeout: float = 120.0) -> List[Dict[str, Any]]:
    """Runs an SDK sender program with the plan's file; returns its {"label","messageId"} lines."""
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(steps))
    out = subprocess.run(cmd + [str(plan_file)], capture_output=True, text=True, timeout=timeout,
                         env=dict(os.environ, **(env or {})), stdin=subprocess.DEVNULL)
    assert out.returncode == 0 and out.stdout.rstrip().endswith("done"), (
        f"{cmd[0]} exited {out.returncode}\nstdout:\n{out.stdout[-3000:]}\nstderr:\n{out.stderr[-3000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def metric(relay: Relay, series: str) -> float:
    """The value of `series` (name and labels as written) at the relay's /metrics, 0 if absent."""
    req = urllib.request.Request(relay.url + "/metrics",
                                 headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
    m = re.search("^" + re.escape(series) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def node_env() -> Dict[str, str]:
    return {"NODE_PATH": str(NODE_MODULES)}
