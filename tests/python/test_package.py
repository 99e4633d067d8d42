"""The installed package: where it comes from, its abi3 module, its API and its defaults."""

from __future__ import annotations

import inspect
import pathlib
import sysconfig
from importlib import metadata

import outbound
from outbound import _native


def test_imported_from_the_installed_wheel_not_the_source_tree() -> None:
    site = pathlib.Path(sysconfig.get_paths()["purelib"]).resolve()
    assert pathlib.Path(outbound.__file__).resolve().is_relative_to(site)
    assert pathlib.Path(_native.__file__).name.endswith(".abi3.so")
    assert (pathlib.Path(outbound.__file__).parent / "py.typed").exists()
    assert (pathlib.Path(outbound.__file__).parent / "_native.pyi").exists()


def test_public_api() -> None:
    for name in ["Client", "Webhook", "OutboundError", "ConfigError", "ValidationError",
                 "UnsupportedType", "MessageTooLarge", "ClientClosed", "SpoolError", "sign", "verify",
                 "verify_value"]:
        assert name in outbound.__all__ and hasattr(outbound, name)
    assert outbound.__version__ == _native.__version__
    assert hasattr(outbound, "AudienceSync")


def test_keyword_defaults_are_the_cores() -> None:
    params = inspect.signature(outbound.Client).parameters
    for name, value in _native.defaults().items():
        assert params[name].default == value, name
    assert params["atexit_timeout"].default == 2.0


def test_every_call_takes_keywords_only() -> None:
    for call in ["identify", "track", "page", "screen", "group", "alias", "delete"]:
        params = list(inspect.signature(getattr(outbound.Client, call)).parameters.values())[1:]
        assert params and all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), call


def test_fields_a_call_always_needs_have_no_default() -> None:
    # So type checkers flag a missing one (the core still refuses an explicit None).
    required = {"track": {"event"}, "group": {"group_id"}, "alias": {"previous_id", "user_id"},
                "delete": {"user_id"}, "identify": set(), "page": set(), "screen": set()}
    for call, names in required.items():
        params = inspect.signature(getattr(outbound.Client, call)).parameters
        no_default = {n for n, p in params.items() if n != "self" and p.default is p.empty}
        assert no_default == names, call


def test_distribution_is_outbound_events_and_provides_import_outbound() -> None:
    # `outbound` on PyPI is an unrelated project; ours is published as outbound-events.
    assert metadata.version("outbound-events") == outbound.__version__
    assert "outbound-events" in metadata.packages_distributions()["outbound"]
    assert metadata.metadata("outbound-events")["License-Expression"] == "MIT OR Apache-2.0"
    files = {f.name for f in metadata.files("outbound-events") or []}
    assert {"LICENSE-MIT", "LICENSE-APACHE"} <= files


def test_repr_never_shows_secrets() -> None:
    client = outbound.Client("wk_SECRET", webhooks=[outbound.Webhook(
        "http://127.0.0.1:9/h", headers={"Authorization": "Bearer TOKEN"})],
        shared_secret="SHARED", send=False)
    try:
        shown = repr(client) + repr(outbound.Webhook("http://x/h", {"Authorization": "TOKEN"}))
        for secret in ["wk_SECRET", "TOKEN", "SHARED"]:
            assert secret not in shown
    finally:
        client.close(timeout=1)


def test_context_manager_closes(tmp_path: pathlib.Path) -> None:
    with outbound.Client("k", endpoint="http://127.0.0.1:9", send=False) as client:
        assert not client.closed
    assert client.closed
    # Closing inside the block is fine too.
    with outbound.Client("k", endpoint="http://127.0.0.1:9", send=False) as other:
        other.close()
    assert other.closed
