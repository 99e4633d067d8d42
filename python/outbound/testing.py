"""A recording client for your application's tests.

:class:`RecordingClient` is :class:`outbound.Client` with the network replaced by a
recorder: the same checks (a bad call raises the same error), the same serialization,
batching, signing (``X-Signature`` or Standard Webhooks headers) and outcomes, but nothing
is sent (no DNS lookup, no connection). Every request that would have gone out is kept with
its exact body bytes and the headers outbound sets, so a test asserts on what would have
been sent::

    import outbound
    from outbound.testing import RecordingClient

    def test_signup_notifies_the_customer() -> None:
        with RecordingClient(webhooks=["https://hooks.example.com/in"],
                             shared_secret="s3cret") as client:
            signup(client, "u1")                  # your code under test
            client.flush()
            (req,) = client.requests
            assert req.json()["event"] == "Signed Up"
            assert outbound.verify("s3cret", req.body, req.headers["x-signature"])
"""

from __future__ import annotations

import gzip
import json
from typing import Any, Dict, List, NamedTuple, Optional

from . import Client

__all__ = ["RecordingClient", "RecordedRequest", "RecordedOutcome"]


class RecordedRequest(NamedTuple):
    """One request the client would have sent."""

    #: ``"ingestion"`` (a batch to ``{endpoint}/v1/batch``) or ``"webhook"``.
    destination: str
    url: str
    #: The headers outbound sets, names in lowercase (not the HTTP client's ``host`` and
    #: ``content-length``).
    headers: Dict[str, str]
    #: The body exactly as it would have been sent (gzip-compressed with ``gzip=True``).
    body: bytes

    def json(self) -> Any:
        """The body parsed (decompressed first when it was gzipped)."""
        raw = self.body
        if self.headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        return json.loads(raw)


class RecordedOutcome(NamedTuple):
    """How one message ended, as ``on_outcome`` was told."""

    message_id: str
    #: ``"delivered"``, ``"failed"`` or ``"dropped"``.
    outcome: str
    detail: str
    #: The subscription the outcome is of, ``None`` for the message's own outcome.
    subscription: Optional[str] = None


class RecordingClient(Client):
    """:class:`outbound.Client` that records instead of sending. Takes the same settings."""

    _record = True

    @property
    def requests(self) -> List[RecordedRequest]:
        """Every request so far, in the order it would have been sent."""
        return [
            RecordedRequest(dest, url, dict(headers), body)
            for dest, url, headers, body in self._native.recorded_requests()
        ]

    @property
    def outcomes(self) -> List[RecordedOutcome]:
        """Every outcome so far, in the order it was reported."""
        return [RecordedOutcome(*o) for o in self._native.recorded_outcomes()]

    def messages(self, destination: Optional[str] = None) -> List[Dict[str, Any]]:
        """Every message sent, parsed: each element of each ingestion batch and each webhook
        body, optionally only those for ``destination`` (``"ingestion"`` or ``"webhook"``)."""
        out: List[Dict[str, Any]] = []
        for req in self.requests:
            if destination is not None and req.destination != destination:
                continue
            body = req.json()
            out.extend(body["batch"] if req.destination == "ingestion" else [body])
        return out

    def respond_with(self, status: int) -> None:
        """Answer every later request with ``status`` instead of 200, to see how your code
        copes: ``410`` fails a webhook message as gone, ``400`` fails it, ``503`` is retried
        as the real client would (with its backoff) until ``max_retry_duration``."""
        self._native.respond_with(status)

    def clear(self) -> None:
        """Forget the requests and outcomes recorded so far."""
        self._native.clear_recording()
