"""The subscription editor's "Recent events" in headless Chromium (as tests/relay/test_console.py
drives it), against the real relay binary: opened, it starts the capture of the source's
events and says so; an event sent to the relay over HTTP shows in it; picked, it fills the
event box and the preview shows the match and the body; the asking stops with the editor."""

from __future__ import annotations

import json
import time
from typing import List

from conftest import ADMIN_TOKEN, Relay
from receiver import Receiver
from test_console import Browser, api, assert_clean, browser, console_relay, track  # noqa: F401

RECENT = "/recent-events"


def asked(b: Browser) -> int:
    """How many times the page asked for the recent events so far."""
    return sum(1 for r in b("report")["requests"] if RECENT in r)


def test_console_previews_a_recent_event_picked_in_the_editor(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    relay = console_relay
    rx_b = receivers[1]
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    status, answer = api(relay, "PUT", "/admin/sources/alpha", dict(alpha, subscriptions=[{
        "name": "orders", "trigger": 'type = "track" and event = "Order Completed"',
        "url": f"{rx_b.url}/orders", "data": {"total": {"@path": "$.properties.total"}}}]))
    assert status == 200, answer
    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/subscriptions/orders/edit'")
    b("waitText", text="Recent events", selector="form.preview details.recent-events summary")
    assert asked(b) == 0, "nothing is asked (nor captured) before the picker opens"
    # Opened from the keyboard: the capture starts, and the picker says so.
    b("eval", js="document.querySelector('details.recent-events summary').focus()")
    b("press", key="Enter")
    b("waitText", text="Capturing is on", selector="details.recent-events .recent-status")
    assert b("count", selector=".recent-list button") == 0
    track(relay, "wk_alpha", "recent-pick-1", {"total": 77.5})
    # Shown at the next refresh, without a click.
    b("waitText", text="Order Completed", selector=".recent-list")
    row = b("text", selector=".recent-list li")
    assert "track" in row and "Order Completed" in row, row
    b.shots("subscription-recent-events")
    b("click", selector=".recent-list button", text="Order Completed")
    b("waitText", text="matches", selector=".preview-result")
    event = json.loads(b("eval", js="document.querySelector('[data-local=event]').value"))
    assert event["messageId"] == "recent-pick-1" and event["properties"] == {"total": 77.5}, event
    assert "writeKey" not in event, event
    body = json.loads(b("text", selector=".preview-result pre.body"))
    assert body == {"total": 77.5}, body
    assert "does not match" not in b("text", selector=".preview-result")
    # Another screen: the asking stops.
    b("eval", js="location.hash = '#/sources'")
    b("waitText", text="alpha", selector="table.sources")
    before = asked(b)
    time.sleep(6)
    assert asked(b) == before, "the picker asked again after the editor closed"
    assert_clean(b.close(), relay, ADMIN_TOKEN)
