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
    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "outbound-relay admin API",
            "version": outbound::VERSION,
            "description": "Sources as resources, per-source tokens, each source's delivery records (webhook health and attempts, dead letters and their replay), deletions and audiences. Every request carries `Authorization: Bearer <token>`: the admin token (`admin_token` in relay.toml), or a source's own token, which reaches that source only. Errors are JSON: `message` (`field: reason`) and `field` when a field of the body is at fault."
        },
        "security": [{"bearer": []}],
        "paths": {
            "/admin/openapi.json": {"get": {"summary": "This document", "operationId": "openapi", "responses": with(json!({"200": {"description": "The OpenAPI document", "content": {"application/json": {"schema": {"type": "object"}}}}}))}},
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
            "/admin/sources/{name}/health": {
                "parameters": [name_param()],
                "get": {"summary": "Each webhook's health: state, the last 5 minutes' success rate and p50/p99, failures in a row, messages waiting", "operationId": "getHealth", "responses": with(json!({"200": {"description": "Its webhooks' health", "content": {"application/json": {"schema": {"type": "object", "required": ["source", "webhooks"], "properties": {"source": {"type": "string"}, "webhooks": {"type": "array", "items": {"$ref": "#/components/schemas/Health"}}}}}}}, "404": error("No such source")}))}
            },
            "/admin/sources/{name}/webhooks/{index}/attempts": {
                "parameters": [name_param(), {"name": "index", "in": "path", "required": true, "description": "The webhook's place in the source's `webhooks`, from 0", "schema": {"type": "integer", "minimum": 0}}],
                "get": {"summary": "The webhook's last 100 attempts, newest first", "operationId": "listAttempts", "responses": with(json!({"200": {"description": "Its attempts", "content": {"application/json": {"schema": {"type": "object", "required": ["source", "webhook", "attempts"], "properties": {"source": {"type": "string"}, "webhook": {"type": "integer"}, "attempts": {"type": "array", "items": {"$ref": "#/components/schemas/Attempt"}}}}}}}, "404": error("No such source or webhook")}))}
            },
            "/admin/sources/{name}/dead-letters": {
                "parameters": [name_param(),
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": outbound::MAX_DEAD_LETTER_PAGE, "default": 100}},
                    {"name": "cursor", "in": "query", "description": "`next` of the page before; any other text is a 400 (`cursor: ...`)", "schema": {"type": "string"}},
                    {"name": "since", "in": "query", "description": "Failed at or after (RFC 3339)", "schema": {"type": "string", "format": "date-time"}},
                    {"name": "until", "in": "query", "description": "Failed before (RFC 3339)", "schema": {"type": "string", "format": "date-time"}}],
                "get": {"summary": "A page of the source's dead letters, newest first, with its counts", "operationId": "listDeadLetters", "responses": with(json!({"200": {"description": "A page", "content": {"application/json": {"schema": {"type": "object", "required": ["source", "deadLetters", "stats"], "properties": {"source": {"type": "string"}, "deadLetters": {"type": "array", "items": {"$ref": "#/components/schemas/DeadLetter"}}, "next": {"type": ["string", "null"]}, "stats": {"$ref": "#/components/schemas/DeadLetterStats"}}}}}}, "400": error("A bad parameter, named first in `message`: `limit`, `cursor` (not the `next` of a page), `since`, `until`, or one that is not a parameter"), "404": error("No such source, or it keeps no dead letters")}))}
            },
            "/admin/sources/{name}/dead-letters/replay": {
                "parameters": [name_param()],
                "post": {"summary": "Replay the dead letters that failed in a range of time, in the background", "operationId": "replayDeadLetters",
                    "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "properties": {"since": {"type": "string", "format": "date-time"}, "until": {"type": "string", "format": "date-time"}, "webhook": {"description": "Only to this webhook: its index or URL", "type": ["integer", "string"]}}}}}},
                    "responses": with(json!({"202": {"description": "Started; its progress", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReplayProgress"}}}}, "400": error("A bad time or webhook"), "404": error("No such source, or it keeps no dead letters")}))}
            },
            "/admin/sources/{name}/dead-letters/replays/{id}": {
                "parameters": [name_param(), {"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
                "get": {"summary": "A replay's progress", "operationId": "getReplay", "responses": with(json!({"200": {"description": "Its progress", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReplayProgress"}}}}, "404": error("No such replay")}))}
            },
            "/admin/sources/{name}/dead-letters/{messageId}": {
                "parameters": [name_param(), {"name": "messageId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "get": {"summary": "One dead letter, with its body and last attempts", "operationId": "getDeadLetter", "responses": with(json!({"200": {"description": "The dead letter", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/DeadLetter"}}}}, "404": error("No such dead letter")}))},
                "delete": {"summary": "Forget a dead letter", "operationId": "deleteDeadLetter", "responses": with(json!({"200": {"description": "Deleted", "content": {"application/json": {"schema": {"type": "object"}}}}, "404": error("No such dead letter")}))}
            },
            "/admin/sources/{name}/dead-letters/{messageId}/replay": {
                "parameters": [name_param(), {"name": "messageId", "in": "path", "required": true, "schema": {"type": "string"}}],
                "post": {"summary": "Replay one dead letter (same id, signed with the current secret)", "operationId": "replayDeadLetter",
                    "requestBody": {"required": false, "content": {"application/json": {"schema": {"type": "object", "properties": {"webhook": {"description": "Only to this webhook: its index or URL", "type": ["integer", "string"]}}}}}},
                    "responses": with(json!({"202": {"description": "Replaying; its progress", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ReplayProgress"}}}}, "400": error("A bad webhook"), "404": error("No such dead letter"), "409": error("Being replayed already")}))}
            },
            "/admin/deletions": {"post": {"summary": "Send a user's deletion to the sources' webhooks (admin token only)", "operationId": "deleteUser",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["userId"], "properties": {"userId": {"type": "string", "minLength": 1}, "sources": {"type": "array", "items": {"type": "string"}}}}}}},
                "responses": with(json!({"200": {"description": "Committed to each source's spool", "content": {"application/json": {"schema": {"type": "object", "properties": {"success": {"type": "boolean"}, "sources": {"type": "array", "items": {"type": "string"}}, "messageIds": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}, "400": error("A bad user id or source")}))}}
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Error": {"type": "object", "required": ["success", "message"], "properties": {"success": {"const": false}, "message": {"type": "string"}, "field": {"type": ["string", "null"], "description": "The body's field at fault, as relay.toml's errors name it (`webhooks[0].url`)"}}},
                "Webhook": {"type": "object", "required": ["url"], "properties": {"url": {"type": "string", "format": "uri"},
                    "headers": {"type": "object", "description": "Write-only values: a string sets one, null clears it, {\"has_value\": true} (as GET shows it) keeps it for the same URL", "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "null"}, {"$ref": "#/components/schemas/HasValue"}]}},
                    "enabled": {"type": "boolean", "default": true, "description": "Off: kept, but sent nothing new"}}},
                "HasValue": {"type": "object", "required": ["has_value"], "properties": {"has_value": {"type": "boolean"}}},
                "Delivery": {"type": "object", "description": "Delivery settings (seconds for durations); unset: the relay's top level", "properties": {
                    "timeout": {"type": "number"}, "max_retry_duration": {"type": "number"}, "max_backoff": {"type": "number"}, "max_retry_after": {"type": "number"},
                    "max_in_flight": {"type": "integer"}, "workers": {"type": "integer"}, "signature_scheme": {"enum": ["x-signature", "standard-webhooks"]},
                    "webhook_user_agent": {"type": "string"}, "gzip": {"type": "boolean"}, "flush_at": {"type": "integer"}, "max_batch_messages": {"type": "integer"},
                    "flush_interval": {"type": "number"}, "max_queue_size": {"type": "integer"}, "queue_full_wait": {"type": "number"}, "ca_certs": {"type": "string", "description": "PEM text"},
                    "spool_max_bytes": {"type": "integer"}}},
                "SourceInput": {"allOf": [{"$ref": "#/components/schemas/Delivery"}, {"type": "object", "required": ["write_keys"], "properties": {
                    "write_keys": {"type": "array", "minItems": 1, "maxItems": 10000, "items": {"type": "string", "minLength": 1}},
                    "shared_secret": {"type": ["string", "null"], "writeOnly": true},
                    "allowed_origins": {"type": "array", "items": {"type": "string"}},
                    "webhooks": {"type": "array", "maxItems": 5, "items": {"$ref": "#/components/schemas/Webhook"}},
                    "forward": {"type": ["object", "null"], "required": [], "properties": {"endpoint": {"type": "string", "format": "uri"}, "write_key": {"type": "string", "writeOnly": true}}},
                    "allowed_networks": {"type": "array", "maxItems": 10000, "items": {"type": "string"}, "description": "Private networks its webhooks may reach (CIDR); the admin token alone sets it"},
                    "forward_allowed_networks": {"type": "array", "maxItems": 10000, "items": {"type": "string"}, "description": "The same for its forward; the admin token alone sets it"}}}]},
                "Source": {"allOf": [{"$ref": "#/components/schemas/Delivery"}, {"type": "object", "required": ["name", "managed_by", "write_keys", "webhooks", "has_shared_secret"], "properties": {
                    "name": {"type": "string"}, "id": {"type": ["string", "null"], "description": "Tells it from an earlier source of its name (null: relay.toml's, or made before ids)"}, "managed_by": {"enum": ["file", "api"]},
                    "allowed_networks": {"type": "array", "items": {"type": "string"}}, "forward_allowed_networks": {"type": "array", "items": {"type": "string"}},
                    "write_keys": {"type": "array", "items": {"type": "string"}}, "allowed_origins": {"type": "array", "items": {"type": "string"}},
                    "webhooks": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}, "headers": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/HasValue"}}, "enabled": {"type": "boolean"}}}},
                    "has_shared_secret": {"type": "boolean"},
                    "forward": {"type": ["object", "null"], "properties": {"endpoint": {"type": "string"}, "has_write_key": {"type": "boolean"}}}}}]},
                "Attempt": {"type": "object", "required": ["webhook", "messageId", "at", "durationMs", "result"], "properties": {
                    "webhook": {"type": "integer"}, "messageId": {"type": "string"}, "at": {"type": "string", "format": "date-time"}, "durationMs": {"type": "number"},
                    "result": {"enum": ["delivered", "retryable", "permanent"]}, "status": {"type": ["integer", "null"]},
                    "error": {"enum": ["timeout", "refused", "reset", "tls", "dns", "blocked", "connection", "other", null], "description": "What went wrong without an answer"},
                    "detail": {"type": "string"}, "answer": {"type": "string", "description": "A failure's answer, its first bytes, as text"}, "answerBase64": {"type": "string", "description": "The same when it is not UTF-8"}}},
                "Health": {"type": "object", "required": ["webhook", "url", "state"], "properties": {
                    "webhook": {"type": "integer"}, "url": {"type": "string"}, "state": {"enum": ["healthy", "failing", "circuit_open", "disabled"], "description": "disabled: `block_private_networks` refuses its address"},
                    "attempts5m": {"type": "integer"}, "delivered5m": {"type": "integer"}, "successRate5m": {"type": ["number", "null"]},
                    "p50Ms": {"type": ["number", "null"]}, "p99Ms": {"type": ["number", "null"]}, "consecutiveFailures": {"type": "integer"},
                    "lastError": {"type": ["object", "null"], "properties": {"at": {"type": "string", "format": "date-time"}, "message": {"type": "string"}}},
                    "lastSuccess": {"type": ["string", "null"], "format": "date-time"}, "waiting": {"type": "integer"}}},
                "DeadLetter": {"type": "object", "required": ["messageId", "failedAt", "reason", "replaying"], "properties": {
                    "messageId": {"type": "string"}, "failedAt": {"type": "string", "format": "date-time"}, "reason": {"type": "string"}, "detail": {"type": "string"},
                    "rounds": {"type": "integer"}, "firstAttemptAt": {"type": ["string", "null"], "format": "date-time"}, "size": {"type": "integer"},
                    "replaying": {"type": "boolean"}, "lastAttempts": {"type": "array", "items": {"$ref": "#/components/schemas/Attempt"}},
                    "body": {"description": "The webhook body as sent (JSON)"}}},
                "DeadLetterStats": {"type": "object", "properties": {"count": {"type": "integer"}, "bytes": {"type": "integer"}, "evicted": {"type": "integer"}, "expired": {"type": "integer"}}},
                "ReplayProgress": {"type": "object", "required": ["id", "total", "done", "progress"], "properties": {
                    "id": {"type": "integer"}, "total": {"type": "integer"}, "sent": {"type": "integer"}, "delivered": {"type": "integer"}, "failed": {"type": "integer"},
                    "skipped": {"type": "integer"}, "done": {"type": "boolean"}, "startedAt": {"type": "string", "format": "date-time"}, "progress": {"type": "string", "description": "This resource's path"}}},
                "Token": {"type": "object", "required": ["id", "source", "created_ms"], "properties": {"id": {"type": "string"}, "source": {"type": "string"}, "created_ms": {"type": "integer"}}}
            }
        }
    });
    // Added apart: one json! literal of them all passes the macro's recursion limit.
    let paths = &mut doc["paths"];
    paths["/admin/whoami"] = whoami(&with);
    paths["/admin/sources"] = list_sources(&with);
    paths["/admin/sources/{name}/activity"] = activity(&with);
    doc["components"]["schemas"]["SourceSummary"] = source_summary();
    doc
}

/// `GET /admin/whoami`: what the token in hand reaches (the console signs in with it).
fn whoami(with: &dyn Fn(Value) -> Value) -> Value {
    let who = json!({"type": "object", "required": ["caller", "source"], "properties": {
        "caller": {"enum": ["admin", "source"]},
        "source": {"type": ["string", "null"], "description": "A source token's source"},
        "token": {"type": "string", "description": "A source token's id"}}});
    json!({"get": {
        "summary": "What the token in hand reaches: the whole admin API, or one source",
        "operationId": "whoami",
        "responses": with(json!({"200": {"description": "The caller", "content": {"application/json": {"schema": who}}}}))}})
}

/// `GET /admin/sources`: all of them, or a page.
fn list_sources(with: &dyn Fn(Value) -> Value) -> Value {
    let item = json!({"allOf": [{"$ref": "#/components/schemas/Source"},
        {"type": "object", "properties": {"summary": {"$ref": "#/components/schemas/SourceSummary"}}}]});
    let page = json!({"type": "object", "required": ["sources"], "properties": {
        "sources": {"type": "array", "items": item},
        "next": {"type": ["string", "null"], "description": "`after` for the next page (paged requests)"},
        "matched": {"type": "integer", "description": "Sources matching `q` in all (paged requests)"}}});
    json!({"get": {
        "summary": "The sources (the file's and the API's): all, or a page",
        "description": "With no parameter, every source, the file's in its order then the API's. With any of `limit`, `after`, `q`: a page in name order, each source with its `summary`, `next` (the `after` of the next page, or null) and `matched` (how many match).",
        "operationId": "listSources",
        "parameters": [
            {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": super::sources::MAX_PAGE, "default": 50}},
            {"name": "after", "in": "query", "description": "The name after which the page starts (`next` of the page before)", "schema": {"type": "string"}},
            {"name": "q", "in": "query", "description": "Only sources whose name or a webhook URL contains this, ignoring case", "schema": {"type": "string"}}],
        "responses": with(json!({"200": {"description": "The sources", "content": {"application/json": {"schema": page}}}, "400": error("A bad parameter")}))}})
}

/// `GET /admin/sources/{name}/activity`.
fn activity(with: &dyn Fn(Value) -> Value) -> Value {
    let minutes =
        json!({"type": "array", "items": {"type": "integer"}, "minItems": 60, "maxItems": 60});
    let hour = json!({"type": "object", "required": ["source", "from", "to", "bucketSeconds", "delivered", "failed"], "properties": {
        "source": {"type": "string"},
        "from": {"type": "string", "format": "date-time", "description": "The start of the oldest minute"},
        "to": {"type": "string", "format": "date-time", "description": "The end of the minute under way"},
        "bucketSeconds": {"const": 60}, "delivered": minutes, "failed": minutes}});
    json!({"parameters": [name_param()], "get": {
        "summary": "The source's messages delivered and failed (final outcomes: a retry is not a failure) in each minute of the last hour, oldest first; the last minute is the one under way",
        "operationId": "getActivity",
        "responses": with(json!({"200": {"description": "60 minutes", "content": {"application/json": {"schema": hour}}}, "404": error("No such source")}))}})
}

fn source_summary() -> Value {
    json!({"type": ["object", "null"], "description": "A source at a glance (null while its settings change)", "properties": {
        "webhooks": {"type": "integer"}, "enabled": {"type": "integer", "description": "Webhooks on"},
        "state": {"enum": ["healthy", "failing", "circuit_open", "disabled", null], "description": "The worst state of its webhooks that are on (null: none is on)"},
        "unhealthy": {"type": "integer", "description": "Webhooks on and not healthy"},
        "waiting": {"type": "integer", "description": "Messages accepted and not yet ended"}}})
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
                .replace("{audience}", "vip")
                .replace("{index}", "0")
                .replace("{messageId}", "m-1");
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
