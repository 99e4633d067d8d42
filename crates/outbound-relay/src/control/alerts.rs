//! `GET /admin/alerts?source=&limit=`: the operator's alerts this relay sent
//! (`operations/alerts.rs`), newest first, kept in memory (its last 500): for the console.
//! The admin token reads every source's, with where they go and that URL's health; a
//! source's token reads its own source's only (the very source it was made for), and not
//! the operator's URL.

use super::auth::Caller;
use super::schema::{AlertList, AlertView, Refusal};
use super::{answer, refusal, Api};
use crate::http::body;
use crate::http::reply::Answer;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;

const MAX_PAGE: usize = 500;
const DEFAULT_PAGE: usize = 100;

/// The query of `GET /admin/alerts`.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct AlertParams {
    /// One source's alerts only (a source token: its own, the default).
    source: Option<String>,
    /// 1 to 500 (default 100).
    limit: Option<usize>,
}

/// `GET /admin/alerts`: the alerts sent, newest first.
#[utoipa::path(get, path = "/admin/alerts", operation_id = "list_alerts", tag = "alerts", params(AlertParams),
    responses((status = 200, description = "The alerts this relay sent, newest first", body = AlertList),
        (status = 400, description = "A bad parameter, named by `field`", body = Refusal)))]
pub async fn list(State(api): State<Api>, caller: Caller, RawQuery(query): RawQuery) -> Answer {
    let (mut source, mut limit) = (None, DEFAULT_PAGE);
    for (k, v) in body::query_pairs(query.as_deref()) {
        match k {
            "source" => source = Some(v),
            "limit" => match body::page_limit(&v, MAX_PAGE) {
                Ok(n) => limit = n,
                Err(why) => return refusal(StatusCode::BAD_REQUEST, "limit", &why),
            },
            _ => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    k,
                    "not a parameter (source, limit)",
                )
            }
        }
    }
    // A source token: its own source, by its tenant (not an earlier source of its name).
    let (name, tenant) = match (&caller, source) {
        (Caller::Admin, asked) => (asked, None),
        (Caller::Source(own, _), asked) => {
            if asked.as_deref().is_some_and(|a| a != own) {
                let why = "this token reaches its own source only";
                return refusal(StatusCode::FORBIDDEN, "source", why);
            }
            let tenant = (api.sources().by_name(own)).map(|s| s.spec.tenant.clone());
            (Some(own.clone()), Some(tenant.unwrap_or_default()))
        }
    };
    let alerts = &api.ops.alerts;
    let shown = (alerts.recent().into_iter())
        .filter(|a| name.as_ref().is_none_or(|n| *n == a.source))
        .filter(|a| tenant.as_ref().is_none_or(|t| *t == a.tenant))
        .take(limit)
        .map(|a| AlertView {
            at: outbound::timestamp::format(outbound::OffsetDateTime::from(a.at)).ok(),
            event: a.event.to_string(),
            source: a.source,
            message_id: a.message_id,
            properties: serde_json::Value::Object(a.properties),
        })
        .collect();
    let target = match caller {
        Caller::Admin => alerts.target(),
        Caller::Source(..) => None,
    };
    let list = AlertList {
        on: alerts.on(),
        url: target.as_ref().map(|(url, _)| url.clone()),
        state: (target.and_then(|(_, h)| h)).map(|h| h.state.as_str().to_string()),
        alerts: shown,
    };
    answer(StatusCode::OK, &list)
}
