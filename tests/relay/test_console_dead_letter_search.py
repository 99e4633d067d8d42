"""Dead letters found by a text of their events in the console (headless Chromium, as
tests/relay/test_console.py drives it), against the real relay binary: more letters than
the relay reads for one page of a search, so the first page is short yet goes on, "More"
finds the rest, and the search stays in the address."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

from conftest import ADMIN_TOKEN
from test_console import (Browser, Refuser, api, assert_clean, browser, dead_letter_ids,  # noqa: F401
                          post_batch, refused_relay, wait)

# Past the relay's bound of 10,000 letters read for one page of a search.
N = 10_600
HITS = (N - 3, 20)  # one among the newest, one past the bound from it


def send(relay_url: str, at: int, upto: int) -> None:
    batch = [{"type": "track", "userId": f"u{i % 30 + 1}", "event": "Order Completed",
              "messageId": f"dl-{i:05}",
              "properties": {"orderId": "ord-hit" if i in HITS else f"ord-{i}"}}
             for i in range(at, upto)]
    post_batch(relay_url, "wk_alpha", batch)


def test_console_finds_dead_letters_by_a_text_of_their_event(tmp_path: Path, browser: Browser) -> None:
    refuser = Refuser()
    relay = refused_relay(tmp_path, refuser)
    try:
        for at in range(0, N, 500):
            send(relay.url, at, min(N, at + 500))
        wait(f"{N} dead letters", lambda: api(relay, "GET", "/admin/sources/alpha/dead-letters?limit=1")
             [1]["stats"]["count"] == N, 240)
        hits = [f"dl-{i:05}" for i in HITS]

        b = browser
        b.sign_in(relay, ADMIN_TOKEN)
        b("waitText", text="alpha", selector="table.sources")
        b("eval", js="location.hash = '#/sources/alpha/dead-letters'")
        wait("the first page", lambda: len(dead_letter_ids(b)) == 50, 10)

        # Typed in its labelled field and sent with Enter: the newest one at once, and word
        # that the search goes on (the relay stopped at its bound).
        label = b("eval", js="document.querySelector('label[for=contains]').textContent")
        assert label == "Find in the event", label
        b("type", selector="#contains", text='"orderId":"ord-hit"')
        b("press", key="Enter")
        b("waitText", text="1 shown, searching on…", selector="p.found", timeout=15000)
        assert dead_letter_ids(b) == hits[:1]
        assert b("eval", js="document.querySelector('.pager').offsetParent === null "
                 "|| [...document.querySelectorAll('.pager button')].every((x) => x.hidden)")
        place = b("eval", js="location.hash")
        assert place == "#/sources/alpha/dead-letters?q=%22orderId%22%3A%22ord-hit%22", place
        b.shots("dead-letters-search")

        # "More", from the keyboard: the rest, added below, and the end said.
        b("eval", js="[...document.querySelectorAll('button')].find((x) => x.textContent === 'More').focus()")
        b("press", key="Enter")
        b("waitText", text="2 found", selector="p.found", timeout=15000)
        assert dead_letter_ids(b) == hits
        assert "all of them" in b("text", selector="p.found")
        assert b("eval", js="[...document.querySelectorAll('button')].find((x) => x.textContent === 'More').hidden")

        # The address keeps it: left and come back to by the link, the same search.
        b("click", selector="nav.tabs a", text="Health")
        b("waitText", text="Webhook 1", selector=".cards")
        b("eval", js=f"location.hash = {json.dumps(place)}")
        b("waitText", text="1 shown, searching on…", selector="p.found", timeout=15000)
        assert b("eval", js="document.querySelector('#contains').value") == '"orderId":"ord-hit"'

        # Case matters; a text nobody holds says so once the search has read them all.
        b("type", selector="#contains", text='"ORD-HIT"')
        b("press", key="Enter")
        b("waitText", text="0 shown, searching on…", selector="p.found", timeout=15000)
        assert dead_letter_ids(b) == []
        b("click", selector="button", text="More")
        b("waitText", text="No dead letter holds", selector="p.found", timeout=15000)

        # Too long: the relay's refusal beside the field, the screen kept.
        b("type", selector="#contains", text="x" * 257)
        b("press", key="Enter")
        b("waitText", text="Search refused: contains:", selector="p.found", timeout=15000)

        # Emptied: every dead letter again, paged as before, and the address without it.
        b("type", selector="#contains", text="")
        b("press", key="Enter")
        wait("the whole list", lambda: len(dead_letter_ids(b)) == 50, 10)
        assert b("eval", js="location.hash") == "#/sources/alpha/dead-letters"
        assert b("eval", js="document.querySelector('p.found').hidden")
        assert_clean(b.close(), relay, ADMIN_TOKEN)
    finally:
        status = relay.stop(timeout=60)
        refuser.close()
    assert status == 0, relay.log_text()
