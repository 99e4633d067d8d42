//! The differential test of subscriptions: reads the cases `tests/subscriptions/gen.mjs` wrote
//! (inputs and what Segment's own code answered), computes ours with the core's subscription
//! engine, and compares: the trigger's parse and each event's match decision, mapping-kit's
//! validation and `transform` (the mapped `data` and `headers`), and the request the webhook
//! destination would make (URL, method, body, and every header: ours as the client's sender
//! writes them, `outbound::testing::subscription_request`), alone or batched.
//! Values are compared after canonicalization (keys sorted, numbers as JavaScript prints them);
//! how many bodies are also byte-identical is counted.
//!
//! A difference listed in `known-differences.json` (each with its reason) is counted apart; any
//! other makes the run fail, printing the first few with the seed and index that reproduce them
//! (`node tests/subscriptions/gen.mjs --seed S --from INDEX --count 1`).
//!
//! ```text
//! cargo run -p outbound --example subscriptions_diff -- CASES.jsonl... [--known KNOWN.json]
//! ```

use outbound::canonical_json;
use outbound::subscription::{BatchSignature, EventError, Mapped, Mapping, Subscription, Trigger};
use outbound::testing::{subscription_request, SubscriptionRequest};
use outbound::Config;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::BufRead;

/// What a check compares.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Check {
    Parse,
    Decision,
    Validate,
    Transform,
    Request,
    Batch,
}

impl Check {
    const ALL: [Check; 6] = [
        Check::Parse,
        Check::Decision,
        Check::Validate,
        Check::Transform,
        Check::Request,
        Check::Batch,
    ];

    fn label(self) -> &'static str {
        match self {
            Check::Parse => "trigger parsed or refused",
            Check::Decision => "event matched or not",
            Check::Validate => "mapping valid or refused",
            Check::Transform => "mapped data and headers",
            Check::Request => "request of one event",
            Check::Batch => "request of a batch",
        }
    }
}

#[derive(Default)]
struct Count {
    compared: u64,
    equal: u64,
    known: u64,
    unexpected: u64,
}

struct Mismatch {
    check: Check,
    seed: String,
    index: u64,
    event: Option<usize>,
    known: Option<&'static str>,
    detail: String,
}

#[derive(Default)]
struct Report {
    cases: u64,
    events: u64,
    counts: BTreeMap<Check, Count>,
    /// Per generator tag: cases, and cases with an unexpected difference.
    tags: BTreeMap<String, (u64, u64)>,
    known: BTreeMap<&'static str, u64>,
    bodies: u64,
    bodies_identical: u64,
    /// What Segment answered: match decisions and single requests, by kind.
    outcomes: BTreeMap<&'static str, u64>,
    /// The first body equal to Segment's only after canonicalization.
    reordered: Option<String>,
    mismatches: Vec<Mismatch>,
}

/// The differences a case may show for a reason we know, each recognized by a rule.
fn classify(case: &Value, check: Check, segment_text: &str) -> Option<&'static str> {
    let mapping_text = case["mapping"].to_string();
    if mapping_text.contains("\"@liquid\"")
        && matches!(
            check,
            Check::Validate | Check::Transform | Check::Request | Check::Batch
        )
    {
        return Some("liquid");
    }
    if has_lone_surrogate(segment_text) {
        return Some("lone-surrogate");
    }
    if check == Check::Batch && segment_text.starts_with("batch fails: ") {
        return Some("batch-mapping-error");
    }
    let events_text = case["events"].to_string();
    if (events_text.contains("__proto__") || mapping_text.contains("__proto__"))
        && matches!(check, Check::Transform | Check::Request | Check::Batch)
    {
        return Some("proto-key");
    }
    None
}

/// Whether a text holds a lone surrogate as `JSON.stringify` escapes it (`\udXXX`; it
/// escapes nothing else in that range), at any depth of quoting.
fn has_lone_surrogate(text: &str) -> bool {
    [
        "\\ud8", "\\ud9", "\\uda", "\\udb", "\\udc", "\\udd", "\\ude", "\\udf",
    ]
    .iter()
    .any(|p| text.contains(p))
}

/// A JSON value's text with object keys sorted and numbers as JavaScript prints them.
fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // Keys that look like array indices still come first in the writer, in both texts alike.
    canonical_json::to_string(&sorted(v)).unwrap_or_else(|e| format!("<unwritable: {e}>"))
}

fn canonical_text(text: &str) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(v) => canonical(&v),
        Err(_) => format!("<not JSON: {text}>"),
    }
}

fn short(s: &str) -> String {
    let mut out: String = s.chars().take(400).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// The headers compared: names in lower case, a repeated one's values joined with `, ` (as
/// the capture joins them).
type Headers = BTreeMap<String, String>;

/// Headers neither side's capture holds: the HTTP client's own (ours adds `host` and
/// `content-length` under the sender; node-fetch adds its own after actions-core's fetch).
const TRANSPORT: [&str; 4] = ["host", "content-length", "connection", "transfer-encoding"];

/// Segment's `user-agent` when the mapping sets none (ours is `Config::webhook_user_agent`).
const SEGMENT_USER_AGENT: &str = "Segment (Actions)";

fn segment_request(r: &Value) -> (String, String, Headers, Option<String>) {
    let mut headers = Headers::new();
    if let Some(h) = r["headers"].as_object() {
        for (k, v) in h {
            let name = k.to_ascii_lowercase();
            if !TRANSPORT.contains(&name.as_str()) {
                headers.insert(name, v.as_str().unwrap_or_default().to_owned());
            }
        }
    }
    (
        r["url"].as_str().unwrap_or_default().to_owned(),
        r["method"].as_str().unwrap_or_default().to_owned(),
        headers,
        r["body"].as_str().map(str::to_owned),
    )
}

/// Our request's headers as compared: each value's bytes as characters (Node writes each
/// character of a header as one byte).
fn our_headers(request: &SubscriptionRequest) -> Headers {
    let mut headers = Headers::new();
    for (name, value) in &request.headers {
        if TRANSPORT.contains(&name.as_str()) {
            continue;
        }
        let value: String = value.iter().map(|b| char::from(*b)).collect();
        headers
            .entry(name.clone())
            .and_modify(|v| {
                v.push_str(", ");
                v.push_str(&value);
            })
            .or_insert(value);
    }
    headers
}

/// The client a case's subscription is delivered by: its settings, and Segment's
/// `sharedSecret` as the client's `shared_secret`.
fn client_config(sub: &Subscription, secret: Option<&str>) -> Config {
    let mut config = Config::default();
    config.subscriptions = vec![sub.clone().with_name("diff")];
    config.shared_secret = secret.map(str::to_owned);
    config
}

/// The request our sender writes for `events`, or why it writes none.
fn our_request(config: &Config, events: &[&Value]) -> Result<SubscriptionRequest, String> {
    match subscription_request(config, events) {
        Ok(Some(request)) => Ok(request),
        Ok(None) => Err("the sender writes no request".into()),
        Err(e) => Err(format!("the sender fails: {e}")),
    }
}

fn show_request(url: &str, method: &str, headers: &Headers, body: Option<&str>) -> String {
    format!(
        "{method} {url} {headers:?} body={}",
        body.map_or("(none)".into(), short)
    )
}

impl Report {
    fn tally(
        &mut self,
        case: &Value,
        check: Check,
        event: Option<usize>,
        equal: bool,
        segment: &str,
        ours: &str,
    ) -> bool {
        let c = self.counts.entry(check).or_default();
        c.compared += 1;
        if equal {
            c.equal += 1;
            return true;
        }
        let known = classify(case, check, segment);
        match known {
            Some(id) => {
                c.known += 1;
                *self.known.entry(id).or_default() += 1;
            }
            None => c.unexpected += 1,
        }
        self.mismatches.push(Mismatch {
            check,
            seed: case["seed"].as_str().unwrap_or_default().to_owned(),
            index: case["index"].as_u64().unwrap_or_default(),
            event,
            known,
            detail: format!(
                "Segment: {}\n      ours:    {}",
                short(segment),
                short(ours)
            ),
        });
        known.is_some()
    }

    fn case(&mut self, case: &Value) {
        self.cases += 1;
        let seg = &case["segment"];
        let events: Vec<&Value> = case["events"]
            .as_array()
            .map(|e| e.iter().collect())
            .unwrap_or_default();
        self.events += events.len() as u64;
        let before = self.unexpected();
        let subscribe = case["subscribe"].as_str().unwrap_or_default();
        let secret = case["secret"].as_str();

        // The trigger.
        let trigger = Trigger::parse(subscribe);
        let seg_ok = seg["fql"]["ok"].as_bool() == Some(true);
        self.tally(
            case,
            Check::Parse,
            None,
            seg_ok == trigger.is_ok(),
            &seg["fql"].to_string(),
            &match &trigger {
                Ok(_) => "parsed".to_owned(),
                Err(e) => format!("refused: {e}"),
            },
        );
        if let (Ok(t), Some(decisions)) = (&trigger, seg["decisions"].as_array()) {
            for (i, (e, d)) in events.iter().zip(decisions).enumerate() {
                *self
                    .outcomes
                    .entry(match d.as_bool() {
                        Some(true) => "events matched",
                        Some(false) => "events not matched",
                        None => "events Segment cannot evaluate",
                    })
                    .or_default() += 1;
                let ours = match t.evaluate(e) {
                    Ok(b) => Value::Bool(b),
                    Err(_) => Value::from("throw"),
                };
                self.tally(
                    case,
                    Check::Decision,
                    Some(i),
                    ours == *d,
                    &d.to_string(),
                    &ours.to_string(),
                );
            }
        }

        // mapping-kit: validation, then transform of each event.
        let mapping = &case["mapping"];
        let compile = |field: &str| mapping.get(field).map(Mapping::new).transpose();
        let (headers, data) = (compile("headers"), compile("data"));
        let ours_valid = headers.is_ok() && data.is_ok();
        let seg_valid = seg["mapping"]["ok"].as_bool() == Some(true);
        let ours_text = match (&headers, &data) {
            (Err(e), _) | (_, Err(e)) => format!("refused: {e}"),
            _ => "valid".to_owned(),
        };
        self.tally(
            case,
            Check::Validate,
            None,
            ours_valid == seg_valid,
            &seg["mapping"].to_string(),
            &ours_text,
        );
        if let (Ok(headers), Ok(data), true) = (&headers, &data, seg_valid) {
            for (i, (e, t)) in events
                .iter()
                .zip(seg["transforms"].as_array().into_iter().flatten())
                .enumerate()
            {
                let apply = |m: &Option<Mapping>| -> Result<Option<String>, String> {
                    match m {
                        None => Ok(None),
                        Some(m) => m
                            .apply(e)
                            .map(|v| v.map(|v| canonical(&v)))
                            .map_err(|e| e.to_string()),
                    }
                };
                let ours = apply(headers).and_then(|h| apply(data).map(|d| (h, d)));
                let (equal, seg_text, ours_text) = match (t.get("error"), &ours) {
                    (Some(err), Err(ours)) => (true, err.to_string(), ours.clone()),
                    (Some(err), Ok(v)) => (false, format!("throws {err}"), format!("{v:?}")),
                    (None, Err(ours)) => (false, t.to_string(), format!("fails: {ours}")),
                    (None, Ok((h, d))) => {
                        let s = |k: &str| t[k].as_str().map(canonical_text);
                        (
                            (s("headers"), s("data")) == (h.clone(), d.clone()),
                            t.to_string(),
                            format!("headers={h:?} data={d:?}"),
                        )
                    }
                };
                self.tally(
                    case,
                    Check::Transform,
                    Some(i),
                    equal,
                    &seg_text,
                    &ours_text,
                );
            }
        }

        // The requests.
        let sub = Subscription::from_segment(
            &serde_json::json!({"subscribe": subscribe, "mapping": mapping}),
        )
        .map(|s| s.with_batch_signature(BatchSignature::FirstElement));
        let config = sub.as_ref().ok().map(|s| client_config(s, secret));
        if let Some(requests) = seg["requests"].as_array() {
            for (i, (e, r)) in events.iter().zip(requests).enumerate() {
                self.single(case, i, e, r, &sub, config.as_ref());
            }
        }
        for group in seg["batches"].as_array().into_iter().flatten() {
            let indices: Vec<usize> = group["indices"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .map(|i| i as usize)
                .collect();
            let members: Vec<&Value> = indices.iter().map(|i| events[*i]).collect();
            self.batch(case, &members, group, &sub, config.as_ref());
        }

        let bad = self.unexpected() > before;
        if let Some(tags) = case["tags"].as_array() {
            for t in tags.iter().filter_map(Value::as_str) {
                let entry = self.tags.entry(t.to_owned()).or_default();
                entry.0 += 1;
                entry.1 += u64::from(bad);
            }
        }
    }

    /// Takes out of both requests' headers what differs by design, counting each under its
    /// id in known-differences.json: the rest of the request is still compared.
    fn by_design(&mut self, config: &Config, ours: &mut Headers, segment: &mut Headers) {
        let ua = "user-agent";
        if ours.get(ua) == Some(&config.webhook_user_agent)
            && segment.get(ua).map(String::as_str) == Some(SEGMENT_USER_AGENT)
        {
            ours.remove(ua);
            segment.remove(ua);
            *self.known.entry("user-agent").or_default() += 1;
        }
    }

    fn unexpected(&self) -> u64 {
        self.counts.values().map(|c| c.unexpected).sum()
    }

    fn body_identity(&mut self, seg: Option<&str>, ours: Option<&str>) -> bool {
        match (seg, ours) {
            (None, None) => true,
            (Some(s), Some(o)) => {
                self.bodies += 1;
                if s == o {
                    self.bodies_identical += 1;
                    return true;
                }
                let same = canonical_text(s) == canonical_text(o);
                if same && self.reordered.is_none() {
                    self.reordered =
                        Some(format!("Segment {}\n    ours    {}", short(s), short(o)));
                }
                same
            }
            _ => false,
        }
    }

    fn single(
        &mut self,
        case: &Value,
        i: usize,
        event: &Value,
        r: &Value,
        sub: &Result<Subscription, outbound::Error>,
        config: Option<&Config>,
    ) {
        let seg_request = r.get("request");
        *self
            .outcomes
            .entry(if seg_request.is_some() {
                "single requests sent"
            } else if r.get("error").is_some() {
                "single events failed"
            } else {
                "single events not subscribed"
            })
            .or_default() += 1;
        let seg_text = r.to_string();
        let (sub, config) = match (sub, config) {
            (Ok(s), Some(c)) => (s, c),
            (Err(e), _) => {
                // A subscription we refuse sends nothing: Segment must have sent nothing either.
                self.tally(
                    case,
                    Check::Request,
                    Some(i),
                    seg_request.is_none(),
                    &seg_text,
                    &format!("refused: {e}"),
                );
                return;
            }
            (Ok(_), None) => unreachable!("a config for each subscription"),
        };
        match (sub.map(event), seg_request) {
            (Ok(None), None) if r.get("none").is_some() => {
                self.tally(case, Check::Request, Some(i), true, "", "");
            }
            (Err(e), None) if r.get("error").is_some() || matches!(e, EventError::Trigger(_)) => {
                self.tally(case, Check::Request, Some(i), true, "", "");
            }
            (Ok(Some(_)), Some(req)) => {
                let (url, method, mut seg_headers, seg_body) = segment_request(req);
                let request = match our_request(config, &[event]) {
                    Ok(request) => request,
                    Err(e) => {
                        self.tally(case, Check::Request, Some(i), false, &seg_text, &e);
                        return;
                    }
                };
                let mut headers = our_headers(&request);
                // A request without a body is sent empty (a JSON body never is).
                let body = (!request.body.is_empty())
                    .then(|| String::from_utf8_lossy(&request.body).into_owned());
                self.by_design(config, &mut headers, &mut seg_headers);
                let same_body = self.body_identity(seg_body.as_deref(), body.as_deref());
                let equal = url == sub.url()
                    && method == sub.method().as_str()
                    && headers == seg_headers
                    && same_body;
                let ours =
                    show_request(sub.url(), sub.method().as_str(), &headers, body.as_deref());
                let segment = show_request(&url, &method, &seg_headers, seg_body.as_deref());
                self.tally(case, Check::Request, Some(i), equal, &segment, &ours);
            }
            (ours, _) => {
                let ours = match ours {
                    Ok(None) => "not matched".to_owned(),
                    Ok(Some(m)) => format!("a request, body {:?}", m.body.map(|b| canonical(&b))),
                    Err(e) => format!("fails: {e}"),
                };
                self.tally(case, Check::Request, Some(i), false, &seg_text, &ours);
            }
        }
    }

    fn batch(
        &mut self,
        case: &Value,
        events: &[&Value],
        seg: &Value,
        sub: &Result<Subscription, outbound::Error>,
        config: Option<&Config>,
    ) {
        let seg_request = seg.get("request").filter(|r| !r.is_null());
        *self
            .outcomes
            .entry(if seg_request.is_some() {
                "batch requests sent"
            } else if seg.get("error").is_some() {
                "batches failed"
            } else {
                "batches with nothing to send"
            })
            .or_default() += 1;
        let seg_text = seg.to_string();
        let (sub, config) = match (sub, config) {
            (Ok(s), Some(c)) => (s, c),
            (Ok(_), None) => unreachable!("a config for each subscription"),
            (Err(e), _) => {
                self.tally(
                    case,
                    Check::Batch,
                    None,
                    seg_request.is_none(),
                    &seg_text,
                    &format!("refused: {e}"),
                );
                return;
            }
        };
        let mapped: Vec<_> = events.iter().map(|e| sub.map(e)).collect();
        let failed = mapped.iter().any(Result::is_err);
        let included: Vec<(usize, &Mapped<'_>)> = mapped
            .iter()
            .enumerate()
            .filter_map(|(i, m)| m.as_ref().ok().and_then(Option::as_ref).map(|m| (i, m)))
            .collect();
        let ours_sent: Vec<usize> = included.iter().map(|(i, _)| *i).collect();
        if let Some(err) = seg.get("error") {
            // Known only when one of ours fails too (Segment's one error fails the whole batch).
            let segment = if failed {
                format!("batch fails: {err}")
            } else {
                format!("the batch fails, ours has no failed event: {err}")
            };
            self.tally(
                case,
                Check::Batch,
                None,
                false,
                &segment,
                &format!("sends events {ours_sent:?} (failed ones: {failed})"),
            );
            return;
        }
        let seg_sent: Vec<usize> = seg["statuses"]
            .as_array()
            .map(|s| {
                s.iter()
                    .enumerate()
                    .filter(|(_, s)| s.as_u64() == Some(200))
                    .map(|(i, _)| i)
                    .collect()
            })
            .unwrap_or_default();
        let Some(req) = seg_request else {
            self.tally(
                case,
                Check::Batch,
                None,
                included.is_empty(),
                &seg_text,
                &format!("sends events {ours_sent:?}"),
            );
            return;
        };
        if included.is_empty() {
            self.tally(case, Check::Batch, None, false, &seg_text, "sends nothing");
            return;
        }
        let request = match our_request(config, events) {
            Ok(request) => request,
            Err(e) => {
                self.tally(case, Check::Batch, None, false, &seg_text, &e);
                return;
            }
        };
        let body = String::from_utf8_lossy(&request.body).into_owned();
        let mut headers = our_headers(&request);
        let (url, method, mut seg_headers, seg_body) = segment_request(req);
        self.by_design(config, &mut headers, &mut seg_headers);
        let same_body = self.body_identity(seg_body.as_deref(), Some(&body));
        let equal = seg_sent == ours_sent
            && url == sub.url()
            && method == sub.method().as_str()
            && headers == seg_headers
            && same_body;
        let ours = format!(
            "events {ours_sent:?} {}",
            show_request(sub.url(), sub.method().as_str(), &headers, Some(&body))
        );
        let segment = format!(
            "events {seg_sent:?} {}",
            show_request(&url, &method, &seg_headers, seg_body.as_deref())
        );
        self.tally(case, Check::Batch, None, equal, &segment, &ours);
    }

    fn print(&self, known_ids: &BTreeMap<String, String>) -> bool {
        println!(
            "subscriptions: {} cases, {} events, against Segment's own code",
            self.cases, self.events
        );
        println!();
        println!(
            "{:<28} {:>9} {:>9} {:>7} {:>11}",
            "check", "compared", "equal", "known", "unexpected"
        );
        for check in Check::ALL {
            let c = self.counts.get(&check);
            let (a, b, k, u) = c.map_or((0, 0, 0, 0), |c| {
                (c.compared, c.equal, c.known, c.unexpected)
            });
            println!("{:<28} {a:>9} {b:>9} {k:>7} {u:>11}", check.label());
        }
        println!();
        println!(
            "bodies sent: {} compared, {} byte-identical to Segment's",
            self.bodies, self.bodies_identical
        );
        if let Some(r) = &self.reordered {
            println!("  first equal only after canonicalization:\n    {r}");
        }
        println!();
        println!("what Segment's code answered:");
        for (what, n) in &self.outcomes {
            println!("  {what:<32} {n:>7}");
        }
        let mut ok = true;
        if !self.known.is_empty() {
            println!();
            println!("known differences (tests/subscriptions/known-differences.json):");
            for (id, n) in &self.known {
                let listed = known_ids.contains_key(*id);
                ok &= listed;
                println!(
                    "  {id:<24} {n:>6}{}",
                    if listed {
                        ""
                    } else {
                        "  NOT LISTED: counts as unexpected"
                    }
                );
            }
        }
        println!();
        println!("coverage (cases per generator tag; cases with an unexpected difference):");
        let mut line = String::new();
        for (i, (tag, (n, bad))) in self.tags.iter().enumerate() {
            let cell = if *bad > 0 {
                format!("{tag} {n} ({bad} bad)")
            } else {
                format!("{tag} {n}")
            };
            let _ = write!(line, "  {cell:<30}");
            if i % 4 == 3 {
                println!("{}", line.trim_end());
                line.clear();
            }
        }
        if !line.is_empty() {
            println!("{}", line.trim_end());
        }
        let unexpected: Vec<&Mismatch> = self
            .mismatches
            .iter()
            .filter(|m| m.known.is_none() || !known_ids.contains_key(m.known.unwrap_or_default()))
            .collect();
        if !unexpected.is_empty() {
            println!();
            println!("first unexpected differences (of {}):", unexpected.len());
            for m in unexpected.iter().take(8) {
                println!(
                    "  {:?} seed {} case {}{} (node tests/subscriptions/gen.mjs --seed {} --from {} --count 1)\n      {}",
                    m.check,
                    m.seed,
                    m.index,
                    m.event.map_or(String::new(), |e| format!(" event {e}")),
                    m.seed,
                    m.index,
                    m.detail
                );
            }
        }
        ok && unexpected.is_empty()
    }
}

fn main() {
    let mut files = Vec::new();
    let mut known_path = "tests/subscriptions/known-differences.json".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--known" {
            known_path = args.next().expect("--known needs a file");
        } else {
            files.push(a);
        }
    }
    assert!(
        !files.is_empty(),
        "usage: subscriptions_diff CASES.jsonl... [--known KNOWN.json]"
    );
    let known: Value = serde_json::from_str(
        &std::fs::read_to_string(&known_path).expect("the known-differences file"),
    )
    .expect("known differences: JSON");
    let known_ids: BTreeMap<String, String> = known["differences"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            (
                d["id"].as_str().unwrap_or_default().to_owned(),
                d["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let mut report = Report::default();
    for path in &files {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in std::io::BufReader::new(file).lines() {
            let line = line.expect("a line");
            if line.trim().is_empty() {
                continue;
            }
            let case: Value = serde_json::from_str(&line).expect("a case: JSON");
            report.case(&case);
        }
    }
    if !report.print(&known_ids) {
        std::process::exit(1);
    }
}
