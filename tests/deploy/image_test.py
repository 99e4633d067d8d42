"""The image (scripts/image.sh) run with podman, as docs/deploy.md runs it: a named volume on
/var/lib/outbound-relay, relay.toml mounted read-only, the source's shared secret and the
admin token as podman secrets (files under /run/secrets, named by `shared_secret_file` and
OUTBOUND_RELAY_ADMIN_TOKEN_FILE), the listen address from OUTBOUND_RELAY_LISTEN.

1. Segment's Python SDK sends every call type through it while the webhook answers 503, so
   what it acknowledged waits in the spool; `podman stop` (SIGTERM) must drain and exit 0.
2. The volume backed up (`podman volume export`) and restored into a new one (`podman volume
   import`); a new container on it, the webhook back: every acknowledged event arrives, its
   X-Signature verified.
3. The SDK sends again and the container is SIGKILLed mid-stream and started again on the
   volume (the SDK retries meanwhile): every acknowledged event arrives.

Host networking: the relay, the SDK and the receiver all talk over 127.0.0.1.

    python tests/deploy/image_test.py IMAGE
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (Sender, SignedReceiver, container_logs, free_port, http_get, report, run,  # noqa: E402
                    wait_ready)

SECRET = "image-test-shared-secret"
ADMIN = "image-test-admin-token"
WRITE_KEY = "wk_image_test"


def main() -> int:
    image = sys.argv[1]
    tag = f"obr-image-{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="outbound-image-test-"))
    receiver = SignedReceiver(SECRET)
    receiver.status = 503
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    config = work / "relay.toml"
    config.write_text(f"""listen = "0.0.0.0:8088"            # OUTBOUND_RELAY_LISTEN wins
data_dir = "/var/lib/outbound-relay"
allowed_networks = ["127.0.0.0/8"]  # the test's receiver is on this host
max_backoff = 0.5

[[sources]]
name = "web"
write_keys = ["{WRITE_KEY}"]
shared_secret_file = "/run/secrets/web-shared-secret"

[[sources.webhooks]]
url = "http://127.0.0.1:{receiver.port}/hook"
""")
    config.chmod(0o644)
    (work / "secret").write_text(SECRET + "\n")
    (work / "admin").write_text(ADMIN + "\n")
    run("podman", "volume", "create", tag)
    run("podman", "secret", "create", f"{tag}-secret", str(work / "secret"))
    run("podman", "secret", "create", f"{tag}-admin", str(work / "admin"))
    name = f"{tag}-relay"

    def start(volume: str) -> None:
        run("podman", "run", "-d", "--name", name, "--network", "host",
            "-v", f"{volume}:/var/lib/outbound-relay",
            "-v", f"{config}:/etc/outbound-relay/relay.toml:ro",
            "--secret", f"{tag}-secret,target=web-shared-secret,uid=10001,mode=0400",
            "--secret", f"{tag}-admin,target=admin-token,uid=10001,mode=0400",
            "-e", f"OUTBOUND_RELAY_LISTEN=127.0.0.1:{port}",
            "-e", "OUTBOUND_RELAY_ADMIN_TOKEN_FILE=/run/secrets/admin-token",
            image)
        try:
            wait_ready(base)
        except RuntimeError:
            print(container_logs(name), file=sys.stderr)
            raise

    ok = True
    try:
        start(tag)
        user = run("podman", "inspect", "--format", "{{.Config.User}}", name).strip()
        status, who = http_get(base + "/admin/whoami", ADMIN)
        print(f"container {name}: user {user}, /readyz 200, admin token from its file: {status} {who}")
        ok &= status == 200 and user.startswith("10001")

        # 1. Acknowledged while the webhook refuses: they wait in the spool on the volume.
        sender = Sender(WRITE_KEY, base)
        sender.send(120, "stop")
        sender.flush()
        acked1 = sender.acknowledged()
        t0 = time.monotonic()
        run("podman", "stop", "-t", "30", name)
        took = time.monotonic() - t0
        code = run("podman", "inspect", "--format", "{{.State.ExitCode}}", name).strip()
        logs = container_logs(name)
        drained = code == "0" and "stopped" in logs
        print(f"podman stop: SIGTERM, exit {code} in {took:.1f} s, log says stopped: {drained}; "
              f"{receiver.attempts} attempts refused meanwhile (503)")
        ok &= drained and len(receiver.delivered) == 0
        run("podman", "rm", name)

        # 2. The stopped relay's volume backed up and restored into a new volume (as
        # docs/deploy.md says); a new container on it delivers them.
        backup = work / "data_dir.tar"
        run("podman", "volume", "export", tag, "--output", str(backup))
        run("podman", "volume", "create", f"{tag}-restored")
        run("podman", "volume", "import", f"{tag}-restored", str(backup))
        receiver.status = 200
        start(f"{tag}-restored")
        missing = receiver.wait_for(acked1, 60)
        ok &= report("after SIGTERM, a backup of the volume restored into a new one, and a new "
                     "container on it", acked1, missing, receiver.bad_signatures)

        # 3. SIGKILL mid-stream; the SDK retries while it is down.
        sending = threading.Thread(target=sender.send, args=(400, "kill", 0.005))
        sending.start()
        while len(sender.sent) < 150:
            time.sleep(0.01)
        run("podman", "kill", "--signal", "KILL", name)
        run("podman", "wait", name, check=False)
        run("podman", "rm", name)
        start(f"{tag}-restored")
        sending.join()
        sender.flush()
        acked2 = sender.acknowledged() - acked1
        missing = receiver.wait_for(acked2, 60)
        ok &= report("SIGKILL mid-stream, restarted on the volume", acked2, missing,
                     receiver.bad_signatures)
        ok &= len(sender.failed) == 0
        sender.close()
        run("podman", "stop", "-t", "30", name)
        code = run("podman", "inspect", "--format", "{{.State.ExitCode}}", name).strip()
        ok &= code == "0"
    finally:
        run("podman", "rm", "-f", name, check=False)
        run("podman", "volume", "rm", "-f", tag, f"{tag}-restored", check=False)
        run("podman", "secret", "rm", f"{tag}-secret", f"{tag}-admin", check=False)
    print("image test:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
