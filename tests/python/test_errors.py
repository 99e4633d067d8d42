"""Exception classes and messages: configuration, validation, size, closed client, and the
full queue that does not raise."""

from __future__ import annotations

import logging
from typing import Any, Callable, Dict

import pytest

import outbound
from receiver import Receiver

MakeClient = Callable[..., outbound.Client]


def test_hierarchy() -> None:
    assert issubclass(outbound.ConfigError, outbound.OutboundError)
    assert issubclass(outbound.ConfigError, ValueError)
    assert issubclass(outbound.ValidationError, outbound.OutboundError)
    assert issubclass(outbound.ValidationError, ValueError)
    assert issubclass(outbound.MessageTooLarge, outbound.ValidationError)
    assert issubclass(outbound.UnsupportedType, outbound.ValidationError)
    assert issubclass(outbound.UnsupportedType, TypeError)
    assert issubclass(outbound.ClientClosed, outbound.OutboundError)
    assert not issubclass(outbound.ClientClosed, ValueError)
    assert issubclass(outbound.SpoolError, outbound.ConfigError)


def test_spool_error_names_the_setting_and_the_path() -> None:
    err = outbound.SpoolError("spool /var/spool/x: already open", "/var/spool/x")
    assert (err.setting, err.path, str(err)) == (
        "spool",
        "/var/spool/x",
        "spool /var/spool/x: already open",
    )


@pytest.mark.parametrize(
    ("kw", "setting", "message"),
    [
        ({}, "write_key/webhooks", "needs a write key"),
        ({"write_key": ""}, "write_key", "must not be empty"),
        ({"write_key": "k", "flush_at": 0}, "flush_at", "at least 1"),
        ({"write_key": "k", "flush_at": -5}, "flush_at", "at least 1"),
        ({"write_key": "k", "flush_at": 100, "max_batch_messages": 99}, "max_batch_messages",
         "at least flush_at"),
        ({"write_key": "k", "max_queue_size": 0}, "max_queue_size", "at least 1"),
        ({"write_key": "k", "timeout": 0}, "timeout", "greater than zero"),
        ({"write_key": "k", "timeout": -1.0}, "timeout", "not a valid number of seconds"),
        ({"write_key": "k", "flush_interval": float("nan")}, "flush_interval", "seconds"),
        ({"write_key": "k", "endpoint": "ftp://x"}, "endpoint", "http"),
        ({"webhooks": ["http://u:p@127.0.0.1/h"]}, "webhooks[0].url", "credentials"),
        ({"webhooks": ["http://127.0.0.1/h"] * 6}, "webhooks", "at most 5"),
        # A disabled webhook still counts toward the 5.
        ({"webhooks": ["http://127.0.0.1/h"] * 5 + [outbound.Webhook("http://127.0.0.1/off",
                                                                      enabled=False)]},
         "webhooks", "6 given, at most 5"),
        ({"webhooks": [outbound.Webhook("http://127.0.0.1/h", {"Content-Type": "x"})]},
         'webhooks[0].headers["Content-Type"]', "cannot be overridden"),
        ({"webhooks": [outbound.Webhook("http://127.0.0.1/h", {"X-A": "a\r\nb"})]},
         'webhooks[0].headers["X-A"]', "no CR, LF"),
        ({"webhooks": ["http://127.0.0.1/h"], "shared_secret": ""}, "shared_secret", "empty"),
        ({"write_key": "k", "atexit_timeout": -1}, "atexit_timeout", "negative"),
    ],
)
def test_config_errors_name_the_setting(kw: Dict[str, Any], setting: str, message: str) -> None:
    with pytest.raises(outbound.ConfigError) as info:
        outbound.Client(**kw)
    assert info.value.setting == setting
    assert message in str(info.value)
    assert str(info.value).startswith(f"invalid configuration {setting}:")


def test_a_webhook_has_at_most_max_webhook_headers_and_max_webhook_header_bytes() -> None:
    def hook(n: int, value_len: int = 10) -> outbound.Webhook:
        return outbound.Webhook(
            "http://127.0.0.1:9/h", {f"X-H{i}": "v" * value_len for i in range(n)}
        )

    def refused(setting: str, **kw: Any) -> str:
        with pytest.raises(outbound.ConfigError) as info:
            outbound.Client(send=False, **kw)
        assert info.value.setting == setting
        return str(info.value)

    def accepted(**kw: Any) -> None:
        outbound.Client(send=False, **kw).close(timeout=1)

    # The defaults: 20 headers, 8192 bytes of names and values.
    assert outbound._native.defaults()["max_webhook_headers"] == 20
    assert outbound._native.defaults()["max_webhook_header_bytes"] == 8192
    accepted(webhooks=[hook(20)])
    text = refused("webhooks[0].headers", webhooks=[hook(21)])
    assert "21 headers given, at most 20 allowed (max_webhook_headers)" in text
    text = refused("webhooks[0].headers", webhooks=[hook(2, 4096)])
    assert "8200 bytes of names and values, at most 8192 allowed" in text
    assert "(max_webhook_header_bytes)" in text
    # Raised, they accept what the defaults refuse; lowered, they refuse less.
    accepted(webhooks=[hook(21)], max_webhook_headers=21)
    accepted(webhooks=[hook(2, 4096)], max_webhook_header_bytes=8200)
    text = refused("webhooks[1].headers", webhooks=[hook(0), hook(1)], max_webhook_headers=0)
    assert "at most 0 allowed (max_webhook_headers)" in text
    text = refused("webhooks[0].headers", webhooks=[hook(1)], max_webhook_header_bytes=13)
    assert "14 bytes of names and values, at most 13 allowed" in text
    # A negative bound is refused by name, not taken as 0.
    refused("max_webhook_headers", webhooks=[hook(0)], max_webhook_headers=-1)
    refused("max_webhook_header_bytes", webhooks=[hook(0)], max_webhook_header_bytes=-1)


def test_a_single_webhook_string_is_refused() -> None:
    with pytest.raises(TypeError, match="list of Webhook"):
        outbound.Client(webhooks="http://127.0.0.1/h")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "kw", "field", "message"),
    [
        ("track", {"user_id": "u", "event": None}, "event", "track requires event"),
        ("track", {"event": "E"}, "user_id or anonymous_id",
         "track requires user_id or anonymous_id"),
        ("identify", {"user_id": ""}, "user_id or anonymous_id", "identify requires"),
        ("group", {"user_id": "u", "group_id": None}, "group_id", "group requires group_id"),
        ("alias", {"user_id": "u", "previous_id": None}, "previous_id",
         "alias requires previous_id"),
        ("delete", {"user_id": None}, "user_id", "delete requires user_id"),
        ("track", {"user_id": "u", "event": "E", "integrations": {"X": 1}},
         "integrations.X", "must be true, false or an object"),
        ("track", {"user_id": "u", "event": "E", "message_id": ""}, "message_id", "empty"),
    ],
)
def test_validation_errors_name_the_field(
    make_client: MakeClient, call: str, kw: Dict[str, Any], field: str, message: str
) -> None:
    client = make_client(send=False)
    with pytest.raises(outbound.ValidationError) as info:
        getattr(client, call)(**kw)
    assert info.value.field == field
    assert message in str(info.value)
    assert client.stats["accepted"] == 0


def test_delete_needs_a_webhook(make_client: MakeClient) -> None:
    client = make_client(webhooks=[], shared_secret=None, send=False)
    with pytest.raises(outbound.ValidationError, match="webhooks only"):
        client.delete(user_id="u")


def test_message_too_large(make_client: MakeClient) -> None:
    client = make_client(send=False)
    with pytest.raises(outbound.MessageTooLarge, match="over the limit of 32768 bytes"):
        client.track(user_id="u", event="E", properties={"blob": "x" * 40_000})
    assert client.stats["accepted"] == 0


def test_closed_client_raises_client_closed(make_client: MakeClient) -> None:
    client = make_client()
    assert client.close(timeout=5) is True
    assert client.closed
    with pytest.raises(outbound.ClientClosed, match="client is closed"):
        client.track(user_id="u", event="E")
    with pytest.raises(outbound.ClientClosed):
        client.close()


def test_full_queue_returns_none_counts_and_logs(
    make_client: MakeClient, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="outbound")
    client = make_client(max_queue_size=2, flush_at=100, flush_interval=60.0, debug=True)
    assert client.track(user_id="u", event="A") is not None
    assert client.track(user_id="u", event="B") is not None
    assert client.track(user_id="u", event="C") is None  # no raise in the request path
    stats = client.stats
    assert stats["accepted"] == 2 and stats["queue_full"] == 1 and stats["dropped"] == 1
    assert any("queue full" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records if r.name == "outbound")
    assert client.flush(timeout=10)
    assert len(receiver.batch_messages()) == 2
