"""`block_private_networks` (the SSRF guard for customer webhook URLs): a webhook at
127.0.0.1 gets nothing and the message fails as blocked; `allowed_networks` makes
exceptions. 127.0.0.1 is the only blocked target used."""

from __future__ import annotations

import time
from typing import Any, Callable, List, Tuple

import pytest

import outbound
from receiver import Receiver


def test_a_webhook_at_127_0_0_1_is_blocked_and_gets_nothing(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    seen: List[Tuple[str, str, str]] = []
    client = make_client(
        write_key=None,
        block_private_networks=True,
        on_outcome=lambda *a: seen.append(a),
    )
    msg_id = client.identify(user_id="u1")
    assert not client.flush(timeout=10)
    time.sleep(0.2)
    assert receiver.at("/hook") == []
    assert len(seen) == 1
    assert seen[0][:2] == (msg_id, "failed")
    assert seen[0][2].startswith("webhooks: blocked: 127.0.0.1 is a loopback address"), seen
    assert client.stats["retries"] == 0


def test_an_allowed_network_is_delivered_to(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    client = make_client(
        write_key=None, block_private_networks=True, allowed_networks=["127.0.0.0/8"]
    )
    client.identify(user_id="u1")
    assert client.flush(timeout=10)
    assert len(receiver.at("/hook")) == 1


def test_ingestion_is_not_guarded(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    client = make_client(block_private_networks=True)
    client.identify(user_id="u1")
    client.flush(timeout=10)
    assert len(receiver.batch_messages()) == 1
    assert receiver.at("/hook") == []


@pytest.mark.parametrize("bad", ["10.0.0.0/33", "intranet"])
def test_allowed_networks_must_be_networks(bad: str) -> None:
    with pytest.raises(outbound.ConfigError, match="allowed_networks"):
        outbound.Client(
            webhooks=["http://127.0.0.1:9/h"], block_private_networks=True, allowed_networks=[bad]
        )


def test_allowed_networks_must_be_a_list() -> None:
    kw: Any = {"allowed_networks": "127.0.0.0/8"}
    with pytest.raises(outbound.UnsupportedType, match="allowed_networks must be a list"):
        outbound.Client(webhooks=["http://127.0.0.1:9/h"], **kw)


def test_a_recording_client_refuses_what_the_real_client_refuses(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    from outbound.testing import RecordingClient

    real_seen: List[Tuple[str, str, str]] = []
    real = make_client(
        write_key=None, block_private_networks=True, on_outcome=lambda *a: real_seen.append(a)
    )
    real.identify(user_id="u1", message_id="m-1")
    assert not real.flush(timeout=10)
    with RecordingClient(webhooks=[receiver.hook()], block_private_networks=True) as rec:
        rec.identify(user_id="u1", message_id="m-1")
        assert not rec.flush(timeout=10)
        assert rec.requests == [], "a blocked request was recorded"
        (outcome,) = rec.outcomes
    assert (outcome.message_id, outcome.outcome, outcome.detail) == real_seen[0]
    assert outcome.detail.startswith("webhooks: blocked: 127.0.0.1 is a loopback address")
