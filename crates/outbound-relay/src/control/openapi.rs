//! `GET /admin/openapi.json`: the admin API as an OpenAPI 3.1 document. Every route of
//! [`super::ROUTES`] is in it (a test checks; CI validates the document with
//! `openapi-spec-validator`).

use serde_json::{json, Value};

fn error(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}})
}

fn name_param() -> Value {
    json!({"name": "name", "in": "path", "required": true, "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}})
}

/// The document.
pub fn document() -> Value {
    let common = json!({
        "401": error("No token, or an unknown one"),
        "403": error("A source token outside its own source, or changing what only the admin token may"),
    });
    let with = |mut answers: Value| {
        if let (Value::Object(a), Value::Object(c)) = (&mut answers, &common) {
            for (k, v) in c {
                a.entry(k.clone()).or_insert(v.clone());
            }
        }
        answers
    };
    let source_json =
        json!({"application/json": {"schema": {"$ref": "#/components/schemas/Source"}}});
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "outbound-relay admin API",
            "version": outbound::VERSION,
            "description": "Sources as resources, per-source tokens, deletions and audiences. Every request carries `Authorization: Bearer <token>`: the admin token (`admin_token` in relay.toml), or a source's own token, which reaches that source only. Errors are JSON: `message` (`field: reason`) and `field` when a field of the body is at fault."
        },
        "security": [{"bearer": []}],
        "paths": {
            "/admin/openapi.json": {"get": {"summary": "This document", "operationId": "openapi", "responses": with(json!({"200": {"description": "The OpenAPI document", "content": {"application/json": {"schema": {"type": "object"}}}}}))}},
            "/admin/sources": {"get": {
                "summary": "Every source (the file's and the API's)", "operationId": "listSources",
                "responses": with(json!({"200": {"description": "The sources", "content": {"application/json": {"schema": {"type": "object", "required": ["sources"], "properties": {"sources": {"type": "array", "items": {"$ref": "#/components/schemas/Source"}}}}}}}}))
            }},
            "/admin/sources/{name}": {
                "parameters": [name_param()],
                "get": {"summary": "One source", "operationId": "getSource", "responses": with(json!({"200": {"description": "The source", "content": source_json}, "404": error("No such source")}))},
                "put": {
                    "summary": "Create or replace a source, applied live",
                    "description": "The fields of a `[[sources]]` table of relay.toml, checked by the core's rules. Write-only fields (`shared_secret`, `forward.write_key`) left out keep their value; `null` clears them. A source token may change `webhooks`, `shared_secret`, `signature_scheme`, `allowed_origins` and `forward`, and must repeat the rest unchanged.",
                    "operationId": "putSource",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SourceInput"}}}},
                    "responses": with(json!({"200": {"description": "Replaced", "content": source_json}, "201": {"description": "Created", "content": source_json}, "400": error("A value the core refuses, named by `field`; nothing changed"), "409": error("The source is managed by relay.toml")}))
                },
                "delete": {"summary": "Delete a source: its write keys are refused at once, what it accepted is still delivered", "operationId": "deleteSource", "responses": with(json!({"204": {"description": "Deleted; draining"}, "404": error("No such source"), "409": error("The source is managed by relay.toml")}))}
            },
            "/admin/sources/{name}/tokens": {
                "parameters": [name_param()],
                "get": {"summary": "The source's tokens (never the token itself)", "operationId": "listTokens", "responses": with(json!({"200": {"description": "Its tokens", "content": {"application/json": {"schema": {"type": "object", "properties": {"tokens": {"type": "array", "items": {"$ref": "#/components/schemas/Token"}}}}}}}}))},
                "post": {"summary": "A new token of the source (admin token only), shown once", "operationId": "createToken", "responses": with(json!({"201": {"description": "The token, in `token`: shown this once", "content": {"application/json": {"schema": {"allOf": [{"$ref": "#/components/schemas/Token"}, {"type": "object", "required": ["token"], "properties": {"token": {"type": "string"}}}]}}}}, "404": error("No such source")}))}
            },
            "/admin/sources/{name}/tokens/{id}": {
                "parameters": [name_param(), {"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
                "delete": {"summary": "Revoke a token", "operationId": "revokeToken", "responses": with(json!({"204": {"description": "Revoked"}, "404": error("No such token of this source")}))}
            },
            "/admin/sources/{name}/audiences/{audience}": {
                "parameters": [name_param(), {"name": "audience", "in": "path", "required": true, "schema": {"type": "string"}}],
                "put": {"summary": "Sync an audience's members (identify on each change; admin token only)", "operationId": "syncAudience",
                    "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["members"], "properties": {"members": {"type": "array", "items": {"type": ["string", "integer"]}}}}}}},
                    "responses": with(json!({"200": {"description": "Synced", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "source": {"type": "string"}, "trait": {"type": "string"}, "joined": {"type": "integer"}, "left": {"type": "integer"}, "unchanged": {"type": "integer"}}}}}}, "404": error("No such source")}))}
            },
            "/admin/deletions": {"post": {"summary": "Send a user's deletion to the sources' webhooks (admin token only)", "operationId": "deleteUser",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["userId"], "properties": {"userId": {"type": "string", "minLength": 1}, "sources": {"type": "array", "items": {"type": "string"}}}}}}},
                "responses": with(json!({"200": {"description": "Committed to each source's spool", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "sources": {"type": "array", "items": {"type": "string"}}, "messageIds": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}, "400": error("A bad user id or source")}))}}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["success", "message"], "properties": {"success": {"const": false}, "message": {"type": "string"}, "field": {"type": ["string", "null"], "description": "The body's field at fault, as relay.toml's errors name it (`webhooks[0].url`)"}}},
                "Webhook": {"type": "object", "required": ["url"], "properties": {"url": {"type": "string", "format": "uri"}, "headers": {"type": "object", "additionalProperties": {"type": "string"}}, "enabled": {"type": "boolean", "default": true, "description": "Off: kept, but sent nothing new"}}},
                "Delivery": {"type": "object", "description": "Delivery settings (seconds for durations); unset: the relay's top level", "properties": {
                    "timeout": {"type": "number"}, "max_retry_duration": {"type": "number"}, "max_backoff": {"type": "number"}, "max_retry_after": {"type": "number"},
                    "max_in_flight": {"type": "integer"}, "workers": {"type": "integer"}, "signature_scheme": {"enum": ["x-signature", "standard-webhooks"]},
                    "webhook_user_agent": {"type": "string"}, "gzip": {"type": "boolean"}, "flush_at": {"type": "integer"}, "max_batch_messages": {"type": "integer"},
                    "flush_interval": {"type": "number"}, "max_queue_size": {"type": "integer"}, "queue_full_wait": {"type": "number"}, "ca_certs": {"type": "string", "description": "PEM text"},
                    "spool_max_bytes": {"type": "integer"}}},
                "SourceInput": {"allOf": [{"$ref": "#/components/schemas/Delivery"}, {"type": "object", "required": ["write_keys"], "properties": {
                    "write_keys": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                    "shared_secret": {"type": ["string", "null"], "writeOnly": true},
                    "allowed_origins": {"type": "array", "items": {"type": "string"}},
                    "webhooks": {"type": "array", "maxItems": 5, "items": {"$ref": "#/components/schemas/Webhook"}},
                    "forward": {"type": ["object", "null"], "required": [], "properties": {"endpoint": {"type": "string", "format": "uri"}, "write_key": {"type": "string", "writeOnly": true}}}}}]},
                "Source": {"allOf": [{"$ref": "#/components/schemas/Delivery"}, {"type": "object", "required": ["name", "managed_by", "write_keys", "webhooks", "has_shared_secret"], "properties": {
                    "name": {"type": "string"}, "managed_by": {"enum": ["file", "api"]},
                    "write_keys": {"type": "array", "items": {"type": "string"}}, "allowed_origins": {"type": "array", "items": {"type": "string"}},
                    "webhooks": {"type": "array", "items": {"$ref": "#/components/schemas/Webhook"}},
                    "has_shared_secret": {"type": "boolean"},
                    "forward": {"type": ["object", "null"], "properties": {"endpoint": {"type": "string"}, "has_write_key": {"type": "boolean"}}}}}]},
                "Token": {"type": "object", "required": ["id", "source", "created_ms"], "properties": {"id": {"type": "string"}, "source": {"type": "string"}, "created_ms": {"type": "integer"}}}
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::{route_of, ROUTES};
    use super::*;
    use hyper::Method;

    /// Every route the router answers is documented with its method, and routes back to
    /// its own template.
    #[test]
    fn every_route_is_in_the_document() {
        let doc = document();
        for (method, template) in ROUTES {
            let op = &doc["paths"][template][method.to_ascii_lowercase()];
            assert!(op.is_object(), "{method} {template} is not in openapi.json");
            let sample = template
                .replace("{name}", "web")
                .replace("{id}", "t1")
                .replace("{audience}", "vip");
            let m = Method::from_bytes(method.as_bytes()).unwrap();
            assert_eq!(route_of(&m, &sample).map(|r| r.0), Some(*template));
        }
        let documented: usize = (doc["paths"].as_object().unwrap().values())
            .map(|p| {
                p.as_object()
                    .unwrap()
                    .keys()
                    .filter(|k| *k != "parameters")
                    .count()
            })
            .sum();
        assert_eq!(
            documented,
            ROUTES.len(),
            "the document has no route the server lacks"
        );
    }
}
