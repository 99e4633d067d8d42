"""The console (`/console/`) in headless Chromium, driven by puppeteer-core
(tests/relay/node/console.cjs), against the real relay binary and real receivers on
127.0.0.1. Its two sources are made through the admin API (a source of relay.toml is
read-only there), each with a webhook on its own receiver.

What a person does with it, end to end: sign in; see a source's webhook go to failing when
its receiver refuses; find the dead letter; replay it once the receiver is back and see it
delivered once; change a webhook's URL in place and see the next event go there; a refusal
shown beside its field. Event content and answers shown as text, running nothing; a source
token that reaches its own source only; the policy on every answer, no inline script. A
source's subscriptions listed, added, previewed, and their dead letters replayed.

The journey's screenshots, desktop (1280×800) and phone (390×844), are written to
target/console-shots/ (untracked: a run leaves the clone clean); with
OUTBOUND_CONSOLE_SHOTS=docs/console they replace the ones docs/console.md shows."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from conftest import ADMIN_TOKEN, ROOT, Relay, node_env, start_relay, toml_str
from receiver import Receiver

# Untracked by default: a test run must leave a fresh clone clean (scripts/check-tree.sh).
SHOTS = Path(os.environ.get("OUTBOUND_CONSOLE_SHOTS") or ROOT / "target" / "console-shots")
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
# Not "mobile" (Chromium reloads the page when that changes): a 390 px window.
PHONE = {"width": 390, "height": 844, "mobile": False}
DESKTOP = {"width": 1280, "height": 800, "mobile": False}


def api(relay: Relay, method: str, path: str, body: Any = None,
        token: str = ADMIN_TOKEN) -> Tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(relay.url + path, data=data, method=method, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        text = e.read()
        return e.code, json.loads(text) if text else None


def track(relay: Relay, key: str, message_id: str, properties: Optional[Dict[str, Any]] = None) -> None:
    body = json.dumps({"userId": "u1", "event": "Order Completed", "messageId": message_id,
                       "properties": properties or {"total": 12.5}}).encode()
    auth = base64.b64encode(f"{key}:".encode()).decode()
    req = urllib.request.Request(relay.url + "/v1/track", data=body, method="POST", headers={
        "Authorization": f"Basic {auth}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert r.status == 200


@pytest.fixture
def console_relay(tmp_path: Path, receivers: List[Receiver]) -> Iterator[Relay]:
    """A relay with the admin API on and no source in its file; alpha and beta are made
    through the API."""
    config = tmp_path / "relay.toml"
    config.write_text("\n".join([
        'listen = "127.0.0.1:0"',
        f"data_dir = {toml_str(str(tmp_path / 'data'))}",
        f"admin_token = {toml_str(ADMIN_TOKEN)}",
        # The guard off: the receivers' answers on 127.0.0.1 are shown in attempts (answers of
        # a receiver reached through an allowed network's exception are not).
        "block_private_networks = false",
        "max_backoff = 0.2",
    ]) + "\n")
    relay = start_relay(config, tmp_path / "relay.log")
    a, b = receivers
    for name, rx, secret in (("alpha", a, "alpha_SECRET_1"), ("beta", b, "beta_SECRET_2")):
        status, answer = api(relay, "PUT", f"/admin/sources/{name}", {
            "write_keys": [f"wk_{name}"], "shared_secret": secret,
            "allowed_networks": ["127.0.0.0/8"],
            "webhooks": [{"url": f"{rx.url}/{name}", "headers": {"X-Source": name}}]})
        assert status == 201, answer
    yield relay
    assert relay.stop() == 0, relay.log_text()


class Browser:
    """One Chromium tab of the console (tests/relay/node/console.cjs), a command a line."""

    def __init__(self, tmp_path: Path) -> None:
        self.log = tmp_path / "console-driver.log"
        self.proc = subprocess.Popen(
            ["node", str(ROOT / "tests/relay/node/console.cjs")], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=open(self.log, "wb"), env=dict(os.environ, **node_env()),
            text=True)

    def __call__(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(dict(args, op=op)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the browser driver ended; its log:\n{self.log.read_text()[-3000:]}")
        answer = json.loads(line)
        if not answer["ok"]:
            raise AssertionError(f"{op} {args}: {answer['error']}")
        return answer["value"]

    def main_text(self) -> str:
        return self("text", selector="main")

    def axe(self, name: str) -> None:
        """axe-core's rules (npm, pinned in scripts/relay-env.sh) on the screen as it is: no
        serious or critical violation."""
        found = self("axe")
        bad = [v for v in found if v["impact"] in ("serious", "critical")]
        assert not bad, f"{name}: accessibility (axe-core): {json.dumps(bad, indent=1)}"

    def shots(self, name: str, full: bool = True) -> None:
        """The screen as it is, on a desktop and on a phone, each checked with axe-core; on
        the phone, nothing wider than its window but what scrolls inside its own box.
        `full`: the whole page (not for a modal dialog, which covers the window only)."""
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.axe(f"{name} (desktop)")
        self("screenshot", path=str(SHOTS / f"{name}-desktop.png"), fullPage=full)
        self("viewport", **PHONE)
        time.sleep(0.4)
        wide = self("eval", js="document.documentElement.scrollWidth")
        assert wide <= PHONE["width"], f"{name}: the page is {wide} px wide on a 390 px phone"
        self.axe(f"{name} (phone)")
        self("screenshot", path=str(SHOTS / f"{name}-phone.png"), fullPage=full)
        self("viewport", **DESKTOP)
        time.sleep(0.2)

    def sign_in(self, relay: Relay, token: str) -> None:
        self("goto", url=relay.url + "/console/")
        self("waitText", text="Sign in", selector="main")
        self("type", selector="#token", text=token)
        self("click", selector="button[type=submit]")

    def close(self) -> Dict[str, Any]:
        report = self("report")
        try:
            self("close")
        except AssertionError:
            pass
        self.proc.wait(30)
        return report


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    b = Browser(tmp_path)
    yield b
    if b.proc.poll() is None:
        b.proc.kill()
        b.proc.wait()


def assert_clean(report: Dict[str, Any], relay: Relay, token: str) -> None:
    """Nothing ran that should not have, nothing left the relay's origin, and the token was
    never in a URL nor in the relay's log."""
    assert report["dialogs"] == [], report["dialogs"]
    assert report["pageErrors"] == [], report["pageErrors"]
    assert report["csp"] == [], f"policy violations: {report['csp']}"
    assert report["consoleErrors"] == [] or all(
        "status of 4" in e for e in report["consoleErrors"]), report["consoleErrors"]
    for r in report["requests"]:
        url = r.split(" ", 1)[1]
        assert url.startswith(relay.url + "/") or url.startswith("data:"), f"request outside the relay: {r}"
        assert token not in url, f"the token in a URL: {r}"
    assert token not in relay.log.read_text(errors="replace"), "the token in the relay's log"


def post_batch(relay_url: str, key: str, batch: List[Dict[str, Any]]) -> None:
    """POSTs `batch` to /v1/batch with write key `key`, again after each 429 (the relay's
    queue is bounded: a 429 says to send again shortly)."""
    req = urllib.request.Request(relay_url + "/v1/batch", method="POST",
                                 data=json.dumps({"batch": batch}).encode(),
                                 headers={"Authorization": "Basic " + base64.b64encode(f"{key}:".encode()).decode(),
                                          "Content-Type": "application/json"})
    while True:
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                assert r.status == 200
            return
        except urllib.error.HTTPError as e:
            assert e.code == 429, e
            time.sleep(0.1)


def refused_relay(tmp_path: Path, refuser: "Refuser") -> Relay:
    """A relay whose source alpha (write key wk_alpha) has one webhook, `refuser`'s."""
    config = tmp_path / "relay.toml"
    config.write_text("\n".join([
        'listen = "127.0.0.1:0"', f"data_dir = {toml_str(str(tmp_path / 'data'))}",
        f"admin_token = {toml_str(ADMIN_TOKEN)}", 'allowed_networks = ["127.0.0.0/8"]',
        "[[sources]]", 'name = "alpha"', 'write_keys = ["wk_alpha"]',
        "[[sources.webhooks]]", f'url = "{refuser.url}/in"']) + "\n")
    return start_relay(config, tmp_path / "relay.log")


def wait(what: str, done: Any, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_console_answers_carry_the_policy_and_the_page_has_no_inline_script(
        console_relay: Relay) -> None:
    relay = console_relay
    for path in ("/console/", "/console/main.js", "/console/console.css", "/console/nope.js"):
        try:
            with urllib.request.urlopen(relay.url + path, timeout=10) as r:
                status, headers, body = r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            status, headers, body = e.code, e.headers, e.read().decode()
        assert status == (404 if "nope" in path else 200), path
        assert headers["Content-Security-Policy"] == CSP, path
        assert headers["X-Content-Type-Options"] == "nosniff", path
        assert headers["Referrer-Policy"] == "no-referrer", path
        assert headers["X-Frame-Options"] == "DENY", path
        assert headers["Cache-Control"] in ("no-cache", "no-store"), path
        if path == "/console/":
            assert headers["Content-Type"].startswith("text/html")
            html = body.lower()
            scripts = re.findall(r"<script[^>]*>", html)
            assert scripts and all(" src=" in s for s in scripts), scripts
            assert re.search(r"<script[^>]*>\s*[^<\s]", html) is None, "inline script"
            assert "<style" not in html and " style=" not in html
            assert re.search(r"\son[a-z]+\s*=", html) is None, "an event handler attribute"
            assert not re.search(r"(src|href)=\"(https?:)?//", html), "a resource from elsewhere"
    # The page is the relay's only where the admin API is on; /console redirects to /console/.
    req = urllib.request.Request(relay.url + "/console", method="GET")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(req, timeout=10)
        raise AssertionError("no redirect")
    except urllib.error.HTTPError as e:
        assert e.code == 308 and e.headers["Location"] == "/console/"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_console_operator_journey(console_relay: Relay, receivers: List[Receiver],
                                  browser: Browser) -> None:
    relay = console_relay
    rx_a, rx_b = receivers
    b = browser
    b("goto", url=relay.url + "/console/")
    b("waitText", text="Sign in", selector="main")
    b.shots("signin")
    # A wrong token is refused, and said so.
    b("type", selector="#token", text="not-a-token")
    b("click", selector="button[type=submit]")
    b("waitText", text="not accepted", selector="main")
    b("type", selector="#token", text=ADMIN_TOKEN)
    b("click", selector="button[type=submit]")
    b("waitText", text="alpha", selector="table.sources")
    assert "beta" in b("text", selector="table.sources")
    assert b("eval", js="sessionStorage.length") == 1
    assert b("eval", js="location.href") == relay.url + "/console/#/sources"
    b.shots("sources")
    # Search asks the relay for the matching page.
    b("type", selector="#search", text="bet")
    b("waitText", text="matching", selector="main")
    listed = b("text", selector="table.sources tbody")
    assert "beta" in listed and "alpha" not in listed, listed
    b("type", selector="#search", text="")
    b("waitText", text="alpha", selector="table.sources")

    # The receiver refuses: the webhook shows failing, with its answer.
    rx_a.status["/alpha"] = 400
    rx_a.answer["/alpha"] = b'{"error":"unknown event"}'
    track(relay, "wk_alpha", "order-1001")
    b("click", selector="table.sources a", text="alpha")
    b("waitText", text="failing", selector=".cards", timeout=30000)
    hook = b("text", selector="li.webhook")
    assert rx_a.url + "/alpha" in hook and "Failures in a row" in hook, hook
    b("waitText", text="Failed 1", selector=".legend", timeout=30000)
    b.shots("source")
    b("click", selector="li.webhook a", text="Recent attempts")
    b("waitText", text="order-1001", selector="table.attempts")
    row = b("text", selector="table.attempts tbody tr")
    assert "400" in row and "permanent" in row and '{"error":"unknown event"}' in row, row
    b.shots("attempts")

    # The dead letter, found by its messageId.
    b("click", selector="nav.tabs a", text="Dead letters")
    b("waitText", text="order-1001", selector="table.dead-letters")
    b("type", selector="#find", text="order-1001")
    b("click", selector="form.search button", text="Find")
    b("waitText", text="Body as sent", selector="section.detail")
    detail = b("text", selector="section.detail")
    assert "status 400" in detail and '"event": "Order Completed"' in detail, detail
    b.shots("dead-letters")

    # The receiver is back: replayed, delivered once.
    rx_a.status["/alpha"] = 200
    before = len(rx_a.at("/alpha"))
    b("click", selector="section.detail button", text="Replay this one")
    # Its buttons are disabled at once: a second replay would be refused.
    assert b("eval", js="[...document.querySelectorAll('section.detail button')].filter((x) =>"
             " /Replay this one|Discard/.test(x.textContent)).every((x) => x.disabled)") is True
    b("waitText", text="done", selector=".progress", timeout=30000)
    progress = b("text", selector=".progress")
    assert "1 delivered" in progress and "0 failed" in progress, progress
    time.sleep(1.0)  # anything sent twice would be here by now
    again = [r for r in rx_a.at("/alpha")[before:] if r.json["messageId"] == "order-1001"]
    assert len(again) == 1, f"replayed {len(again)} times"
    b("waitText", text="No dead letter", selector="table.dead-letters")

    # The URL changed in place: the next event goes there.
    b("click", selector="nav.tabs a", text="Webhooks and secret")
    b("waitText", text="A secret is set", selector="main")
    b.shots("settings")
    b("type", selector="input.url", text=rx_b.url + "/moved")
    # A header's value is kept for the URL it was set for only: moved, it is asked for again.
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="give its value", selector="main")
    b("type", selector="input.header-value", text="alpha")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="main")
    assert "alpha" not in b("eval", js="[...document.querySelectorAll('input.header-value')].map(i => i.value).join()")
    status, source = api(relay, "GET", "/admin/sources/alpha")
    assert source["webhooks"][0]["url"] == rx_b.url + "/moved" and source["has_shared_secret"], source
    assert source["webhooks"][0]["headers"] == {"X-Source": {"has_value": True}}, source
    n_alpha = len(rx_a.at("/alpha"))
    track(relay, "wk_alpha", "after-move-1")
    assert rx_b.wait_for(lambda r: len(r.at("/moved")) == 1, 20), rx_b.requests
    assert rx_b.at("/moved")[0].json["messageId"] == "after-move-1"
    assert len(rx_a.at("/alpha")) == n_alpha

    # The secret is write-only: replaced, then cleared, never shown.
    b("click", selector="label.check", text="Replace it with")
    b("type", selector=".secret input[type=password]", text="NEW_secret_3_of_20ch")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="main")
    assert "NEW_secret_3_of_20ch" not in b("eval", js="document.documentElement.outerHTML")
    track(relay, "wk_alpha", "after-secret-1")
    assert rx_b.wait_for(lambda r: len(r.at("/moved")) == 2, 20), rx_b.requests
    signed = rx_b.at("/moved")[1]
    assert signed.headers["x-signature"] == hmac.new(b"NEW_secret_3_of_20ch", signed.body, hashlib.sha1).hexdigest()
    b("click", selector="label.check", text="Clear it")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="No secret is set", selector="main")
    assert api(relay, "GET", "/admin/sources/alpha")[1]["has_shared_secret"] is False
    track(relay, "wk_alpha", "after-clear-1")
    assert rx_b.wait_for(lambda r: len(r.at("/moved")) == 3, 20), rx_b.requests
    assert "x-signature" not in rx_b.at("/moved")[2].headers

    # A value the relay refuses: its message beside the field it names, nothing changed (the
    # header's value typed again: a kept value stays with the URL it was set for).
    b("type", selector="input.url", text="ftp://nowhere.example/x")
    b("type", selector="input.header-value", text="alpha")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Not saved", selector="main")
    beside = b("eval", js="(() => { const i = document.querySelector('input.url');"
               " const n = i.nextElementSibling; return [i.getAttribute('data-field'),"
               " i.getAttribute('aria-invalid'), n && n.className, n && n.textContent,"
               " document.activeElement === i] })()")
    assert beside[0] == "webhooks[0].url" and beside[1] == "true", beside
    # Named as the page numbers it (Webhook 1), not as the API does (webhooks[0]).
    assert beside[2] == "field-error" and beside[3].startswith("Webhook 1, URL: "), beside
    assert "http" in beside[3] and beside[4], beside
    assert api(relay, "GET", "/admin/sources/alpha")[1]["webhooks"][0]["url"] == rx_b.url + "/moved"
    b.shots("settings-refused")

    # Signing out forgets the token: storage, memory, and the screen.
    b("click", selector="#signout")
    b("waitText", text="Sign in", selector="main")
    assert b("eval", js="sessionStorage.length") == 0
    b("eval", js="location.hash = '#/sources/alpha'")
    time.sleep(0.5)
    assert "alpha" not in b.main_text()
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_save_does_not_undo_a_change_made_meanwhile(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """The settings are open in the console when a script adds a webhook through the API.
    The console's save is refused (412: it sends the ETag it read as If-Match) and says what
    changed, keeping the edit in the form, instead of removing the webhook added meanwhile."""
    relay = console_relay
    rx_b = receivers[1]
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/settings'")
    b("waitText", text="A secret is set", selector="main")
    # Meanwhile a script sends the source back with one more webhook.
    _, source = api(relay, "GET", "/admin/sources/alpha")
    added = f"{rx_b.url}/added"
    status, _ = api(relay, "PUT", "/admin/sources/alpha",
                    dict(source, webhooks=source["webhooks"] + [{"url": added}]))
    assert status == 200
    # The console's edit: a header added to webhook 1, saved.
    b("click", selector="button.add-header")
    b("type", selector=".header-row:last-child input.header-name", text="X-Added")
    b("type", selector=".header-row:last-child input.header-value", text="by-the-console")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="changed since you opened this page", selector="main", timeout=10000)
    said = b("text", selector=".conflict")
    assert f"Webhook 2 added: {added}" in said, said
    _, now = api(relay, "GET", "/admin/sources/alpha")
    assert [w["url"] for w in now["webhooks"]] == [source["webhooks"][0]["url"], added], now
    assert now["webhooks"][0]["headers"] == {"X-Source": {"has_value": True}}, "the stale save changed nothing"
    # The edit is still in the form; the current settings on request.
    assert b("eval", js="[...document.querySelectorAll('input.header-name')].map((i) => i.value)") == [
        "X-Source", "X-Added"]
    b("click", selector=".conflict button", text="Show the current settings")
    b("waitText", text="your edits were dropped", selector="form.settings")
    assert b("count", selector="form.settings fieldset.webhook") == 2
    # Saved from the current settings: applied, both webhooks kept.
    b("click", selector="label.check", text="On (off")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="main")
    _, now = api(relay, "GET", "/admin/sources/alpha")
    assert [w["enabled"] for w in now["webhooks"]] == [False, True], now
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_audit_trail_says_who_changed_what(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """A change saved in the console, a token made and a dead letter discarded by a source's
    token: the audit screen lists each with who, when and what (field names, no secret);
    the source's token sees its own source's entries only."""
    relay = console_relay
    rx_a = receivers[0]
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/settings'")
    b("waitText", text="A secret is set", selector="main")
    b("click", selector="label.check", text="Replace it with")
    b("type", selector=".secret input[type=password]", text="AUDIT_secret_9_of_20")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="main")
    status, made = api(relay, "POST", "/admin/sources/alpha/tokens")
    assert status == 201
    token = made["token"]
    rx_a.status["/alpha"] = 400
    track(relay, "wk_alpha", "audit-1")
    wait("the dead letter", lambda: api(relay, "GET", "/admin/sources/alpha/dead-letters/audit-1")[0] == 200)
    assert api(relay, "DELETE", "/admin/sources/alpha/dead-letters/audit-1", token=token)[0] == 200
    api(relay, "PUT", "/admin/sources/beta", dict(api(relay, "GET", "/admin/sources/beta")[1],
                                                   allowed_origins=["https://b.example"]))
    b("click", selector="#nav a", text="Audit trail")
    b("waitText", text="dead letter discarded", selector="table.audit")
    rows = b("eval", js="[...document.querySelectorAll('table.audit tbody tr')].map((r) => r.innerText)")
    assert len(rows) == 6, rows  # alpha and beta made, alpha changed, a token, a discard, beta changed
    assert "token " + made["id"] + " of alpha" in rows[1] and "audit-1" in rows[1], rows[1]
    assert "admin token" in rows[2] and made["id"] in rows[2], rows[2]
    assert "settings changed" in rows[3] and "shared_secret" in rows[3], rows[3]
    assert "allowed_origins" in rows[0] and "beta" in rows[0], rows[0]
    assert "AUDIT_secret_9_of_20" not in b("eval", js="document.documentElement.outerHTML")
    b.shots("audit")
    b("click", selector="#signout")
    # The source's token: its own source's entries, on its source's Audit tab.
    b.sign_in(relay, token)
    b("waitText", text="Webhook 1", selector=".cards")
    b("click", selector="nav.tabs a", text="Audit")
    b("waitText", text="dead letter discarded", selector="table.audit")
    mine = b("eval", js="[...document.querySelectorAll('table.audit tbody tr')].map((r) => r.innerText)")
    assert len(mine) == 4 and not any("beta" in r for r in mine), mine
    b("eval", js="location.hash = '#/audit'")
    b("waitText", text="Webhook 1", selector=".cards")
    assert b("eval", js="location.hash") == "#/sources/alpha"
    assert_clean(b.close(), relay, token)


def test_console_settings_warn_before_saving_and_name_fields_as_the_page_does(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """A header the relay refuses is marked at its own field, named "Webhook 2, header …"
    (the API's `webhooks[1].headers["Bad Header:"]`); settings that can never deliver (a
    private address with no network granted, port 99999, the same URL twice, a 1-character
    secret, every webhook off) are listed before anything is sent, and saved only when asked
    again; what a save did is said beside its button, in view."""
    relay = console_relay
    rx_a, rx_b = receivers
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/settings'")
    b("waitText", text="A secret is set", selector="main")
    b("click", selector="button", text="Add a webhook")
    b("type", selector="fieldset.webhook:nth-child(2) input.url", text=f"{rx_b.url}/two")
    b("click", selector="fieldset.webhook:nth-child(2) button.add-header")
    b("type", selector="fieldset.webhook:nth-child(2) input.header-name", text="Bad Header:")
    b("type", selector="fieldset.webhook:nth-child(2) input.header-value", text="x")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Not saved", selector="main")
    marked = b("eval", js="(() => { const i = document.querySelector('[aria-invalid]');"
               " const note = document.getElementById(i.getAttribute('aria-describedby'));"
               " return [i.className, i.getAttribute('data-field'), note.textContent,"
               " document.activeElement === i] })()")
    assert marked[0] == "header-value" and marked[1] == 'webhooks[1].headers["Bad Header:"]', marked
    assert marked[2].startswith("Webhook 2, header “Bad Header:”: "), marked
    assert marked[3] is True, marked
    b("click", selector="fieldset.webhook:nth-child(2) .header-row button", text="Remove header")
    # Settings that can never deliver: said first, nothing sent.
    b("click", selector="button", text="Add a webhook")
    b("type", selector="fieldset.webhook:nth-child(1) input.url", text="http://10.1.2.3/in")
    b("type", selector="fieldset.webhook:nth-child(2) input.url", text="http://10.1.2.3/in")
    b("type", selector="fieldset.webhook:nth-child(3) input.url", text="http://127.0.0.1:99999/x")
    for i in (1, 2, 3):
        b("click", selector=f"fieldset.webhook:nth-child({i}) label.check", text="On (off")
    b("type", selector="fieldset.webhook:nth-child(1) input.header-value", text="alpha")
    b("click", selector="label.check", text="Replace it with")
    b("type", selector=".secret input[type=password]", text="x")
    _, before = api(relay, "GET", "/admin/sources/alpha")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="can never deliver", selector="form.settings")
    said = b("text", selector=".warnings")
    for words in ("Webhook 1: 10.1.2.3 is a private address", "Webhook 2 has the same URL as webhook 1",
                  "Webhook 3: port 99999 is over 65535", "Every webhook is off", "The new secret has 1 character"):
        assert words in said, (words, said)
    b.axe("settings-warned")
    b.shots("settings-warned")
    assert api(relay, "GET", "/admin/sources/alpha")[1] == before, "nothing sent before it was asked again"
    b("click", selector="button[type=submit]", text="Save anyway")
    b("waitText", text="Saved", selector="form.settings")
    near = b("eval", js="(() => { const s = document.querySelector('form.settings button[type=submit]');"
             " const r = s.nextElementSibling.getBoundingClientRect();"
             " return [s.nextElementSibling.textContent, r.top >= 0 && r.bottom <= innerHeight,"
             " document.activeElement === s] })()")
    assert near[0].startswith("Saved") and near[1] and near[2], near
    _, after = api(relay, "GET", "/admin/sources/alpha")
    assert [w["url"] for w in after["webhooks"]] == ["http://10.1.2.3/in", "http://10.1.2.3/in",
                                                     "http://127.0.0.1:99999/x"], after
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_edits_how_an_endpoint_is_called(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """A webhook's authentication, signature and rate limit, edited under it: the password
    typed once goes out in the receiver's Authorization and is never shown again, a later
    save keeps it; a value the relay refuses is marked at its own field inside the
    disclosure, opened for it, and named as the page names it."""
    relay = console_relay
    rx_a, _ = receivers
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/settings'")
    b("waitText", text="A secret is set", selector="main")
    b("click", selector="details.endpoint summary")
    pick = ("(([name, value]) => { const s = document.querySelector(`select[data-name='${name}']`);"
            " s.value = value; s.dispatchEvent(new Event('change', { bubbles: true })) })")
    b("eval", js=f"{pick}(['auth', 'basic'])")
    b("type", selector='input[data-name="auth.user"]', text="relay")
    b("type", selector='input[data-name="auth.password"]', text="pa55-CONSOLE")
    b("eval", js=f"{pick}(['signature_scheme', 'hmac-sha256'])")
    b("type", selector='input[data-name="signature_header"]', text="X-Hub-Signature-256")
    b("type", selector='input[data-name="rate_limit.per_second"]', text="50")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="form.settings")
    _, got = api(relay, "GET", "/admin/sources/alpha")
    hook = got["webhooks"][0]
    assert hook["auth"] == {"type": "basic", "user": "relay", "password": {"has_value": True}}, hook
    assert hook["signature_scheme"] == "hmac-sha256" and hook["signature_header"] == "X-Hub-Signature-256", hook
    assert hook["rate_limit"] == {"per_second": 50, "burst": 50}, hook
    assert hook["headers"] == {"X-Source": {"has_value": True}}, "the header's value kept"
    assert "pa55-CONSOLE" not in b("eval", js="document.documentElement.outerHTML")
    # Shown open once set.
    assert b("eval", js="document.querySelector('details.endpoint').open") is True
    b.shots("settings-endpoint")
    want = "Basic " + base64.b64encode(b"relay:pa55-CONSOLE").decode()
    track(relay, "wk_alpha", "endpoint-1")
    assert rx_a.wait_for(lambda r: len(r.at("/alpha")) == 1, 20), rx_a.requests
    sent = rx_a.at("/alpha")[0]
    assert sent.headers["authorization"] == want, sent.headers
    mac = hmac.new(b"alpha_SECRET_1", sent.body, hashlib.sha256).hexdigest()
    assert sent.headers["x-hub-signature-256"] == f"sha256={mac}", sent.headers
    # Saved again with the password left as it is (set, hidden): it stays.
    b("type", selector='input[data-name="rate_limit.per_second"]', text="40")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="form.settings")
    assert api(relay, "GET", "/admin/sources/alpha")[1]["webhooks"][0]["rate_limit"]["per_second"] == 40
    track(relay, "wk_alpha", "endpoint-2")
    assert rx_a.wait_for(lambda r: len(r.at("/alpha")) == 2, 20), rx_a.requests
    assert rx_a.at("/alpha")[1].headers["authorization"] == want
    # Refused: beside its own field, the disclosure opened for it.
    b("eval", js="document.querySelector('details.endpoint').open = false")
    b("eval", js="document.querySelector('input[data-name=\"rate_limit.per_second\"]').value = '0'")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Not saved", selector="main")
    marked = b("eval", js="(() => { const i = document.querySelector('[aria-invalid]');"
               " const note = document.getElementById(i.getAttribute('aria-describedby'));"
               " return [i.getAttribute('data-field'), note.textContent, document.activeElement === i,"
               " i.closest('details').open] })()")
    assert marked[0] == "webhooks[0].rate_limit.per_second", marked
    assert marked[1].startswith("Webhook 1, rate limit (per second): "), marked
    assert marked[2] is True and marked[3] is True, marked
    assert api(relay, "GET", "/admin/sources/alpha")[1]["webhooks"][0]["rate_limit"]["per_second"] == 40
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_lifecycle_without_curl(console_relay: Relay, receivers: List[Receiver],
                                       browser: Browser) -> None:
    """A source made (its write key drawn by the page, shown), a name taken refused at its
    field; a token made and shown once, listed, revoked after a confirmation; the source
    deleted after a confirmation that counts what it touches. A source's own token makes
    and revokes its own tokens, and is told when it revokes the one it is signed in with."""
    relay = console_relay
    rx_a, rx_b = receivers
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("click", selector="details.create summary", text="New source")
    key = b("eval", js="document.getElementById('new-key').value")
    assert re.fullmatch(r"wk_[0-9a-f]{32}", key), key
    b("type", selector="#new-name", text="gamma")
    b("type", selector="#new-url", text=f"{rx_b.url}/gamma")
    b.shots("new-source")
    b("click", selector="#new-source button[type=submit]", text="Make the source")
    b("waitText", text="Write keys", selector="main")
    assert b("eval", js="location.hash") == "#/sources/gamma/settings"
    assert key in b("text", selector="ul.write-keys")
    _, gamma = api(relay, "GET", "/admin/sources/gamma")
    assert gamma["write_keys"] == [key] and gamma["webhooks"][0]["url"] == f"{rx_b.url}/gamma", gamma
    # Made only where no source has the name: never a replacement.
    b("eval", js="location.hash = '#/sources'")
    b("click", selector="details.create summary", text="New source")
    b("type", selector="#new-name", text="alpha")
    b("type", selector="#new-url", text=f"{rx_b.url}/other")
    b("click", selector="#new-source button[type=submit]", text="Make the source")
    b("waitText", text="exists already", selector="#new-source")
    assert b("eval", js="document.getElementById('new-name').getAttribute('aria-invalid')") == "true"
    assert api(relay, "GET", "/admin/sources/alpha")[1]["webhooks"][0]["url"] == f"{rx_a.url}/alpha"

    # Its tokens: made (shown once), listed, revoked after a confirmation.
    b("eval", js="location.hash = '#/sources/gamma/tokens'")
    b("waitText", text="No token", selector="table.tokens")
    b("click", selector="button", text="Make a token")
    b("waitText", text="shown this once", selector=".made")
    token = b("eval", js="document.getElementById('new-token').value")
    assert token.startswith("obt_"), token
    tid = token.split("_")[1]
    b("waitText", text=tid, selector="table.tokens")
    assert api(relay, "GET", "/admin/whoami", token=token)[1]["source"] == "gamma"
    b.shots("tokens")
    b("click", selector=".made button", text="Done")
    assert token not in b("eval", js="document.documentElement.outerHTML")
    b("click", selector="table.tokens button", text="Revoke")
    b("waitText", text=f"Revoke token {tid}?", selector="dialog")
    b("click", selector="dialog button", text="Revoke the token")
    b("waitText", text="No token", selector="table.tokens")
    assert api(relay, "GET", "/admin/whoami", token=token)[0] == 401

    # Deleted after a confirmation that says what it touches, counted.
    rx_b.status["/gamma"] = 400
    track(relay, key, "gamma-1")
    wait("gamma's dead letter", lambda: api(relay, "GET", "/admin/sources/gamma/dead-letters/gamma-1")[0] == 200)
    b("click", selector="nav.tabs a", text="Webhooks and secret")
    b("click", selector="button", text="Delete this source")
    b("waitText", text="Delete source gamma?", selector="dialog")
    said = b("text", selector="dialog")
    assert "1 write key is refused" in said and "1 dead letter can no longer be replayed" in said, said
    assert "0 tokens are revoked" in said and "0 messages waiting" in said, said
    b.axe("delete-confirm")
    b.shots("delete-source", full=False)
    assert b("eval", js="document.querySelector('dialog button.danger-solid').disabled") is True
    b("type", selector="dialog input", text="gamma")
    b("click", selector="dialog button", text="Delete the source")
    b("waitText", text="alpha", selector="table.sources")
    assert api(relay, "GET", "/admin/sources/gamma")[0] == 404

    # A customer's own token: its source's tokens, made and revoked; told before it revokes
    # the one it is signed in with.
    _, made = api(relay, "POST", "/admin/sources/alpha/tokens")
    b("click", selector="#signout")
    b.sign_in(relay, made["token"])
    b("waitText", text="Webhook 1", selector=".cards")
    b("click", selector="nav.tabs a", text="Tokens")
    b("waitText", text="this session", selector="table.tokens")
    b("click", selector="button", text="Make a token")
    b("waitText", text="shown this once", selector=".made")
    second = b("eval", js="document.getElementById('new-token').value")
    assert api(relay, "GET", "/admin/whoami", token=second)[1]["source"] == "alpha"
    b("click", selector=f"tr[data-token='{made['id']}'] button", text="Revoke")
    b("waitText", text="you will be signed out", selector="dialog")
    b("click", selector="dialog button", text="Revoke the token")
    b("waitText", text="Sign in", selector="main")
    assert api(relay, "GET", "/admin/whoami", token=made["token"])[0] == 401
    assert api(relay, "GET", "/admin/whoami", token=second)[0] == 200
    assert_clean(b.close(), relay, made["token"])


def test_console_source_list_refreshes_filters_sorts_and_keeps_its_place(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """The list asks again on its own and says as of when: a source whose receiver starts
    refusing shows failing without a click. It filters by state and sorts by dead letters on
    the relay, and Back from a source returns to the same search, filter and order."""
    relay = console_relay
    rx_a = receivers[0]
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    assert re.search(r"as of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", b("text", selector=".as-of"))
    row = lambda name: b("text", selector=f"tr[data-source='{name}']")
    assert "not tried yet" in row("alpha"), row("alpha")
    # An outage begins: the list shows it by itself.
    rx_a.status["/alpha"] = 400
    for i in range(3):
        track(relay, "wk_alpha", f"out-{i}")
    b("waitText", text="failing", selector="tr[data-source='alpha']", timeout=15000)
    assert "not tried yet" in row("beta"), row("beta")
    # Filtered by state and sorted on the relay.
    b("eval", js="(() => { const s = document.getElementById('state-filter');"
      " s.value = 'failing,circuit_open,disabled'; s.dispatchEvent(new Event('change')) })()")
    b("waitText", text="in state not healthy", selector="main")
    wait("beta filtered out", lambda: b("count", selector="table.sources tbody tr") == 1)
    assert "alpha" in b("text", selector="table.sources tbody")
    b("eval", js="(() => { const s = document.getElementById('sort');"
      " s.value = 'dead_letters'; s.dispatchEvent(new Event('change')) })()")
    wait("the place in the address",
         lambda: "sort=dead_letters" in b("eval", js="location.hash"))
    wait("3 dead letters", lambda: "3" in b("text", selector="tr[data-source='alpha'] td:nth-child(5)"))
    b.shots("sources-triage")
    # Into the source and Back: the same place.
    b("click", selector="table.sources a", text="alpha")
    b("waitText", text="Webhook 1", selector=".cards")
    b("eval", js="history.back()")
    b("waitText", text="in state not healthy", selector="main")
    assert b("eval", js="[document.getElementById('state-filter').value, document.getElementById('sort').value]") == [
        "failing,circuit_open,disabled", "dead_letters"]
    assert b("count", selector="table.sources tbody tr") == 1
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_says_each_fact_once_in_one_time_format_without_a_pointer(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """A webhook never tried reads "not tried yet", not "healthy"; a timeout's Status cell
    says "timeout" once; a long answer opens with the keyboard and nothing scrolls in its own
    box; the chart's values are a table too; every time on a screen has one format; a phone
    shows attempts 10 at a time."""
    relay = console_relay
    rx_a, rx_b = receivers
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/beta'")
    b("waitText", text="Webhook 1", selector=".cards")
    card = b("text", selector="li.webhook")
    assert "not tried yet" in card and "healthy" not in card, card
    # A timeout: its Status cell says so once.
    _, beta = api(relay, "GET", "/admin/sources/beta")
    assert api(relay, "PUT", "/admin/sources/beta", dict(beta, timeout=0.5, max_retry_duration=1))[0] == 200
    rx_b.delay["/beta"] = 1.5
    track(relay, "wk_beta", "slow-1")
    wait("a timeout", lambda: any(a.get("error") == "timeout" for a in
                                  api(relay, "GET", "/admin/sources/beta/webhooks/0/attempts")[1]["attempts"]))
    b("eval", js="location.hash = '#/sources/beta/webhooks/0'")
    b("waitText", text="slow-1", selector="table.attempts")
    cell = b("text", selector="table.attempts tbody tr td:nth-child(4)")
    assert cell.startswith("timeout") and cell.lower().count("timeout") == 1, cell
    # Many attempts with a long answer each: on a phone 25 at a time; the answer's rest
    # behind a disclosure; no box that scrolls by itself.
    rx_a.status["/alpha"] = 400
    rx_a.answer["/alpha"] = json.dumps({"error": "refused", "why": "x" * 400}).encode()
    for i in range(40):
        track(relay, "wk_alpha", f"long-{i}")
    wait("40 attempts", lambda: len(api(relay, "GET", "/admin/sources/alpha/webhooks/0/attempts")[1]["attempts"]) >= 40)
    b("viewport", **PHONE)
    b("eval", js="location.hash = '#/sources/alpha/webhooks/0'")
    b("waitText", text="long-", selector="table.attempts")
    assert b("count", selector="table.attempts tbody tr") == 10
    tall = b("eval", js="document.documentElement.scrollHeight")
    assert tall < 5000, f"{tall} px for 10 attempts on a phone"
    for shown in (20, 30, 40):
        b("click", selector=".pager button", text="Show 10 more")
        wait(f"{shown} shown", lambda: b("count", selector="table.attempts tbody tr") == shown)
    b("viewport", **DESKTOP)
    scrolling = b("eval", js="[...document.querySelectorAll('main *')].filter((e) => {"
                  " const o = getComputedStyle(e).overflowY; return (o === 'auto' || o === 'scroll')"
                  " && e.scrollHeight > e.clientHeight + 1 && e.tabIndex < 0 }).length")
    assert scrolling == 0, f"{scrolling} boxes scroll without a tab stop"
    b("eval", js="document.querySelector('details.answer summary').focus()")
    b("press", key="Enter")
    assert b("eval", js="document.querySelector('details.answer').open") is True
    assert "x" * 400 in b("text", selector="details.answer[open] pre.whole")
    b.axe("attempts, an answer opened")
    # The chart's values without a pointer; one time format on the screen.
    b("eval", js="location.hash = '#/sources/alpha'")
    b("waitText", text="Failed 40", selector=".legend", timeout=30000)
    b("click", selector="details.minutes summary")
    failed = b("eval", js="[...document.querySelectorAll('details.minutes tbody tr td:nth-child(3)')]"
               ".reduce((n, td) => n + Number(td.textContent.replace(/,/g, '')), 0)")
    assert failed == 40, failed
    text = b.main_text()
    stamps = re.findall(r"\d\d:\d\d(?::\d\d)?", text)
    full = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", text)
    assert stamps and len(stamps) == len(full), (stamps, full)
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_shows_the_operators_alerts_sent_as_signed_webhooks(
        tmp_path: Path, receivers: List[Receiver], browser: Browser) -> None:
    """alert_url set: a source's dead letters past alert_dead_letters is sent to the
    operator's receiver on 127.0.0.1, signed with X-Signature (checked here with the
    operator's secret); the console's Alerts screen lists it with where alerts go, and the
    source's Health screen its own."""
    rx_a, ops = receivers
    secret = "ops_SECRET_alerts_0123456789"
    config = tmp_path / "relay.toml"
    config.write_text("\n".join([
        'listen = "127.0.0.1:0"',
        f"data_dir = {toml_str(str(tmp_path / 'data'))}",
        f"admin_token = {toml_str(ADMIN_TOKEN)}",
        "block_private_networks = false",
        f"alert_url = {toml_str(ops.url + '/ops')}",
        f"alert_secret = {toml_str(secret)}",
        'alert_signature_scheme = "x-signature"',
        "alert_dead_letters = 2",
        "alert_interval = 0.2",
    ]) + "\n")
    relay = start_relay(config, tmp_path / "relay.log")
    try:
        status, _ = api(relay, "PUT", "/admin/sources/alpha", {
            "write_keys": ["wk_alpha"], "allowed_networks": ["127.0.0.0/8"],
            "webhooks": [{"url": f"{rx_a.url}/alpha"}]})
        assert status == 201
        rx_a.status["/alpha"] = 400
        for i in range(2):
            track(relay, "wk_alpha", f"alerting-{i}")
        assert ops.wait_for(lambda r: len(r.at("/ops")) >= 1, 30), relay.log_text()
        sent = ops.at("/ops")[0]
        assert sent.headers["x-signature"] == hmac.new(secret.encode(), sent.body, hashlib.sha1).hexdigest()
        assert sent.json["event"] == "source.dead_letters_above", sent.json
        assert sent.json["properties"]["source"] == "alpha" and sent.json["properties"]["dead_letters"] == 2
        b = browser
        b.sign_in(relay, ADMIN_TOKEN)
        b("waitText", text="alpha", selector="table.sources")
        b("click", selector="#nav a", text="Alerts")
        b("waitText", text="dead letters over the threshold", selector="table.alerts")
        where = b("text", selector="main .meta")
        assert ops.url in where and "healthy" in where, where
        assert "2 dead letters (threshold 2)" in b("text", selector="table.alerts")
        b.shots("alerts")
        b("click", selector="table.alerts a", text="alpha")
        b("waitText", text="Recent alerts", selector="main")
        assert "dead letters over the threshold" in b("text", selector=".recent-alerts")
        assert_clean(b.close(), relay, ADMIN_TOKEN)
        assert secret not in relay.log.read_text(errors="replace")
    finally:
        assert relay.stop() == 0, relay.log_text()


def test_console_keyboard_only(console_relay: Relay, browser: Browser) -> None:
    """Signed in, a source opened and its tab changed with the keyboard alone; the focus is
    visible wherever it goes."""
    relay = console_relay
    b = browser
    b("goto", url=relay.url + "/console/")
    b("waitText", text="Sign in", selector="main")
    assert b("eval", js="document.activeElement.id") == "token"
    for ch in ADMIN_TOKEN:
        b("press", key=ch)
    b("press", key="Enter")
    b("waitText", text="alpha", selector="table.sources")
    # Tab to the first source's link, Enter opens it.
    for _ in range(40):
        b("press", key="Tab")
        focused = b("eval", js="[document.activeElement.tagName, document.activeElement.textContent,"
                    " getComputedStyle(document.activeElement).outlineStyle]")
        assert focused[2] != "none", f"no visible focus on {focused}"
        if focused[0] == "A" and focused[1] == "alpha":
            break
    else:
        raise AssertionError("the source's link was never reached with Tab")
    b("press", key="Enter")
    b("waitText", text="Webhook 1", selector=".cards")
    assert b("eval", js="document.activeElement.tagName") == "H1"
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_shows_event_content_and_answers_as_text(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    relay = console_relay
    rx_a = receivers[0]
    script = "<script>window.__pwned = 'script'; alert('script')</script>"
    img = "<img src=x onerror=\"window.__pwned = 'img'; alert('img')\">"
    rx_a.status["/alpha"] = 400
    rx_a.answer["/alpha"] = (img + script).encode()
    track(relay, "wk_alpha", "xss-1", {"note": script, "picture": img})
    wait("the dead letter", lambda: api(relay, "GET", "/admin/sources/alpha/dead-letters/xss-1")[0] == 200)
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/webhooks/0'")
    b("waitText", text="xss-1", selector="table.attempts")
    answer = b("text", selector="table.attempts td.answer")
    assert img in answer and script in answer, answer
    b("eval", js="location.hash = '#/sources/alpha/dead-letters'")
    b("click", selector="table.dead-letters button", text="xss-1")
    b("waitText", text="Body as sent", selector="section.detail")
    body = b("text", selector="section.detail pre.body")
    assert json.dumps(script) in body and json.dumps(img) in body, body
    b("waitText", text=img, selector="section.detail")
    b("eval", js="location.hash = '#/sources/alpha'")
    b("waitText", text="failing", selector=".cards", timeout=30000)
    time.sleep(0.5)
    assert b("eval", js="window.__pwned === undefined") is True
    assert b("count", selector="main script, main img, main iframe") == 0
    report = b.close()
    assert not [r for r in report["requests"] if r.endswith("/x")], "the <img> was fetched"
    assert_clean(report, relay, ADMIN_TOKEN)


def test_console_source_token_reaches_its_own_source_only(
        console_relay: Relay, browser: Browser) -> None:
    relay = console_relay
    status, made = api(relay, "POST", "/admin/sources/alpha/tokens")
    assert status == 201, made
    token = made["token"]
    # The API: its own source, nothing else.
    assert api(relay, "GET", "/admin/whoami", token=token)[1] == {
        "caller": "source", "source": "alpha", "token": made["id"]}
    assert api(relay, "GET", "/admin/sources/alpha", token=token)[0] == 200
    assert api(relay, "GET", "/admin/sources/beta", token=token)[0] == 403
    assert api(relay, "GET", "/admin/sources/beta/health", token=token)[0] == 403
    assert api(relay, "GET", "/admin/sources/beta/activity", token=token)[0] == 403
    assert api(relay, "GET", "/admin/sources?limit=10", token=token)[0] == 403
    # The console: it lands on its source, with no list of sources.
    b = browser
    b.sign_in(relay, token)
    b("waitText", text="Webhook 1", selector=".cards")
    assert b("eval", js="location.hash") == "#/sources/alpha"
    nav = b("text", selector="#nav")
    assert "Sources" not in nav and "alpha" in nav, nav
    assert "token of alpha" in b("text", selector="#who")
    # The list and another source, asked for by their addresses: not shown.
    b("eval", js="location.hash = '#/sources'")
    b("waitText", text="Webhook 1", selector=".cards")
    assert b("eval", js="location.hash") == "#/sources/alpha"
    b("eval", js="location.hash = '#/sources/beta'")
    b("waitText", text="cannot see source", selector="main")
    assert "beta_SECRET" not in b.main_text() and "wk_beta" not in b.main_text()
    b("eval", js="location.hash = '#/sources/beta/dead-letters'")
    b("waitText", text="cannot see source", selector="main")
    # Its own settings: editable, the secret write-only.
    b("eval", js="location.hash = '#/sources/alpha/settings'")
    b("waitText", text="A secret is set", selector="main")
    assert "alpha_SECRET_1" not in b("eval", js="document.documentElement.outerHTML")
    assert_clean(b.close(), relay, token)


def test_console_stays_quick_with_10000_sources(tmp_path: Path, receivers: List[Receiver],
                                                browser: Browser) -> None:
    """10,000 sources of one file: the console asks for 50 at a time, and its search is the
    relay's."""
    rx = receivers[0]
    lines = ['listen = "127.0.0.1:0"', f"data_dir = {toml_str(str(tmp_path / 'data'))}",
             f"admin_token = {toml_str(ADMIN_TOKEN)}", 'allowed_networks = ["127.0.0.0/8"]']
    for i in range(10_000):
        lines += ["[[sources]]", f'name = "shop-{i:05}"', f'write_keys = ["wk_{i}"]',
                  "[[sources.webhooks]]", f'url = "{rx.url}/in"']
    config = tmp_path / "relay.toml"
    config.write_text("\n".join(lines) + "\n")
    started = time.monotonic()
    relay = start_relay(config, tmp_path / "relay.log", timeout=120)
    up = time.monotonic() - started
    try:
        b = browser
        started = time.monotonic()
        b.sign_in(relay, ADMIN_TOKEN)
        b("waitText", text="Sources 1–50 of 10,000", selector="main")
        first = time.monotonic() - started
        assert b("count", selector="table.sources tbody tr") == 50
        assert "shop-00000" in b("text", selector="table.sources tbody tr")
        started = time.monotonic()
        b("click", selector=".pager button", text="Next page")
        b("waitText", text="Sources 51–100 of 10,000", selector="main")
        paged = time.monotonic() - started
        assert "shop-00050" in b("text", selector="table.sources tbody tr")
        # Into a source of the second page and Back: the second page again.
        b("click", selector="table.sources a", text="shop-00051")
        b("waitText", text="Webhook 1", selector=".cards")
        b("eval", js="history.back()")
        b("waitText", text="Sources 51–100 of 10,000", selector="main")
        assert "shop-00050" in b("text", selector="table.sources tbody tr")
        assert b("eval", js="document.querySelector('.pager button').disabled") is False
        # Sorted by what is waiting, on the relay, still a page at a time.
        started = time.monotonic()
        b("eval", js="(() => { const s = document.getElementById('sort');"
          " s.value = 'waiting'; s.dispatchEvent(new Event('change')) })()")
        b("waitText", text="Sources 1–50 of 10,000", selector="main")
        sorted_in = time.monotonic() - started
        started = time.monotonic()
        b("type", selector="#search", text="shop-0999")
        b("waitText", text="of 10 matching", selector="main")
        searched = time.monotonic() - started
        assert b("count", selector="table.sources tbody tr") == 10
        print(f"10,000 sources: up in {up:.1f} s; signed in and the first page shown in "
              f"{first:.2f} s, the next page in {paged:.2f} s, sorted by waiting in "
              f"{sorted_in:.2f} s, a search (with its 0.25 s pause) in {searched:.2f} s")
        assert first < 10 and paged < 5 and searched < 5 and sorted_in < 5
        assert_clean(b.close(), relay, ADMIN_TOKEN)
    finally:
        # Stopping 10,000 idle sources is slow in this relay (its own issue, fixed apart
        # from the console): a generous wait, then SIGKILL, which this test tolerates; any
        # other end is a failure.
        started = time.monotonic()
        status = relay.stop(timeout=180)
        print(f"10,000 sources: stopped (exit {status}) in {time.monotonic() - started:.1f} s")
    assert status in (0, -signal.SIGKILL), relay.log_text()


def dead_letter_ids(b: Browser) -> List[str]:
    return b("eval", js="[...document.querySelectorAll('table.dead-letters tbody tr')]"
             ".map((r) => r.dataset.messageId).filter((id) => id)")


def test_console_pages_finds_and_replays_dead_letters(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """120 dead letters: 50 a page, newest first, the relay's cursor to the older ones and
    back; one on the last page found by its messageId from the first; an unknown one said
    so; then all of them replayed since a time, with their progress, each delivered once."""
    relay = console_relay
    rx_a = receivers[0]
    rx_a.status["/alpha"] = 400
    for i in range(120):
        track(relay, "wk_alpha", f"dl-{i:03}")
    wait("120 dead letters", lambda: api(relay, "GET", "/admin/sources/alpha/dead-letters?limit=1")[1]
         ["stats"]["count"] == 120)
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/dead-letters'")
    b("waitText", text="120 dead letters", selector="main")
    b("waitText", text="dl-", selector="table.dead-letters")
    first = dead_letter_ids(b)
    assert len(first) == 50
    assert b("eval", js="document.querySelector('.pager button:first-child').disabled") is True
    b("click", selector=".pager button", text="Older")
    wait("the second page", lambda: dead_letter_ids(b) != first, 10)
    second = dead_letter_ids(b)
    b("click", selector=".pager button", text="Older")
    wait("the third page", lambda: dead_letter_ids(b) != second, 10)
    third = dead_letter_ids(b)
    assert len(second) == 50 and len(third) == 20
    assert sorted(first + second + third) == [f"dl-{i:03}" for i in range(120)]
    assert b("eval", js="document.querySelector('.pager button:last-child').disabled") is True
    b("click", selector=".pager button", text="Newer")
    wait("back to the second page", lambda: dead_letter_ids(b) == second, 10)
    b("click", selector=".pager button", text="Newer")
    wait("back to the first page", lambda: dead_letter_ids(b) == first, 10)

    # Found by its messageId, wherever it is: one of the last page's, from the first.
    wanted = third[-1]
    assert wanted not in first
    b("type", selector="#find", text=wanted)
    b("press", key="Enter")
    b("waitText", text="Body as sent", selector="section.detail")
    detail = b("text", selector="section.detail")
    assert f"Dead letter {wanted}" in detail and "status 400" in detail, detail
    assert f'"messageId": "{wanted}"' in detail, detail
    b("type", selector="#find", text="dl-nope")
    b("press", key="Enter")
    b("waitText", text="No dead letter with messageId “dl-nope”", selector="section.detail")
    assert dead_letter_ids(b) == first

    # The receiver is back: every one since an hour ago (the field's default) replayed in
    # the background, its progress followed to the end, each delivered once.
    rx_a.status["/alpha"] = 200
    before = len(rx_a.at("/alpha"))
    b("click", selector="form.replay-all button", text="Replay since")
    # Asked first, with the count the relay gives (a dry run): nothing is sent until then.
    b("waitText", text="Replay 120 dead letters?", selector="dialog")
    assert "since" in b("text", selector="dialog")
    b.axe("replay-confirm")
    time.sleep(0.5)
    assert len(rx_a.at("/alpha")) == before, "sent before it was confirmed"
    b("click", selector="dialog button", text="Replay 120")
    # Left and come back to: the replay's progress is still there.
    b("waitText", text="Replay since", selector=".progress")
    b("click", selector="nav.tabs a", text="Health")
    b("waitText", text="Webhook 1", selector=".cards")
    b("click", selector="nav.tabs a", text="Dead letters")
    b("waitText", text="120 in all", selector=".progress")
    b("waitText", text="done", selector=".progress", timeout=60000)
    progress = b("text", selector=".progress")
    assert "120 in all" in progress and "120 delivered" in progress and "0 failed" in progress, progress
    b("waitText", text="0 dead letters", selector="main")
    b("waitText", text="No dead letter", selector="table.dead-letters")
    time.sleep(1.0)  # anything sent twice would be here by now
    replayed = sorted(r.json["messageId"] for r in rx_a.at("/alpha")[before:])
    assert replayed == [f"dl-{i:03}" for i in range(120)], replayed
    assert_clean(b.close(), relay, ADMIN_TOKEN)


class Refuser:
    """A webhook receiver that answers every request 400 at once (HTTP/1.1, kept alive) and
    counts them: many times quicker than tests/python/receiver.py, to make 100,000 dead
    letters in seconds."""

    def __init__(self) -> None:
        self.count = 0
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(
                asyncio.start_server(self.handle, "127.0.0.1", 0))
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10)
        self.url = "http://127.0.0.1:%d" % self.server.sockets[0].getsockname()[1]

    async def handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await r.readuntil(b"\r\n\r\n")
                size = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        size = int(line.split(b":", 1)[1])
                if size:
                    await r.readexactly(size)
                self.count += 1
                w.write(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                        b"Content-Length: 11\r\n\r\nnot wanted\n")
                await w.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            w.close()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def test_console_stays_quick_with_100000_dead_letters(tmp_path: Path, browser: Browser) -> None:
    """100,000 dead letters of one source: the console shows their count and a page of 50,
    pages to older ones and finds an old one by its messageId, each in a moment (the relay
    pages and looks up; the console never holds more than a page)."""
    n = 100_000
    refuser = Refuser()
    relay = refused_relay(tmp_path, refuser)
    try:
        started = time.monotonic()
        for at in range(0, n, 500):
            batch = [{"type": "track", "userId": "u1", "event": "Order Completed",
                      "messageId": f"dl-{i:06}", "properties": {"n": i}}
                     for i in range(at, min(n, at + 500))]
            post_batch(relay.url, "wk_alpha", batch)
        wait(f"{n} dead letters", lambda: api(relay, "GET", "/admin/sources/alpha/dead-letters?limit=1")
             [1]["stats"]["count"] == n, 240)
        made = time.monotonic() - started

        b = browser
        b.sign_in(relay, ADMIN_TOKEN)
        b("waitText", text="alpha", selector="table.sources")
        started = time.monotonic()
        b("eval", js="location.hash = '#/sources/alpha/dead-letters'")
        b("waitText", text="100,000 dead letters", selector="main")
        wait("the first page", lambda: len(dead_letter_ids(b)) == 50, 10)
        first_page = time.monotonic() - started
        first = dead_letter_ids(b)
        started = time.monotonic()
        b("click", selector=".pager button", text="Older")
        wait("the second page", lambda: dead_letter_ids(b) not in ([], first), 10)
        paged = time.monotonic() - started
        second = dead_letter_ids(b)
        assert len(second) == 50 and not set(first) & set(second)
        # One of the oldest, 2,000 pages down, by its messageId.
        started = time.monotonic()
        b("type", selector="#find", text="dl-000042")
        b("press", key="Enter")
        b("waitText", text="Body as sent", selector="section.detail")
        found = time.monotonic() - started
        assert '"messageId": "dl-000042"' in b("text", selector="section.detail pre.body")
        print(f"{n:,} dead letters: made in {made:.1f} s; the first page shown in "
              f"{first_page:.2f} s, the next in {paged:.2f} s, one found by messageId in "
              f"{found:.2f} s")
        assert first_page < 5 and paged < 5 and found < 5
        assert_clean(b.close(), relay, ADMIN_TOKEN)
    finally:
        status = relay.stop(timeout=60)
        refuser.close()
    assert status == 0, relay.log_text()


def sub_row(b: Browser, name: str) -> str:
    return b("text", selector=f"tr[data-subscription='{name}']")


def test_console_lists_the_subscriptions_of_relay_toml(
        tmp_path: Path, receivers: List[Receiver], browser: Browser) -> None:
    """A source of relay.toml with two subscriptions, one in our settings and one as Segment
    exports it (off): the Subscriptions tab lists each with its trigger, method, URL, whether
    it is on and its state (what it delivered, its health) from the relay; read-only, with
    the preview still at hand."""
    rx = receivers[0]
    config = tmp_path / "relay.toml"
    config.write_text("\n".join([
        'listen = "127.0.0.1:0"',
        f"data_dir = {toml_str(str(tmp_path / 'data'))}",
        f"admin_token = {toml_str(ADMIN_TOKEN)}",
        "block_private_networks = false",
        "[[sources]]", 'name = "shop"', 'write_keys = ["wk_shop"]', 'shared_secret = "shop_SECRET_1"',
        "[[sources.subscriptions]]", 'name = "orders"',
        "trigger = 'type = \"track\" and event = \"Order Completed\"'",
        f"url = {toml_str(rx.url + '/orders')}", 'method = "PUT"',
        'headers = { "X-Team" = "growth" }',
        'data = { total = { "@path" = "$.properties.total" } }',
        "[[sources.subscriptions]]", 'name = "signups"',
        "subscribe = 'event = \"Signed Up\"'", "enabled = false",
        "[sources.subscriptions.mapping]", f"url = {toml_str(rx.url + '/signups')}", 'method = "POST"',
    ]) + "\n")
    relay = start_relay(config, tmp_path / "relay.log")
    try:
        track(relay, "wk_shop", "sub-file-1")
        assert rx.wait_for(lambda r: len(r.at("/orders")) == 1, 20), relay.log_text()
        sent = rx.at("/orders")[0]
        assert sent.method == "PUT" and sent.json == {"total": 12.5}, (sent.method, sent.body)
        b = browser
        b.sign_in(relay, ADMIN_TOKEN)
        b("waitText", text="shop", selector="table.sources")
        b("click", selector="table.sources a", text="shop")
        b("waitText", text="This source has no webhook", selector=".cards")
        b("click", selector="nav.tabs a", text="Subscriptions")
        b("waitText", text="healthy", selector="tr[data-subscription='orders']", timeout=15000)
        orders = sub_row(b, "orders")
        for words in ('type = "track" and event = "Order Completed"', "PUT", rx.url + "/orders"):
            assert words in orders, (words, orders)
        cells = b("eval", js="[...document.querySelectorAll(\"tr[data-subscription='orders'] td.num\")]"
                  ".map((td) => td.textContent)")
        assert cells == ["1", "0", "0"], cells  # delivered, failed, waiting
        signups = sub_row(b, "signups")
        assert "off" in signups and "as Segment exports it" in signups, signups
        assert 'event = "Signed Up"' in signups and rx.url + "/signups" in signups, signups
        # relay.toml's: said so, and nothing to change it with.
        assert "managed by relay.toml" in b.main_text()
        assert b("count", selector="main a.button.primary, tr[data-subscription] button") == 0
        b.shots("subscriptions")
        # Its attempts, the webhook's screen pointed at the subscription.
        b("click", selector="tr[data-subscription='orders'] a", text="Attempts")
        b("waitText", text="sub-file-1", selector="table.attempts")
        assert "delivered" in b("text", selector="table.attempts tbody tr")
        assert f"PUT {rx.url}/orders" in b.main_text()
        # Its settings, read-only; the preview of what it sends, from them.
        b("click", selector="nav.subtabs a", text="Settings and preview")
        b("waitText", text="Preview", selector="form.preview")
        assert b("eval", js="document.querySelector('form.sub-form fieldset').disabled") is True
        b("click", selector="form.preview button", text="Preview")
        b("waitText", text="matches", selector=".preview-result")
        shown = b("text", selector=".preview-result")
        assert f"PUT {rx.url}/orders" in shown and "x-team" in shown and '"total": 42.5' in shown, shown
        assert_clean(b.close(), relay, ADMIN_TOKEN)
    finally:
        assert relay.stop() == 0, relay.log_text()


def test_console_adds_edits_and_previews_a_subscription(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """A subscription added in the editor: a trigger the relay refuses is shown at the
    trigger (its byte selected), a mapping refused at the data; the preview shows what a
    matching event would send (method, URL, headers, the mapped body) and that another does
    not match; saved, GET shows it and the next event goes out mapped. One pasted as
    Segment exports it is kept as written; one turned off and one removed from the list."""
    relay = console_relay
    rx_b = receivers[1]
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/subscriptions'")
    b("waitText", text="No subscription yet", selector="table.subscriptions")
    b("click", selector="main a.button", text="Add a subscription")
    b("waitText", text="New subscription", selector="main")
    b("type", selector="[data-local=name]", text="big-orders")
    b("type", selector="[data-local=trigger]", text='type = "track')
    b("type", selector="[data-local=url]", text=f"{rx_b.url}/big")
    b("eval", js="document.querySelector('[data-local=method]').value = 'PUT'")
    b("type", selector="[data-local=headers]", text='{"X-Team": "growth"}')
    b("type", selector="[data-local=data]", text='{"order": {"@path": "$.properties.order_id"}, '
      '"total": {"@path": "$.properties.total"}}')
    b("click", selector="form.sub-form button[type=submit]", text="Add the subscription")
    b("waitText", text="Not saved", selector="form.sub-form")
    marked = b("eval", js="(() => { const i = document.querySelector('[aria-invalid]');"
               " const note = i.nextElementSibling; return [i.getAttribute('data-local'), note.className,"
               " note.textContent, document.activeElement === i, i.selectionStart,"
               " document.getElementById(i.getAttribute('aria-describedby').split(' ')[0]) === note] })()")
    assert marked[0] == "trigger" and marked[1] == "field-error", marked
    assert marked[2].startswith("Trigger: at byte 7") and marked[3] is True and marked[4] == 7, marked
    assert marked[5] is True, marked
    assert api(relay, "GET", "/admin/sources/alpha")[1]["subscriptions"] == []
    # A mapping the relay refuses: at the data, its path said.
    b("type", selector="[data-local=trigger]", text='type = "track" and event = "Order Completed"')
    b("type", selector="[data-local=data]", text='{"total": {"@path": 5}}')
    b("click", selector="form.sub-form button[type=submit]", text="Add the subscription")
    b("waitText", text="Data (total.@path)", selector="form.sub-form")
    assert b("eval", js="document.querySelector('[aria-invalid]').getAttribute('data-local')") == "data"
    b("type", selector="[data-local=data]", text='{"order": {"@path": "$.properties.order_id"}, '
      '"total": {"@path": "$.properties.total"}}')
    # The preview: the sample event (an Order Completed) matches; its request as it would go.
    b("click", selector="form.preview button", text="Preview")
    b("waitText", text="matches", selector=".preview-result")
    shown = b("text", selector=".preview-result")
    assert f"PUT {rx_b.url}/big" in shown, shown
    assert "x-team\tgrowth" in shown and "content-type\tapplication/json" in shown, shown
    body = json.loads(b("text", selector=".preview-result pre.body"))
    assert body == {"order": "o-1001", "total": 42.5}, body
    assert "signature of the source’s secret" in shown, shown
    b.shots("subscription-editor")
    # Another event: it does not match, and nothing would be sent.
    event = json.loads(b("eval", js="document.querySelector('[data-local=event]').value"))
    b("type", selector="[data-local=event]", text=json.dumps(dict(event, event="Cart Viewed")))
    b("click", selector="form.preview button", text="Preview")
    b("waitText", text="does not match", selector=".preview-result")
    assert b("count", selector=".preview-result pre.body") == 0
    assert api(relay, "GET", "/admin/sources/alpha")[1]["subscriptions"] == [], "a preview saves nothing"
    # Saved: GET shows it as the form gave it, and the next event goes out mapped.
    b("click", selector="form.sub-form button[type=submit]", text="Add the subscription")
    b("waitText", text="Saved", selector="form.sub-form")
    assert b("eval", js="location.hash") == "#/sources/alpha/subscriptions/big-orders/edit"
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    assert alpha["subscriptions"] == [{
        "name": "big-orders", "trigger": 'type = "track" and event = "Order Completed"',
        "url": f"{rx_b.url}/big", "method": "PUT", "headers": {"X-Team": {"has_value": True}},
        "data": {"order": {"@path": "$.properties.order_id"}, "total": {"@path": "$.properties.total"}}}], alpha
    assert alpha["webhooks"][0]["headers"] == {"X-Source": {"has_value": True}}, "the rest kept"
    track(relay, "wk_alpha", "sub-add-1", {"order_id": "o-7", "total": 7.5})
    assert rx_b.wait_for(lambda r: len(r.at("/big")) == 1, 20), rx_b.requests
    sent = rx_b.at("/big")[0]
    assert sent.method == "PUT" and sent.json == {"order": "o-7", "total": 7.5}, (sent.method, sent.body)
    assert sent.headers["x-team"] == "growth"
    assert sent.headers["x-signature"] == hmac.new(b"alpha_SECRET_1", sent.body, hashlib.sha1).hexdigest()

    # Pasted as Segment exports it: kept as written.
    exported = {"name": "signups", "subscribe": 'event = "Signed Up"',
                "mapping": {"url": f"{rx_b.url}/signups", "method": "POST",
                            "data": {"who": {"@path": "$.userId"}}}}
    b("click", selector="nav.subtabs a", text="All subscriptions")
    b("click", selector="main a.button", text="Paste from Segment")
    b("waitText", text="Segment’s export (JSON)", selector="form.sub-form")
    b("type", selector="[data-local=segment]", text=json.dumps(exported))
    b("click", selector="form.sub-form button[type=submit]", text="Add the subscription")
    b("waitText", text="Saved", selector="form.sub-form")
    # "Saved" shows when the console has its answer; the list is read until it holds both.
    listed: List[Any] = []
    for _ in range(100):
        listed = api(relay, "GET", "/admin/sources/alpha")[1]["subscriptions"]
        if len(listed) == 2:
            break
        time.sleep(0.1)
    assert len(listed) == 2 and listed[1] == exported, listed
    # Turned off, then removed (asked first), from the list.
    b("click", selector="nav.subtabs a", text="All subscriptions")
    b("waitText", text="as Segment exports it", selector="tr[data-subscription='signups']")
    b("click", selector="tr[data-subscription='signups'] button", text="Turn off")
    b("waitText", text="turned off", selector="main")
    assert api(relay, "GET", "/admin/sources/alpha")[1]["subscriptions"][1]["enabled"] is False
    assert "off" in sub_row(b, "signups")
    b("click", selector="tr[data-subscription='signups'] button", text="Remove")
    b("waitText", text="Remove subscription “signups”?", selector="dialog")
    b("click", selector="dialog button", text="Remove the subscription")
    b("waitText", text="removed", selector="main")
    names = [s["name"] for s in api(relay, "GET", "/admin/sources/alpha")[1]["subscriptions"]]
    assert names == ["big-orders"], names
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_sets_a_subscriptions_bearer_token(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """How a subscription's endpoint is called, edited in its editor as a webhook's is: a
    bearer token typed once goes out in the receiver's Authorization and is never shown
    again (GET: {"has_value": true}); saved again untouched, it stays."""
    relay = console_relay
    rx_b = receivers[1]
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    status, _ = api(relay, "PUT", "/admin/sources/alpha", dict(alpha, subscriptions=[{
        "name": "crm", "trigger": 'type = "track"', "url": f"{rx_b.url}/crm"}]))
    assert status == 200
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/subscriptions/crm/edit'")
    b("waitText", text="How the endpoint is called", selector="form.sub-form")
    b("click", selector="form.sub-form details.endpoint summary")
    b("eval", js="(() => { const s = document.querySelector(\"form.sub-form select[data-name='auth']\");"
                 " s.value = 'bearer'; s.dispatchEvent(new Event('change', { bubbles: true })) })()")
    b("type", selector='form.sub-form input[data-name="auth.token"]', text="tok-CONSOLE")
    b("click", selector="form.sub-form button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="form.sub-form")
    _, got = api(relay, "GET", "/admin/sources/alpha")
    (sub,) = got["subscriptions"]
    assert sub["auth"] == {"type": "bearer", "token": {"has_value": True}}, sub
    assert sub["url"] == f"{rx_b.url}/crm" and "tok-CONSOLE" not in json.dumps(got), sub
    assert "tok-CONSOLE" not in b("eval", js="document.documentElement.outerHTML")
    track(relay, "wk_alpha", "sub-auth-1")
    assert rx_b.wait_for(lambda r: len(r.at("/crm")) == 1, 20), rx_b.requests
    assert rx_b.at("/crm")[0].headers["authorization"] == "Bearer tok-CONSOLE"
    # Saved again with the token left as it is (set, hidden): it stays.
    b("click", selector="form.sub-form button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="form.sub-form")
    sub = api(relay, "GET", "/admin/sources/alpha")[1]["subscriptions"][0]
    assert sub["auth"] == {"type": "bearer", "token": {"has_value": True}}, sub
    track(relay, "wk_alpha", "sub-auth-2")
    assert rx_b.wait_for(lambda r: len(r.at("/crm")) == 2, 20), rx_b.requests
    assert rx_b.at("/crm")[1].headers["authorization"] == "Bearer tok-CONSOLE"
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_replays_a_subscriptions_dead_letter(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """A subscription whose receiver refuses: its row says failed, its dead letter is listed
    on its own Dead letters page (the source's screen, on its routes), and replayed from
    there once the receiver is back: delivered once, to the subscription's URL."""
    relay = console_relay
    rx_b = receivers[1]
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    status, _ = api(relay, "PUT", "/admin/sources/alpha", dict(alpha, subscriptions=[{
        "name": "orders", "trigger": 'event = "Order Completed"', "url": f"{rx_b.url}/orders"}]))
    assert status == 200
    rx_b.status["/orders"] = 400
    track(relay, "wk_alpha", "sub-dl-1")
    wait("the subscription's dead letter", lambda: api(
        relay, "GET", "/admin/sources/alpha/subscriptions/orders/dead-letters/sub-dl-1")[0] == 200)
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/subscriptions'")
    b("waitText", text="orders", selector="table.subscriptions")
    wait("its failure counted", lambda: b("eval", js="[...document.querySelectorAll("
         "\"tr[data-subscription='orders'] td.num\")].map((td) => td.textContent)") == ["0", "1", "0"])
    b("click", selector="tr[data-subscription='orders'] a", text="Dead letters")
    b("waitText", text="sub-dl-1", selector="table.dead-letters")
    assert "1 dead letter" in b("text", selector="main .meta")
    b("click", selector="table.dead-letters button", text="sub-dl-1")
    b("waitText", text="Body as sent", selector="section.detail")
    detail = b("text", selector="section.detail")
    assert "status 400" in detail and '"messageId": "sub-dl-1"' in detail, detail
    b.shots("subscription-dead-letters")
    rx_b.status["/orders"] = 200
    before = len(rx_b.at("/orders"))
    b("click", selector="section.detail button", text="Replay this one")
    b("waitText", text="done", selector=".progress", timeout=30000)
    progress = b("text", selector=".progress")
    assert "1 delivered" in progress and "0 failed" in progress, progress
    time.sleep(1.0)  # anything sent twice would be here by now
    again = [r for r in rx_b.at("/orders")[before:] if r.json["messageId"] == "sub-dl-1"]
    assert len(again) == 1, f"replayed {len(again)} times"
    assert rx_b.at("/moved") == [] and rx_b.at("/alpha") == []
    b("waitText", text="No dead letter", selector="table.dead-letters")
    # The source's own dead letters are not the subscription's.
    assert api(relay, "GET", "/admin/sources/alpha/dead-letters?limit=1")[1]["stats"]["count"] == 0
    b("click", selector="nav.subtabs a", text="Recent attempts")
    b("waitText", text="delivered", selector="table.attempts")
    results = b("eval", js="[...document.querySelectorAll('table.attempts tbody tr')].map((r) => r.className)")
    assert results == ["delivered", "permanent"], results
    assert_clean(b.close(), relay, ADMIN_TOKEN)
