"""How many messages one request carries: at most ``flush_at`` by
default, in every request; more only with ``max_batch_messages``; seen by a real receiver."""

from __future__ import annotations

import threading
from typing import Callable, List, Tuple

import outbound
from receiver import Receiver

MakeClient = Callable[..., outbound.Client]


def sizes(receiver: Receiver) -> List[int]:
    return [len(b["batch"]) for b in receiver.batches()]


def test_a_request_carries_at_most_flush_at_messages(
    make_client: MakeClient, receiver: Receiver
) -> None:
    client = make_client(flush_at=5, flush_interval=60.0, webhooks=[], shared_secret=None)
    ids = [client.track(user_id="u", event=f"E{i}") for i in range(12)]
    # Both full batches leave without a flush (the interval is a minute).
    assert receiver.wait_for(lambda r: len(r.batches()) >= 2)
    threading.Event().wait(0.2)  # long enough for a joined or third request to show
    assert sizes(receiver) == [5, 5]
    assert client.flush(timeout=10)
    assert sizes(receiver) == [5, 5, 2]
    # Each request holds consecutive calls in order; the two full ones leave together, on
    # connections of their own, and may arrive in either order.
    got = [[m["messageId"] for m in b["batch"]] for b in receiver.batches()]
    assert sorted(got[:2]) == sorted([ids[0:5], ids[5:10]])
    assert got[2] == ids[10:12]


def test_with_flush_at_1_a_bad_answer_fails_only_its_own_message(
    make_client: MakeClient, receiver: Receiver
) -> None:
    receiver.script["/v1/batch"] = [400]
    receiver.delay["/v1/batch"] = 0.02
    outcomes: List[Tuple[str, str]] = []
    lock = threading.Lock()

    def on_outcome(mid: str, outcome: str, detail: str) -> None:
        with lock:
            outcomes.append((mid, outcome))

    client = make_client(flush_at=1, webhooks=[], shared_secret=None, on_outcome=on_outcome)
    ids = [client.track(user_id="u", event=f"E{i}") for i in range(6)]
    assert client.flush(timeout=10) is False, "one message failed"
    assert sorted(mid for mid, _ in outcomes) == sorted(ids)
    assert sorted(o for _, o in outcomes) == ["delivered"] * 5 + ["failed"]
    assert sizes(receiver) == [1] * 6, "one request per message"


def test_max_batch_messages_joins_waiting_batches_up_to_it(
    make_client: MakeClient, receiver: Receiver
) -> None:
    # One request out at a time, answered slowly: closed batches wait behind it and join.
    receiver.delay["/v1/batch"] = 0.3
    client = make_client(flush_at=5, max_batch_messages=15, max_in_flight=1,
                         webhooks=[], shared_secret=None)
    for i in range(50):
        client.track(user_id="u", event=f"E{i}")
    assert client.flush(timeout=20)
    got = sizes(receiver)
    assert sum(got) == 50
    assert max(got) <= 15, got
    assert max(got) > 5, f"batches joined: {got}"
