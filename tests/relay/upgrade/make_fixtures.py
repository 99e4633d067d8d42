"""Makes the files tests/relay/test_upgrade.py opens with the current build: what an earlier
build left on disk, kept in git because that build is not at hand in CI.

    python tests/relay/upgrade/make_fixtures.py OLD_RELAY OLD_PYTHONPATH OUT.tar.gz

OLD_RELAY is an `outbound-relay` binary of the earlier build, OLD_PYTHONPATH a directory whose
`outbound` package is that build's Python package with its `_native.abi3.so`. The archive
holds (SQLite's files are mostly zeros: a few KiB compressed, instead of 600 KiB):

- relay/data: a relay's `data_dir` after a SIGTERM, holding 40 acknowledged events of
  the file's source `file-src` and 40 of `api-src` (made through the admin API, kept in
  `control.db`, with one token), none delivered (their webhook is a closed port), and
  relay/relay.json: the events' message ids per source, the token.
- library/spool: a Python client's spool left by `close()`, 40 messages owed to a webhook and
  to ingestion, and library/library.json: their ids.

Every receiver is on 127.0.0.1. The events have had a first attempt, so the test gives the new
build a long `max_retry_duration`: the fixtures stay usable long after they were made.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
import urllib.request
from typing import Any, Dict, List

CLOSED = "http://127.0.0.1:9/in"  # nothing listens: every attempt is refused, retried later
ADMIN = "adm_fixture"
N = 40


def call(method: str, url: str, body: Any = None, token: str = ADMIN, auth: str = "") -> Any:
    req = urllib.request.Request(url, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if auth:
        req.add_header("Authorization", auth)
    elif token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as r:
        text = r.read()
        return json.loads(text) if text else None


def basic(key: str) -> str:
    import base64
    return "Basic " + base64.b64encode(f"{key}:".encode()).decode()


def relay_fixture(old_relay: str, out: str) -> None:
    work = tempfile.mkdtemp(prefix="fixture-relay-")
    config = os.path.join(work, "relay.toml")
    with open(config, "w") as f:
        f.write(textwrap.dedent(f"""\
            listen = "127.0.0.1:0"
            data_dir = "data"
            admin_token = "{ADMIN}"
            allowed_networks = ["127.0.0.0/8"]
            spool_commit_interval = 0.02  # fewer commits: a smaller WAL in git
            [[sources]]
            name = "file-src"
            write_keys = ["wk_file_src"]
            shared_secret = "s3cret-file"
            [[sources.webhooks]]
            url = "{CLOSED}"
            """))
    proc = subprocess.Popen([old_relay, "--config", config], cwd=work, stdout=subprocess.PIPE,
                            stderr=open(os.path.join(work, "relay.log"), "wb"))
    assert proc.stdout is not None
    relay = "http://" + proc.stdout.readline().decode().strip()
    call("PUT", f"{relay}/admin/sources/api-src",
         {"write_keys": ["wk_api_src"], "shared_secret": "s3cret-api", "webhooks": [{"url": CLOSED}]})
    token = call("POST", f"{relay}/admin/sources/api-src/tokens")["token"]
    ids: Dict[str, List[str]] = {"file-src": [], "api-src": []}
    for source, key in (("file-src", "wk_file_src"), ("api-src", "wk_api_src")):
        for b in range(N // 10):
            batch = [{"type": "track", "userId": f"u{i}", "event": "Upgraded",
                      "messageId": f"{source}-{b * 10 + i}"} for i in range(10)]
            answer = call("POST", f"{relay}/v1/batch", {"batch": batch}, auth=basic(key))
            assert answer == {"success": True}, answer
            ids[source] += [e["messageId"] for e in batch]
    time.sleep(1)  # first attempts made and committed
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0
    shutil.copytree(os.path.join(work, "data"), os.path.join(out, "relay", "data"))
    with open(os.path.join(out, "relay", "relay.json"), "w") as f:
        json.dump({"ids": ids, "token": token, "admin_token": ADMIN,
                   "version": subprocess.run([old_relay, "--version"], capture_output=True,
                                             text=True).stdout.strip()}, f, indent=1)
    shutil.rmtree(work)


LIBRARY = """
import json, sys, time
import outbound
spool, closed, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = outbound.Client("wk_lib", endpoint=closed, webhooks=[closed + "/in"],
                         shared_secret="s3cret-lib", spool=spool)
ids = [client.track(user_id=f"u{i}", event="Upgraded", message_id=f"lib-{i}") for i in range(n)]
client.flush(timeout=1)  # commits them; the attempts fail (nothing listens)
time.sleep(1)
client.close(timeout=0)
print(json.dumps({"ids": ids, "version": outbound.__version__, "stats": client.stats}))
"""


def library_fixture(old_pythonpath: str, out: str) -> None:
    spool = os.path.abspath(os.path.join(out, "library", "spool"))
    os.makedirs(spool)
    env = {**os.environ, "PYTHONPATH": old_pythonpath}
    r = subprocess.run([sys.executable, "-c", LIBRARY, spool, "http://127.0.0.1:9", str(N)],
                       env=env, capture_output=True, text=True, cwd="/", check=True)
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["stats"]["spooled"] == N, report
    for f in os.listdir(spool):
        if f.endswith(".lock"):
            os.remove(os.path.join(spool, f))  # no one holds it: the file is up for adoption
    with open(os.path.join(out, "library", "library.json"), "w") as f:
        json.dump({"ids": report["ids"], "version": report["version"]}, f, indent=1)


def main() -> int:
    old_relay, old_pythonpath, archive = sys.argv[1:4]
    out = tempfile.mkdtemp(prefix="fixture-")
    relay_fixture(old_relay, out)
    library_fixture(old_pythonpath, out)
    for root, _, files in os.walk(out):
        for f in sorted(files):
            p = os.path.join(root, f)
            print(f"{os.path.relpath(p, out)}  {os.path.getsize(p)} bytes")
    with tarfile.open(archive, "w:gz") as tar:
        for name in ("relay", "library"):
            tar.add(os.path.join(out, name), arcname=name)
    shutil.rmtree(out)
    print(f"{archive}: {os.path.getsize(archive)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
