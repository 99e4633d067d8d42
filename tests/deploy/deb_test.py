"""The Debian package in a container running systemd as PID 1 (a Debian root filesystem made
by debootstrap; podman --privileged --systemd=always), as an operator would use it:

1. `dpkg -i`: the user is made, the unit enabled and started (API-managed: the admin token
   made at install), relay.toml 0640 root:outbound-relay and not readable by anyone else,
   the process running as outbound-relay under the unit's hardening.
2. A source added to relay.toml and `systemctl reload`: SIGHUP applies it, same PID.
3. Segment's Python SDK sends while the webhook answers 503 (the events wait in the spool);
   `kill -9` of the main PID: systemd starts it again; the webhook back: every acknowledged
   event arrives, its signature verified.
4. `systemctl stop`, then `dpkg --purge`: nothing of the package is left (files, state, user).

The listen port comes from /etc/default/outbound-relay (OUTBOUND_RELAY_LISTEN), written
before the install. Host networking: everything talks over 127.0.0.1.

    python tests/deploy/deb_test.py DEB SYSTEMD_IMAGE
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import Sender, SignedReceiver, free_port, http_get, report, run, wait_ready  # noqa: E402

SECRET = "deb-test-shared-secret"
WRITE_KEY = "wk_deb_test"


def main() -> int:
    deb, image = Path(sys.argv[1]).resolve(), sys.argv[2]
    name = f"obr-deb-{os.getpid()}"
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    receiver = SignedReceiver(SECRET)
    checks: list[tuple[str, bool, str]] = []

    def check(what: str, ok: bool, detail: str = "") -> None:
        checks.append((what, ok, detail))
        print(f"{'ok ' if ok else 'FAILED'} {what}{': ' + detail if detail else ''}")

    def sh(script: str, ok_codes: tuple[int, ...] = (0,)) -> str:
        import subprocess
        p = subprocess.run(["podman", "exec", name, "sh", "-c", script], capture_output=True,
                           text=True, timeout=120, stdin=subprocess.DEVNULL)
        if p.returncode not in ok_codes:
            raise RuntimeError(f"{script!r} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
        return p.stdout.strip()

    def prop(p: str) -> str:
        return sh(f"systemctl show -p {p} --value outbound-relay")

    run("podman", "run", "-d", "--name", name, "--privileged", "--systemd=always",
        "--network", "host", "-v", f"{deb.parent}:/deb:ro", image, "/sbin/init")
    try:
        deadline = time.monotonic() + 60
        state = ""
        while time.monotonic() < deadline:
            state = sh("systemctl is-system-running || true")
            if state in ("running", "degraded"):
                break
            time.sleep(0.5)
        check("systemd is PID 1 and up", state in ("running", "degraded"), state)

        # 1. Install: started at once, as its own user, hardened.
        sh(f"printf 'OUTBOUND_RELAY_LISTEN=127.0.0.1:{port}\\n' >/etc/default/outbound-relay")
        sh(f"dpkg -i /deb/{deb.name} >/tmp/dpkg.log 2>&1 || (cat /tmp/dpkg.log; exit 1)")
        wait_ready(base, 30)
        check("installed, enabled and started", prop("ActiveState") == "active"
              and sh("systemctl is-enabled outbound-relay") == "enabled")
        pid = prop("MainPID")
        user = sh(f"ps -o user= -p {pid}")
        check("runs as the system user", user == "outbound-relay", user)
        mode = sh("stat -c '%a %U %G' /etc/outbound-relay/relay.toml /etc/outbound-relay/admin_token")
        check("relay.toml and the admin token: 0640 root:outbound-relay",
              mode.split("\n") == ["640 root outbound-relay"] * 2, mode.replace("\n", "; "))
        other = sh("setpriv --reuid=65534 --regid=65534 --clear-groups cat "
                   "/etc/outbound-relay/relay.toml >/dev/null 2>&1; echo $?")
        check("another user cannot read relay.toml", other != "0")
        token = sh("cat /etc/outbound-relay/admin_token")
        status, _ = http_get(base + "/admin/whoami", token)
        check("the admin token made at install opens the admin API", status == 200, str(status))
        exposure = sh("systemd-analyze security outbound-relay 2>/dev/null | tail -n1 || true")
        check("the unit's hardening (systemd-analyze security)", True, exposure)
        state_dir = sh("stat -c '%U %a' /var/lib/outbound-relay")
        check("StateDirectory owned by the user", state_dir.startswith("outbound-relay"), state_dir)

        # 2. A source in relay.toml, applied by systemctl reload (SIGHUP, same process).
        receiver.status = 503
        # Top-level keys go before the first table: the receiver is on this host.
        sh("sed -i '1i allowed_networks = [\"127.0.0.0/8\"]\\nmax_backoff = 0.5' "
           "/etc/outbound-relay/relay.toml")
        sh(f"printf '{SECRET}\\n' >/etc/outbound-relay/web.secret && "
           "chown root:outbound-relay /etc/outbound-relay/web.secret && "
           "chmod 0640 /etc/outbound-relay/web.secret")
        sh("cat >>/etc/outbound-relay/relay.toml <<'EOF'\n"
           f"[[sources]]\nname = \"web\"\nwrite_keys = [\"{WRITE_KEY}\"]\n"
           "shared_secret_file = \"/etc/outbound-relay/web.secret\"\n"
           f"[[sources.webhooks]]\nurl = \"http://127.0.0.1:{receiver.port}/hook\"\nEOF")
        sh("systemctl reload outbound-relay")
        deadline = time.monotonic() + 15
        reloaded = ""
        while time.monotonic() < deadline and "config reloaded" not in reloaded:
            reloaded = sh("journalctl -u outbound-relay --no-pager -o cat | grep 'config reloaded' || true")
            time.sleep(0.2)
        check("systemctl reload applied the new source (SIGHUP, same PID)",
              "added=1" in reloaded and prop("MainPID") == pid, reloaded.splitlines()[-1] if reloaded else "")

        # 3. Acknowledged, pending (503), then kill -9: systemd restarts it, nothing lost.
        sender = Sender(WRITE_KEY, base)
        sender.send(150, "deb")
        sender.flush()
        acked = sender.acknowledged()
        check("the SDK's events acknowledged", len(acked) == 150 and not sender.failed,
              f"{len(acked)} acknowledged")
        sh(f"kill -9 {pid}")
        deadline = time.monotonic() + 30
        new_pid = pid
        while time.monotonic() < deadline:
            new_pid = prop("MainPID")
            if new_pid not in (pid, "0") and prop("ActiveState") == "active":
                break
            time.sleep(0.2)
        restarts = prop("NRestarts")
        check("kill -9: systemd started it again", new_pid not in (pid, "0"),
              f"PID {pid} -> {new_pid}, NRestarts={restarts}")
        wait_ready(base, 30)
        receiver.status = 200
        missing = receiver.wait_for(acked, 60)
        check("after kill -9 and the restart", report("deb", acked, missing, receiver.bad_signatures))
        sender.close()

        # 4. Stop, purge: nothing left.
        sh("systemctl stop outbound-relay")
        result = prop("Result")
        check("systemctl stop: a clean exit", prop("ActiveState") == "inactive" and result == "success",
              result)
        # The test's own files, not the package's (dpkg leaves an operator's files).
        sh("rm /etc/default/outbound-relay /etc/outbound-relay/web.secret")
        sh("dpkg --purge outbound-relay >/tmp/purge.log 2>&1 || (cat /tmp/purge.log; exit 1)")
        left = sh("find / -xdev \\( -path /proc -o -path /sys -o -path /deb \\) -prune -o "
                  "-name '*outbound*' -print 2>/dev/null; getent passwd outbound-relay; "
                  "getent group outbound-relay; dpkg-statoverride --list | grep outbound; "
                  "systemctl list-unit-files | grep outbound; true")
        check("dpkg --purge: nothing left (files, state, user, group, override, unit)", left == "",
              left.replace("\n", "; "))
    finally:
        run("podman", "rm", "-f", "-t", "5", name, check=False)
    failed = [c for c in checks if not c[1]]
    print(f"deb test: {len(checks) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
