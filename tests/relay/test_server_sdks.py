"""Server sources: Segment's own server SDKs (segment-analytics-python, @segment/analytics-node,
analytics-go v3) and outbound's own Python, C and Go clients, each with the relay as its
endpoint. Every test sends the same plan (conftest.plan) to the two sources and counts exactly
what each source's webhook receiver got."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any, Dict, List

import pytest

from conftest import ROOT, Relay, check_delivery, node_env, plan, run_sender

LIBDIR = os.environ.get("OUTBOUND_C_LIBDIR", str(ROOT / "target" / "debug"))


@pytest.fixture(scope="session")
def build_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("senders")


@pytest.fixture(scope="session")
def go_segment(build_dir: Path) -> str:
    out = build_dir / "go-segment"
    subprocess.run(["go", "build", "-o", str(out), "./segment"], cwd=ROOT / "tests/relay/go",
                   check=True, env=dict(os.environ, CGO_ENABLED="0"))
    return str(out)


@pytest.fixture(scope="session")
def go_outbound(build_dir: Path) -> str:
    out = build_dir / "go-outbound"
    env = dict(os.environ, CGO_ENABLED="1", CGO_LDFLAGS=f"-L{LIBDIR}", GOFLAGS="-buildvcs=false")
    subprocess.run(["go", "build", "-o", str(out), "./outbound"], cwd=ROOT / "tests/relay/go",
                   check=True, env=env)
    return str(out)


@pytest.fixture(scope="session")
def c_sender(build_dir: Path) -> str:
    out = build_dir / "c-send"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "include"),
                    str(ROOT / "tests/relay/c/send.c"), f"{LIBDIR}/liboutbound.a", "-lgcc_s",
                    "-lutil", "-lrt", "-lpthread", "-lm", "-ldl", "-o", str(out)], check=True)
    return str(out)


def test_segment_analytics_python(relay: Relay) -> None:
    from segment.analytics.client import Client

    steps = plan(relay, "py-sdk")
    errors: List[Any] = []
    clients: Dict[str, Client] = {}
    sent = []
    for s in steps:
        c = clients.get(s["key"])
        if c is None:
            c = clients[s["key"]] = Client(s["key"], host=relay.url, gzip=True, upload_size=5,
                                           on_error=lambda e, batch: errors.append(e))
        m = dict(s["msg"])
        t = m.pop("type")
        kw = {"user_id": m.get("userId"), "integrations": m.get("integrations")}
        if t == "identify":
            ok, msg = c.identify(traits=m["traits"], **kw)
        elif t == "track":
            ok, msg = c.track(event=m["event"], properties=m["properties"], **kw)
        elif t in ("page", "screen"):
            ok, msg = getattr(c, t)(name=m["name"], properties=m["properties"], **kw)
        elif t == "group":
            ok, msg = c.group(group_id=m["groupId"], traits=m["traits"], **kw)
        else:
            ok, msg = c.alias(previous_id=m["previousId"], user_id=m["userId"],
                              integrations=m.get("integrations"))
        assert ok
        sent.append({"label": s["label"], "messageId": msg["messageId"]})
    for c in clients.values():
        c.flush()
        c.shutdown()
    assert not errors, errors
    check_delivery(relay, steps, sent)


def test_analytics_node(relay: Relay, tmp_path: Path) -> None:
    steps = plan(relay, "node-sdk")
    sent = run_sender(["node", str(ROOT / "tests/relay/node/send-node.cjs"), relay.url], steps,
                      tmp_path, env=node_env())
    check_delivery(relay, steps, sent)


def test_analytics_go_v3(relay: Relay, tmp_path: Path, go_segment: str) -> None:
    # analytics-go v3 uses the second write key of `alpha`: rotation, both keys are the source's.
    steps = plan(relay, "go-sdk", key_index=1)
    sent = run_sender([go_segment, relay.url], steps, tmp_path)
    check_delivery(relay, steps, sent)


def test_outbound_python(relay: Relay) -> None:
    import outbound

    steps = plan(relay, "outbound-py")
    clients: Dict[str, Any] = {}
    sent = []
    for s in steps:
        c = clients.get(s["key"])
        if c is None:
            c = clients[s["key"]] = outbound.Client(write_key=s["key"], endpoint=relay.url,
                                                    flush_at=5, flush_interval=0.2,
                                                    proxy_from_env=False)
        m = dict(s["msg"])
        t = m.pop("type")
        kw: Dict[str, Any] = {"integrations": m.get("integrations")}
        if t == "identify":
            mid = c.identify(user_id=m["userId"], traits=m["traits"], **kw)
        elif t == "track":
            mid = c.track(user_id=m["userId"], event=m["event"], properties=m["properties"], **kw)
        elif t in ("page", "screen"):
            mid = getattr(c, t)(user_id=m["userId"], name=m["name"], properties=m["properties"], **kw)
        elif t == "group":
            mid = c.group(user_id=m["userId"], group_id=m["groupId"], traits=m["traits"], **kw)
        else:
            mid = c.alias(previous_id=m["previousId"], user_id=m["userId"], **kw)
        sent.append({"label": s["label"], "messageId": mid})
    for c in clients.values():
        assert c.close(timeout=20), c.stats
    check_delivery(relay, steps, sent)


def test_outbound_c(relay: Relay, tmp_path: Path, c_sender: str) -> None:
    steps = plan(relay, "outbound-c")
    tsv = tmp_path / "plan.tsv"
    tsv.write_text("".join(f"{s['label']}\t{s['key']}\t{json.dumps(s['msg'])}\n" for s in steps))
    out = subprocess.run([c_sender, relay.url, str(tsv)], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 0 and out.stdout.rstrip().endswith("done"), out.stdout + out.stderr
    sent = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    check_delivery(relay, steps, sent)


def test_outbound_go(relay: Relay, tmp_path: Path, go_outbound: str) -> None:
    steps = plan(relay, "outbound-go")
    sent = run_sender([go_outbound, relay.url], steps, tmp_path)
    check_delivery(relay, steps, sent)
