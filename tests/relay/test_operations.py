"""docs/operations.md, done: an upgrade from what an earlier build left on disk, and a backup
taken while the relay acknowledges events, restored into a new relay. Nothing acknowledged may
be lost in either.

The earlier build's files are tests/relay/upgrade/from-ee7a6c7.tar.gz (made by
tests/relay/upgrade/make_fixtures.py with a debug build of ee7a6c7, main of 2026-11-27, the
last commit before 0.2.0's release work, whose `--version` says 0.1.0; 0.1.0 itself, of
2026-11-22, had no spool and no relay).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import pytest
from conftest import ROOT, start_relay, toml_str
from receiver import Receiver, start_receiver

FIXTURE = ROOT / "tests" / "relay" / "upgrade" / "from-ee7a6c7.tar.gz"
OPERATIONS = ROOT / "docs" / "operations.md"
# The fixtures' events had a first attempt when they were made: a window long enough that they
# are still retried whenever this runs.
LONG_WINDOW = "max_retry_duration = 1000000000"


def http(method: str, url: str, body: Any = None, bearer: str = "", key: str = "",
         headers: Optional[Dict[str, str]] = None) -> Tuple[int, Any, Dict[str, str]]:
    req = urllib.request.Request(url, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if bearer:
        req.add_header("Authorization", f"Bearer {bearer}")
    if key:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{key}:".encode()).decode())
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None, dict(r.headers)
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None, dict(e.headers)


def doc_block(marker: str) -> str:
    """The sh block of docs/operations.md that contains `marker`, as written."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", OPERATIONS.read_text(), re.S | re.M)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"docs/operations.md: {len(found)} sh blocks contain {marker!r}"
    return found[0]


def run_doc_block(marker: str, replace: List[Tuple[str, str]], env: Optional[Dict[str, str]] = None) -> str:
    text = doc_block(marker)
    for old, new in replace:
        assert old in text, f"docs/operations.md's block no longer has {old!r}"
        text = text.replace(old, new)
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", text], capture_output=True, text=True,
                       timeout=120, env={**os.environ, **(env or {})})
    assert r.returncode == 0, f"the block failed ({r.returncode}):\n{text}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def signed(secret: str, req: Any) -> bool:
    return req.headers.get("x-signature") == hmac.new(secret.encode(), req.body, hashlib.sha1).hexdigest()


def ids_at(receiver: Receiver, path: str) -> Dict[str, int]:
    seen: Dict[str, int] = {}
    for r in receiver.at(path):
        mid = r.json.get("messageId")
        seen[mid] = seen.get(mid, 0) + 1
    return seen


def config(path: Path, data_dir: Path, sources: List[Tuple[str, str, str, str]], extra: str = "",
           admin: str = "adm") -> None:
    """relay.toml: (name, write key, secret, webhook URL) per file source."""
    lines = ['listen = "127.0.0.1:0"', f"data_dir = {toml_str(str(data_dir))}",
             f"admin_token = {toml_str(admin)}", 'allowed_networks = ["127.0.0.0/8"]', extra]
    for name, key, secret, url in sources:
        lines += ["", "[[sources]]", f"name = {toml_str(name)}", f"write_keys = [{toml_str(key)}]",
                  f"shared_secret = {toml_str(secret)}", "[[sources.webhooks]]", f"url = {toml_str(url)}"]
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def receiver() -> Any:
    rec = start_receiver()
    yield rec
    rec.server.shutdown()
    rec.server.server_close()


def unpack(tmp_path: Path) -> Path:
    with tarfile.open(FIXTURE) as tar:
        try:
            tar.extractall(tmp_path, filter="data")
        except TypeError:  # a Python before the extraction filters (3.10.11 and older)
            tar.extractall(tmp_path)
    return tmp_path


def test_a_relay_opens_the_data_dir_an_earlier_build_left(tmp_path: Path, receiver: Receiver) -> None:
    old = unpack(tmp_path)
    made = json.loads((old / "relay" / "relay.json").read_text())
    assert made["version"] == "outbound-relay 0.1.0", made
    data = old / "relay" / "data"
    cfg = tmp_path / "relay.toml"
    config(cfg, data, [("file-src", "wk_file_src", "s3cret-file", receiver.hook("file"))],
           extra=LONG_WINDOW, admin=made["admin_token"])
    relay = start_relay(cfg, tmp_path / "relay.log")
    try:
        # The file's source: its 40 events, adopted from the old spool, signed as before.
        assert receiver.wait_for(lambda r: set(made["ids"]["file-src"]) <= set(ids_at(r, "/file")), 60), \
            relay.log_text()
        assert all(signed("s3cret-file", r) for r in receiver.at("/file"))

        # The API's source and its token, from control.db.
        status, body, _ = http("GET", f"{relay.url}/admin/sources/api-src", bearer=made["admin_token"])
        assert status == 200 and body["managed_by"] == "api", body
        status, who, _ = http("GET", f"{relay.url}/admin/whoami", bearer=made["token"])
        assert status == 200 and who.get("source") == "api-src", who

        # Its webhook is on 127.0.0.1, which relay.toml's allowed_networks no longer grants to
        # the API's sources: its events become dead letters (docs/operations.md, Upgrading).
        def letters() -> int:
            page = http("GET", f"{relay.url}/admin/sources/api-src/dead-letters?limit=100",
                        bearer=made["admin_token"])[1]
            return int(page["stats"]["count"])
        deadline = time.monotonic() + 60
        while letters() < 40 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert letters() == 40, relay.log_text()
        page = http("GET", f"{relay.url}/admin/sources/api-src/dead-letters?limit=1",
                    bearer=made["admin_token"])[1]
        assert "blocked" in json.dumps(page["dead_letters"]), page

        # The page's PUT, then the replay: all 40 arrive at the new URL.
        run_doc_block('"allowed_networks":[', [
            ("https://relay.example.com", relay.url), ("/admin/sources/web", "/admin/sources/api-src"),
            ('"wk_web_1"', '"wk_api_src"'), ('"s3cret"', '"s3cret-api"'),
            ("http://10.1.2.3/in", receiver.hook("api")), ("10.1.0.0/16", "127.0.0.0/8")],
            env={"ADMIN": made["admin_token"]})
        status, _, _ = http("POST", f"{relay.url}/admin/sources/api-src/dead-letters/replay", {},
                            bearer=made["admin_token"])
        assert status == 202
        assert receiver.wait_for(lambda r: set(made["ids"]["api-src"]) <= set(ids_at(r, "/api")), 60), \
            relay.log_text()
        assert all(signed("s3cret-api", r) for r in receiver.at("/api"))
    finally:
        assert relay.stop() == 0, relay.log_text()


def test_the_library_opens_the_spool_an_earlier_build_left(tmp_path: Path, receiver: Receiver) -> None:
    import outbound  # the wheel under test, installed in this venv

    old = unpack(tmp_path)
    made = json.loads((old / "library" / "library.json").read_text())
    assert made["version"] == "0.1.0", made
    client = outbound.Client("wk_lib", endpoint=receiver.url, webhooks=[receiver.hook("lib")],
                             shared_secret="s3cret-lib", spool=str(old / "library" / "spool"),
                             max_retry_duration=1e9)
    try:
        assert receiver.wait_for(lambda r: set(made["ids"]) <= set(ids_at(r, "/lib")), 60)
        batched = {m["messageId"] for m in receiver.batch_messages()}
        assert receiver.wait_for(lambda r: set(made["ids"]) <= {m["messageId"] for m in r.batch_messages()}, 30), \
            sorted(set(made["ids"]) - batched)[:5]
        assert all(signed("s3cret-lib", r) for r in receiver.at("/lib"))
        assert client.flush(timeout=30)
        assert client.stats["resumed"] == 40, client.stats
    finally:
        client.close(timeout=10)


class Sender:
    """Sends batches of 10 to each source until stopped; keeps each acknowledged id with the
    time its 200 arrived."""

    def __init__(self, relay_url: str, keys: Dict[str, str]) -> None:
        self.url, self.keys = relay_url, keys
        self.acked: List[Tuple[float, str, str]] = []  # (time of the 200, source, id)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        n = 0
        while not self.stop.is_set():
            for source, key in self.keys.items():
                batch = [{"type": "track", "userId": "u", "event": "Backed Up",
                          "messageId": f"{source}-{n}-{i}"} for i in range(10)]
                try:
                    status, _, _ = http("POST", f"{self.url}/v1/batch", {"batch": batch}, key=key)
                except OSError:
                    return  # the relay is gone
                if status == 200:
                    at = time.time()
                    self.acked += [(at, source, e["messageId"]) for e in batch]
            n += 1

    def before(self, t: float) -> Dict[str, set]:
        out: Dict[str, set] = {s: set() for s in self.keys}
        for at, source, mid in list(self.acked):
            if at < t:
                out[source].add(mid)
        return out


def test_a_backup_taken_while_the_relay_accepts_restores_with_nothing_acknowledged_lost(
        tmp_path: Path, receiver: Receiver) -> None:
    # Nothing is delivered before the restore: every acknowledged event must come from the copy.
    receiver.status["/file"] = receiver.status["/api"] = 503
    data, backup, restored = tmp_path / "data", tmp_path / "backup", tmp_path / "restored"
    cfg = tmp_path / "relay.toml"
    config(cfg, data, [("file-src", "wk_file", "s3cret-file", receiver.hook("file"))])
    relay = start_relay(cfg, tmp_path / "relay.log")
    status, _, _ = http("PUT", f"{relay.url}/admin/sources/api-src", {
        "write_keys": ["wk_api"], "shared_secret": "s3cret-api", "webhooks": [{"url": receiver.hook("api")}],
        "allowed_networks": ["127.0.0.0/8"]}, bearer="adm")
    assert status in (200, 201), relay.log_text()
    token = http("POST", f"{relay.url}/admin/sources/api-src/tokens", bearer="adm")[1]["token"]

    sender = Sender(relay.url, {"file-src": "wk_file", "api-src": "wk_api"})
    time.sleep(2)
    # The sources alone, online (docs/operations.md), while events come in.
    if shutil.which("sqlite3"):
        run_doc_block(".backup", [("/var/lib/outbound-relay", str(data)),
                                  ("/backup/control.db", str(tmp_path / "control-only.db"))])
        assert (tmp_path / "control-only.db").stat().st_size > 0
    t0 = time.time()
    run_doc_block("kill -STOP", [("$(pgrep -x outbound-relay)", str(relay.proc.pid)),
                                 ("/var/lib/outbound-relay", str(data)),
                                 ("/backup/outbound-relay-$(date -u +%Y%m%dT%H%M%SZ)", str(backup))])
    paused = time.time() - t0
    time.sleep(1)  # it goes on acknowledging after the backup
    relay.proc.send_signal(signal.SIGKILL)  # then the machine is lost
    relay.proc.wait()
    sender.stop.set()
    sender.thread.join(30)
    owed = sender.before(t0)
    after = len(sender.acked) - sum(len(v) for v in owed.values())
    assert all(len(v) >= 50 for v in owed.values()), {k: len(v) for k, v in owed.items()}
    assert after > 0, "nothing was acknowledged after the backup: the relay did not resume"

    shutil.copytree(backup, restored, symlinks=True)
    receiver.status["/file"] = receiver.status["/api"] = 200
    cfg2 = tmp_path / "restored.toml"
    config(cfg2, restored, [("file-src", "wk_file", "s3cret-file", receiver.hook("file"))])
    relay2 = start_relay(cfg2, tmp_path / "restored.log")
    try:
        def arrived(r: Receiver) -> bool:
            return owed["file-src"] <= set(ids_at(r, "/file")) and owed["api-src"] <= set(ids_at(r, "/api"))
        assert receiver.wait_for(arrived, 90), (
            {s: len(owed[s] - set(ids_at(receiver, p))) for s, p in (("file-src", "/file"), ("api-src", "/api"))},
            relay2.log_text())
        assert http("GET", f"{relay2.url}/admin/whoami", bearer=token)[1].get("source") == "api-src"
        print(f"backup paused the relay {paused * 1000:.0f} ms; acknowledged before it "
              f"{sum(len(v) for v in owed.values())}, after it {after}; all of the first delivered "
              "after the restore")
    finally:
        assert relay2.stop() == 0, relay2.log_text()
