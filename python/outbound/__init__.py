"""outbound: server-side events with a Rust core.

Calls (``identify``, ``track``, ``page``, ``screen``, ``group``, ``alias``, ``delete``) are
validated on the caller's thread and queued; a background thread delivers them to a
Segment-compatible ingestion endpoint (batched, write key) and/or up to five webhooks
(one POST per message, signed with ``X-Signature`` when a shared secret is set, with
Standard Webhooks headers when ``signature_scheme="standard-webhooks"``, or with
``X-Signature-256`` when ``signature_scheme="hmac-sha256"``).

>>> import outbound
>>> with outbound.Client(write_key="KEY") as client:        # doctest: +SKIP
...     client.track(user_id="u1", event="Signed Up", properties={"plan": "pro"})

This module is the Pythonic layer: keyword defaults, ``Webhook``, the fork and exit hooks
and ``logging``. Every rule (what a call needs, how bodies look, when to retry) is the
core's, reached through :mod:`outbound._native`.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import os
import sys
import uuid
import weakref
from datetime import datetime, timezone
from types import TracebackType
from typing import (
    Any,
    Callable,
    ClassVar,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Type,
    TypedDict,
    TypeVar,
    Union,
    cast,
)

from . import _native
from ._errors import (
    ClientClosed,
    ConfigError,
    MessageTooLarge,
    OutboundError,
    SpoolError,
    UnsupportedType,
    ValidationError,
)
from ._native import (
    sign,
    sign_sha256,
    sign_standard_webhook,
    verify,
    verify_sha256,
    verify_standard_webhook,
    verify_value,
)

__all__ = [
    "Client",
    "AudienceSync",
    "AudienceResult",
    "TraitResult",
    "Webhook",
    "BasicAuth",
    "BearerAuth",
    "OAuth2Auth",
    "WebhookAuth",
    "WebhookTls",
    "RateLimit",
    "OutboundError",
    "ConfigError",
    "ValidationError",
    "UnsupportedType",
    "MessageTooLarge",
    "ClientClosed",
    "SpoolError",
    "sign",
    "verify",
    "verify_value",
    "sign_sha256",
    "verify_sha256",
    "sign_standard_webhook",
    "verify_standard_webhook",
    "SignatureScheme",
    "OutcomeCallback",
    "__version__",
]

__version__: str = _native.__version__

#: Runtime logs go here when ``debug=True`` or ``DEBUG`` contains ``analytics`` (or ``*``).
logger = logging.getLogger("outbound")

#: ``on_outcome(message_id, outcome, detail)``; ``outcome`` is ``"delivered"``,
#: ``"failed"`` or ``"dropped"``, ``detail`` says why (empty when delivered). A callback that
#: declares a fourth parameter, ``on_outcome(message_id, outcome, detail, subscription)``,
#: is also given the name of the subscription the outcome is of (``None`` for the message's
#: own outcome); one of ``*args`` gets three.
OutcomeCallback = Union[
    Callable[[str, str, str], None], Callable[[str, str, str, Optional[str]], None]
]

#: How webhook requests are signed: ``"x-signature"`` (the default: ``X-Signature``, hex
#: HMAC-SHA1 of the body), ``"standard-webhooks"`` (``webhook-id``, ``webhook-timestamp``,
#: ``webhook-signature``; ``shared_secret`` is then one or more ``whsec_`` secrets separated
#: by spaces, each giving one signature, for key rotation) or ``"hmac-sha256"``
#: (``X-Signature-256: sha256=<hex HMAC-SHA256 of the body>``, checked with
#: :func:`verify_sha256`).
#: (Spelled as a Union of Literals so that stubtest sees the Union mypy sees.)
SignatureScheme = Union[
    Literal["x-signature"], Literal["standard-webhooks"], Literal["hmac-sha256"]
]

Id = Union[str, int, uuid.UUID]
_C = TypeVar("_C", bound="Client")
Timestamp = Union[datetime, str]

_LEVELS = {"debug": logging.DEBUG, "warn": logging.WARNING}


def _log_line(level: str, line: str) -> None:
    # Called by the core (with the GIL) only when logging is on. The core never hands it
    # the write key or the secret.
    logger.log(_LEVELS.get(level, logging.INFO), "%s", line)


def _show_debug_logs() -> None:
    # debug=True should show something even in a program that never set up logging.
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.DEBUG)
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
        logger.addHandler(handler)


def _takes_subscription(callback: OutcomeCallback) -> bool:
    # Callbacks written for three arguments (``*args`` ones included) keep getting three;
    # one that declares a fourth positional parameter gets the subscription's name in it.
    try:
        params = inspect.signature(callback).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(p.kind in kinds for p in params) >= 4


def _guarded(callback: OutcomeCallback) -> Callable[[str, str, str, Optional[str]], None]:
    # Runs on the scheduler thread: an exception there must not go anywhere but the log.
    four = _takes_subscription(callback)

    def on_outcome(
        message_id: str, outcome: str, detail: str, subscription: Optional[str]
    ) -> None:
        try:
            if four:
                cast(Callable[[str, str, str, Optional[str]], None], callback)(
                    message_id, outcome, detail, subscription
                )
            else:
                cast(Callable[[str, str, str], None], callback)(message_id, outcome, detail)
        except Exception:
            logger.exception("on_outcome callback raised (message %s, %s)", message_id, outcome)

    return on_outcome


def _strings(values: Sequence[str], setting: str) -> List[str]:
    # A lone str is a sequence of characters: refuse it rather than allow-list "1", "0", ...
    if isinstance(values, str):
        raise UnsupportedType(f"{setting} must be a list of str, not a str", setting)
    return list(values)


class BasicAuth(TypedDict):
    """``Authorization: Basic base64(user:password)`` (RFC 7617). ``user`` is not empty and
    has no ``:``."""

    type: Literal["basic"]
    user: str
    password: str


class BearerAuth(TypedDict):
    """``Authorization: Bearer <token>`` (RFC 6750), the token as given (visible ASCII)."""

    type: Literal["bearer"]
    token: str


class _OAuth2Required(TypedDict):
    type: Literal["oauth2"]
    token_url: str
    client_id: str


class OAuth2Auth(_OAuth2Required, total=False):
    """OAuth2 client credentials (RFC 6749 section 4.4): a token is asked of ``token_url`` (a
    form POST of ``grant_type=client_credentials``, with ``scope`` and ``audience`` when
    given, authenticated with HTTP Basic of the client id and ``client_secret``), kept until
    shortly before it expires, and sent as a bearer token; asked again once when the endpoint
    answers 401. The token request goes under the webhook's network guard, TLS and the
    client's ``timeout``; a failed one fails the attempt as the delivery's would (a 5xx or a
    timeout is retried, a 4xx is permanent).

    With ``client_assertion_key`` instead of ``client_secret`` (not both), the client proves
    who it is with a JWT client assertion (RFC 7523): the key (RSA or P-256; PEM text or the
    path of a PEM file, read when the client is built) signs a JWT for each token request
    (RS256 or ES256; ``iss`` and ``sub`` the client id, ``aud`` the token URL, valid 5
    minutes), sent in the form as ``client_assertion`` with ``client_id`` and
    ``client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer``, and no
    ``Authorization``."""

    client_secret: str
    client_assertion_key: Union[str, "os.PathLike[str]"]
    scope: str
    audience: str


#: How a webhook's endpoint authenticates the requests: ``{"type": "basic", ...}``,
#: ``{"type": "bearer", ...}`` or ``{"type": "oauth2", ...}``.
WebhookAuth = Union[BasicAuth, BearerAuth, OAuth2Auth]


class WebhookTls(TypedDict, total=False):
    """A webhook's TLS, each part PEM text or the path of a PEM file (read when the client is
    built): ``client_cert`` and ``client_key`` (PKCS#8, PKCS#1 or SEC1) for mutual TLS, one
    needing the other; ``ca_certs``, the only roots the endpoint's certificate may chain to
    (they replace the web's roots and the client's ``ca_certs`` for this webhook)."""

    client_cert: Union[str, "os.PathLike[str]"]
    client_key: Union[str, "os.PathLike[str]"]
    ca_certs: Union[str, "os.PathLike[str]"]


class _RateLimitRequired(TypedDict):
    per_second: int


class RateLimit(_RateLimitRequired, total=False):
    """At most ``per_second`` requests a second to the webhook, in bursts of up to ``burst``
    (``per_second`` when not given) after a quiet spell: a token bucket, each at least 1. A
    request carries one message. Messages past it wait in the webhook's queue, inside their
    retry window (counted in :meth:`Client.webhook_health`'s ``throttled``); none is dropped
    for it. Each process enforces it on its own deliveries."""

    burst: int


class Webhook:
    """One webhook destination: an absolute http(s) URL and static headers sent with every
    request to it (checked when the client is built, within the client's
    ``max_webhook_headers`` and ``max_webhook_header_bytes``).

    ``enabled=False`` turns it off: it stays in the client's webhooks (checked, counted among
    the 5, its index kept for :meth:`Client.webhook_attempts` and the replays) but no request
    goes to it, and a message accepted while it is off is never sent to it. On by default.

    How its endpoint wants to be called (none set by default):

    - ``auth``: a :class:`BasicAuth`, :class:`BearerAuth` or :class:`OAuth2Auth` dict (the
      ``Authorization`` header of every request; not with an ``Authorization`` static header);
    - ``tls``: a :class:`WebhookTls` dict (a client certificate for mutual TLS, roots of its
      own);
    - ``signature_header``: the header the signature goes in instead of the scheme's own
      (``X-Signature``, ``X-Signature-256``), e.g. ``"X-Hub-Signature-256"``; not with
      ``"standard-webhooks"``, whose headers are fixed;
    - ``signature_scheme``: how its requests are signed, instead of the client's
      ``signature_scheme`` (with the client's ``shared_secret``);
    - ``rate_limit``: a :class:`RateLimit` dict.

    Each is checked when the client is built: a bad one raises :class:`ConfigError` (or
    :class:`UnsupportedType` for a value of the wrong type) naming the field, e.g.
    ``webhooks[0].auth.user`` or ``webhooks[0].rate_limit.per_second``."""

    __slots__ = (
        "url",
        "headers",
        "enabled",
        "auth",
        "tls",
        "signature_header",
        "signature_scheme",
        "rate_limit",
    )

    def __init__(
        self,
        url: str,
        headers: Optional[Mapping[str, str]] = None,
        *,
        enabled: bool = True,
        auth: Optional[WebhookAuth] = None,
        tls: Optional[WebhookTls] = None,
        signature_header: Optional[str] = None,
        signature_scheme: Optional[SignatureScheme] = None,
        rate_limit: Optional[RateLimit] = None,
    ) -> None:
        self.url = url
        self.headers: Dict[str, str] = dict(headers or {})
        self.enabled = enabled
        self.auth = auth
        self.tls = tls
        self.signature_header = signature_header
        self.signature_scheme = signature_scheme
        self.rate_limit = rate_limit

    def __repr__(self) -> str:
        # Header values and credentials may be secrets: show names, the auth's type, and
        # which TLS parts are set.
        extra = "" if self.enabled else ", enabled=False"
        if self.auth is not None:
            kind = self.auth.get("type") if isinstance(self.auth, Mapping) else "?"
            extra += f", auth={kind!r}"
        if self.tls:
            extra += f", tls={sorted(self.tls)!r}"
        for name in ("signature_header", "signature_scheme", "rate_limit"):
            value = getattr(self, name)
            if value is not None:
                extra += f", {name}={value!r}"
        return f"Webhook({self.url!r}, headers={sorted(self.headers)!r}{extra})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Webhook):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in Webhook.__slots__)

    def _args(self) -> "_native._WebhookArgs":
        # What the native client takes; the shapes and the values are checked there.
        return (
            self.url,
            list(self.headers.items()),
            bool(self.enabled),
            _plain(self.auth),
            _plain(self.tls),
            self.signature_header,
            self.signature_scheme,
            _plain(self.rate_limit),
        )


def _plain(settings: Optional[Mapping[str, Any]]) -> Any:
    # A mapping as a dict; anything else as it is, for the native side to refuse naming it.
    if not isinstance(settings, Mapping):
        return settings
    out = dict(settings)
    # A certificate or key may be a path (os.PathLike), as a webhook's may: given as its text.
    for key, fields in (("tls", ("client_cert", "client_key", "ca_certs")),
                        ("auth", ("client_assertion_key",))):
        part = out.get(key)
        if isinstance(part, Mapping):
            out[key] = {k: os.fspath(v) if k in fields and isinstance(v, os.PathLike) else v
                        for k, v in part.items()}
    return out


#: Clients that are not closed, for the fork and exit hooks (weak: they never keep one alive).
_live: "weakref.WeakSet[Client]" = weakref.WeakSet()


class Client:
    """A running client: a scheduler thread and a delivery lane per destination.

    Give a ``write_key`` (ingestion to ``endpoint``), ``webhooks``, or both. When customers
    give the webhook URLs, set ``block_private_networks=True``: webhooks to loopback,
    private, link-local (cloud metadata) and other non-public addresses then fail with
    reason ``blocked`` and nothing is sent (``allowed_networks`` lists CIDR exceptions). Every call
    returns the message id, or ``None`` when the queue is full (the drop is counted in
    :attr:`stats` and logged); with ``queue_full_wait`` (seconds, 0 by default) a call that
    finds it full waits that long for room first, without holding the GIL. Invalid calls raise :class:`ValidationError` and queue
    nothing. Use it as a context manager, or call :meth:`close`; at interpreter exit open
    clients are closed with at most ``atexit_timeout`` seconds of waiting each.

    Each webhook carries at most ``max_webhook_headers`` (20) static headers, of at most
    ``max_webhook_header_bytes`` (8192) bytes of names and values together; a webhook with
    more is a :class:`ConfigError` naming ``webhooks[i].headers`` and the setting.

    A batch is sent at ``flush_at`` messages (or ``flush_interval`` seconds after its
    first), and ``flush_at`` is also the most messages one request carries: with
    ``flush_at=1`` every message goes in a request of its own. ``max_batch_messages``
    (``None``: ``flush_at``; never below it) lets batches that wait together go out in one
    request of up to that many messages, within 500,000 bytes: fewer, larger requests, but
    one bad answer fails every message it carried, and a receiver with a small request
    limit may refuse them.

    ``subscriptions`` are up to 50 destinations of Segment's Webhooks (Actions) kind, each a
    dict, as Segment exports it (``{"name", "subscribe", "mapping": {"url", "method",
    "headers", "data"}}``) or in outbound's own settings (``{"name", "trigger", "url",
    "method", "headers", "data", "enabled"}``). Its trigger (Segment's FQL,
    ``'type = "track" and event = "Order Completed"'``) says which events it gets, its
    mapping (Segment's mapping-kit, ``{"@path": "$.properties.total"}``) what its URL
    receives, with which method (``POST``, ``PUT`` or ``PATCH``) and headers. Each event goes
    in a request of its own (with ``batch_size``, in batches: a JSON array of mapped bodies
    per request), signed with ``shared_secret`` as webhook requests are, retried and counted
    per subscription (:meth:`subscription_stats`). Its endpoint is called as a
    :class:`Webhook`'s may be, with the same keys and shapes beside the others (in either
    form): ``auth`` (``{"type": "basic", "user", "password"}``, ``{"type": "bearer",
    "token"}``, ``{"type": "oauth2", "token_url", "client_id", "client_secret" or
    "client_assertion_key", "scope", "audience"}``), ``tls`` (``{"client_cert",
    "client_key", "ca_certs"}``, each PEM text or a path), ``signature_header``,
    ``signature_scheme`` and ``rate_limit`` (``{"per_second", "burst"}``). A name is
    required and unique; a refused subscription raises :class:`ConfigError` naming the field
    (``subscriptions[0].mapping.url``, ``subscriptions[0].auth.token``). A message has its own outcome (when it has an
    ingestion or webhook destination) and one per subscription it matched: an
    ``on_outcome`` that declares a fourth parameter gets the subscription's name (``None``
    for the message's own). What no subscription matched, with no destination of its own, is
    counted in :attr:`unmatched`.
    """

    #: ``outbound.testing.RecordingClient`` sets this: record instead of sending.
    _record: ClassVar[bool] = False

    def __init__(
        self,
        write_key: Optional[str] = None,
        *,
        endpoint: str = "https://api.segment.io",
        webhooks: Sequence[Union[Webhook, str]] = (),
        subscriptions: Sequence[Mapping[str, Any]] = (),
        shared_secret: Optional[str] = None,
        signature_scheme: SignatureScheme = "x-signature",
        webhook_user_agent: str = "Outbound/1.0",
        max_webhook_headers: int = 20,
        max_webhook_header_bytes: int = 8192,
        flush_at: int = 20,
        max_batch_messages: Optional[int] = None,
        flush_interval: float = 5.0,
        max_queue_size: int = 10_000,
        queue_full_wait: float = 0.0,
        timeout: float = 5.0,
        max_retry_duration: float = 4 * 3600.0,
        gzip: bool = False,
        ca_certs: Union[str, "os.PathLike[str]", None] = None,
        workers: int = 2,
        max_in_flight: int = 512,
        spool: Union[str, "os.PathLike[str]", None] = None,
        spool_max_bytes: int = 1 << 30,
        spool_commit_interval: float = 0.02,
        redis_ack: str = "auto",
        dead_letters: bool = False,
        dead_letter_retention: float = 14 * 86400.0,
        dead_letter_max_bytes: int = 256 << 20,
        attempt_log_size: int = 100,
        attempt_retention: float = 86400.0,
        on_outcome: Optional[OutcomeCallback] = None,
        debug: Optional[bool] = None,
        send: bool = True,
        proxy_from_env: bool = True,
        block_private_networks: bool = False,
        allowed_networks: Sequence[str] = (),
        atexit_timeout: float = 2.0,
    ) -> None:
        if isinstance(webhooks, (str, Webhook)):
            raise UnsupportedType("webhooks must be a list of Webhook or URL str", "webhooks")
        hooks: List[Webhook] = [h if isinstance(h, Webhook) else Webhook(h) for h in webhooks]
        if isinstance(subscriptions, (str, Mapping)):
            raise UnsupportedType("subscriptions must be a list of dict", "subscriptions")
        if atexit_timeout < 0:
            raise ConfigError(
                "invalid configuration atexit_timeout: must not be negative", "atexit_timeout"
            )
        self._atexit_timeout = float(atexit_timeout)
        if debug or (debug is None and _native.debug_from_env()):
            _show_debug_logs()  # before the client starts: it logs from the start
        self._native = _native.NativeClient(
            write_key=write_key,
            endpoint=endpoint,
            webhooks=[h._args() for h in hooks],
            shared_secret=shared_secret,
            signature_scheme=signature_scheme,
            webhook_user_agent=webhook_user_agent,
            flush_at=flush_at,
            max_batch_messages=max_batch_messages,
            flush_interval=flush_interval,
            max_queue_size=max_queue_size,
            queue_full_wait=queue_full_wait,
            timeout=timeout,
            max_retry_duration=max_retry_duration,
            gzip=gzip,
            ca_certs=None if ca_certs is None else os.fspath(ca_certs),
            workers=workers,
            max_in_flight=max_in_flight,
            spool=None if spool is None else os.fspath(spool),
            spool_max_bytes=spool_max_bytes,
            spool_commit_interval=spool_commit_interval,
            redis_ack=redis_ack,
            dead_letters=dead_letters,
            dead_letter_retention=dead_letter_retention,
            dead_letter_max_bytes=dead_letter_max_bytes,
            attempt_log_size=attempt_log_size,
            attempt_retention=attempt_retention,
            max_webhook_headers=max_webhook_headers,
            max_webhook_header_bytes=max_webhook_header_bytes,
            on_outcome=None if on_outcome is None else _guarded(on_outcome),
            log_sink=_log_line,
            debug=debug,
            send=send,
            proxy_from_env=proxy_from_env,
            block_private_networks=block_private_networks,
            allowed_networks=_strings(allowed_networks, "allowed_networks"),
            record=self._record,
            subscriptions=[_plain(sub) for sub in subscriptions],
        )
        self._endpoint = endpoint if write_key else None
        self._webhook_count = len(hooks)
        _live.add(self)

    def __repr__(self) -> str:
        # Never the write key or the secret.
        state = "closed" if self.closed else "open"
        return (
            f"<outbound.Client {state} ingestion={self._endpoint!r} "
            f"webhooks={self._webhook_count}>"
        )

    # -- calls -----------------------------------------------------------------------------
    # Each passes the native enqueue its 14 arguments by position (the quickest call):
    # kind, user_id, anonymous_id, message_id, timestamp, context, integrations, event, name,
    # category, group_id, previous_id, properties, traits.

    def identify(
        self,
        *,
        user_id: Optional[Id] = None,
        traits: Optional[Dict[str, Any]] = None,
        anonymous_id: Optional[Id] = None,
        context: Optional[Dict[str, Any]] = None,
        timestamp: Optional[Timestamp] = None,
        integrations: Optional[Dict[str, Any]] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """Who the user is: ``traits`` about them. Needs ``user_id`` or ``anonymous_id``."""
        return self._native.enqueue(
            "identify", user_id, anonymous_id, message_id, timestamp, context, integrations,
            None, None, None, None, None, None, traits,
        )

    def track(
        self,
        *,
        user_id: Optional[Id] = None,
        event: str,
        properties: Optional[Dict[str, Any]] = None,
        anonymous_id: Optional[Id] = None,
        context: Optional[Dict[str, Any]] = None,
        timestamp: Optional[Timestamp] = None,
        integrations: Optional[Dict[str, Any]] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """Something the user did. Needs ``event``, and ``user_id`` or ``anonymous_id``."""
        return self._native.enqueue(
            "track", user_id, anonymous_id, message_id, timestamp, context, integrations,
            event, None, None, None, None, properties, None,
        )

    def page(
        self,
        *,
        user_id: Optional[Id] = None,
        name: Optional[str] = None,
        category: Optional[str] = None,
        properties: Optional[Dict[str, Any]] = None,
        anonymous_id: Optional[Id] = None,
        context: Optional[Dict[str, Any]] = None,
        timestamp: Optional[Timestamp] = None,
        integrations: Optional[Dict[str, Any]] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """A web page view (``properties`` may carry url, title, referrer, path)."""
        return self._native.enqueue(
            "page", user_id, anonymous_id, message_id, timestamp, context, integrations,
            None, name, category, None, None, properties, None,
        )

    def screen(
        self,
        *,
        user_id: Optional[Id] = None,
        name: Optional[str] = None,
        category: Optional[str] = None,
        properties: Optional[Dict[str, Any]] = None,
        anonymous_id: Optional[Id] = None,
        context: Optional[Dict[str, Any]] = None,
        timestamp: Optional[Timestamp] = None,
        integrations: Optional[Dict[str, Any]] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """A mobile screen view."""
        return self._native.enqueue(
            "screen", user_id, anonymous_id, message_id, timestamp, context, integrations,
            None, name, category, None, None, properties, None,
        )

    def group(
        self,
        *,
        user_id: Optional[Id] = None,
        group_id: Id,
        traits: Optional[Dict[str, Any]] = None,
        anonymous_id: Optional[Id] = None,
        context: Optional[Dict[str, Any]] = None,
        timestamp: Optional[Timestamp] = None,
        integrations: Optional[Dict[str, Any]] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """The user belongs to a group (company, team): ``traits`` about the group."""
        return self._native.enqueue(
            "group", user_id, anonymous_id, message_id, timestamp, context, integrations,
            None, None, None, group_id, None, None, traits,
        )

    def alias(
        self,
        *,
        previous_id: Id,
        user_id: Id,
        anonymous_id: Optional[Id] = None,
        context: Optional[Dict[str, Any]] = None,
        timestamp: Optional[Timestamp] = None,
        integrations: Optional[Dict[str, Any]] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """``previous_id`` and ``user_id`` are the same person."""
        return self._native.enqueue(
            "alias", user_id, anonymous_id, message_id, timestamp, context, integrations,
            None, None, None, None, previous_id, None, None,
        )

    def delete(
        self,
        *,
        user_id: Id,
        timestamp: Optional[Timestamp] = None,
        message_id: Optional[str] = None,
    ) -> Optional[str]:
        """Ask the webhooks to delete the user's data (webhooks only)."""
        return self._native.enqueue(
            "delete", user_id, None, message_id, timestamp, None, None,
            None, None, None, None, None, None, None,
        )

    # -- lifecycle -------------------------------------------------------------------------

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Sends what waits for a batch and waits, without holding the GIL, until every
        accepted message has an outcome or ``timeout`` seconds pass (default 30). True when
        all ended and no message failed or was dropped since the previous ``flush`` returned
        (or the client started), before this call or during it."""
        return self._native.flush(timeout)

    def close(self, timeout: Optional[float] = None) -> bool:
        """Flushes (bounded by ``timeout``, default 30 s), then stops the threads; what is
        still queued is dropped. Returns what :meth:`flush` would. Raises
        :class:`ClientClosed` when already closed."""
        _live.discard(self)
        return self._native.close(timeout)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._native.closed

    @property
    def spool_ok(self) -> bool:
        """False while the spool cannot be written (a Redis spool's server unreachable, an
        SQLite spool's disk failing): messages accepted meanwhile are held and delivered
        from memory only, until a commit succeeds again. True without a spool. A service
        that promises "accepted = durable" refuses work (e.g. answers 503) while this is
        false."""
        return self._native.spool_ok

    @property
    def stats(self) -> Dict[str, int]:
        """Counters: accepted, queued, in_flight, delivered, failed, dropped (of which
        queue_full were refused calls), retries, spooled (left in the spool by close),
        resumed (taken over from the spool). After :meth:`close`: accepted + resumed =
        delivered + failed + dropped - queue_full + spooled."""
        return self._native.stats()

    @property
    def unmatched(self) -> int:
        """Messages that no subscription matched and that had no destination of the client's
        own (no write key, no webhook on): they ended there, without an outcome."""
        return self._native.unmatched()

    def subscription_stats(self, name: str) -> Dict[str, int]:
        """Subscription ``name``'s counters, as :attr:`stats` gives the client's (which are its
        ingestion's and webhooks'). Raises :class:`ValidationError` naming ``name`` when the
        client has no subscription of that name."""
        return self._native.subscription_stats(name)

    # -- delivery records -------------------------------------------------------------------
    # Times come as aware UTC datetimes, durations in seconds, answers as bytes.

    def webhook_attempts(
        self,
        webhook: int = 0,
        *,
        result: Optional[str] = None,
        status: Optional[int] = None,
        message_id: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        limit: int = 100,
    ) -> List[Dict[str, Any]]:
        """Webhook ``webhook``'s last attempts (of the ``attempt_log_size`` kept, none older
        than ``attempt_retention`` seconds; any outcome), newest first: message_id, at,
        duration, result (delivered, retryable, permanent), status or error (timeout,
        refused, reset, tls, dns, blocked, ...), detail, and for failures the first 64 KiB of
        the answer, ``request_headers`` (lower-case, credentials ``[redacted]``) and
        ``answer_headers``, lists of ``(name, value)``. Empty for a URL without recent
        traffic. The filters keep those with that ``result``, ``status``, ``message_id``,
        sent in ``[since, until)``, at most ``limit`` (1 to 10,000; outside that a
        :class:`ValidationError` naming ``limit``)."""
        found = self._native.webhook_attempts(
            webhook, result, status, message_id, _secs(since), _secs(until), limit
        )
        return [_dated(a) for a in found]

    def webhook_health(self) -> List[Dict[str, Any]]:
        """Each webhook's health: state (healthy, failing, circuit_open, throttled: messages
        wait for its ``rate_limit``, disabled), success rate and p50/p99 latency over 5
        minutes, consecutive failures, last error, last success, messages waiting,
        ``throttled``: requests that waited for its rate limit since the client started, and
        ``messages``: what became of the messages sent to it since the client started, a dict
        of ``delivered`` (it answered 2xx), ``failed`` (refused for good, or failing until
        their retry window closed), ``retrying`` (failed, to be tried again) and
        ``abandoned`` (failed, then taken by another URL: not tried here again)."""
        return [_dated(h) for h in self._native.webhook_health()]

    def dead_letters(
        self,
        *,
        limit: int = 100,
        cursor: Optional[str] = None,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        contains: Optional[str] = None,
    ) -> Dict[str, Any]:
        """One page of dead letters, newest first (``limit`` 1 to 1,000), without bodies:
        ``{"dead_letters": [...], "next": cursor or None}``. Needs ``dead_letters=True``.
        ``cursor`` is the ``next`` of the page before; any other text raises
        :class:`ValidationError` naming ``cursor``. ``contains``: only those whose event (its
        JSON as sent) holds that text, exact bytes and case (``'"userId":"u7"'`` finds u7, not
        u70), 1 to 256 bytes. A search reads at most 10,000 letters a page, so a page may hold
        fewer than ``limit`` while ``next`` is set: page on."""
        page = self._native.dead_letters(limit, cursor, _secs(since), _secs(until), contains)
        page["dead_letters"] = [_dated(d) for d in page["dead_letters"]]
        return page

    def dead_letter(self, message_id: str) -> Optional[Dict[str, Any]]:
        """The dead letter of ``message_id`` with its ``body`` (bytes), or None."""
        found = self._native.dead_letter(message_id)
        return None if found is None else _dated(found)

    def delete_dead_letter(self, message_id: str) -> bool:
        """Discards the dead letter of ``message_id``; whether there was one."""
        return self._native.delete_dead_letter(message_id)

    def replay_dead_letter(
        self, message_id: str, *, webhook: Optional[int] = None
    ) -> Optional[Dict[str, Any]]:
        """Sends a dead letter again through the normal path: same message id, a fresh retry
        window, signed with the current secret, to every webhook (or ``webhook`` alone). It
        leaves the dead letters once delivered, and is back if it fails again. Returns the
        replay's progress, or None when there is no such dead letter or it is being
        replayed."""
        p = self._native.replay_dead_letter(message_id, webhook)
        return None if p is None else _dated(p)

    def replay_dead_letters(
        self,
        *,
        since: Optional[datetime] = None,
        until: Optional[datetime] = None,
        webhook: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Replays every dead letter that failed in ``[since, until)`` in the background;
        returns its progress (``id``, ``total``, ``sent``, ``delivered``, ``failed``,
        ``skipped``, ``done``), to follow with :meth:`replay_progress`."""
        return _dated(self._native.replay_dead_letters(_secs(since), _secs(until), webhook))

    def replay_progress(self, replay_id: int) -> Optional[Dict[str, Any]]:
        """How replay ``replay_id`` goes, or None."""
        p = self._native.replay_progress(replay_id)
        return None if p is None else _dated(p)

    def dead_letter_stats(self) -> Dict[str, int]:
        """count, bytes, and how many the limits dropped (evicted, expired)."""
        return self._native.dead_letter_stats()

    def __enter__(self: _C) -> _C:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if not self.closed:
            self.close()


#: Keys of the native records that hold Unix seconds.
_TIMES = ("at", "failed_at", "first_attempt", "last_success", "started")


def _when(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def _dated(record: Dict[str, Any]) -> Dict[str, Any]:
    """A native record with its times as aware datetimes (nested attempts too)."""
    for key in _TIMES:
        if record.get(key) is not None:
            record[key] = _when(record[key])
    if record.get("last_error") is not None:
        at, why = record["last_error"]
        record["last_error"] = (_when(at), why)
    if "last_attempts" in record:
        record["last_attempts"] = [_dated(a) for a in record["last_attempts"]]
    return record


def _secs(t: Optional[datetime]) -> Optional[float]:
    if t is None:
        return None
    if not isinstance(t, datetime):
        raise TypeError(f"expected a datetime, got {type(t).__name__}")
    if t.tzinfo is None:
        raise ValueError("a naive datetime is ambiguous: give it a timezone")
    return t.timestamp()


class AudienceResult(NamedTuple):
    """What one ``sync_audience`` sent: an ``identify`` per joined and per left user."""

    joined: int
    left: int
    unchanged: int


class TraitResult(NamedTuple):
    """What one ``sync_trait`` sent: an ``identify`` per set and per cleared value."""

    set: int
    cleared: int
    unchanged: int


class AudienceSync:
    """Turns audience membership and computed-trait values into ``identify`` calls for the
    changes only (spec §3), remembering the last sync in SQLite.

    The trait sent is the snake_cased name (``"High Value Users"`` -> ``high_value_users``).
    State lives in the SQLite file ``state_path`` (it survives restarts), or in memory when
    None. A sync emits first and saves after: a crash in between re-sends those changes on
    the next sync (at-least-once), never loses one. A sync larger than the client's queue
    waits for room.

    >>> sync = outbound.AudienceSync(client, state_path="audiences.db")   # doctest: +SKIP
    >>> sync.sync_audience("High Value Users", ["u1", "u2"])             # doctest: +SKIP
    AudienceResult(joined=2, left=0, unchanged=0)
    """

    def __init__(
        self, client: Client, state_path: Optional[Union[str, "os.PathLike[str]"]] = None
    ) -> None:
        if not isinstance(client, Client):
            raise TypeError(f"client must be an outbound.Client, got {type(client).__name__}")
        self._client = client
        self._native = _native.NativeAudienceSync(
            None if state_path is None else os.fspath(state_path)
        )

    def sync_audience(self, name: str, members: Iterable[Id]) -> AudienceResult:
        """Sends ``{snake_case(name): True}`` for users who joined since the last sync and
        ``False`` for those who left; nothing for the rest. ``members``: any iterable."""
        return AudienceResult(*self._native.sync_audience(self._client._native, name, members))

    def sync_trait(self, name: str, values: Mapping[Id, Any]) -> TraitResult:
        """Sends ``{snake_case(name): value}`` for users whose value is new or changed, and
        ``None`` (JSON null) for users absent from ``values``, who are then forgotten."""
        return TraitResult(*self._native.sync_trait(self._client._native, name, values))


def _after_fork_in_child() -> None:
    # The parent's threads do not exist in the child: give each client new ones and an
    # empty queue (what the parent had queued stays the parent's to send). Message ids need
    # nothing here: the core reseeds its id generator in every forked child by itself.
    for client in list(_live):
        try:
            client._native.reset_after_fork()
        except Exception:
            logger.exception("could not restart %r after fork", client)


def _at_exit() -> None:
    # Bounded: each open client waits at most its atexit_timeout.
    for client in list(_live):
        if client.closed:
            continue
        try:
            if not client._native.close(client._atexit_timeout):
                logger.warning(
                    "%r: not everything was delivered within atexit_timeout=%ss at exit",
                    client,
                    client._atexit_timeout,
                )
        except Exception:
            logger.exception("closing %r at exit failed", client)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_at_exit)
