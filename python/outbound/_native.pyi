"""Stubs of the compiled module ``outbound._native`` (the Rust core's binding).

Use :mod:`outbound` instead: :class:`outbound.Client` gives every setting its default.
"""

from datetime import datetime
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, Union, final
from uuid import UUID

__all__ = [
    "NativeClient",
    "NativeAudienceSync",
    "debug_from_env",
    "defaults",
    "sign",
    "verify",
    "verify_value",
    "sign_sha256",
    "verify_sha256",
    "sign_standard_webhook",
    "verify_standard_webhook",
    "standard_webhook_tolerance",
    "__version__",
]

__version__: str

_Id = Union[str, int, UUID]
_Object = Dict[str, Any]
_Timestamp = Union[datetime, str]
_Bytes = Union[bytes, bytearray, str]
_Body = Union[bytes, bytearray, str, Dict[str, Any], List[Any]]
# A webhook: URL, static headers, on or off, then auth, tls, signature_header,
# signature_scheme and rate_limit (dicts checked by the native side; None when not set).
_WebhookArgs = Tuple[
    str,
    List[Tuple[str, str]],
    bool,
    Optional[Dict[str, Any]],
    Optional[Dict[str, Any]],
    Optional[str],
    Optional[str],
    Optional[Dict[str, Any]],
]

@final
class NativeClient:
    def __new__(
        cls,
        *,
        write_key: Optional[str],
        endpoint: str,
        webhooks: List[_WebhookArgs],
        shared_secret: Optional[str],
        signature_scheme: str,
        webhook_user_agent: str,
        flush_at: int,
        max_batch_messages: Optional[int],
        flush_interval: float,
        max_queue_size: int,
        queue_full_wait: float,
        timeout: float,
        max_retry_duration: float,
        gzip: bool,
        ca_certs: Optional[str],
        workers: int,
        max_in_flight: int,
        on_outcome: Optional[Callable[[str, str, str, Optional[str]], None]],
        log_sink: Optional[Callable[[str, str], None]],
        debug: Optional[bool],
        send: bool,
        proxy_from_env: bool,
        block_private_networks: bool,
        allowed_networks: List[str],
        spool: Optional[str],
        spool_max_bytes: int,
        spool_commit_interval: float,
        redis_ack: str = "auto",
        dead_letters: bool = False,
        dead_letter_retention: float = ...,
        dead_letter_max_bytes: int = ...,
        attempt_log_size: int = ...,
        attempt_retention: float = ...,
        max_webhook_headers: int = ...,
        max_webhook_header_bytes: int = ...,
        record: bool = False,
        subscriptions: List[Any] = ...,
    ) -> NativeClient: ...
    def enqueue(
        self,
        kind: str,
        user_id: Optional[_Id],
        anonymous_id: Optional[_Id],
        message_id: Optional[str],
        timestamp: Optional[_Timestamp],
        context: Optional[_Object],
        integrations: Optional[_Object],
        event: Optional[str],
        name: Optional[str],
        category: Optional[str],
        group_id: Optional[_Id],
        previous_id: Optional[_Id],
        properties: Optional[_Object],
        traits: Optional[_Object],
        /,
    ) -> Optional[str]: ...
    def flush(self, timeout: Optional[float] = None) -> bool: ...
    def close(self, timeout: Optional[float] = None) -> bool: ...
    def stats(self) -> Dict[str, int]: ...
    def subscription_stats(self, name: str) -> Dict[str, int]: ...
    def unmatched(self) -> int: ...
    @property
    def closed(self) -> bool: ...
    @property
    def spool_ok(self) -> bool: ...
    def webhook_attempts(
        self,
        webhook: int,
        result: Optional[str] = None,
        status: Optional[int] = None,
        message_id: Optional[str] = None,
        since: Optional[float] = None,
        until: Optional[float] = None,
        limit: int = 100,
    ) -> List[Dict[str, Any]]: ...
    def webhook_health(self) -> List[Dict[str, Any]]: ...
    def dead_letters(
        self,
        limit: int,
        cursor: Optional[str],
        since: Optional[float],
        until: Optional[float],
        contains: Optional[str] = None,
    ) -> Dict[str, Any]: ...
    def dead_letter(self, message_id: str) -> Optional[Dict[str, Any]]: ...
    def delete_dead_letter(self, message_id: str) -> bool: ...
    def replay_dead_letter(
        self, message_id: str, webhook: Optional[int]
    ) -> Optional[Dict[str, Any]]: ...
    def replay_dead_letters(
        self, since: Optional[float], until: Optional[float], webhook: Optional[int]
    ) -> Dict[str, Any]: ...
    def replay_progress(self, replay_id: int) -> Optional[Dict[str, Any]]: ...
    def dead_letter_stats(self) -> Dict[str, int]: ...
    def reset_after_fork(self) -> None: ...
    def recorded_requests(self) -> List[Tuple[str, str, List[Tuple[str, str]], bytes]]: ...
    def recorded_outcomes(self) -> List[Tuple[str, str, str, Optional[str]]]: ...
    def respond_with(self, status: int) -> None: ...
    def clear_recording(self) -> None: ...

def debug_from_env() -> bool: ...
def defaults() -> Dict[str, Union[str, int, float, bool]]: ...
def sign(secret: _Bytes, body: _Body) -> str: ...
def verify(secret: _Bytes, body: _Body, signature: Optional[str]) -> bool: ...
def verify_value(secret: _Bytes, body: Any, signature: Optional[str]) -> bool: ...
def sign_sha256(secret: _Bytes, body: _Body) -> str: ...
def verify_sha256(secret: _Bytes, body: _Body, signature: Optional[str]) -> bool: ...
def sign_standard_webhook(secret: str, webhook_id: str, timestamp: int, body: _Bytes) -> str: ...
def verify_standard_webhook(
    secret: str,
    body: _Bytes,
    webhook_id: str,
    webhook_timestamp: Union[str, int],
    webhook_signature: str,
    *,
    tolerance: float = 300.0,
) -> bool: ...
def standard_webhook_tolerance() -> float: ...

@final
class NativeAudienceSync:
    def __new__(cls, state_path: Optional[str] = None) -> NativeAudienceSync: ...
    def sync_audience(
        self, client: NativeClient, name: str, members: Iterable[_Id]
    ) -> Tuple[int, int, int]: ...
    def sync_trait(
        self, client: NativeClient, name: str, values: Mapping[_Id, Any]
    ) -> Tuple[int, int, int]: ...
