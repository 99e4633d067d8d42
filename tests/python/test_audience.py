"""outbound.AudienceSync: only changes become identify calls; state survives."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Callable, Dict, List

import pytest

import outbound
from receiver import Receiver


def identifies(receiver: Receiver, trait: str) -> Dict[str, Any]:
    """user id -> the trait's value, from every identify that reached the batch endpoint."""
    return {m["userId"]: m["traits"][trait] for m in receiver.batch_messages()
            if m["type"] == "identify" and trait in m["traits"]}


def test_first_sync_sends_true_for_every_member_then_only_changes(
        make_client: Callable[..., outbound.Client], receiver: Receiver, tmp_path: Path) -> None:
    client = make_client(webhooks=[], flush_at=50)
    sync = outbound.AudienceSync(client, state_path=tmp_path / "state.db")
    assert sync.sync_audience("High Value Users", (u for u in ["u1", "u2", 3])) == \
        outbound.AudienceResult(joined=3, left=0, unchanged=0)
    assert client.flush(timeout=10)
    assert identifies(receiver, "high_value_users") == {"u1": True, "u2": True, "3": True}
    before = len(receiver.batch_messages())
    result = sync.sync_audience("High Value Users", {"u2", "3", "u4"})
    assert (result.joined, result.left, result.unchanged) == (1, 1, 2)
    assert client.flush(timeout=10)
    changes = {m["userId"]: m["traits"]["high_value_users"] for m in receiver.batch_messages()[before:]}
    assert changes == {"u1": False, "u4": True}


def test_state_survives_a_new_object_on_the_same_path(
        make_client: Callable[..., outbound.Client], receiver: Receiver, tmp_path: Path) -> None:
    client = make_client(webhooks=[], flush_at=50)
    path = str(tmp_path / "state.db")
    outbound.AudienceSync(client, state_path=path).sync_audience("VIP", ["a", "b"])
    again = outbound.AudienceSync(client, path).sync_audience("VIP", ["a", "b", "c"])
    assert again == outbound.AudienceResult(joined=1, left=0, unchanged=2)
    in_memory = outbound.AudienceSync(client).sync_audience("VIP", ["a"])
    assert in_memory.joined == 1, "no path: in memory, nothing remembered from the file"


def test_sync_trait_sends_new_and_changed_values_and_null_for_absent_users(
        make_client: Callable[..., outbound.Client], receiver: Receiver) -> None:
    client = make_client(webhooks=[], flush_at=50)
    sync = outbound.AudienceSync(client)
    assert sync.sync_trait("Lifetime Value", {"u1": 10, "u2": {"tier": "gold"}}) == \
        outbound.TraitResult(set=2, cleared=0, unchanged=0)
    assert client.flush(timeout=10)
    before = len(receiver.batch_messages())
    result = sync.sync_trait("Lifetime Value", {"u1": 10.0, uuid.UUID(int=7): 1})
    assert result == outbound.TraitResult(set=1, cleared=1, unchanged=1)
    assert client.flush(timeout=10)
    changes = {m["userId"]: m["traits"]["lifetime_value"] for m in receiver.batch_messages()[before:]}
    assert changes == {str(uuid.UUID(int=7)): 1, "u2": None}


def test_bad_input_is_refused_naming_it_and_nothing_is_saved(
        make_client: Callable[..., outbound.Client]) -> None:
    client = make_client(webhooks=[])
    sync = outbound.AudienceSync(client)
    with pytest.raises(outbound.ValidationError, match="audience name"):
        sync.sync_audience("", ["u1"])
    with pytest.raises(outbound.ValidationError, match=r"members\[1\]"):
        sync.sync_audience("A", ["u1", ""])
    with pytest.raises(TypeError):
        sync.sync_audience("A", [object()])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        sync.sync_trait("T", {"u1": float("nan")})
    with pytest.raises(TypeError):
        outbound.AudienceSync("not a client")  # type: ignore[arg-type]
    assert sync.sync_audience("A", ["u1"]).joined == 1, "the refused sync saved nothing"


def test_a_closed_client_raises_and_saves_nothing(
        make_client: Callable[..., outbound.Client], tmp_path: Path) -> None:
    client = make_client(webhooks=[])
    sync = outbound.AudienceSync(client, tmp_path / "s.db")
    client.close(timeout=2)
    with pytest.raises(outbound.ClientClosed):
        sync.sync_audience("A", ["u1"])
    other = make_client(webhooks=[])
    assert outbound.AudienceSync(other, tmp_path / "s.db").sync_audience("A", ["u1"]).joined == 1
