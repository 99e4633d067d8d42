"""Receivers: `outbound.sign` / `outbound.verify` over bytes, str and parsed bodies."""

from __future__ import annotations

import json

import pytest

import outbound

VECTOR = "5099cab379b3be52908387457007040cc934ef86"


def test_published_vector_from_str_and_bytes() -> None:
    assert outbound.sign("abc123", '{"cool":true}') == VECTOR
    assert outbound.sign(b"abc123", b'{"cool":true}') == VECTOR
    assert outbound.sign("abc123", bytearray(b'{"cool":true}')) == VECTOR


def test_verify_accepts_bytes_str_and_either_case() -> None:
    assert outbound.verify("abc123", b'{"cool":true}', VECTOR)
    assert outbound.verify(b"abc123", '{"cool":true}', VECTOR.upper())


def test_verify_a_parsed_body_reserializes_canonically() -> None:
    parsed = json.loads('{ "cool" : true }')
    assert outbound.verify("abc123", parsed, VECTOR)
    assert outbound.sign("abc123", {"cool": True}) == VECTOR


def test_canonical_form_of_a_parsed_body_follows_javascript() -> None:
    # Array-index keys first, numbers as JS writes them: what JSON.stringify gives.
    body = {"b": 1.0, "2": "x", "a": [1e21, 0.000001, 1e-7], "1": None}
    canonical = '{"1":null,"2":"x","b":1,"a":[1e+21,0.000001,1e-7]}'
    assert outbound.sign("k", body) == outbound.sign("k", canonical)


@pytest.mark.parametrize(
    "signature",
    ["", VECTOR[:38], VECTOR + "00", VECTOR.replace("5", "g"), "0" * 40],
)
def test_verify_refuses_wrong_signatures(signature: str) -> None:
    assert not outbound.verify("abc123", '{"cool":true}', signature)


def test_verify_refuses_a_changed_body_or_secret() -> None:
    assert not outbound.verify("abc123", '{"cool":false}', VECTOR)
    assert not outbound.verify("other", '{"cool":true}', VECTOR)
    assert not outbound.verify("abc123", '{"cool": true}', VECTOR)  # raw bytes differ


def test_a_missing_signature_is_not_valid() -> None:
    # request.headers.get("X-Signature") is None when the header is missing: False, so the
    # receiver answers 401, not 500.
    assert outbound.verify("abc123", '{"cool":true}', None) is False
    assert outbound.verify("abc123", {"cool": True}, None) is False
    assert outbound.verify_value("abc123", {"cool": True}, None) is False


def test_verify_value_takes_any_parsed_json_value() -> None:
    assert outbound.verify_value("abc123", json.loads('{ "cool" : true }'), VECTOR)
    assert outbound.verify_value(b"abc123", {"cool": True}, VECTOR.upper())
    assert not outbound.verify_value("abc123", {"cool": False}, VECTOR)
    # A str is a JSON string value here, not raw body text as for verify().
    assert outbound.verify_value("k", "x", outbound.sign("k", '"x"'))
    assert not outbound.verify_value("k", "x", outbound.sign("k", "x"))
    assert outbound.verify_value("k", [1.0, None], outbound.sign("k", "[1,null]"))


def test_wrong_types_raise_type_error() -> None:
    with pytest.raises(TypeError, match="body must be bytes or str, got int"):
        outbound.sign("k", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="secret must be bytes or str"):
        outbound.verify(None, "{}", VECTOR)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"body\['x'\]"):
        outbound.sign("k", {"x": float("nan")})
