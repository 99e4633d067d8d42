"""The admin API's OpenAPI document, checked by a validator from the registry
(openapi-spec-validator, in the relay tests' venv), as the running relay serves it."""

import base64
import json
import time
import urllib.request

from openapi_spec_validator import validate

from conftest import ADMIN_TOKEN, Relay


def test_the_admin_api_document_is_valid_openapi_3_1(relay: Relay) -> None:
    req = urllib.request.Request(
        relay.url + "/admin/openapi.json",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    with urllib.request.urlopen(req, timeout=10) as answer:
        doc = json.load(answer)
    assert doc["openapi"] == "3.1.0"
    validate(doc)
    # Every route the relay answers is in it (the router's own table is checked against it
    # in crates/outbound-relay/src/control/openapi.rs): the sources and their tokens.
    for path in ["/admin/sources", "/admin/sources/{name}", "/admin/sources/{name}/tokens"]:
        assert path in doc["paths"], path


def test_a_client_generated_from_the_document_calls_every_route(tmp_path, receivers) -> None:
    """openapi-python-client (pinned, from PyPI) generates a Python client from the document
    the relay serves, with no warning; the client then calls every route once against a real
    relay, and each answer parses into the generated models."""
    import importlib
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from conftest import start_relay, toml_str

    rx, _ = receivers
    rx.status["/refuses"] = 400
    config = tmp_path / "relay.toml"
    config.write_text("\n".join([
        'listen = "127.0.0.1:0"',
        f"data_dir = {toml_str(str(tmp_path / 'data'))}",
        f"admin_token = {toml_str(ADMIN_TOKEN)}",
        "block_private_networks = false",
    ]) + "\n")
    relay = start_relay(config, tmp_path / "relay.log")
    try:
        req = urllib.request.Request(relay.url + "/admin/openapi.json",
                                     headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        with urllib.request.urlopen(req, timeout=10) as answer:
            (tmp_path / "doc.json").write_bytes(answer.read())
        venv_bin = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}
        gen = subprocess.run(
            [os.path.join(venv_bin, "openapi-python-client"), "generate", "--path",
             str(tmp_path / "doc.json"), "--output-path", str(tmp_path / "relay_admin"),
             "--meta", "none"],
            capture_output=True, text=True, env=env, timeout=300)
        out = gen.stdout + gen.stderr
        assert gen.returncode == 0, out
        assert "Warning" not in out and "Skipping" not in out, out
        sys.path.insert(0, str(tmp_path))
        try:
            calls = _call_every_route(importlib.import_module("relay_admin"), relay, rx)
        finally:
            sys.path.remove(str(tmp_path))
            for name in [m for m in sys.modules if m.startswith("relay_admin")]:
                del sys.modules[name]
        doc = json.loads((tmp_path / "doc.json").read_text())
        ops = {op["operationId"] for item in doc["paths"].values() for op in item.values()
               if isinstance(op, dict) and "operationId" in op}
        assert calls == ops, f"not called: {ops - calls}"
    finally:
        assert relay.stop() == 0, relay.log_text()
        shutil.rmtree(tmp_path / "relay_admin", ignore_errors=True)


def _call_every_route(admin, relay: Relay, rx) -> set:
    """Each operation of the generated client once; returns the operation ids called."""
    from importlib import import_module

    client = admin.AuthenticatedClient(base_url=relay.url, token=ADMIN_TOKEN)
    models = import_module("relay_admin.models")
    called = set()

    def call(tag: str, op: str, want: int, **kwargs):
        module = import_module(f"relay_admin.api.{tag}.{op}")
        answer = module.sync_detailed(client=client, **kwargs)
        assert answer.status_code == want, (op, answer.status_code, answer.content)
        called.add(op)
        return answer.parsed

    hook = models.WebhookInput(url=f"{rx.url}/refuses")
    body = models.SourceInput(write_keys=["wk_gen"], webhooks=[hook], shared_secret="s")
    made = call("sources", "put_source", 201, name="gen", body=body)
    assert isinstance(made, models.Source) and made.name == "gen" and made.has_shared_secret
    assert call("sources", "get_source", 200, name="gen").write_keys == ["wk_gen"]
    assert [s.name for s in call("sources", "list_sources", 200).sources] == ["gen"]
    assert call("sources", "whoami", 200).caller == models.CallerKind.ADMIN
    assert call("document", "openapi", 200) is not None
    token = call("tokens", "create_token", 201, name="gen")
    assert token.token.startswith("obt_")
    assert [t.id for t in call("tokens", "list_tokens", 200, name="gen").tokens] == [token.id]
    # An event, refused by its receiver: a dead letter.
    send = urllib.request.Request(
        relay.url + "/v1/track", method="POST",
        data=json.dumps({"userId": "u1", "event": "E", "messageId": "gen-1"}).encode(),
        headers={"Content-Type": "application/json",
                 "Authorization": "Basic " + base64.b64encode(b"wk_gen:").decode()})
    with urllib.request.urlopen(send, timeout=10) as answer:
        assert answer.status == 200
    deadline = time.time() + 20
    while True:
        page = call("records", "list_dead_letters", 200, name="gen")
        if page.stats.count == 1 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert [d.message_id for d in page.dead_letters] == ["gen-1"]
    assert call("records", "get_dead_letter", 200, name="gen", message_id="gen-1").rounds >= 1
    health = call("records", "get_health", 200, name="gen")
    assert health.webhooks[0].consecutive_failures >= 1
    assert call("records", "list_attempts", 200, name="gen", index=0).attempts[0].status == 400
    assert len(call("records", "get_activity", 200, name="gen").failed) == 60
    counted = call("records", "replay_dead_letters", 200, name="gen",
                   body=models.ReplayRequest(dry_run=True))
    assert counted.total == 1, counted
    one = call("records", "replay_dead_letter", 202, name="gen", message_id="gen-1",
               body=models.ReplayOne())
    assert call("records", "get_replay", 200, name="gen", id=one.id).total == 1
    call("records", "replay_dead_letters", 202, name="gen", body=models.ReplayRequest())
    call("records", "delete_dead_letter", 404, name="gen", message_id="not-one")
    synced = call("audiences", "sync_audience", 200, name="gen", audience="vip",
                  body=models.Audience(members=["u1"]))
    assert synced.joined == 1
    sent = call("deletions", "delete_user", 200, body=models.Deletion(user_id="u1"))
    assert sent.sources == ["gen"]
    call("tokens", "revoke_token", 204, name="gen", id=token.id)
    trail = call("audit", "list_audit", 200, limit=100)
    assert [e.action for e in trail.entries][:2] == ["token.revoked", "user.deleted"], trail
    assert trail.entries[-1].action == "source.created" and trail.next_ is None
    alerts = call("alerts", "list_alerts", 200)
    assert alerts.on is False and alerts.alerts == [], alerts
    # A subscription of the source, refused by its receiver too: its own records.
    sub = models.SubscriptionSettings(name="crm", trigger='type = "track"', url=f"{rx.url}/refuses")
    body = models.SourceInput(write_keys=["wk_gen"], webhooks=[hook], subscriptions=[sub])
    assert call("sources", "put_source", 200, name="gen", body=body).subscriptions
    send = urllib.request.Request(
        relay.url + "/v1/track", method="POST",
        data=json.dumps({"userId": "u1", "event": "E", "messageId": "gen-2"}).encode(),
        headers={"Content-Type": "application/json",
                 "Authorization": "Basic " + base64.b64encode(b"wk_gen:").decode()})
    with urllib.request.urlopen(send, timeout=10) as answer:
        assert answer.status == 200
    deadline = time.time() + 20
    while True:
        page = call("subscriptions", "list_subscription_dead_letters", 200, name="gen",
                    subscription="crm")
        if page.stats.count == 1 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert [d.message_id for d in page.dead_letters] == ["gen-2"]
    state = call("subscriptions", "get_subscription", 200, name="gen", subscription="crm")
    assert state.failed == 1, state
    attempts = call("subscriptions", "list_subscription_attempts", 200, name="gen",
                    subscription="crm")
    assert attempts.attempts[0].status == 400
    assert call("subscriptions", "get_subscription_dead_letter", 200, name="gen",
                subscription="crm", message_id="gen-2").rounds >= 1
    counted = call("subscriptions", "replay_subscription_dead_letters", 200, name="gen",
                   subscription="crm", body=models.ReplayRequest(dry_run=True))
    assert counted.total == 1, counted
    one = call("subscriptions", "replay_subscription_dead_letter", 202, name="gen",
               subscription="crm", message_id="gen-2", body=models.ReplayOne())
    assert call("subscriptions", "get_subscription_replay", 200, name="gen", subscription="crm",
                id=one.id).total == 1
    call("subscriptions", "delete_subscription_dead_letter", 404, name="gen",
         subscription="crm", message_id="not-one")
    event = {"type": "track", "event": "E", "userId": "u1"}
    ask = models.PreviewAsk.from_dict({"event": event})
    saved = call("subscriptions", "preview_saved_subscription", 200, name="gen",
                 subscription="crm", body=ask)
    assert saved.matches is True, saved
    ask = models.PreviewAsk.from_dict({"event": event, "subscription": {
        "name": "t", "trigger": 'type = "identify"', "url": f"{rx.url}/x"}})
    assert call("subscriptions", "preview_subscription", 200, name="gen", body=ask).matches is False
    # Recent events: the first ask starts the capture; what the source accepts then is listed.
    recent = call("records", "list_recent_events", 200, name="gen")
    assert recent.events == [] and recent.capacity == 20 and recent.capturing_until, recent
    send = urllib.request.Request(
        relay.url + "/v1/track", method="POST",
        data=json.dumps({"userId": "u1", "event": "Seen", "messageId": "gen-3"}).encode(),
        headers={"Content-Type": "application/json",
                 "Authorization": "Basic " + base64.b64encode(b"wk_gen:").decode()})
    with urllib.request.urlopen(send, timeout=10) as answer:
        assert answer.status == 200
    recent = call("records", "list_recent_events", 200, name="gen")
    assert [(e.type_, e.name, e.too_large) for e in recent.events] == [("track", "Seen", False)], recent
    assert recent.events[0].to_dict()["event"]["messageId"] == "gen-3", recent
    call("sources", "delete_source", 204, name="gen")
    return called
