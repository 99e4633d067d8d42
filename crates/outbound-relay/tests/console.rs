//! The console's ground on the relay (the real binary, real receivers): what it stands on.
//! `GET /admin/sources` in pages, searched, with 10,000 sources; a source's last hour
//! (`/activity`); `/admin/whoami`; and the console's files with their policy, only where the
//! admin API is on. The console itself runs in Chromium in tests/relay/test_console.py.

mod support;

use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::{basic, config, get, post, temp_dir, Addr, InProcess, Receiver};

const ADMIN: (&str, &str) = ("Authorization", "Bearer adm");
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn admin_get(relay: &impl Addr, path: &str) -> (u16, Value) {
    let a = get(&relay.url(path), &[ADMIN]);
    (
        a.status,
        serde_json::from_str(&a.body).unwrap_or(Value::Null),
    )
}

fn names(page: &Value) -> Vec<String> {
    (page["sources"].as_array().unwrap().iter())
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

/// 10,000 sources of one file (their names not in name order), one receiver for all but
/// every thousandth (`s-00007`, `s-01007`, ...), whose webhook is `special`'s.
fn many(n: usize, rx: &Receiver, special: &Receiver) -> String {
    let mut c = String::from(
        "listen = \"127.0.0.1:0\"\ndata_dir = \"data\"\nadmin_token = \"adm\"\n\
         allowed_networks = [\"127.0.0.0/8\"]\n",
    );
    for i in 0..n {
        // s-07321-..: reversed order in the file, so the list's name order is the relay's.
        let k = n - 1 - i;
        let url = match k % 1000 == 7 {
            true => format!("{}/special", special.url.trim_end_matches("/hook")),
            false => rx.url.clone(),
        };
        c.push_str(&format!(
            "[[sources]]\nname = \"s-{k:05}\"\nwrite_keys = [\"wk_{k}\"]\n\
             [[sources.webhooks]]\nurl = \"{url}\"\n"
        ));
    }
    c
}

#[test]
fn sources_come_in_pages_in_name_order_searched_by_name_or_url_among_10000() {
    let dir = temp_dir();
    let (rx, refuser) = (Receiver::start(), Receiver::start());
    refuser
        .status
        .store(400, std::sync::atomic::Ordering::SeqCst);
    let relay = InProcess::start(dir.path(), &many(10_000, &rx, &refuser));
    // The form without parameters: every source, in the file's order, no summary, one page.
    let (status, all) = admin_get(&relay, "/admin/sources");
    assert_eq!(status, 200);
    let all_names = names(&all);
    assert_eq!(all_names.len(), 10_000);
    assert_eq!(all_names[0], "s-09999");
    assert!(all["sources"][0].get("summary").is_none());
    assert_eq!(
        (&all["next"], &all["matched"]),
        (&Value::Null, &json!(10_000))
    );
    // Pages of 50 in name order, each after the last; every source exactly once.
    let mut seen = Vec::new();
    let mut after = String::new();
    let mut slowest = Duration::ZERO;
    let mut pages = 0;
    loop {
        let started = Instant::now();
        let (status, page) = admin_get(&relay, &format!("/admin/sources?limit=500&after={after}"));
        slowest = slowest.max(started.elapsed());
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["matched"], 10_000);
        pages += 1;
        seen.extend(names(&page));
        match page["next"].as_str() {
            Some(next) => after = next.to_string(),
            None => break,
        }
    }
    assert_eq!(pages, 20);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(seen, sorted, "in name order, none twice");
    assert_eq!(seen.len(), 10_000);
    // The console's first page: 50, with their summaries.
    let started = Instant::now();
    let (_, first) = admin_get(&relay, "/admin/sources?limit=50");
    let first_took = started.elapsed();
    assert_eq!(names(&first)[..2], ["s-00000", "s-00001"]);
    assert_eq!(first["next"], "s-00049");
    let summary = &first["sources"][0]["summary"];
    assert_eq!(summary["webhooks"], 1);
    assert_eq!(summary["enabled"], 1);
    assert_eq!(summary["state"], "healthy");
    assert_eq!(summary["unhealthy"], 0);
    assert_eq!(summary["waiting"], 0);
    // Searched by a part of the name, ignoring case, and by a part of a webhook URL.
    let (_, found) = admin_get(&relay, "/admin/sources?q=S-0999");
    assert_eq!(found["matched"], 10);
    assert_eq!(names(&found)[0], "s-09990");
    let (_, found) = admin_get(&relay, "/admin/sources?q=%2Fspecial&limit=3");
    assert_eq!(found["matched"], 10);
    assert_eq!(names(&found), ["s-00007", "s-01007", "s-02007"]);
    assert_eq!(found["next"], "s-02007");
    let (_, found) = admin_get(&relay, "/admin/sources?q=%2Fspecial&limit=3&after=s-02007");
    assert_eq!(found["matched"], 10);
    assert_eq!(names(&found), ["s-03007", "s-04007", "s-05007"]);
    let (_, found) = admin_get(&relay, "/admin/sources?q=%2Fspecial&after=s-08007");
    assert_eq!(
        (names(&found), &found["next"]),
        (vec!["s-09007".to_string()], &Value::Null)
    );
    let (_, none) = admin_get(&relay, "/admin/sources?q=nothing-like-it");
    assert_eq!(
        (none["matched"].clone(), none["next"].clone()),
        (0.into(), Value::Null)
    );
    // Refusals name the parameter.
    let (status, bad) = admin_get(&relay, "/admin/sources?limit=0");
    assert_eq!((status, bad["field"].as_str()), (400, Some("limit")));
    let (status, bad) = admin_get(&relay, "/admin/sources?page=2");
    assert_eq!((status, bad["field"].as_str()), (400, Some("page")));
    // Sorted and filtered on the relay: s-00007 refuses 3 events, s-02007 2 and s-01007 1
    // (each a dead letter, its webhook failing); every other source has none and is healthy.
    for (key, n) in [("wk_7", 3), ("wk_2007", 2), ("wk_1007", 1)] {
        track(&relay, key, n);
    }
    wait_until("6 dead letters", || {
        let (_, top) = admin_get(&relay, "/admin/sources?sort=dead_letters&limit=3");
        let counts: Vec<u64> = (top["sources"].as_array().unwrap().iter())
            .map(|s| s["summary"]["dead_letters"].as_u64().unwrap())
            .collect();
        counts == [3, 2, 1]
    });
    // In name order a page asks for its own sources' dead letters only: the same counts.
    let (_, page) = admin_get(&relay, "/admin/sources?q=s-0000&limit=10");
    let counts: Vec<(String, u64)> = (page["sources"].as_array().unwrap().iter())
        .map(|s| {
            let name = s["name"].as_str().unwrap().to_string();
            (name, s["summary"]["dead_letters"].as_u64().unwrap())
        })
        .collect();
    let want: Vec<(String, u64)> = (0..10)
        .map(|i| (format!("s-0000{i}"), if i == 7 { 3 } else { 0 }))
        .collect();
    assert_eq!(counts, want);
    let worst = ["s-00007", "s-02007", "s-01007"];
    let mut by_name: Vec<String> = all_names.clone();
    by_name.sort();
    let rest = || {
        by_name
            .iter()
            .filter(|n| !worst.contains(&n.as_str()))
            .cloned()
    };
    let expect: Vec<String> = worst.iter().map(|n| n.to_string()).chain(rest()).collect();
    // Paged in that order, any page size: every source once, in the order asked.
    for (sort, want) in [("dead_letters", &expect), ("waiting", &by_name)] {
        let mut seen = Vec::new();
        let mut after = String::new();
        loop {
            let url = format!("/admin/sources?sort={sort}&limit=700&after={after}");
            let (status, page) = admin_get(&relay, &url);
            assert_eq!(status, 200, "{page}");
            assert_eq!(page["matched"], 10_000);
            seen.extend(names(&page));
            match page["next"].as_str() {
                Some(next) => after = next.replace(':', "%3A"),
                None => break,
            }
        }
        assert_eq!(&seen, want, "sorted by {sort}");
    }
    // Ascending: the fewest first, ties by name, so the three come last in their order.
    let (_, up) = admin_get(
        &relay,
        "/admin/sources?sort=dead_letters&order=asc&limit=1000&after=0%3As-09990",
    );
    assert_eq!(names(&up)[9..], ["s-01007", "s-02007", "s-00007"]);
    // The failure rate and the state put the refused three first; a state filter finds them.
    let started = Instant::now();
    let (_, rate) = admin_get(&relay, "/admin/sources?sort=failure_rate&limit=3");
    let sorted_took = started.elapsed();
    assert_eq!(names(&rate).len(), 3);
    assert!(
        names(&rate).iter().all(|n| worst.contains(&n.as_str())),
        "{rate}"
    );
    assert_eq!(rate["sources"][0]["summary"]["failure_rate_5m"], 1.0);
    let (_, state) = admin_get(&relay, "/admin/sources?sort=state&limit=3");
    assert!(
        names(&state).iter().all(|n| worst.contains(&n.as_str())),
        "{state}"
    );
    let (_, failing) = admin_get(&relay, "/admin/sources?state=failing,circuit_open&q=s-0");
    assert_eq!(failing["matched"], 3);
    assert_eq!(names(&failing), ["s-00007", "s-01007", "s-02007"]);
    let (_, healthy) = admin_get(&relay, "/admin/sources?state=healthy&limit=2");
    assert_eq!(healthy["matched"], 9_997);
    assert_eq!(healthy["sources"][0]["summary"]["untried"], 1);
    for (bad, field) in [
        ("sort=size", "sort"),
        ("state=red", "state"),
        ("order=up", "order"),
        ("sort=waiting&after=s-1", "after"),
    ] {
        let (status, refused) = admin_get(&relay, &format!("/admin/sources?{bad}"));
        assert_eq!(
            (status, refused["field"].as_str()),
            (400, Some(field)),
            "{bad}"
        );
    }
    eprintln!(
        "10,000 sources: a page of 500 at most {slowest:?}, the console's first page of 50 in {first_took:?}, a sorted page in {sorted_took:?} (debug build)"
    );
}

fn track(relay: &impl Addr, key: &str, n: usize) {
    for _ in 0..n {
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic(key))],
            br#"{"userId":"u1","event":"Bought"}"#,
        );
        assert_eq!(a.status, 200, "{}", a.body);
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn totals(v: &Value) -> (u64, u64) {
    let sum = |k: &str| {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .sum()
    };
    (sum("delivered"), sum("failed"))
}

#[test]
fn a_sources_last_hour_counts_what_was_delivered_and_what_failed_minute_by_minute() {
    let dir = temp_dir();
    let (rx, other) = (Receiver::start(), Receiver::start());
    let relay = InProcess::start(
        dir.path(),
        &config(&[("web", "wk_web", &rx), ("app", "wk_app", &other)], ""),
    );
    let (status, hour) = admin_get(&relay, "/admin/sources/web/activity");
    assert_eq!(status, 200, "{hour}");
    assert_eq!(hour["delivered"].as_array().unwrap().len(), 60);
    assert_eq!(hour["failed"].as_array().unwrap().len(), 60);
    assert_eq!(hour["bucket_seconds"], 60);
    assert_eq!(totals(&hour), (0, 0));
    let from = hour["from"].as_str().unwrap();
    let to = hour["to"].as_str().unwrap();
    assert!(
        from.ends_with(":00.000Z") && to.ends_with(":00.000Z"),
        "{from} {to}"
    );
    track(&relay, "wk_web", 3);
    wait_until("3 delivered", || {
        totals(&admin_get(&relay, "/admin/sources/web/activity").1) == (3, 0)
    });
    // A 400 ends a message failed (a dead letter); a retry would not count.
    rx.status.store(400, std::sync::atomic::Ordering::SeqCst);
    track(&relay, "wk_web", 2);
    wait_until("2 failed", || {
        totals(&admin_get(&relay, "/admin/sources/web/activity").1) == (3, 2)
    });
    let (_, hour) = admin_get(&relay, "/admin/sources/web/activity");
    let last_two: u64 = hour["failed"].as_array().unwrap()[58..]
        .iter()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(
        last_two, 2,
        "in the last minute (or the one before, across its turn)"
    );
    // Each source its own hour.
    assert_eq!(
        totals(&admin_get(&relay, "/admin/sources/app/activity").1),
        (0, 0)
    );
    assert_eq!(admin_get(&relay, "/admin/sources/nope/activity").0, 404);
    // A source's token reads its own, not another's.
    let made = post(&relay.url("/admin/sources/app/tokens"), &[ADMIN], b"").json();
    let token = format!("Bearer {}", made["token"].as_str().unwrap());
    let mine = get(
        &relay.url("/admin/sources/app/activity"),
        &[("Authorization", &token)],
    );
    assert_eq!(mine.status, 200);
    let theirs = get(
        &relay.url("/admin/sources/web/activity"),
        &[("Authorization", &token)],
    );
    assert_eq!(theirs.status, 403);
}

#[test]
fn whoami_names_what_the_token_reaches() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = InProcess::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let (status, me) = admin_get(&relay, "/admin/whoami");
    assert_eq!(status, 200);
    assert_eq!(me, serde_json::json!({"caller": "admin", "source": null}));
    let made = post(&relay.url("/admin/sources/web/tokens"), &[ADMIN], b"").json();
    let token = format!("Bearer {}", made["token"].as_str().unwrap());
    let me = get(&relay.url("/admin/whoami"), &[("Authorization", &token)]).json();
    assert_eq!(
        me,
        serde_json::json!({"caller": "source", "source": "web", "token": made["id"]})
    );
    let none = get(
        &relay.url("/admin/whoami"),
        &[("Authorization", "Bearer nope")],
    );
    assert_eq!(none.status, 401);
}

#[test]
fn the_console_is_served_with_its_policy_where_the_admin_api_is_on() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let relay = InProcess::start(dir.path(), &config(&[("web", "wk_web", &rx)], ""));
    let page = get(&relay.url("/console/"), &[]);
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page
        .body
        .contains("<script type=\"module\" src=\"./main.js\"></script>"));
    for path in [
        "/console/",
        "/console/main.js",
        "/console/console.css",
        "/console/x.js",
    ] {
        let a = get(&relay.url(path), &[]);
        assert_eq!(
            a.status,
            if path.ends_with("x.js") { 404 } else { 200 },
            "{path}"
        );
        assert_eq!(a.header("content-security-policy"), Some(CSP), "{path}");
        assert_eq!(
            a.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(a.header("referrer-policy"), Some("no-referrer"), "{path}");
        assert_eq!(a.header("x-frame-options"), Some("DENY"), "{path}");
    }
    let js = get(&relay.url("/console/main.js"), &[]);
    assert_eq!(
        js.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(js.header("cache-control"), Some("no-cache"));
    let tag = js.header("etag").unwrap().to_string();
    let again = get(&relay.url("/console/main.js"), &[("If-None-Match", &tag)]);
    assert_eq!((again.status, again.body.as_str()), (304, ""));
    let posted = post(&relay.url("/console/"), &[], b"x");
    assert_eq!(posted.status, 405);
    assert_eq!(posted.header("content-security-policy"), Some(CSP));
    drop(relay);
    // Without admin_token there is no admin API, and no console.
    let dir = temp_dir();
    let off = config(&[("web", "wk_web", &rx)], "").replace("admin_token = \"adm\"\n", "");
    let relay = InProcess::start(dir.path(), &off);
    let page = get(&relay.url("/console/"), &[]);
    assert_eq!(page.status, 404);
    assert!(page.body.contains("admin_token"), "{}", page.body);
}

/// `/metrics` does not grow with the sources: every source but those `metrics_sources`
/// names (and, for the gauges, the `metrics_top_sources` most waiting) is counted under
/// `source="_other"`.
#[test]
fn a_scrape_stays_small_with_10000_sources() {
    let dir = temp_dir();
    let rx = Receiver::start();
    let config = many(10_000, &rx, &rx).replace(
        "admin_token = \"adm\"\n",
        "admin_token = \"adm\"\nmetrics_sources = [\"s-00042\"]\nmetrics_top_sources = 3\n",
    );
    let relay = InProcess::start(dir.path(), &config);
    for key in ["wk_42", "wk_43"] {
        let a = post(
            &relay.url("/v1/track"),
            &[("Authorization", &basic(key))],
            br#"{"userId":"u","event":"E"}"#,
        );
        assert_eq!(a.status, 200, "{}", a.body);
    }
    let scrape = get(&relay.url("/metrics"), &[ADMIN]);
    assert_eq!(scrape.status, 200);
    let text = &scrape.body;
    assert!(text.len() < 20_000, "{} bytes", text.len());
    assert!(
        text.contains(r#"outbound_relay_events_accepted_total{source="s-00042"} 1"#),
        "{text}"
    );
    assert!(
        text.contains(r#"outbound_relay_events_accepted_total{source="_other"} 1"#),
        "{text}"
    );
    // Gauges: the named source, the three most waiting, and the rest together.
    let depth = text
        .lines()
        .filter(|l| l.starts_with("outbound_relay_queue_depth{"))
        .count();
    assert!(
        (2..=5).contains(&depth),
        "{depth} queue_depth series: {text}"
    );
    assert!(
        text.contains(r#"outbound_relay_queue_depth{source="_other"}"#),
        "{text}"
    );
}
