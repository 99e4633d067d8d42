"""Threads: flush and close wait without the GIL; on_outcome runs on the scheduler thread,
and an exception in it is logged, not fatal."""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable, List, Tuple

import pytest

import outbound
from receiver import Receiver

MakeClient = Callable[..., outbound.Client]


class Spinner:
    """A Python thread that counts while it can get the GIL."""

    def __init__(self) -> None:
        self.count = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        while not self.stop.is_set():
            self.count += 1

    def __enter__(self) -> "Spinner":
        self.thread.start()
        time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@pytest.mark.parametrize("wait", ["flush", "close"])
def test_waiting_releases_the_gil(
    make_client: MakeClient, receiver: Receiver, wait: str
) -> None:
    receiver.delay["/v1/batch"] = 1.0  # a slow receiver
    client = make_client(webhooks=[], shared_secret=None)
    client.track(user_id="u", event="slow")
    with Spinner() as spinner:
        before = spinner.count
        started = time.monotonic()
        assert getattr(client, wait)(timeout=10) is True
        elapsed = time.monotonic() - started
        progress = spinner.count - before
    assert elapsed >= 0.8  # it really waited for the receiver
    # Holding the GIL for a second would leave the spinner at (almost) nothing.
    assert progress > 100_000, progress


def test_flush_is_bounded_by_its_timeout(make_client: MakeClient, receiver: Receiver) -> None:
    receiver.delay["/v1/batch"] = 3.0
    client = make_client(webhooks=[], shared_secret=None)
    client.track(user_id="u", event="slow")
    started = time.monotonic()
    assert client.flush(timeout=0.3) is False
    assert time.monotonic() - started < 2.0


def test_on_outcome_gets_id_outcome_and_detail_on_the_scheduler_thread(
    make_client: MakeClient, receiver: Receiver
) -> None:
    seen: List[Tuple[str, str, str, bool]] = []

    def on_outcome(message_id: str, outcome: str, detail: str) -> None:
        seen.append((message_id, outcome, detail,
                     threading.current_thread() is threading.main_thread()))

    receiver.status["/bad"] = 400
    good = make_client(on_outcome=on_outcome, write_key=None)
    bad = make_client(on_outcome=on_outcome, write_key=None, webhooks=[receiver.hook("bad")])
    ok_id = good.track(user_id="u", event="E")
    bad_id = bad.track(user_id="u", event="E")
    good.flush(timeout=10)
    bad.flush(timeout=10)
    by_id = {s[0]: s for s in seen}
    assert by_id[ok_id][1] == "delivered"
    assert by_id[bad_id][1] == "failed" and "400" in by_id[bad_id][2]
    assert not any(s[3] for s in seen)  # never on the caller's (main) thread
    assert bad.stats["failed"] == 1 and good.stats["delivered"] == 1


def test_an_exception_in_on_outcome_is_logged_not_fatal(
    make_client: MakeClient, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    calls: List[str] = []

    def explode(message_id: str, outcome: str, detail: str) -> None:
        calls.append(message_id)
        raise RuntimeError("boom in callback")

    client = make_client(on_outcome=explode)
    with caplog.at_level(logging.ERROR, logger="outbound"):
        first = client.track(user_id="u", event="one")
        assert client.flush(timeout=10)
        second = client.track(user_id="u", event="two")
        assert client.flush(timeout=10)
    assert calls == [first, second]
    errors = [r for r in caplog.records if r.name == "outbound" and r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "on_outcome callback raised" in errors[0].getMessage()
    assert errors[0].exc_info is not None and "boom in callback" in str(errors[0].exc_info[1])
    assert client.stats["delivered"] == 2
    assert len(receiver.batch_messages()) == 2


def test_calls_from_many_threads(make_client: MakeClient, receiver: Receiver) -> None:
    client = make_client(flush_at=20, webhooks=[], shared_secret=None)
    ids: List[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for i in range(50):
            mid = client.track(user_id=f"u{n}", event=f"E{i}")
            assert mid is not None
            with lock:
                ids.append(mid)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert client.flush(timeout=10)
    got = [m["messageId"] for m in receiver.batch_messages()]
    assert len(got) == 200 and sorted(got) == sorted(ids)
