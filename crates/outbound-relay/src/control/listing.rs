//! The list of sources, `GET /admin/sources` (the admin token): every source, or a page of
//! them with each one's summary, searched (`q`), filtered by state (`state`) and sorted
//! (`sort`, `order`) on the relay, so a console with 10,000 sources reads 50.
//!
//! In name order without a state filter a page costs its own length. Filtered by state, or
//! sorted by anything but the name, every source matching `q` is summed up once (in memory:
//! each webhook's health, the source's counters, and every source's dead letters in one
//! question to the spool writer), sorted, and the page cut after the cursor: `next` names the
//! last one's place (`<key>:<name>`), so a page follows the one before it in the order of
//! the moment it is asked.

use super::auth::Admin;
use super::schema::{Listed, Refusal, SourceList, Summary};
use super::{answer, refusal, resource, Api, Denied};
use crate::http::body;
use crate::http::reply::Answer;
use crate::sources::Source;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use outbound::HealthState;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

/// The most sources one page of `GET /admin/sources?limit=` holds.
pub const MAX_PAGE: usize = 1000;
/// A page's size when `limit` is left out of a paged request.
const DEFAULT_PAGE: usize = 50;

/// What a page is sorted by.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Sort {
    Name,
    /// The worst state of its webhooks that are on (`blocked` first).
    State,
    Waiting,
    DeadLetters,
    /// Of its webhooks that are on, the share of the last 5 minutes' attempts that failed.
    FailureRate,
}

impl Sort {
    fn parse(v: &str) -> Option<Sort> {
        Some(match v {
            "name" => Sort::Name,
            "state" => Sort::State,
            "waiting" => Sort::Waiting,
            "dead_letters" => Sort::DeadLetters,
            "failure_rate" => Sort::FailureRate,
            _ => return None,
        })
    }
}

/// The states a `state` filter names: a summary's `state`, or `none` (no webhook on).
const STATES: [&str; 6] = [
    "healthy",
    "throttled",
    "failing",
    "circuit_open",
    "disabled",
    "none",
];

/// The query of `GET /admin/sources` (any of them makes it a page).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct ListQuery {
    /// 1 to 1,000 (default 50).
    limit: Option<usize>,
    /// Where the page starts: `next` of the page before (in name order, a name).
    after: Option<String>,
    /// Only sources whose name or a webhook URL contains this, ignoring case.
    q: Option<String>,
    /// Only sources in these states (comma-separated): `healthy`, `throttled` (messages wait
    /// for a rate limit), `failing`, `circuit_open`, `disabled` (blocked by the network
    /// rules), `none` (no webhook on).
    state: Option<String>,
    /// `name` (the default), `state` (the worst first), `waiting`, `dead_letters`,
    /// `failure_rate` (the last 5 minutes'); ties in name order.
    sort: Option<String>,
    /// `asc` or `desc`; by default `asc` for `name`, `desc` (the most first) for the rest.
    /// Sources without a value (no attempt in 5 minutes, no dead letters kept) come last.
    order: Option<String>,
}

fn bad(field: &str, why: &str) -> Denied {
    Denied(StatusCode::BAD_REQUEST, field.into(), why.into())
}

/// What a paged request asks.
struct Asked {
    limit: usize,
    after: String,
    q: String,
    states: Option<Vec<String>>,
    sort: Sort,
    descending: bool,
}

fn asked(query: &str) -> Result<Asked, Denied> {
    let mut a = Asked {
        limit: DEFAULT_PAGE,
        after: String::new(),
        q: String::new(),
        states: None,
        sort: Sort::Name,
        descending: false,
    };
    let mut order = None;
    for (k, v) in body::query_pairs(Some(query)) {
        match k {
            "limit" => {
                a.limit = body::page_limit(&v, MAX_PAGE).map_err(|why| bad("limit", &why))?
            }
            "after" => a.after = v,
            "q" => a.q = v.to_lowercase(),
            "state" => {
                let wanted: Vec<String> = (v.split(',').map(str::trim))
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect();
                if let Some(not) = wanted.iter().find(|s| !STATES.contains(&s.as_str())) {
                    let why = format!("{not:?} is not a state ({})", STATES.join(", "));
                    return Err(bad("state", &why));
                }
                a.states = (!wanted.is_empty()).then_some(wanted);
            }
            "sort" => match Sort::parse(&v) {
                Some(s) => a.sort = s,
                None => {
                    let why = "not name, state, waiting, dead_letters or failure_rate";
                    return Err(bad("sort", why));
                }
            },
            "order" => match v.as_str() {
                "asc" => order = Some(false),
                "desc" => order = Some(true),
                _ => return Err(bad("order", "not asc or desc")),
            },
            _ => {
                let why = "not a parameter (limit, after, q, state, sort, order)";
                return Err(bad(k, why));
            }
        }
    }
    a.descending = order.unwrap_or(a.sort != Sort::Name);
    Ok(a)
}

/// `GET /admin/sources`: with no parameter, every source (the file's in its order, then the
/// API's). With any parameter, a page: the sources whose name (or a webhook URL) contains
/// `q`, ignoring case, in the states `state` names, in `sort` order, after `after`, at most
/// `limit`, each with its `summary`; `next` is the `after` of the next page, `matched` how
/// many match in all.
#[utoipa::path(get, path = "/admin/sources", operation_id = "list_sources", tag = "sources", params(ListQuery),
    responses((status = 200, description = "The sources", body = SourceList),
        (status = 400, description = "A bad parameter, named by `field`", body = Refusal)))]
pub async fn list(State(api): State<Api>, _: Admin, RawQuery(query): RawQuery) -> Answer {
    let sources = api.sources();
    let Some(query) = query.filter(|q| !q.is_empty()) else {
        let all: Vec<Listed> = (sources.iter())
            .map(|s| Listed {
                source: resource::view(&s.spec),
                summary: None,
            })
            .collect();
        let matched = all.len();
        let list = SourceList {
            sources: all,
            next: None,
            matched,
        };
        return answer(StatusCode::OK, &list);
    };
    let a = match asked(&query) {
        Ok(a) => a,
        Err(refused) => return refused.answer(),
    };
    let matches = |s: &Source| {
        a.q.is_empty()
            || s.name.to_lowercase().contains(&a.q)
            || (s.spec.core.webhooks.iter()).any(|w| w.url.to_lowercase().contains(&a.q))
    };
    if a.sort == Sort::Name && a.states.is_none() {
        // In name order from `after`: a page costs its own length (its own sources' dead
        // letters too), a search one pass over the set's search index.
        let page = sources.page(&a.after, &a.q, a.limit);
        let clients: Vec<_> = page
            .sources
            .iter()
            .filter_map(|s| s.slot.current())
            .collect();
        let clients: Vec<&outbound::Client> = clients.iter().map(|c| &**c).collect();
        let dead = dead_letters(&api, Some(&clients));
        let items = (page.sources.iter())
            .map(|s| listed(s, summary(s, &dead)))
            .collect();
        let list = SourceList {
            sources: items,
            next: page.next,
            matched: page.matched,
        };
        return answer(StatusCode::OK, &list);
    }
    // Every match summed up, then sorted: the order of this moment.
    let dead = dead_letters(&api, None);
    let in_state = |sum: &Option<Summary>| match (&a.states, sum) {
        (None, _) => true,
        (Some(states), Some(sum)) => {
            let state = sum.state.as_deref().unwrap_or("none");
            states.iter().any(|s| s == state)
        }
        // Changing this moment: in no state.
        (Some(_), None) => false,
    };
    let mut rows: Vec<(&Arc<Source>, Option<Summary>, Option<f64>)> = (sources.after(""))
        .filter(|s| matches(s))
        .map(|s| (s, summary(s, &dead)))
        .filter(|(_, sum)| in_state(sum))
        .map(|(s, sum)| {
            let key = key(a.sort, sum.as_ref(), &s.name);
            (s, sum, key)
        })
        .collect();
    let cmp = |x: (&Option<f64>, &str), y: (&Option<f64>, &str)| -> Ordering {
        order(a.descending, x, y)
    };
    rows.sort_by(|x, y| cmp((&x.2, &x.0.name), (&y.2, &y.0.name)));
    let matched = rows.len();
    let start = match cursor(a.sort, &a.after) {
        Err(why) => return refusal(StatusCode::BAD_REQUEST, "after", &why),
        Ok(None) => 0,
        Ok(Some((k, name))) => {
            rows.partition_point(|r| cmp((&r.2, &r.0.name), (&k, &name)) != Ordering::Greater)
        }
    };
    let end = (start + a.limit).min(rows.len());
    let next = (end < rows.len())
        .then(|| rows.get(end.wrapping_sub(1)))
        .flatten()
        .map(|(s, _, k)| place(a.sort, *k, &s.name));
    let items = rows
        .drain(start.min(end)..end)
        .map(|(s, sum, _)| listed(s, sum))
        .collect();
    let list = SourceList {
        sources: items,
        next,
        matched,
    };
    answer(StatusCode::OK, &list)
}

fn listed(s: &Source, summary: Option<Summary>) -> Listed {
    Listed {
        source: resource::view(&s.spec),
        summary,
    }
}

/// Each source's dead letters kept, by tenant (the shared spool's, in one question): those
/// of `tenants`, or every source's.
fn dead_letters(api: &Api, tenants: Option<&[&outbound::Client]>) -> HashMap<String, u64> {
    let engine = api.registry.engine();
    let counts = match tenants {
        Some(tenants) => engine.dead_letter_counts_of(tenants),
        None => engine.dead_letter_counts(),
    };
    match counts {
        Ok(counts) => counts.into_iter().map(|(t, c)| (t, c.count)).collect(),
        Err(e) => {
            tracing::debug!("dead letters of the list: {e}");
            HashMap::new()
        }
    }
}

/// A state's place, the worst highest.
fn severity(state: Option<&str>) -> f64 {
    match state {
        Some("disabled") => 4.0,
        Some("circuit_open") => 3.0,
        Some("failing") => 2.0,
        Some("throttled") => 1.5,
        Some("healthy") => 1.0,
        _ => 0.0,
    }
}

/// A source's sort key (`None`: it has no value, and comes last). In name order, none.
fn key(sort: Sort, sum: Option<&Summary>, _name: &str) -> Option<f64> {
    let sum = sum?;
    match sort {
        Sort::Name => None,
        Sort::State => Some(severity(sum.state.as_deref())),
        Sort::Waiting => Some(sum.waiting as f64),
        Sort::DeadLetters => sum.dead_letters.map(|n| n as f64),
        Sort::FailureRate => sum.failure_rate_5m,
    }
}

/// The order of two rows, each its key and name: by key (the most first when `descending`),
/// those without one last, then by name.
fn order(
    descending: bool,
    (ka, na): (&Option<f64>, &str),
    (kb, nb): (&Option<f64>, &str),
) -> Ordering {
    let by_key = match (ka, kb) {
        (Some(a), Some(b)) if descending => b.total_cmp(a),
        (Some(a), Some(b)) => a.total_cmp(b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    by_key.then_with(|| na.cmp(nb))
}

/// A row's place, as `next` gives it: `<key>:<name>` (`-` for no key); in name order, the
/// name.
fn place(sort: Sort, key: Option<f64>, name: &str) -> String {
    match (sort, key) {
        (Sort::Name, _) => name.to_string(),
        (_, Some(k)) => format!("{k}:{name}"),
        (_, None) => format!("-:{name}"),
    }
}

/// `after` read back into a place (`None`: from the start).
fn cursor(sort: Sort, after: &str) -> Result<Option<(Option<f64>, String)>, String> {
    if after.is_empty() {
        return Ok(None);
    }
    if sort == Sort::Name {
        return Ok(Some((None, after.to_string())));
    }
    let bad = || format!("{after:?} is not the `next` of a page in this order");
    let (k, name) = after.split_once(':').ok_or_else(bad)?;
    let k = match k {
        "-" => None,
        k => Some(k.parse::<f64>().map_err(|_| bad())?),
    };
    Ok(Some((k, name.to_string())))
}

/// A source at a glance: its webhooks (all, and on), the worst state of those on, how many
/// of them are not healthy and how many were never tried, its messages waiting, its dead
/// letters, and the last 5 minutes' failure rate of those on. None while its settings change.
fn summary(s: &Source, dead: &HashMap<String, u64>) -> Option<Summary> {
    let client = s.slot.current()?;
    let hooks = &s.spec.core.webhooks;
    let health: Vec<_> = (client.webhook_health().into_iter())
        .filter(|h| hooks.get(h.webhook).is_some_and(|w| w.enabled))
        .collect();
    let on: Vec<HealthState> = health.iter().map(|h| h.state).collect();
    let worst = [
        HealthState::Disabled,
        HealthState::CircuitOpen,
        HealthState::Failing,
        HealthState::Throttled,
        HealthState::Healthy,
    ]
    .into_iter()
    .find(|w| on.contains(w));
    let attempts: u64 = health.iter().map(|h| h.attempts_5m).sum();
    let delivered: u64 = health.iter().map(|h| h.delivered_5m).sum();
    let untried = (health.iter())
        .filter(|h| h.attempts_5m == 0 && h.last_success.is_none() && h.last_error.is_none())
        .count();
    let dead_letters = match client.config().dead_letters {
        true => Some(dead.get(&s.spec.tenant).copied().unwrap_or(0)),
        false => None,
    };
    Some(Summary {
        webhooks: hooks.len(),
        enabled: hooks.iter().filter(|w| w.enabled).count(),
        state: worst.map(|w| w.as_str().to_string()),
        // Throttled is working as its rate limit says, not unhealthy.
        unhealthy: (on.iter())
            .filter(|s| !matches!(s, HealthState::Healthy | HealthState::Throttled))
            .count(),
        untried,
        waiting: client.stats().queued,
        dead_letters,
        attempts_5m: attempts,
        failure_rate_5m: (attempts > 0).then(|| 1.0 - delivered as f64 / attempts as f64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_order_by_key_the_most_first_those_without_one_last_then_by_name() {
        let mut rows = [
            (Some(1.0), "b"),
            (None, "a"),
            (Some(3.0), "c"),
            (Some(1.0), "a"),
            (None, "0"),
        ];
        rows.sort_by(|x, y| order(true, (&x.0, x.1), (&y.0, y.1)));
        let names: Vec<&str> = rows.iter().map(|r| r.1).collect();
        assert_eq!(names, ["c", "a", "b", "0", "a"]);
        rows.sort_by(|x, y| order(false, (&x.0, x.1), (&y.0, y.1)));
        let names: Vec<&str> = rows.iter().map(|r| r.1).collect();
        assert_eq!(names, ["a", "b", "c", "0", "a"]);
        for (k, n) in [(Some(0.25), "x-1"), (None, "y")] {
            let placed = place(Sort::Waiting, k, n);
            assert_eq!(cursor(Sort::Waiting, &placed), Ok(Some((k, n.to_string()))));
        }
        assert!(cursor(Sort::Waiting, "nope").is_err());
    }
}
