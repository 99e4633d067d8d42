"""Mobile source: analytics-kotlin's JVM `core` artifact (Segment's Kotlin SDK without Android,
com.segment.analytics.kotlin:core from Maven Central; tests/relay/kotlin), which reads its
settings from the relay (its cdnHost: GET /v1/projects/{writeKey}/settings, whose apiHost is
the only way its events reach the relay) and posts its batches gzipped as text/plain to /v1/b
with the write key in the body, as it does from a phone. scripts/relay-env.sh builds the
sender; its classpath is in .tools/relay/kotlin."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import TOOLS, Relay, check_delivery, metric, plan

KOTLIN = TOOLS / "kotlin"


def test_analytics_kotlin_core(relay: Relay, tmp_path: Path) -> None:
    classpath_file = KOTLIN / "classpath.txt"
    if not classpath_file.exists():
        pytest.fail("the Kotlin sender is not built (scripts/relay-env.sh builds it)")
    cp = f"{KOTLIN / 'target' / 'classes'}:{classpath_file.read_text().strip()}"
    # analytics-kotlin has no page call; alias takes the current user as "Previous ID".
    steps = plan(relay, "kotlin", types=["identify", "track", "screen", "group"])
    sent = []
    for key in dict.fromkeys(s["key"] for s in steps):  # one JVM per write key
        tsv = tmp_path / f"plan-{key}.tsv"
        tsv.write_text("".join(f"{s['label']}\t{s['key']}\t{json.dumps(s['msg'])}\n"
                               for s in steps if s["key"] == key))
        out = subprocess.run(["java", "-cp", cp, "SendKt", relay.hostport + "/v1", str(tsv)],
                             capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        assert out.returncode == 0 and out.stdout.rstrip().endswith("done"), (
            f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
        sent += [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    got = check_delivery(relay, steps, sent)
    assert metric(relay, 'outbound_relay_requests_total{route="settings",status="200"}') >= 1
    # The SDK's own anonymousId and context are kept, its library too; Segment's API adds the
    # client's address and when the event was received.
    body = got["track@alpha"]
    assert body["anonymousId"], body
    assert body["context"]["library"]["name"] == "analytics-kotlin", body
    assert body["context"]["ip"] == "127.0.0.1", body
    assert body["receivedAt"] and body["sentAt"] and body["originalTimestamp"], body
    assert got["screen@alpha"]["name"] == "Dashboard"
