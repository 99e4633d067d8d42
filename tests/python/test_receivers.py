"""docs/receivers.md against real requests: the bodies it shows are the bytes the client
sends, and each example receiver (Python, Node, Go servers; the C and openssl checks; the
curl test sender) accepts what the client signs and refuses the rest."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import outbound
from receiver import Receiver

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "receivers.md"
EXAMPLES = ROOT / "examples" / "receivers"
SECRET = "rx_shared_SECRET_789"
TS = "2026-11-21T09:30:00.123Z"

MakeClient = Callable[..., outbound.Client]


def guide_blocks(kind: str) -> Dict[str, str]:
    """The fenced block after each `<!-- kind: name -->` marker of the guide, by name."""
    text = GUIDE.read_text(encoding="utf-8")
    pattern = re.compile(r"<!-- " + kind + r": (\S+) -->\n```[a-z]*\n(.*?)```\n", re.S)
    return {name: body for name, body in pattern.findall(text)}


def canonical(value: Any) -> bytes:
    # What JSON.stringify writes, for the plain strings and numbers of the guide's bodies.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# The calls whose webhook bodies the guide shows, with its fixed ids and timestamp.
GUIDE_CALLS: Dict[str, Tuple[str, Dict[str, Any]]] = {
    "identify": ("identify", dict(user_id="u-42", traits={"email": "ada@example.com",
                 "plan": "pro", "seats": 3}, context={"ip": "203.0.113.7"})),
    "track": ("track", dict(user_id="u-42", event="Order Completed",
              properties={"order_id": "o-1001", "total": 99.5, "currency": "EUR"})),
    "page": ("page", dict(user_id="u-42", name="Pricing", properties={
        "path": "/pricing", "referrer": "https://example.com/", "title": "Pricing",
        "url": "https://example.com/pricing"})),
    "screen": ("screen", dict(user_id="u-42", name="Home", context={
        "device": {"model": "iPhone15,2", "type": "ios"}, "os": {"name": "iOS", "version": "18.1"},
        "app": {"build": "1042", "name": "Shop", "version": "3.2.0"}})),
    "group": ("group", dict(user_id="u-42", group_id="acme",
              traits={"name": "Acme Inc", "employee count": 120})),
    "alias": ("alias", dict(previous_id="anon-7", user_id="u-42")),
    "delete": ("delete", dict(user_id="u-42")),
    "anonymous": ("track", dict(anonymous_id="anon-7", event="Viewed",
                  integrations={"Mixpanel": False})),
}


def test_the_guide_shows_every_type() -> None:
    assert set(guide_blocks("body")) == set(GUIDE_CALLS)


@pytest.mark.parametrize("name", sorted(GUIDE_CALLS))
def test_guide_body_is_what_the_client_sends(
    name: str, make_client: MakeClient, receiver: Receiver
) -> None:
    shown = json.loads(guide_blocks("body")[name])
    if "context" in shown:  # the one part that changes with the release
        shown["context"]["library"]["version"] = outbound.__version__
    call, kw = GUIDE_CALLS[name]
    if call != "delete":
        kw = dict(kw, message_id=shown["messageId"])
    client = make_client(write_key=None, shared_secret=SECRET)
    getattr(client, call)(timestamp=TS, **kw)
    assert client.flush(timeout=10)
    [req] = receiver.at("/hook")
    assert req.raw_body == canonical(shown)
    assert req.headers["content-type"] == "application/json"
    assert req.headers["user-agent"] == "Outbound/1.0"
    assert outbound.verify(SECRET, req.raw_body, req.headers["x-signature"])


def test_guide_signature_vector() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    vector = re.search(r"With the secret `(\w+)`, this body's `X-Signature` is\s+`([0-9a-f]{40})`",
                       text)
    assert vector is not None
    body = canonical(json.loads(guide_blocks("body")["track"]))
    assert outbound.sign(vector.group(1), body) == vector.group(2)


def test_guide_code_is_the_example_files() -> None:
    blocks = guide_blocks("file")
    files = {str(p.relative_to(ROOT)) for p in EXAMPLES.iterdir() if p.is_file()}
    assert set(blocks) == files
    for name, block in blocks.items():
        assert block == (ROOT / name).read_text(encoding="utf-8"), name


# -- bodies that make re-serializing interesting: JS number forms, index keys, escapes ----

TRICKY = {
    "2": "index key", "b": 1.0, "1": None, "big": 1e21, "small": 1e-7, "tiny": 0.000001,
    "neg_zero": -0.0, "int": 2**53 - 1, "text": "é ü 中文 😀 </script> \"q\" \\ \t\n\u0001\u2028",
    "nested": {"10": [1, 2.5, True], "a": {}}, "spaces in key": "x",
}


def send_every_type(client: outbound.Client) -> List[Optional[str]]:
    return [
        client.identify(user_id="u-1", traits=TRICKY),
        client.track(user_id="u-1", event="Order Completed", properties=TRICKY),
        client.page(anonymous_id="anon-1", name="Pricing", properties=TRICKY),
        client.screen(user_id="u-1", name="Home", properties=TRICKY),
        client.group(user_id="u-1", group_id="g-1", traits=TRICKY),
        client.alias(previous_id="anon-1", user_id="u-1"),
        client.delete(user_id="u-1"),
    ]


# -- the example servers --------------------------------------------------------------


def start_server(cmd: List[str], env: Dict[str, str]) -> Tuple["subprocess.Popen[str]", str]:
    proc = subprocess.Popen(cmd, env={**os.environ, **env, "PORT": "0"}, cwd=EXAMPLES,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # "listening on http://127.0.0.1:PORT"
    match = re.search(r"http://127\.0\.0\.1:\d+", line)
    if match is None:
        proc.kill()
        raise AssertionError(f"{cmd} did not start: {line}{proc.stdout.read()}")
    return proc, match.group(0)


@pytest.fixture(scope="module")
def go_receiver(tmp_path_factory: pytest.TempPathFactory) -> str:
    go = shutil.which("go")
    assert go, "go is required (the Go example receiver)"
    out = tmp_path_factory.mktemp("go") / "receiver"
    subprocess.run([go, "build", "-o", str(out), "receiver.go"], cwd=EXAMPLES, check=True)
    return str(out)


SERVERS = ["python", "node-raw", "node-parsed", "go"]


@pytest.fixture(params=SERVERS)
def example_server(request: pytest.FixtureRequest) -> Iterator[str]:
    kind: str = request.param
    env = {"OUTBOUND_SECRET": SECRET}
    if kind == "python":
        cmd = [sys.executable, "receiver.py"]
    elif kind.startswith("node"):
        node = shutil.which("node")
        assert node, "node is required (the Node example receiver)"
        cmd = [node, "receiver.js"]
        env["OUTBOUND_VERIFY"] = kind.split("-")[1]
    else:
        cmd = [request.getfixturevalue("go_receiver")]
    proc, url = start_server(cmd, env)
    yield url
    proc.kill()
    proc.wait()


def outcomes_of(make_client: MakeClient, url: str, **kw: Any) -> List[Tuple[str, str]]:
    seen: Dict[str, Tuple[str, str]] = {}

    def on_outcome(mid: str, outcome: str, detail: str) -> None:
        seen[mid] = (outcome, detail)

    client = make_client(write_key=None, webhooks=[url + "/hook"], on_outcome=on_outcome, **kw)
    ids = send_every_type(client)
    client.flush(timeout=15)
    client.close(timeout=5)
    assert all(isinstance(i, str) for i in ids)
    return [seen[i] for i in ids if i is not None]


def test_example_receiver_accepts_every_signed_type(
    example_server: str, make_client: MakeClient
) -> None:
    results = outcomes_of(make_client, example_server, shared_secret=SECRET)
    assert results == [("delivered", "")] * 7


def test_example_receiver_refuses_a_wrong_secret(
    example_server: str, make_client: MakeClient
) -> None:
    results = outcomes_of(make_client, example_server, shared_secret="not-the-secret")
    assert [o for o, _ in results] == ["failed"] * 7
    assert all("401" in detail for _, detail in results), results


def test_example_receiver_refuses_a_missing_signature(
    example_server: str, make_client: MakeClient
) -> None:
    results = outcomes_of(make_client, example_server, shared_secret=None)
    assert [o for o, _ in results] == ["failed"] * 7
    assert all("401" in detail for _, detail in results), results


@pytest.mark.parametrize("secret, status", [(SECRET, "204"), ("wrong", "401")])
def test_send_test_script_against_the_example_receivers(
    example_server: str, secret: str, status: str
) -> None:
    out = subprocess.run(["sh", str(EXAMPLES / "send-test.sh"), example_server + "/hook"],
                         env={**os.environ, "OUTBOUND_SECRET": secret},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == status


# -- the command-line checks: openssl and C, on bodies the client really sent ------------


@pytest.fixture
def captured(make_client: MakeClient, receiver: Receiver,
             tmp_path: pathlib.Path) -> List[Tuple[pathlib.Path, str]]:
    """(body file, X-Signature) of one real webhook request per type."""
    client = make_client(write_key=None, shared_secret=SECRET)
    send_every_type(client)
    assert client.flush(timeout=10)
    reqs = receiver.at("/hook")
    assert len(reqs) == 7
    out = []
    for i, req in enumerate(reqs):
        path = tmp_path / f"body{i}.json"
        path.write_bytes(req.raw_body)
        out.append((path, req.headers["x-signature"]))
    return out


def check(cmd: List[str]) -> int:
    return subprocess.run(cmd, capture_output=True).returncode


def test_openssl_check_on_real_bodies(captured: List[Tuple[pathlib.Path, str]]) -> None:
    script = str(EXAMPLES / "verify.sh")
    for body, sig in captured:
        assert check(["sh", script, SECRET, str(body), sig]) == 0
        assert check(["sh", script, SECRET, str(body), sig.upper()]) == 0
        assert check(["sh", script, "wrong", str(body), sig]) == 1
        assert check(["sh", script, SECRET, str(body), ""]) == 1
        forged = body.with_suffix(".forged")
        forged.write_bytes(body.read_bytes().replace(b'"timestamp":"2', b'"timestamp":"3'))
        assert forged.read_bytes() != body.read_bytes()
        assert check(["sh", script, SECRET, str(forged), sig]) == 1


@pytest.fixture(scope="module")
def c_verify(tmp_path_factory: pytest.TempPathFactory) -> str:
    # The static library of a debug build (scripts/test-python.sh builds it first).
    lib = pathlib.Path(os.environ.get("OUTBOUND_C_LIBDIR", ROOT / "target" / "debug"))
    assert (lib / "liboutbound.a").exists(), f"build liboutbound first: no {lib}/liboutbound.a"
    out = tmp_path_factory.mktemp("c") / "verify"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'include'}",
                    str(EXAMPLES / "verify.c"), str(lib / "liboutbound.a"), "-lpthread", "-ldl",
                    "-lm", "-lrt", "-lutil", "-lgcc_s", "-o", str(out)], check=True)
    return str(out)


def test_c_check_on_real_bodies(c_verify: str, captured: List[Tuple[pathlib.Path, str]]) -> None:
    for body, sig in captured:
        assert check([c_verify, SECRET, str(body), sig]) == 0
        assert check([c_verify, "wrong", str(body), sig]) == 1
        assert check([c_verify, SECRET, str(body)]) == 1  # no header
        assert check([c_verify, SECRET, str(body), sig[:-1] + "x"]) == 1


# -- the delivery promises the guide makes ----------------------------------------------


def test_timestamps_are_the_calls_own_milliseconds_in_order(
    make_client: MakeClient, receiver: Receiver
) -> None:
    from datetime import datetime, timezone

    def parse(ts: str) -> datetime:
        return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f%z")

    client = make_client()
    before = datetime.now(timezone.utc).replace(microsecond=0)
    first = client.track(user_id="u", event="First")
    time.sleep(0.005)
    second = client.track(user_id="u", event="Second")
    assert client.flush(timeout=10)
    sent = {m["messageId"]: m["timestamp"] for m in receiver.batch_messages()}
    hooked = {r.json["messageId"]: r.json["timestamp"] for r in receiver.at("/hook")}
    assert sent == hooked  # one timestamp per message, both destinations
    t1, t2 = parse(sent[first]), parse(sent[second])
    assert before <= t1 < t2 <= datetime.now(timezone.utc)
    assert (t2 - t1).total_seconds() >= 0.005  # each call's own millisecond


def test_a_retry_sends_the_same_bytes(make_client: MakeClient, receiver: Receiver) -> None:
    # What lets receivers deduplicate delete notifications by (userId, timestamp).
    receiver.fail_first["/hook"] = 1
    client = make_client(write_key=None)
    client.delete(user_id="u-1")
    client.track(user_id="u-1", event="E")
    assert client.flush(timeout=15)
    reqs = receiver.at("/hook")
    assert len(reqs) == 3  # the first one answered 500
    by_body: Dict[bytes, List[str]] = {}
    for r in reqs:
        by_body.setdefault(r.raw_body, []).append(r.headers["x-signature"])
    assert sorted(len(v) for v in by_body.values()) == [1, 2]
    for sigs in by_body.values():
        assert len(set(sigs)) == 1
