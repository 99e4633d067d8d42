"""Logging: `debug=True` or `DEBUG=analytics` sends the core's lines to the `outbound`
logger; the write key and the shared secret never appear."""

from __future__ import annotations

import logging
from typing import Callable, List

import pytest

import outbound
from receiver import SECRET, WRITE_KEY, Receiver

MakeClient = Callable[..., outbound.Client]


def outbound_records(caplog: pytest.LogCaptureFixture) -> List[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "outbound"]


def exercise(client: outbound.Client) -> None:
    client.track(user_id="u", event="E")
    client.identify(user_id="u", traits={"a": 1})
    client.flush(timeout=10)
    client.close(timeout=5)


def test_debug_true_logs_to_the_outbound_logger_without_secrets(
    make_client: MakeClient, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="outbound")
    receiver.status["/v1/batch"] = 401  # failures are logged too (as warnings)
    exercise(make_client(debug=True, webhooks=[outbound.Webhook(
        receiver.hook(), headers={"X-Team": "growth"})]))
    records = outbound_records(caplog)
    assert any("client started" in r.getMessage() for r in records)
    assert any(r.levelno == logging.WARNING for r in records)
    text = "\n".join(r.getMessage() for r in records) + caplog.text
    assert WRITE_KEY not in text and SECRET not in text
    assert WRITE_KEY[-8:] not in text and SECRET[-8:] not in text


def test_debug_env_variable_turns_logs_on(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEBUG", "app,analytics")
    caplog.set_level(logging.DEBUG, logger="outbound")
    exercise(make_client())
    assert outbound_records(caplog)


def test_debug_false_wins_over_the_environment(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEBUG", "*")
    caplog.set_level(logging.DEBUG, logger="outbound")
    exercise(make_client(debug=False))
    assert outbound_records(caplog) == []


def test_quiet_by_default(
    make_client: MakeClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEBUG", raising=False)
    caplog.set_level(logging.DEBUG, logger="outbound")
    exercise(make_client())
    assert outbound_records(caplog) == []
