"""Delivery records through the installed wheel, against a real receiver: a webhook's
attempts and health, dead letters (with ``dead_letters=True`` and a spool) listed, read,
discarded and replayed, one and in bulk, and the settings."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

import pytest

import outbound
from receiver import SECRET, Receiver, start_receiver


def wait(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def dead_client(make_client: Callable[..., outbound.Client], tmp_path: Path, **kw: Any) -> outbound.Client:
    return make_client(
        write_key=None,
        spool=tmp_path / "spool",
        dead_letters=True,
        **kw,
    )


def test_a_400_is_a_dead_letter_and_a_replay_delivers_it_once(
    make_client: Callable[..., outbound.Client], receiver: Receiver, tmp_path: Path
) -> None:
    receiver.status["/hook"] = 400
    client = dead_client(make_client, tmp_path)
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    mid = client.track(user_id="u1", event="Signed Up")
    assert mid is not None
    wait(lambda: client.dead_letter_stats()["count"] == 1)
    page = client.dead_letters(limit=10, since=before)
    assert page["next"] is None
    [dead] = page["dead_letters"]
    assert dead["message_id"] == mid
    assert dead["reason"] == "status 400"
    assert dead["body"] is None
    assert isinstance(dead["failed_at"], datetime) and dead["failed_at"] >= before
    [last] = dead["last_attempts"]
    assert (last["webhook"], last["status"], last["result"]) == (0, 400, "permanent")
    assert last["answer"] == b'{"success":true}'
    whole = client.dead_letter(mid)
    assert whole is not None
    assert whole["body"] == receiver.at("/hook")[0].body
    # The URL's attempts and health.
    [tried] = client.webhook_attempts(0)
    assert (tried["message_id"], tried["status"]) == (mid, 400)
    assert tried["duration"] > 0
    [health] = client.webhook_health()
    assert health["state"] == "failing" and health["consecutive_failures"] == 1
    assert health["last_error"][0] <= datetime.now(timezone.utc)
    assert health["messages"] == {"delivered": 0, "failed": 1, "retrying": 0, "abandoned": 0}
    # Recovered: replayed once, same id, signed with the current secret.
    receiver.status["/hook"] = 200
    replay = client.replay_dead_letter(mid)
    assert replay is not None and replay["total"] == 1
    assert client.replay_dead_letter(mid) is None, "replaying already"
    wait(lambda: len(receiver.at("/hook")) == 2)
    again = receiver.at("/hook")[1]
    assert again.json["messageId"] == mid
    assert outbound.verify(SECRET, again.body, again.headers["x-signature"])
    wait(lambda: client.dead_letter(mid) is None)
    progress = client.replay_progress(replay["id"])
    assert progress is not None and progress["done"] and progress["delivered"] == 1
    assert client.webhook_health()[0]["state"] == "healthy"
    assert client.dead_letters()["dead_letters"] == []
    with pytest.raises(outbound.ValidationError):
        client.webhook_attempts(3)


def test_each_url_counts_its_messages_beside_one_that_takes_them(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    """Two URLs, one answering 200 and one 400: each message is delivered (one URL is enough),
    the first URL counts every one delivered, the second none, each failed or abandoned."""
    n = 10
    refusing = start_receiver()
    try:
        refusing.status["/hook"] = 400
        client = make_client(
            write_key=None,
            webhooks=[outbound.Webhook(receiver.hook()), outbound.Webhook(refusing.hook())],
        )
        for i in range(n):
            client.track(user_id=f"u{i}", event="Counted")
        assert client.flush(timeout=15)
        assert client.stats["delivered"] == n and client.stats["failed"] == 0
        # A refusal may come after the other URL took the message: wait for every answer.
        def answered() -> bool:
            counts = client.webhook_health()[1]["messages"]
            return bool(counts["failed"] + counts["abandoned"] == n)

        wait(answered)
        good, refused = client.webhook_health()
        assert good["state"] == "healthy"
        assert good["messages"] == {"delivered": n, "failed": 0, "retrying": 0, "abandoned": 0}
        assert refused["state"] == "failing"
        assert refused["messages"]["delivered"] == 0 and refused["messages"]["retrying"] == 0
    finally:
        refusing.server.shutdown()
        refusing.server.server_close()


def test_a_bulk_replay_and_discarding(
    make_client: Callable[..., outbound.Client], receiver: Receiver, tmp_path: Path
) -> None:
    receiver.status["/hook"] = 410
    client = dead_client(make_client, tmp_path)
    ids = [str(client.track(user_id=f"u{i}", event="E")) for i in range(50)]
    wait(lambda: client.dead_letter_stats()["count"] == 50)
    first = client.dead_letters(limit=20)
    second = client.dead_letters(limit=20, cursor=first["next"])
    listed = [d["message_id"] for d in first["dead_letters"] + second["dead_letters"]]
    assert len(set(listed)) == 40
    # A cursor no page gave is refused, naming it (never answered as the first page).
    for garbage in ("garbage", "", "12", "x.1"):
        with pytest.raises(outbound.ValidationError, match="is not a page's next") as info:
            client.dead_letters(limit=20, cursor=garbage)
        assert info.value.field == "cursor"
    assert client.delete_dead_letter(ids[0]) is True
    assert client.delete_dead_letter(ids[0]) is False
    receiver.status["/hook"] = 200
    seen = len(receiver.at("/hook"))
    job = client.replay_dead_letters(webhook=0)
    assert job["total"] == 49
    wait(lambda: (client.replay_progress(job["id"]) or {}).get("done") is True)
    delivered = [r.json["messageId"] for r in receiver.at("/hook")[seen:]]
    assert sorted(delivered) == sorted(ids[1:])


def test_the_settings_and_their_defaults(
    make_client: Callable[..., outbound.Client], tmp_path: Path
) -> None:
    with pytest.raises(outbound.ConfigError) as err:
        make_client(write_key=None, dead_letters=True)
    assert err.value.setting == "dead_letters"
    with pytest.raises(outbound.ConfigError) as err:
        dead_client(make_client, tmp_path, dead_letter_max_bytes=0)
    assert err.value.setting == "dead_letter_max_bytes"
    with pytest.raises(outbound.ConfigError) as err:
        dead_client(make_client, tmp_path, dead_letter_retention=0)
    assert err.value.setting == "dead_letter_retention"
    client = dead_client(
        make_client, tmp_path, dead_letter_retention=3600.0, dead_letter_max_bytes=1 << 20
    )
    assert client.dead_letter_stats() == {"count": 0, "bytes": 0, "evicted": 0, "expired": 0}
    off = make_client(write_key=None)
    with pytest.raises(outbound.ConfigError):
        off.dead_letters()
    d = outbound._native.defaults()
    assert (d["dead_letters"], d["dead_letter_retention"], d["dead_letter_max_bytes"]) == (
        False,
        14 * 86400.0,
        256 << 20,
    )


def test_dead_letters_found_by_a_text_of_their_event(
    make_client: Callable[..., outbound.Client], receiver: Receiver, tmp_path: Path
) -> None:
    receiver.status["/hook"] = 400
    client = dead_client(make_client, tmp_path)
    ids = [
        str(client.track(user_id=f"u{i % 30 + 1}", event="Order Completed" if i % 3 else "Signed Up",
                         properties={"orderId": f"ord-{i}"}))
        for i in range(60)
    ]
    wait(lambda: client.dead_letter_stats()["count"] == 60)

    def found(text: str, limit: int = 100) -> list[str]:
        out: list[str] = []
        cursor = None
        while True:
            page = client.dead_letters(limit=limit, cursor=cursor, contains=text)
            assert len(page["dead_letters"]) <= limit
            out += [d["message_id"] for d in page["dead_letters"]]
            cursor = page["next"]
            if cursor is None:
                return out

    # u3's two, not u30's; "u3" alone holds both.
    assert sorted(found('"userId":"u3"')) == sorted([ids[2], ids[32]])
    assert len(found("u3")) == 4
    assert found('"ord-41"') == [ids[41]]
    assert found('"ORD-41"') == []
    signed_up = found('"event":"Signed Up"', limit=3)
    assert sorted(signed_up) == sorted(ids[0::3])
    for bad in ("", "x" * 257):
        with pytest.raises(outbound.ValidationError, match="256") as info:
            client.dead_letters(contains=bad)
        assert info.value.field == "contains"


def test_a_urls_attempt_log_keeps_attempt_log_size_for_attempt_retention(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    small = make_client(write_key=None, attempt_log_size=5)
    ids = [small.track(user_id=f"u{i}", event="Logged") for i in range(12)]
    assert small.flush(timeout=15)
    assert len(receiver.at("/hook")) == 12
    kept = small.webhook_attempts(0)
    assert len(kept) == 5
    assert {a["message_id"] for a in kept} <= set(ids)
    # Kept by age too: past attempt_retention an attempt is no longer listed.
    brief = make_client(write_key=None, attempt_retention=0.5)
    assert brief.track(user_id="u", event="Brief") is not None
    assert brief.flush(timeout=15)
    time.sleep(0.6)
    assert brief.webhook_attempts(0) == []
    d = outbound._native.defaults()
    assert (d["attempt_log_size"], d["attempt_retention"]) == (100, 86400.0)


@pytest.mark.parametrize(
    "setting, value",
    [
        ("attempt_log_size", 0),
        ("attempt_log_size", -1),
        ("attempt_log_size", 10_001),
        ("attempt_retention", 0),
        ("attempt_retention", -1.0),
        ("attempt_retention", 30 * 86400.0 + 1),
    ],
)
def test_an_attempt_log_setting_out_of_range_is_refused_naming_it(
    make_client: Callable[..., outbound.Client], setting: str, value: float
) -> None:
    with pytest.raises(outbound.ConfigError) as err:
        make_client(write_key=None, **{setting: value})
    assert err.value.setting == setting
    # The bounds themselves are taken.
    make_client(write_key=None, attempt_log_size=10_000, attempt_retention=30 * 86400.0)


def test_webhook_attempts_filter_and_keep_a_failure_s_headers_and_whole_answer(
    make_client: Callable[..., outbound.Client], receiver: Receiver
) -> None:
    """Three attempts (400, 200, 422) filtered by result, status, message and time; a
    failure keeps its request's headers with the credential redacted, the answer's headers,
    and a 5,000-byte answer whole."""
    receiver.answer["/hook"] = b"x" * 5000
    client = make_client(
        write_key=None,
        webhooks=[
            outbound.Webhook(
                receiver.hook(), headers={"Authorization": "Bearer s3cret", "X-Team": "growth"}
            )
        ],
    )
    ids = []
    marks = []
    for status in (400, 200, 422):
        receiver.status["/hook"] = status
        marks.append(datetime.now(timezone.utc))
        ids.append(client.track(user_id="u1", event=f"Got {status}"))
        wait(lambda: len(client.webhook_attempts(0)) == len(ids))
        time.sleep(0.01)
    first, second, third = ids
    every = client.webhook_attempts(0)
    assert [a["message_id"] for a in every] == [third, second, first]

    def ids_of(**kw: Any) -> list[Any]:
        return [a["message_id"] for a in client.webhook_attempts(0, **kw)]

    assert ids_of(result="delivered") == [second]
    assert ids_of(result="permanent") == [third, first]
    assert ids_of(status=400) == [first]
    assert ids_of(message_id=str(third)) == [third]
    assert ids_of(since=marks[1]) == [third, second]
    assert ids_of(until=marks[1]) == [first]
    assert ids_of(since=marks[1], until=marks[2]) == [second]
    assert ids_of(limit=1) == [third]
    assert ids_of(result="retryable") == []

    refused = every[2]
    assert refused["status"] == 400 and refused["answer"] == b"x" * 5000
    sent = dict(refused["request_headers"])
    assert all(name == name.lower() for name, _ in refused["request_headers"])
    assert sent["authorization"] == "[redacted]"
    assert sent["x-team"] == "growth"
    assert "s3cret" not in repr(refused["request_headers"])
    answered = dict(refused["answer_headers"])
    assert answered["content-length"] == "5000"
    assert answered["content-type"] == "application/json"
    delivered = every[1]
    assert delivered["answer"] is None
    assert delivered["request_headers"] == [] and delivered["answer_headers"] == []

    with pytest.raises(outbound.ValidationError) as info:
        client.webhook_attempts(0, limit=0)
    assert info.value.field == "limit"
    with pytest.raises(outbound.ValidationError) as info:
        client.webhook_attempts(0, result="lost")
    assert info.value.field == "result"
