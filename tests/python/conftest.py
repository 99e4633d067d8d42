"""Shared fixtures. The suite runs against the installed wheel (scripts/test-python.sh
installs it into .venv); test_package.py checks `outbound` is not the source tree's."""

from __future__ import annotations

from typing import Any, Callable, Iterator, List

import pytest

import outbound
from receiver import SECRET, WRITE_KEY, Receiver, start_receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = start_receiver()
    yield rec
    rec.server.shutdown()
    rec.server.server_close()


@pytest.fixture
def make_client(receiver: Receiver) -> Iterator[Callable[..., outbound.Client]]:
    """Clients to `receiver` (ingestion and one signed webhook unless told otherwise),
    closed at the end of the test."""
    made: List[outbound.Client] = []

    def make(**kw: Any) -> outbound.Client:
        kw.setdefault("write_key", WRITE_KEY)
        kw.setdefault("endpoint", receiver.url)
        kw.setdefault("webhooks", [outbound.Webhook(receiver.hook(), headers={"X-Team": "growth"})])
        kw.setdefault("shared_secret", SECRET)
        kw.setdefault("flush_at", 1)
        kw.setdefault("flush_interval", 0.05)
        kw.setdefault("proxy_from_env", False)
        client = outbound.Client(**kw)
        made.append(client)
        return client

    yield make
    for c in made:
        if not c.closed:
            c.close(timeout=2)
