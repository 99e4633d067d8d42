"""A source's records through an edit, in headless Chromium (as tests/relay/test_console.py
drives it), against the real relay binary: one webhook's header changed in the console and
saved, the other webhook, which fails, still shows its failures and attempts on its card
and in its recent attempts, not a fresh "not tried yet"."""

from __future__ import annotations

import json
from typing import Any, Dict, List

from conftest import ADMIN_TOKEN, Relay
from receiver import Receiver
from test_console import Browser, api, assert_clean, browser, console_relay, track, wait  # noqa: F401


def card_facts(b: Browser, webhook: int) -> Dict[str, Any]:
    """A webhook's card on the source's screen: its badge and each fact by its label."""
    js = ("(() => { const c = document.querySelector('li.webhook[data-webhook=\"%d\"]');"
          " if (!c) return null; const dt = [...c.querySelectorAll('dt')].map((d) => d.textContent);"
          " const dd = [...c.querySelectorAll('dd')].map((d) => d.textContent);"
          " return { badge: c.querySelector('h3 .badge').textContent,"
          " facts: Object.fromEntries(dt.map((k, i) => [k, dd[i]])) } })()") % webhook
    return b("eval", js=js)


def test_console_edit_keeps_the_other_webhooks_failures_and_attempts(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    relay = console_relay
    rx_a, rx_b = receivers
    rx_b.status["/failing"] = 500
    rx_b.answer["/failing"] = b'{"error":"down for maintenance"}'
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    hooks = [{"url": f"{rx_a.url}/alpha", "headers": {"X-Source": "alpha"}},
             {"url": f"{rx_b.url}/failing"}]
    status, answer = api(relay, "PUT", "/admin/sources/alpha", dict(alpha, webhooks=hooks))
    assert status == 200, answer
    for i in range(3):
        track(relay, "wk_alpha", f"kept-{i}")
    assert rx_b.wait_for(lambda r: len(r.at("/failing")) == 3, 20), rx_b.requests

    def failing() -> Dict[str, Any]:
        return api(relay, "GET", "/admin/sources/alpha/health")[1]["webhooks"][1]

    wait("three failures in a row", lambda: failing()["consecutive_failures"] == 3)
    before = failing()

    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha'")
    b("waitText", text="failing", selector="li.webhook[data-webhook='1']", timeout=30000)
    assert card_facts(b, 1)["facts"]["Failures in a row"] == "3"

    # Webhook 1's header changed and saved: its client is replaced.
    b("click", selector="nav.tabs a", text="Webhooks and secret")
    b("waitText", text="A secret is set", selector="main")
    b("type", selector="input.header-value", text="alpha-edited")
    b("click", selector="button[type=submit]", text="Save")
    b("waitText", text="Saved", selector="form.settings")
    _, saved = api(relay, "GET", "/admin/sources/alpha")
    assert [w["url"] for w in saved["webhooks"]] == [h["url"] for h in hooks], saved
    track(relay, "wk_alpha", "after-edit-1")
    assert rx_a.wait_for(lambda r: any(q.json["messageId"] == "after-edit-1" for q in r.at("/alpha")), 20)
    assert rx_a.at("/alpha")[-1].headers["x-source"] == "alpha-edited"

    # The failing webhook's card: its failures and attempts, not "not tried yet · – of 0".
    b("click", selector="nav.tabs a", text="Health")
    b("waitText", text="failing", selector="li.webhook[data-webhook='1']", timeout=30000)
    card = card_facts(b, 1)
    assert card["badge"] == "failing", card
    assert int(card["facts"]["Failures in a row"]) >= 3, card
    assert not card["facts"]["Success (5 min)"].endswith(" of 0"), card
    assert "down for maintenance" in card["facts"]["Last error"] or "500" in card["facts"]["Last error"], card
    after = failing()
    assert after["consecutive_failures"] >= before["consecutive_failures"], (before, after)
    assert after["attempts_5m"] >= before["attempts_5m"], (before, after)
    b("click", selector="li.webhook[data-webhook='1'] a", text="Recent attempts")
    b("waitText", text="kept-0", selector="table.attempts")
    rows = b("text", selector="table.attempts tbody")
    for i in range(3):
        assert f"kept-{i}" in rows, rows
    assert '{"error":"down for maintenance"}' in rows, rows
    assert_clean(b.close(), relay, ADMIN_TOKEN)
    print(json.dumps({"before": before, "after": after}, indent=1))


def test_console_a_webhook_refusing_everything_reads_failing_beside_one_that_takes_it(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """The seed's any-URL rule, shown honestly: webhook 1 takes every message, webhook 2
    answers 400 to each. The source's messages read delivered; webhook 2 reads failing on
    the list, on its card (its messages failed or given up there, none delivered) and on the
    chart (its misses named beside the source's delivered)."""
    relay = console_relay
    rx_a, rx_b = receivers
    rx_b.status["/refusing"] = 400
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    hooks = [{"url": f"{rx_a.url}/alpha"}, {"url": f"{rx_b.url}/refusing"}]
    status, answer = api(relay, "PUT", "/admin/sources/alpha", dict(alpha, webhooks=hooks))
    assert status == 200, answer
    n = 6
    for i in range(n):
        track(relay, "wk_alpha", f"refused-{i}")

    def messages(i: int) -> Dict[str, int]:
        return api(relay, "GET", "/admin/sources/alpha/health")[1]["webhooks"][i]["messages"]

    wait("every answer", lambda: messages(0)["delivered"] == n
         and messages(1)["failed"] + messages(1)["abandoned"] == n)
    refused = messages(1)

    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="failing", selector="table.sources tr[data-source='alpha']", timeout=15000)
    row = b("text", selector="table.sources tr[data-source='alpha']")
    assert "healthy" not in row, row
    b("eval", js="location.hash = '#/sources/alpha'")
    b("waitText", text="failing", selector="li.webhook[data-webhook='1']", timeout=30000)
    card = card_facts(b, 1)
    assert card["badge"] == "failing", card
    assert card["facts"]["Delivered here"] == "0", card
    assert card["facts"]["Failed here"] == str(refused["failed"]), card
    if refused["abandoned"]:
        assert card["facts"]["Given up"].startswith(str(refused["abandoned"])), card
        assert "another webhook took them" in card["facts"]["Given up"], card
    ok = card_facts(b, 0)
    assert ok["facts"]["Delivered here"] == str(n) and "Given up" not in ok["facts"], ok

    b("waitText", text="Missed at a webhook", selector="div.chart", timeout=15000)
    legend = b("text", selector="div.chart p.legend")
    assert f"Delivered {n}" in legend and "Failed 0" in legend, legend
    assert f"Missed at a webhook {n}" in legend, legend
    named = b("text", selector="div.chart ul.missed-list")
    assert f"Webhook 2 missed {n}" in named, named
    assert "Webhook 1 missed" not in named, named
    assert b("eval", js="document.querySelectorAll('svg.hour polyline.missed').length") == 1
    assert_clean(b.close(), relay, ADMIN_TOKEN)


def test_console_attempts_explorer_chooses_and_shows_a_failure_whole(
        console_relay: Relay, receivers: List[Receiver], browser: Browser) -> None:
    """The attempts explorer: attempts chosen by result and status (kept in the address), a
    failure opened with its request headers (credentials redacted), its answer's headers and
    the whole answer past the list's first 1 KiB; a message's link shows that message's
    attempts alone, and a failure links to its dead letter."""
    relay = console_relay
    rx_a, _ = receivers
    _, alpha = api(relay, "GET", "/admin/sources/alpha")
    hooks = [{"url": f"{rx_a.url}/explored", "headers": {"X-Team": "growth", "Authorization": "Bearer t0ken"}}]
    status, answer = api(relay, "PUT", "/admin/sources/alpha", dict(alpha, webhooks=hooks))
    assert status == 200, answer
    for i in range(4):
        track(relay, "wk_alpha", f"fine-{i}")

    def kept(query: str) -> List[Dict[str, Any]]:
        return api(relay, "GET", f"/admin/sources/alpha/webhooks/0/attempts{query}")[1]["attempts"]

    # The relay's record of the fourth 2xx, not the receiver's of the fourth request: the
    # receiver reads its status after recording, so an early switch would refuse `fine-3`.
    wait("four deliveries", lambda: len(kept("?result=delivered")) == 4)
    rx_a.status["/explored"] = 422
    rx_a.answer["/explored"] = b'{"error":"' + b"z" * 3000 + b'"}'
    for i in range(2):
        track(relay, "wk_alpha", f"refused-{i}")

    wait("two refusals", lambda: len(kept("?result=permanent")) == 2)

    b = browser
    b.sign_in(relay, ADMIN_TOKEN)
    b("waitText", text="alpha", selector="table.sources")
    b("eval", js="location.hash = '#/sources/alpha/webhooks/0'")
    b("waitText", text="fine-0", selector="table.attempts")
    assert b("count", selector="table.attempts tbody tr") == 6
    b("eval", js="document.getElementById('f-result').value = 'permanent'")
    b("type", selector="#f-status", text="422")
    b("click", selector="form.filters button[type=submit]", text="Show")
    b("waitGone", selector="table.attempts tbody tr.delivered")
    assert b("count", selector="table.attempts tbody tr") == 2, b("text", selector="table.attempts tbody")
    assert "result=permanent" in b("eval", js="location.hash") and "status=422" in b("eval", js="location.hash")
    assert "2 kept attempts match" in b("text", selector="p.meta[role=status]")

    b("click", selector="table.attempts tbody tr:first-child details.attempt summary")
    b("waitText", text="Answer headers", selector="table.attempts tbody tr:first-child .attempt-detail")
    detail = b("text", selector="table.attempts tbody tr:first-child .attempt-detail")
    assert "x-team" in detail and "growth" in detail, detail
    assert "authorization" in detail and "[redacted]" in detail and "t0ken" not in detail, detail
    assert "x-signature" in detail, detail
    assert "content-type" in detail.lower(), detail
    assert "z" * 3000 in detail, "the whole answer, not the list's first 1 KiB"
    letter = b("eval", js="document.querySelector('table.attempts tbody tr:first-child .attempt-detail').closest('details').querySelector('a[href*=dead-letters]').getAttribute('href')")
    assert letter.startswith("#/sources/alpha/dead-letters?id=refused-"), letter

    # The failure's dead letter, by its link.
    b("eval", js=f"location.hash = {json.dumps(letter)}")
    b("waitText", text="refused-", selector="section.detail")
    assert "422" in b("text", selector="section.detail")
    b("eval", js="history.back()")
    b("waitText", text="Headers and answer", selector="table.attempts")

    b("click", selector="table.attempts tbody tr:first-child td a", text="refused-")
    b("waitText", text="(message refused-", selector="p.meta[role=status]")
    rows = b("text", selector="table.attempts tbody")
    assert rows.count("refused-") >= 1 and "fine-" not in rows, rows
    b("click", selector="form.filters button", text="Clear")
    b("waitText", text="fine-0", selector="table.attempts")
    assert b("count", selector="table.attempts tbody tr") == 6
    b.axe("attempts explorer")
    assert_clean(b.close(), relay, ADMIN_TOKEN)
