"""The admin API's OpenAPI document, checked by a validator from the registry
(openapi-spec-validator, in the relay tests' venv), as the running relay serves it."""

import json
import urllib.request

from openapi_spec_validator import validate

from conftest import ADMIN_TOKEN, Relay


def test_the_admin_api_document_is_valid_openapi_3_1(relay: Relay) -> None:
    req = urllib.request.Request(
        relay.url + "/admin/openapi.json",
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
    )
    with urllib.request.urlopen(req, timeout=10) as answer:
        doc = json.load(answer)
    assert doc["openapi"] == "3.1.0"
    validate(doc)
    # Every route the relay answers is in it (the router's own table is checked against it
    # in crates/outbound-relay/src/control/openapi.rs): the sources and their tokens.
    for path in ["/admin/sources", "/admin/sources/{name}", "/admin/sources/{name}/tokens"]:
        assert path in doc["paths"], path
