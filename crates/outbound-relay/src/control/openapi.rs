//! The admin API's routes and its OpenAPI 3.1 document, made together from each handler's
//! declaration (`#[utoipa::path]`) and the body types of `schema.rs`: a route cannot be
//! served without being documented, nor documented with a body it does not take. CI validates
//! the document and generates a Python client from it (tests/relay/test_openapi.py).

use super::auth::Caller;
use super::schema::Refusal;
use super::{admin, alerts, audit, listing, recent, records, sources, subscriptions, tokens, Api};
use crate::http::reply::Answer;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use utoipa::openapi::path::{Operation, PathItem};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, ResponseBuilder};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "outbound-relay admin API",
        description = "Sources as resources, per-source tokens, each source's delivery records \
            (webhook health and attempts, dead letters and their replay), deletions and \
            audiences. Every request carries `Authorization: Bearer <token>`: the admin token \
            (`admin_token` in relay.toml), or a source's own token, which reaches that source \
            only. Errors are JSON: `message` (`field: reason`) and `field` naming what is at \
            fault. Every field is snake_case, as relay.toml's keys are."
    ),
    components(schemas(Refusal))
)]
struct Doc;

/// `GET /admin/openapi.json`: this document.
#[utoipa::path(get, path = "/admin/openapi.json", operation_id = "openapi", tag = "document",
    responses((status = 200, description = "The OpenAPI document", body = Object)))]
async fn document(State(api): State<Api>, _: Caller) -> Answer {
    let mut r = Answer::new(api.document.as_bytes().to_vec().into());
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    *r.status_mut() = StatusCode::OK;
    r
}

/// Every route of the admin API, and its document as JSON.
pub fn routes() -> (axum::Router<Api>, String) {
    let (router, mut doc) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(document))
        .routes(routes!(sources::whoami))
        .routes(routes!(listing::list))
        .routes(routes!(sources::get, sources::put, sources::delete))
        .routes(routes!(tokens::list, tokens::create))
        .routes(routes!(tokens::revoke))
        .routes(routes!(admin::audiences))
        .routes(routes!(admin::deletions))
        .routes(routes!(records::health))
        .routes(routes!(records::activity))
        .routes(routes!(records::attempts))
        .routes(routes!(records::dead_letters))
        .routes(routes!(records::replay_range))
        .routes(routes!(records::replay_progress))
        .routes(routes!(records::dead_letter, records::delete_dead_letter))
        .routes(routes!(records::replay_one))
        .routes(routes!(recent::list))
        .routes(routes!(subscriptions::state))
        .routes(routes!(subscriptions::attempts))
        .routes(routes!(subscriptions::dead_letters))
        .routes(routes!(
            subscriptions::dead_letter,
            subscriptions::delete_dead_letter
        ))
        .routes(routes!(subscriptions::replay_one))
        .routes(routes!(subscriptions::replay_range))
        .routes(routes!(subscriptions::replay_progress))
        .routes(routes!(subscriptions::preview))
        .routes(routes!(subscriptions::preview_saved))
        .routes(routes!(audit::list))
        .routes(routes!(alerts::list))
        .split_for_parts();
    finish(&mut doc);
    let text = doc
        .to_json()
        .unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()));
    (router, text)
}

/// What every operation shares: the bearer token, and its refusals (401 for no valid
/// token, 403 for a source token outside what the route lets it reach).
fn finish(doc: &mut Document) {
    doc.info.version = outbound::VERSION.to_string();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
    );
    doc.security = Some(vec![SecurityRequirement::new(
        "bearer",
        Vec::<String>::new(),
    )]);
    let refusal = |what: &str| {
        ResponseBuilder::new()
            .description(what)
            .content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Refusal")))
                    .build(),
            )
            .build()
    };
    for item in doc.paths.paths.values_mut() {
        for op in operations(item) {
            let answers = &mut op.responses.responses;
            answers
                .entry("401".into())
                .or_insert_with(|| refusal("No token, or one not valid").into());
            answers.entry("403".into()).or_insert_with(|| {
                refusal("A source token outside what this route lets it reach").into()
            });
        }
    }
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.put.as_mut(),
        item.post.as_mut(),
        item.delete.as_mut(),
        item.patch.as_mut(),
        item.head.as_mut(),
    ]
    .into_iter()
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body a PUT documents is the body the reader takes: the same keys.
    #[test]
    fn the_documented_source_body_is_what_a_put_reads() {
        let (_, text) = routes();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let props = doc["components"]["schemas"]["SourceInput"]["properties"]
            .as_object()
            .expect("SourceInput");
        let documented: std::collections::BTreeSet<&str> =
            props.keys().map(|k| k.as_str()).collect();
        let operator_only = ["spool", "spool_commit_interval", "debug", "proxy_from_env"];
        let read: std::collections::BTreeSet<&str> = (crate::config::SOURCE_KEYS.iter())
            .chain(crate::config::DELIVERY_KEYS.iter())
            .chain(["id", "managed_by", "has_shared_secret"].iter())
            .copied()
            .filter(|k| !operator_only.contains(k))
            .collect();
        assert_eq!(documented, read);
    }

    /// The webhook a PUT documents has the fields of relay.toml's `[[sources.webhooks]]`.
    #[test]
    fn the_documented_webhook_is_the_files() {
        let (_, text) = routes();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let props = doc["components"]["schemas"]["WebhookInput"]["properties"]
            .as_object()
            .expect("WebhookInput");
        let documented: std::collections::BTreeSet<&str> =
            props.keys().map(|k| k.as_str()).collect();
        let text = "listen = \"-\"\n[[sources]]\nname = \"a\"\nwrite_keys = [\"k\"]\n\
                    [[sources.webhooks]]\nzz_unknown = 1\n";
        let e = toml::from_str::<crate::config::File>(text).expect_err("refused");
        let msg = e.message().to_string();
        let list = msg.split("expected").nth(1).expect(&msg);
        let file: std::collections::BTreeSet<&str> = list.split('`').skip(1).step_by(2).collect();
        assert_eq!(documented, file);
    }

    /// Every operation has a unique id, the bearer scheme and its refusals.
    #[test]
    fn every_operation_is_named_and_refuses_without_a_token() {
        let (_, text) = routes();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["openapi"], "3.1.0");
        let mut ids = std::collections::BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let id = op["operationId"].as_str().expect("an operationId");
                assert!(ids.insert(id.to_string()), "{id} twice");
                assert!(op["responses"]["401"].is_object(), "{method} {path}");
            }
        }
        assert_eq!(ids.len(), 33);
    }
}
