"""The exceptions of outbound. Every one is an :class:`OutboundError`; those about a bad
argument are also a ``ValueError`` or ``TypeError``, so generic handlers keep working."""

from __future__ import annotations

from typing import Optional

__all__ = [
    "OutboundError",
    "ConfigError",
    "ValidationError",
    "UnsupportedType",
    "MessageTooLarge",
    "ClientClosed",
    "SpoolError",
]


class OutboundError(Exception):
    """Base class of every exception raised by outbound."""


class ConfigError(OutboundError, ValueError):
    """The client's configuration was refused. ``setting`` names the setting at fault
    (``"flush_at"``, ``"webhooks[2].url"``, ...)."""

    setting: Optional[str]

    def __init__(self, message: str, setting: Optional[str] = None) -> None:
        super().__init__(message)
        self.setting = setting


class ValidationError(OutboundError, ValueError):
    """A call was refused before anything was queued. ``field`` names the field or key
    path at fault (``"event"``, ``"properties['items'][2]"``, ...)."""

    field: Optional[str]

    def __init__(self, message: str, field: Optional[str] = None) -> None:
        super().__init__(message)
        self.field = field


class UnsupportedType(ValidationError, TypeError):
    """A value of a type that has no JSON form (a set, bytes, a custom object, a dict with
    non-str keys) or an argument of the wrong type."""


class MessageTooLarge(ValidationError):
    """The message is over 32 KB once serialized."""


class ClientClosed(OutboundError):
    """The client was closed: nothing more can be sent, and it cannot be closed twice."""


class SpoolError(ConfigError):
    """The ``spool`` directory could not be used: it cannot be created, another client of
    this process already has it open, or its database failed. ``setting`` is ``"spool"``;
    ``path`` names the directory or file at fault."""

    path: Optional[str]

    def __init__(self, message: str, path: Optional[str] = None) -> None:
        super().__init__(message, "spool")
        self.path = path
