"""The compose fleet (deploy/compose/compose.yaml) brought up with podman-compose: three Redis
servers and three Sentinels, two relays configured from the environment (the Sentinel spool,
the admin token from a compose secret), the sample receiver verifying signatures.

1. A source is made at relay 1 through the admin API; relay 2 serves it from the fleet's
   store in Redis.
2. Segment's Python SDK sends through both relays while the receiver is paused, so both hold
   acknowledged events not yet delivered.
3. Relay 1 and the Redis primary are SIGKILLed; the SDK goes on sending to relay 2 through
   the Sentinels' failover; the receiver is resumed.
4. Every event either relay acknowledged reaches the receiver (relay 2 takes over relay 1's
   from Redis), each signature verified by the receiver.

The relays and the receiver are reached through ports published on 127.0.0.1; the fleet talks
over its own podman network.

    python tests/deploy/compose_test.py PODMAN_COMPOSE RELAY_IMAGE
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Sender, free_port, http_get, http_send, run, wait_ready  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "compose.yaml"
ADMIN = "compose-test-admin-token"
SECRET = "compose-test-shared-secret"
WRITE_KEY = "wk_fleet_test"


def main() -> int:
    podman_compose, relay_image = sys.argv[1], sys.argv[2]
    project = f"obr-fleet-{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="outbound-compose-test-"))
    (work / "admin").write_text(ADMIN + "\n")
    (work / "secret").write_text(SECRET + "\n")
    ports = {"RELAY_1_PORT": free_port(), "RELAY_2_PORT": free_port(), "RECEIVER_PORT": free_port()}
    env = {**{k: str(v) for k, v in ports.items()}, "RELAY_IMAGE": relay_image,
           "ADMIN_TOKEN_FILE": str(work / "admin"), "SHARED_SECRET_FILE": str(work / "secret"),
           "FLEET_SUBNET": f"10.89.{200 + os.getpid() % 50}.0/24"}
    os.environ.update(env)
    relay1 = f"http://127.0.0.1:{ports['RELAY_1_PORT']}"
    relay2 = f"http://127.0.0.1:{ports['RELAY_2_PORT']}"
    receiver = f"http://127.0.0.1:{ports['RECEIVER_PORT']}"

    def compose(*args: str) -> str:
        return run(podman_compose, "-p", project, "-f", str(COMPOSE), *args, timeout=600)

    def container(service: str) -> str:
        return f"{project}_{service}_1"

    def primary() -> str:
        return run("podman", "exec", container("sentinel-2"), "redis-cli", "-p", "26379",
                   "sentinel", "get-master-addr-by-name", "mymaster").split()[0]

    ok = True
    t_up = time.monotonic()
    try:
        compose("up", "-d")
        for base in (relay1, relay2):
            wait_ready(base, 60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            replicas = run("podman", "exec", container("sentinel-1"), "redis-cli", "-p", "26379",
                           "sentinel", "replicas", "mymaster")
            # Both replicas known to the Sentinels and linked, before anything is killed.
            if replicas.count("flags\nslave\n") == 2 and replicas.count("master-link-status\nok") == 2:
                break
            time.sleep(0.5)
        print(f"fleet up in {time.monotonic() - t_up:.1f} s: primary {primary()}, 2 replicas, "
              f"3 Sentinels, relays on {relay1} and {relay2}")

        # 1. A source made at relay 1 serves at relay 2 (the fleet's store in Redis).
        status, body = http_send("PUT", relay1 + "/admin/sources/web", {
            "write_keys": [WRITE_KEY], "shared_secret": SECRET,
            "webhooks": [{"url": "http://receiver:8080/hook"}],
            # The receiver is on the fleet's private network: the admin grants it to this source
            # (an API source gets the strict guard; the relay-wide grant is relay.toml's).
            "allowed_networks": [env["FLEET_SUBNET"]]}, ADMIN)
        ok &= status == 201
        deadline = time.monotonic() + 10
        while http_get(relay2 + "/admin/sources/web", ADMIN)[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("relay 2 did not serve the source made at relay 1 within 10 s")
            time.sleep(0.1)
        print(f"source made at relay 1 ({status}), served by relay 2")

        # 2. Both relays acknowledge while the receiver is paused.
        run("podman", "pause", container("receiver"))
        s1 = Sender(WRITE_KEY, relay1, max_retries=2)
        s2 = Sender(WRITE_KEY, relay2)
        t1 = threading.Thread(target=s1.send, args=(400, "r1", 0.01))
        t2 = threading.Thread(target=s2.send, args=(800, "r2", 0.01))
        t1.start()
        t2.start()
        while len(s1.sent) < 200 or len(s2.sent) < 200:
            time.sleep(0.05)

        # 3. SIGKILL relay 1 and the Redis primary.
        old = primary()
        run("podman", "kill", "--signal", "KILL", container("relay-1"))
        run("podman", "kill", "--signal", "KILL", container(old))
        killed = time.monotonic()
        print(f"SIGKILLed relay-1 and the primary {old} with {len(s1.sent)} + {len(s2.sent)} sent")
        deadline = killed + 30
        new = old
        while time.monotonic() < deadline:
            try:
                new = primary()
            except RuntimeError:
                pass
            if new != old:
                break
            time.sleep(0.2)
        print(f"Sentinel promoted {new} {time.monotonic() - killed:.1f} s after the kill")
        ok &= new != old
        time.sleep(max(0.0, killed + 3 - time.monotonic()))
        run("podman", "unpause", container("receiver"))
        t1.join()
        t2.join()
        s1.flush()
        s2.flush()
        acked1, acked2 = s1.acknowledged(), s2.acknowledged()
        acked = acked1 | acked2
        print(f"acknowledged: {len(acked1)} by relay 1 (before its kill), {len(acked2)} by relay 2 "
              f"(through the failover); {len(s2.failed)} failed at relay 2")

        # 4. Every acknowledged event arrives (relay 1's taken over by relay 2).
        deadline = time.monotonic() + 120
        missing = acked
        while time.monotonic() < deadline:
            with urllib.request.urlopen(receiver + "/ids", timeout=5) as r:
                got = set(r.read().decode().split())
            missing = acked - got
            if not missing:
                break
            time.sleep(0.5)
        with urllib.request.urlopen(receiver + "/stats", timeout=5) as r:
            stats = json.loads(r.read())
        took = time.monotonic() - killed
        good = not missing and stats["bad_signatures"] == 0
        print(f"fleet: {len(acked)} acknowledged, {len(acked) - len(missing)} delivered "
              f"({stats['accepted']} webhook requests accepted, duplicates included), "
              f"{len(missing)} lost, {stats['bad_signatures']} bad signatures, all in {took:.1f} s "
              f"after the kills -> {'OK' if good else 'FAILED'}")
        ok &= good and len(acked2) > 0 and len(acked1) > 0
        s1.close()
        s2.close()
    except Exception:
        for svc in ("relay-1", "relay-2"):
            print(f"--- {svc}:", run("podman", "logs", "--tail", "30", container(svc), check=False),
                  file=sys.stderr)
        raise
    finally:
        run(podman_compose, "-p", project, "-f", str(COMPOSE), "down", "-v", check=False,
            timeout=300)
    print("compose test:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
