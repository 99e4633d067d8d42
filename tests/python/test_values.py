"""Python values to JSON: what converts (and how, at the receiver), and what is refused with
the key path named and nothing queued."""

from __future__ import annotations

import datetime as dt
import enum
import uuid
from decimal import Decimal
from typing import Any, Callable, Dict

import pytest

import outbound
from receiver import Receiver

MakeClient = Callable[..., outbound.Client]


class Color(enum.Enum):
    RED = "red"
    NESTED = {"deep": (1, 2)}


class Level(enum.IntEnum):
    HIGH = 3


def sent_properties(make_client: MakeClient, receiver: Receiver, props: Dict[str, Any]) -> Any:
    client = make_client()
    mid = client.track(user_id="u", event="E", properties=props)
    assert client.flush(timeout=10)
    [msg] = [m for m in receiver.batch_messages() if m["messageId"] == mid]
    [hook] = [r.json for r in receiver.at("/hook") if r.json["messageId"] == mid]
    assert hook["properties"] == msg["properties"]  # both destinations convert alike
    return msg["properties"]


def test_plain_values_pass_through(make_client: MakeClient, receiver: Receiver) -> None:
    props = {"s": "é ☃ \u0000", "i": -7, "f": 1.5, "t": True, "n": None,
             "l": [1, "a", None], "d": {"x": {"y": []}}, "tuple": (1, 2)}
    got = sent_properties(make_client, receiver, props)
    assert got == {**props, "tuple": [1, 2]}


def test_aware_datetime_becomes_utc_with_milliseconds(
    make_client: MakeClient, receiver: Receiver
) -> None:
    tz = dt.timezone(dt.timedelta(hours=2))
    got = sent_properties(make_client, receiver, {
        "at": dt.datetime(2026, 11, 21, 11, 30, 0, 123987, tzinfo=tz),
    })
    assert got["at"] == "2026-11-21T09:30:00.123Z"


def test_naive_datetime_is_read_as_local_time(
    make_client: MakeClient, receiver: Receiver
) -> None:
    naive = dt.datetime(2026, 6, 1, 12, 0, 0, 500000)
    as_local = dt.datetime.fromtimestamp(naive.timestamp(), dt.timezone.utc)
    got = sent_properties(make_client, receiver, {"at": naive})
    assert got["at"] == as_local.strftime("%Y-%m-%dT%H:%M:%S.500Z")


def test_date_decimal_uuid_enum(make_client: MakeClient, receiver: Receiver) -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    got = sent_properties(make_client, receiver, {
        "date": dt.date(2026, 1, 2),
        "price": Decimal("19.99"),
        "whole": Decimal("5"),
        "id": u,
        "color": Color.RED,
        "nested_enum": Color.NESTED,
        "level": Level.HIGH,
    })
    assert got == {
        "date": "2026-01-02", "price": 19.99, "whole": 5, "id": str(u),
        "color": "red", "nested_enum": {"deep": [1, 2]}, "level": 3,
    }


def test_large_integers_are_written_as_javascript_reads_them(
    make_client: MakeClient, receiver: Receiver
) -> None:
    # Beyond 64 bits the binding converts to float; beyond 2**53 the core writes what
    # JSON.parse would read.
    client = make_client(webhooks=[], shared_secret=None)
    client.track(user_id="u", event="E", properties={
        "safe": 2**53 - 1, "i64max": 2**63 - 1, "huge": 2**70, "neg": -(2**70),
    })
    assert client.flush(timeout=10)
    [req] = receiver.at("/v1/batch")
    assert (b'"properties":{"safe":9007199254740991,"i64max":9223372036854776000,'
            b'"huge":1.1805916207174113e+21,"neg":-1.1805916207174113e+21}') in req.body


def test_integer_and_uuid_ids_are_sent_as_strings(
    make_client: MakeClient, receiver: Receiver
) -> None:
    client = make_client()
    u = uuid.uuid4()
    a = client.identify(user_id=42)
    b = client.group(user_id=7, group_id=99)
    c = client.track(anonymous_id=u, event="E")
    assert client.flush(timeout=10)
    by_id = {m["messageId"]: m for m in receiver.batch_messages()}
    assert by_id[a]["userId"] == "42"
    assert by_id[b]["userId"] == "7" and by_id[b]["groupId"] == "99"
    assert by_id[c]["anonymousId"] == str(u)


def test_datetime_timestamp(make_client: MakeClient, receiver: Receiver) -> None:
    client = make_client()
    when = dt.datetime(2025, 3, 4, 5, 6, 7, 8000, tzinfo=dt.timezone.utc)
    mid = client.track(user_id="u", event="E", timestamp=when)
    assert client.flush(timeout=10)
    [msg] = [m for m in receiver.batch_messages() if m["messageId"] == mid]
    assert msg["timestamp"] == "2025-03-04T05:06:07.008Z"


@pytest.mark.parametrize(
    ("props", "error", "path"),
    [
        ({"items": [1, 2, {3}]}, outbound.UnsupportedType, "properties['items'][2]"),
        ({"o": object()}, outbound.UnsupportedType, "properties['o']"),
        ({"b": b"raw"}, outbound.UnsupportedType, "properties['b']"),
        ({"f": frozenset()}, outbound.UnsupportedType, "properties['f']"),
        ({"x": {"y": float("nan")}}, outbound.ValidationError, "properties['x']['y']"),
        ({"inf": float("inf")}, outbound.ValidationError, "properties['inf']"),
        ({"l": [0, -float("inf")]}, outbound.ValidationError, "properties['l'][1]"),
        ({"d": Decimal("NaN")}, outbound.ValidationError, "properties['d']"),
        ({"d": Decimal("1e999")}, outbound.ValidationError, "properties['d']"),
        ({"k": {1: "int key"}}, outbound.UnsupportedType, "properties['k']"),
        ({"it's": [set()]}, outbound.UnsupportedType, "properties[\"it's\"][0]"),
    ],
)
def test_refused_values_name_the_key_path_and_queue_nothing(
    make_client: MakeClient, props: Dict[str, Any], error: type, path: str
) -> None:
    client = make_client(send=False)
    with pytest.raises(error) as info:
        client.track(user_id="u", event="E", properties=props)
    assert str(info.value).startswith(path + ":")
    assert info.value.field == path  # type: ignore[attr-defined]
    assert client.stats["accepted"] == 0


def test_refusals_are_type_and_value_errors() -> None:
    assert issubclass(outbound.UnsupportedType, TypeError)
    assert issubclass(outbound.ValidationError, ValueError)


def test_self_containing_value_is_refused(make_client: MakeClient) -> None:
    loop: Dict[str, Any] = {}
    loop["me"] = loop
    client = make_client(send=False)
    with pytest.raises(outbound.ValidationError, match="nested more than"):
        client.track(user_id="u", event="E", properties=loop)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"properties": [1]}, "properties: must be a dict, got list"),
        ({"user_id": 1.5}, "user_id: must be a str or int, got float"),
        ({"user_id": True}, "user_id: must be a str or int, got bool"),
        ({"event": 3}, "event: must be a str, got int"),
        ({"timestamp": 1700000000}, "timestamp: must be a datetime or an RFC 3339 str, got int"),
    ],
)
def test_wrong_argument_types(make_client: MakeClient, kw: Dict[str, Any], message: str) -> None:
    client = make_client(send=False)
    args: Dict[str, Any] = {"user_id": "u", "event": "E", **kw}
    with pytest.raises(outbound.UnsupportedType) as info:
        client.track(**args)
    assert str(info.value) == message


def test_timestamp_text_without_offset_is_refused(make_client: MakeClient) -> None:
    client = make_client(send=False)
    with pytest.raises(outbound.ValidationError, match="timestamp") as info:
        client.track(user_id="u", event="E", timestamp="2026-11-21T09:30:00")
    assert info.value.field == "timestamp"
