//! The lane's rules, one per test (no network: a lane without an I/O engine counts its
//! requests out and sends nothing; one test records them).

use super::*;
use crate::delivery::batch::RequestLimit;
use crate::delivery::job::Batch;
use crate::model::outcome::Reason;
use crate::wire::ingestion::{Element, MAX_BATCH_BYTES};
use crate::wire::message_id::MsgId;
use crate::wire::Body;
use crossbeam_channel::Receiver;

fn lane(cap: usize) -> (Lane, Receiver<Report>) {
    lane_in(cap, Box::leak(Box::new(Budget::new(4096))), None)
}

/// A client with one webhook, its lanes drawing their places from `budget` and sending into
/// `out` (none: sending nothing).
fn delivery(budget: &'static Budget, out: Option<HooksOut>) -> (crate::Config, Arc<Delivery>) {
    let config = crate::Config {
        webhooks: vec![crate::Webhook::new("http://127.0.0.1:9/x?token=secret")].into(),
        ..Default::default()
    };
    let headers = config.check_webhooks().unwrap();
    let delivery = Arc::new(Delivery {
        ingestion: None,
        hooks: Hooks::new(&config, headers),
        logger: Logger::new(Some(false), None),
        budget,
        policy: RetryPolicy::default(),
        hooks_out: out,
        batches_out: None,
    });
    (config, delivery)
}

/// A lane drawing its places from `budget`, sending into `out` (none: sending nothing).
fn lane_in(cap: usize, budget: &'static Budget, out: Option<HooksOut>) -> (Lane, Receiver<Report>) {
    let (config, delivery) = delivery(budget, out);
    let (tx, rx) = crossbeam_channel::unbounded();
    let lane = Lane::new(
        0,
        1,
        "test".into(),
        delivery,
        tx,
        1,
        cap,
        RequestLimit::of(&config),
        None,
    );
    (lane, rx)
}

fn hook(seq: u64) -> Job {
    Job::Hook {
        seq,
        id: MsgId::Own(Arc::from("m")),
        body: Body::from_static(b"{}"),
        first: true,
    }
}

fn fail() -> Attempt {
    Attempt::Retryable {
        reason: crate::Reason::Status(503),
        detail: "status 503".into(),
        retry_after: None,
    }
}

#[test]
fn take_respects_the_in_flight_cap() {
    let (mut l, _rx) = lane(2);
    let now = Instant::now();
    for i in 0..3 {
        l.push(hook(i));
    }
    for _ in 0..2 {
        let j = l.take(now).unwrap();
        l.requests.busy += 1; // as `start` would, without sending
        drop(j);
    }
    assert!(l.take(now).is_none(), "third request over the cap of 2");
    l.finished(&Attempt::Success, now, now);
    assert!(l.take(now).is_some());
}

#[test]
fn a_run_of_failures_holds_the_lane_to_one_probe() {
    let (mut l, _rx) = lane(100);
    let now = Instant::now();
    for i in 0..50 {
        l.push(hook(i));
    }
    for _ in 0..TRIP_AFTER {
        l.requests.busy += 1;
        l.finished(&fail(), now, now);
    }
    assert!(l.is_down());
    assert!(l.take(now).is_none(), "nothing while down");
    let probe_at = l.wake_at(now).unwrap();
    assert!(probe_at > now && probe_at <= now + RetryPolicy::default().base);
    let skipped = l.take(probe_at);
    assert!(skipped.is_some(), "one probe when the wait is over");
    drop(skipped); // its message settled meanwhile: never started
    let probe = l
        .take(probe_at)
        .expect("a skip does not use up the probe's turn");
    assert!(l.make_room());
    l.start(probe, now);
    assert!(l.take(probe_at).is_none(), "only one probe at a time");
    l.finished(&fail(), probe_at, probe_at);
    let next = l.wake_at(now).unwrap();
    assert!(
        next - probe_at >= RetryPolicy::default().base / 2,
        "backoff grows"
    );
    let probe = l.take(next).unwrap();
    assert!(l.make_room());
    l.start(probe, now);
    l.finished(&Attempt::Success, next, next);
    assert!(!l.is_down());
    assert!(
        l.take(next).is_some() && l.take(next).is_some(),
        "flows again"
    );
}

#[test]
fn successes_between_failures_keep_the_lane_up() {
    let (mut l, _rx) = lane(100);
    let now = Instant::now();
    for round in 0..100 {
        l.requests.busy += 1;
        if round % 10 == 9 {
            l.finished(&Attempt::Success, now, now);
        } else {
            l.finished(&fail(), now, now);
        }
    }
    assert!(!l.is_down());
}

#[test]
fn a_burst_of_timeouts_beside_successes_does_not_hold_the_lane() {
    let (mut l, _rx) = lane(100);
    let now = Instant::now();
    l.requests.busy += 1;
    l.finished(&Attempt::Success, now, now);
    for _ in 0..(TRIP_AFTER * 5) {
        l.requests.busy += 1;
        l.finished(&fail(), now + TRIP_QUIET / 2, now + TRIP_QUIET / 2);
    }
    assert!(
        !l.is_down(),
        "a success half a second ago: the receiver answers"
    );
    l.requests.busy += 1;
    l.finished(&fail(), now + TRIP_QUIET, now + TRIP_QUIET);
    assert!(l.is_down(), "nothing but failures for a whole second");
}

#[test]
fn retry_after_pauses_the_lane() {
    let (mut l, _rx) = lane(100);
    let now = Instant::now();
    l.push(hook(1));
    l.requests.busy += 1;
    l.finished(
        &Attempt::Retryable {
            reason: crate::Reason::Status(429),
            detail: "status 429".into(),
            retry_after: Some(Duration::from_secs(3)),
        },
        now,
        now,
    );
    assert!(l.take(now + Duration::from_secs(2)).is_none());
    assert_eq!(l.wake_at(now), Some(now + Duration::from_secs(3)));
    assert!(l.take(now + Duration::from_secs(3)).is_some());
}

/// What [`Lane::start`] does to the counts: true when the lane let a request go.
fn start(l: &mut Lane, at: Instant) -> bool {
    match l.take(at) {
        Some(_) => {
            l.requests.busy += 1;
            *l.requests.out.entry(at).or_default() += 1;
            true
        }
        None => false,
    }
}

/// Starts requests at `at` until the lane holds back; how many it started.
fn burst(l: &mut Lane, at: Instant) -> usize {
    std::iter::from_fn(|| start(l, at).then_some(())).count()
}

fn batch(seq: u64) -> Job {
    let msgs = vec![(seq, Element::own(Body::from_static(b"{}")))];
    Job::Batch(Batch::new(msgs, None, 0))
}

fn carried(job: &Job) -> usize {
    match job {
        Job::Batch(b) => b.msgs.len(),
        _ => 1,
    }
}

fn sized_batch(seq: u64, bytes: usize, attempts: u32) -> Job {
    let msgs = vec![(seq, Element::own(Body::from(vec![b'1'; bytes])))];
    Job::Batch(Batch::new(msgs, None, attempts))
}

/// A lane whose client set `max_batch_messages` high (joining on).
const JOINING: RequestLimit = RequestLimit { messages: 100_000 };

#[test]
fn by_default_full_batches_go_out_at_once_behind_a_young_request() {
    let (mut l, _rx) = lane(100);
    l.limit = RequestLimit { messages: 1 }; // flush_at 1, max_batch_messages unset
    let now = Instant::now();
    l.health.last_answer = Some(now);
    l.push(batch(0));
    let job = l.take(now).unwrap();
    assert!(l.make_room());
    l.start(job, now);
    for i in 1..4 {
        l.push(batch(i));
    }
    assert_eq!(
        l.fill_room(now),
        None,
        "a full request has nothing to wait for"
    );
    for _ in 1..4 {
        let job = l.take(now).expect("not held by the young request");
        assert_eq!(carried(&job), 1, "one message per request");
        assert!(l.make_room());
        l.start(job, now);
    }
}

#[test]
fn batches_fill_one_request_while_a_young_one_is_out() {
    let (mut l, _rx) = lane(100);
    l.limit = JOINING;
    let now = Instant::now();
    l.health.last_answer = Some(now); // a receiver that answers
    for i in 0..40 {
        l.push(batch(i));
    }
    // What waits goes in one request.
    let job = l.take(now).unwrap();
    assert_eq!(carried(&job), 40);
    assert!(l.make_room());
    l.start(job, now);
    // While it is young, new batches that fit in one request wait for it...
    for i in 40..60 {
        l.push(batch(i));
    }
    assert!(l.take(now).is_none(), "held while the request out is young");
    let turns = now + SLOW_AFTER;
    // What the next request could still take (the scheduler's room), until it turns.
    assert_eq!(
        l.fill_room(now),
        Some((
            crate::delivery::batch::Room {
                messages: JOINING.messages - 20,
                bytes: MAX_BATCH_BYTES - crate::wire::ingestion::body_len(20, 40)
            },
            turns
        ))
    );
    assert_eq!(
        l.fill_room(turns),
        None,
        "no room once the request out is slow"
    );
    assert_eq!(
        l.wake_at(now),
        Some(turns),
        "the clock wakes the lane when it turns slow"
    );
    // ...and go out together once it came back.
    l.finished(&Attempt::Success, now, now);
    let job = l.take(now).unwrap();
    assert_eq!(carried(&job), 20);
    assert!(l.make_room());
    l.start(job, now);

    // A request out for SLOW_AFTER holds nothing back (a stalled request delays nobody).
    l.push(batch(60));
    assert!(l.take(now + SLOW_AFTER / 2).is_none());
    let job = l.take(turns).expect("the request out turned slow");
    assert_eq!(carried(&job), 1);
    assert!(l.make_room());
    l.start(job, turns);

    // More than one request's worth waiting: a full request starts at once, the rest waits.
    let big = MAX_BATCH_BYTES / 4;
    for i in 0..6 {
        l.push(sized_batch(100 + i, big, 0));
    }
    let job = l.take(turns).expect("more than one request waits");
    assert_eq!(carried(&job), 3, "one request's worth");
    assert!(l.make_room());
    l.start(job, turns);
    assert!(
        l.take(turns).is_none(),
        "what is left fits in one: it waits"
    );

    // A retry keeps its own request and is not held.
    let (mut l, _rx) = lane(100);
    l.limit = JOINING;
    l.health.last_answer = Some(now);
    l.push(batch(1));
    let job = l.take(now).unwrap();
    assert!(l.make_room());
    l.start(job, now);
    l.push(sized_batch(2, 10, 1));
    l.push(batch(3));
    let job = l.take(now).expect("a retry is not held by the fill rule");
    assert_eq!(carried(&job), 1);
}

#[test]
fn a_lane_starts_requests_beyond_brisk_only_while_requests_out_are_slow() {
    let (mut l, _rx) = lane(100);
    let now = Instant::now();
    for i in 0..40 {
        l.push(hook(i));
    }
    let n = burst(&mut l, now);
    assert_eq!(
        n, SILENT,
        "before any answer a burst starts SILENT requests, not one per waiting request"
    );
    assert_eq!(
        l.wake_at(now),
        None,
        "nothing answered yet: the next answer wakes the scheduler, not the clock"
    );
    // One comes back quickly: the receiver answers, so the lane goes up to BRISK.
    l.finished(&Attempt::Success, now, now);
    assert_eq!(burst(&mut l, now), BRISK - (SILENT - 1));
    assert_eq!(l.requests.busy, BRISK);
    assert!(!start(&mut l, now), "BRISK out, none slow");
    assert_eq!(
        l.wake_at(now),
        Some(now + SLOW_AFTER),
        "answered around: the lane looks again when they turn slow"
    );
    // Those requests are now slow (a stalling receiver): room for BRISK more.
    let later = now + SLOW_AFTER;
    let more = burst(&mut l, later);
    assert_eq!(more, BRISK);
    assert_eq!(l.requests.busy, 2 * BRISK);
    // The slow ones come back: the brisk ones hold the lane at BRISK again.
    for _ in 0..BRISK {
        l.finished(&Attempt::Success, now, later);
    }
    assert!(
        !start(&mut l, later),
        "BRISK brisk requests out: no new request"
    );
}

#[test]
fn lanes_with_work_share_brisk_at_least_silent_each() {
    let lanes = |n: usize| (0..n).map(|_| lane(100).0).collect::<Vec<_>>();
    let mut ls = lanes(6);
    share_brisk(&mut ls);
    assert!(
        ls.iter().all(|l| l.requests.share == BRISK),
        "no work: a lane alone"
    );
    ls[2].push(hook(1));
    share_brisk(&mut ls);
    assert!(
        ls.iter().all(|l| l.requests.share == BRISK),
        "one lane with work has it all"
    );
    ls[4].requests.busy = 1;
    share_brisk(&mut ls);
    assert!(ls.iter().all(|l| l.requests.share == BRISK / 2));
    for l in &mut ls {
        l.requests.busy = 1;
    }
    share_brisk(&mut ls);
    assert!(
        ls.iter().all(|l| l.requests.share == SILENT),
        "never below SILENT"
    );
    // The share is what an answering lane holds to.
    let (mut l, _rx) = lane(100);
    l.health.last_answer = Some(Instant::now());
    l.requests.share = SILENT;
    for i in 0..40 {
        l.push(hook(i));
    }
    assert_eq!(burst(&mut l, Instant::now()), SILENT);
}

#[test]
fn a_receiver_that_answers_nothing_gets_silent_requests_and_no_more() {
    let (mut l, _rx) = lane(100);
    let now = Instant::now();
    for i in 0..40 {
        l.push(hook(i));
    }
    let n = burst(&mut l, now);
    assert_eq!(n, SILENT);
    // Long past SLOW_AFTER, still no answer: a hung receiver or a black hole.
    let later = now + Duration::from_secs(2);
    assert!(
        !start(&mut l, later),
        "no answer since they left: no more requests"
    );
    assert_eq!(
        l.wake_at(later),
        None,
        "an answer, not the clock, opens the lane"
    );
    // A timeout is no answer either.
    let timeout = Attempt::Retryable {
        reason: Reason::Timeout,
        detail: "timed out".into(),
        retry_after: None,
    };
    l.finished(&timeout, now, later);
    assert!(start(&mut l, later), "its place goes to the next request");
    assert!(!start(&mut l, later), "and the lane stays at SILENT");
    // Any answer (a 503 here) shows the receiver alive: the requests that left before it
    // count as slow and make room.
    let answer = Attempt::Retryable {
        reason: Reason::Status(503),
        detail: "503".into(),
        retry_after: None,
    };
    let answered = later + Duration::from_millis(1);
    l.finished(&answer, now, answered);
    let more = burst(&mut l, answered);
    // One request left after the timeout and is still young: BRISK - 1 more.
    assert_eq!(
        more,
        BRISK - 1,
        "BRISK moving again, beside the stalled ones"
    );
}

/// Starts every request the lane lets go now; how many.
fn start_all(l: &mut Lane, now: Instant) -> usize {
    let mut n = 0;
    while let Some(job) = l.take(now) {
        if !l.make_room() {
            l.push_front(job);
            break;
        }
        l.start(job, now);
        n += 1;
    }
    n
}

#[test]
fn lanes_stop_at_the_process_s_budget_of_requests_and_share_it() {
    let io = crate::http::io::Io::start(1, "outbound-test").unwrap();
    let recorder = Arc::new(crate::http::recorder::Recorder::default());
    let out = || {
        let config =
            crate::Config::default().webhooks(vec![crate::Webhook::new("http://127.0.0.1:9/x")]);
        let exchange =
            crate::http::exchange::Exchange::webhooks(&config, &io, Some(&recorder)).unwrap();
        Some(HooksOut {
            io: io.handle(),
            exchange,
        })
    };
    let budget: &'static Budget = Box::leak(Box::new(Budget::new(3)));
    let (mut a, rx_a) = lane_in(100, budget, out());
    let (mut b, rx_b) = lane_in(100, budget, out());
    a.health.last_answer = Some(Instant::now());
    let now = Instant::now();
    for i in 0..10 {
        a.push(hook(i));
        b.push(hook(i));
    }
    assert_eq!(start_all(&mut a, now), 3, "the budget is 3 requests");
    assert_eq!(
        start_all(&mut b, now),
        1,
        "a lane's first request is never refused"
    );
    // Recorded (the record answers 200): each answer gives its place back.
    for (l, rx, n) in [(&mut a, &rx_a, 3), (&mut b, &rx_b, 1)] {
        for _ in 0..n {
            let r = rx.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(r.attempt, Attempt::Success);
            l.finished(&r.attempt, r.started, now);
        }
    }
    assert_eq!(budget.live(), 0, "every place given back");
    assert_eq!(recorder.requests.lock().unwrap().len(), 4);
    assert_eq!(
        start_all(&mut b, now),
        3,
        "alone, a lane may hold the whole budget"
    );
    assert_eq!(start_all(&mut a, now), 1, "and the other still moves");
}

#[test]
fn a_tenant_s_lanes_are_made_at_their_destination_s_first_request() {
    let (config, delivery) = delivery(Box::leak(Box::new(Budget::new(4096))), None);
    let (tx, _rx) = crossbeam_channel::unbounded();
    let mut lanes = Lanes::new(7, &config, delivery, tx);
    // Ingestion and the webhook: counted, labelled, neither made.
    assert_eq!(lanes.len(), 2);
    assert_eq!(lanes.iter().count(), 0);
    assert!(lanes.get(1).is_none());
    assert_eq!(&*lanes.label(0), "ingestion");
    let hook_label = lanes.label(1);
    assert!(!hook_label.contains("secret"), "{hook_label}");
    lanes.share_brisk();
    assert_eq!(lanes.iter().count(), 0, "sharing makes no lane");
    // The webhook's first request makes its lane, with its label; ingestion stays unmade.
    lanes.at(1).push(hook(1));
    assert_eq!(lanes.iter().count(), 1);
    assert!(lanes.get(0).is_none());
    assert_eq!(lanes.get(1).unwrap().label, hook_label);
    let taken = lanes.at(1).take(Instant::now());
    assert!(matches!(taken, Some(Job::Hook { seq: 1, .. })));
}
