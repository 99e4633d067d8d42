//! Audience and computed-trait sync: a real client delivering to a
//! real webhook receiver on 127.0.0.1, counting the identify calls that arrive.

use outbound::{json, AudienceSync, Client, Config, Error, Value, Webhook};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[path = "../examples/support/receiver.rs"]
mod endpoint;

const WAIT: Duration = Duration::from_secs(10);

/// A webhook receiver: records each JSON body, then answers 200 (or never, when hanging).
struct Receiver {
    port: u16,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    fn start() -> Receiver {
        Receiver::spawn(true)
    }

    /// Reads requests and never answers them, so the client's queue stays full.
    fn hanging() -> Receiver {
        Receiver::spawn(false)
    }

    fn spawn(answer: bool) -> Receiver {
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let shared = bodies.clone();
        let on_body = move |body: &[u8]| {
            let body = serde_json::from_slice(body).unwrap();
            shared.lock().unwrap().push(body);
        };
        let port = if answer {
            endpoint::start(on_body)
        } else {
            endpoint::hanging(on_body)
        };
        Receiver { port, bodies }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/hook", self.port)
    }

    /// The identifies received since the last call, as (userId, traits), sorted by user.
    fn take(&self) -> Vec<(String, Value)> {
        let mut got: Vec<(String, Value)> = std::mem::take(&mut *self.bodies.lock().unwrap())
            .into_iter()
            .flat_map(|body| match body.get("batch") {
                // An ingestion body carries several messages.
                Some(Value::Array(batch)) => batch.clone(),
                _ => vec![body],
            })
            .map(|body| {
                assert_eq!(body["type"], "identify", "{body}");
                let user = body["userId"].as_str().expect("userId").to_string();
                (user, body["traits"].clone())
            })
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        got
    }
}

fn config(rx: &Receiver) -> Config {
    Config::default()
        .webhooks(vec![Webhook::new(rx.url())])
        .proxy_from_env(false)
        .debug(false)
}

fn client(rx: &Receiver) -> Client {
    Client::new(config(rx)).unwrap()
}

/// Waits until every accepted identify reached the receiver, then returns them.
fn delivered(client: &Client, rx: &Receiver) -> Vec<(String, Value)> {
    assert!(
        client.flush(Some(WAIT)),
        "not delivered: {:?}",
        client.stats()
    );
    rx.take()
}

fn sent(user: &str, traits: Value) -> (String, Value) {
    (user.to_string(), traits)
}

/// A state file path in a temporary directory of its own, removed when dropped.
struct StateFile(PathBuf);

impl StateFile {
    fn new(test: &str) -> StateFile {
        let dir = std::env::temp_dir().join(format!(
            "outbound-audience-{}-{test}-{}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        StateFile(dir.join("state.db"))
    }
}

impl std::ops::Deref for StateFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for StateFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.parent().unwrap());
    }
}

#[test]
fn first_sync_sends_true_for_every_member() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let counts = sync
        .sync_audience(&client, "High Value Users", ["u1", "u2", "u3"])
        .unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (3, 0, 0));
    let t = json!({"high_value_users": true});
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", t.clone()), sent("u2", t.clone()), sent("u3", t)]
    );
}

#[test]
fn later_sync_sends_false_for_leavers_true_for_joiners_and_nothing_for_the_rest() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_audience(&client, "High Value Users", ["u1", "u2", "u3"])
        .unwrap();
    delivered(&client, &rx);
    let counts = sync
        .sync_audience(&client, "High Value Users", ["u2", "u3", "u4"])
        .unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (1, 1, 2));
    assert_eq!(
        delivered(&client, &rx),
        vec![
            sent("u1", json!({"high_value_users": false})),
            sent("u4", json!({"high_value_users": true})),
        ]
    );
}

#[test]
fn unchanged_membership_sends_nothing() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_audience(&client, "Churn Risk", ["a", "b"])
        .unwrap();
    delivered(&client, &rx);
    let counts = sync
        .sync_audience(&client, "Churn Risk", ["b", "a"])
        .unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (0, 0, 2));
    assert_eq!(delivered(&client, &rx), vec![]);
}

#[test]
fn a_user_who_left_and_returns_is_sent_true_again() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let none: [&str; 0] = [];
    sync.sync_audience(&client, "Trial", ["u1"]).unwrap();
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", json!({"trial": true}))]
    );
    sync.sync_audience(&client, "Trial", none).unwrap();
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", json!({"trial": false}))]
    );
    sync.sync_audience(&client, "Trial", none).unwrap();
    assert_eq!(delivered(&client, &rx), vec![], "still out: nothing");
    sync.sync_audience(&client, "Trial", ["u1"]).unwrap();
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", json!({"trial": true}))]
    );
}

#[test]
fn duplicate_members_count_once() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let counts = sync
        .sync_audience(&client, "VIP", ["u1", "u1", "u2"])
        .unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (2, 0, 0));
    assert_eq!(delivered(&client, &rx).len(), 2);
}

#[test]
fn audiences_are_synced_independently() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_audience(&client, "A", ["u1"]).unwrap();
    sync.sync_audience(&client, "B", ["u2"]).unwrap();
    delivered(&client, &rx);
    let counts = sync.sync_audience(&client, "A", ["u1"]).unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (0, 0, 1));
    assert_eq!(delivered(&client, &rx), vec![]);
}

#[test]
fn trait_name_is_the_snake_cased_audience_name() {
    assert_eq!(
        outbound::trait_key("High Value Users").unwrap(),
        "high_value_users"
    );
    // heck splits "VIPs" at the lower→upper boundary inside the acronym: "VI" + "Ps".
    assert_eq!(outbound::trait_key("VIPs2024 Q1").unwrap(), "vi_ps2024_q1");
    assert_eq!(outbound::trait_key("VIP 2024 Q1").unwrap(), "vip_2024_q1");
    assert_eq!(
        outbound::trait_key("already_snake").unwrap(),
        "already_snake"
    );

    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_audience(&client, "VIPs2024 Q1", ["u1"]).unwrap();
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", json!({"vi_ps2024_q1": true}))]
    );
}

#[test]
fn names_with_the_same_snake_case_are_one_audience() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_audience(&client, "High Value Users", ["u1"])
        .unwrap();
    let counts = sync
        .sync_audience(&client, "high value users", ["u1"])
        .unwrap();
    assert_eq!((counts.joined, counts.unchanged), (0, 1));
}

#[test]
fn empty_audience_name_is_refused() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let err = sync.sync_audience(&client, "", ["u1"]).unwrap_err();
    assert_eq!(err.to_string(), "invalid audience name: must not be empty");
    assert!(matches!(err, Error::InvalidField { .. }));
}

#[test]
fn audience_name_without_letters_or_digits_is_refused() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let err = sync.sync_audience(&client, "!! --", ["u1"]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid audience name: \"!! --\" has no letters or digits to make a trait name of"
    );
}

#[test]
fn empty_member_id_is_refused_by_position_and_nothing_is_sent_or_saved() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let err = sync.sync_audience(&client, "VIP", ["u1", ""]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid members[1]: user id must not be empty"
    );
    assert_eq!(delivered(&client, &rx), vec![]);
    let counts = sync.sync_audience(&client, "VIP", ["u1"]).unwrap();
    assert_eq!(counts.joined, 1, "the refused sync saved nothing");
}

#[test]
fn state_survives_reopening_the_same_path() {
    let rx = Receiver::start();
    let client = client(&rx);
    let path = StateFile::new("reopen");
    {
        let mut sync = AudienceSync::open(&*path).unwrap();
        sync.sync_audience(&client, "VIP", ["u1", "u2"]).unwrap();
        sync.sync_trait(&client, "LTV", [("u1", json!(10))])
            .unwrap();
    }
    delivered(&client, &rx);
    let mut sync = AudienceSync::open(&*path).unwrap();
    let counts = sync.sync_audience(&client, "VIP", ["u2", "u3"]).unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (1, 1, 1));
    let traits = sync
        .sync_trait(&client, "LTV", [("u1", json!(10))])
        .unwrap();
    assert_eq!((traits.set, traits.unchanged), (0, 1));
    assert_eq!(
        delivered(&client, &rx),
        vec![
            sent("u1", json!({"vip": false})),
            sent("u3", json!({"vip": true}))
        ]
    );
}

#[test]
fn in_memory_state_belongs_to_one_object() {
    let rx = Receiver::start();
    let client = client(&rx);
    AudienceSync::in_memory()
        .unwrap()
        .sync_audience(&client, "VIP", ["u1"])
        .unwrap();
    let counts = AudienceSync::new(None)
        .unwrap()
        .sync_audience(&client, "VIP", ["u1"])
        .unwrap();
    assert_eq!(counts.joined, 1);
}

#[test]
fn dropping_an_uncommitted_sync_re_emits_its_changes_next_time() {
    let rx = Receiver::start();
    let client = client(&rx);
    let path = StateFile::new("drop");
    let mut sync = AudienceSync::open(&*path).unwrap();
    sync.sync_audience(&client, "VIP", ["u1", "u2"]).unwrap();
    delivered(&client, &rx);

    let pending = sync.emit_audience(&client, "VIP", ["u2", "u3"]).unwrap();
    assert_eq!(pending.counts().joined, 1);
    drop(pending); // what a crash between emit and commit leaves
    let expected = vec![
        sent("u1", json!({"vip": false})),
        sent("u3", json!({"vip": true})),
    ];
    assert_eq!(delivered(&client, &rx), expected);

    drop(sync);
    let mut sync = AudienceSync::open(&*path).unwrap();
    let counts = sync.sync_audience(&client, "VIP", ["u2", "u3"]).unwrap();
    assert_eq!((counts.joined, counts.left), (1, 1));
    assert_eq!(delivered(&client, &rx), expected, "sent again, not lost");
    let counts = sync.sync_audience(&client, "VIP", ["u2", "u3"]).unwrap();
    assert_eq!((counts.joined, counts.left), (0, 0), "committed this time");
}

/// Env var that turns `crash_child` into the crashing process.
const CRASH_ENV: &str = "OUTBOUND_AUDIENCE_CRASH_CHILD";

#[test]
fn crash_between_emit_and_commit_re_emits_on_next_sync() {
    let rx = Receiver::start();
    let client = client(&rx);
    let path = StateFile::new("crash");
    AudienceSync::open(&*path)
        .unwrap()
        .sync_audience(&client, "VIP", ["u1", "u2"])
        .unwrap();
    delivered(&client, &rx);

    // A separate process emits [u2, u3], sees it delivered, and aborts before committing.
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_ENV, format!("{}|{}", rx.url(), path.display()))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child must die before committing");
    let expected = vec![
        sent("u1", json!({"vip": false})),
        sent("u3", json!({"vip": true})),
    ];
    assert_eq!(rx.take(), expected, "the child emitted the changes");

    let mut sync = AudienceSync::open(&*path).unwrap();
    let counts = sync.sync_audience(&client, "VIP", ["u2", "u3"]).unwrap();
    assert_eq!((counts.joined, counts.left, counts.unchanged), (1, 1, 1));
    assert_eq!(
        delivered(&client, &rx),
        expected,
        "emitted again after the crash"
    );
}

#[test]
#[ignore = "the crashing process of crash_between_emit_and_commit_re_emits_on_next_sync"]
fn crash_child() {
    let Ok(arg) = std::env::var(CRASH_ENV) else {
        return;
    };
    let (url, path) = arg.split_once('|').unwrap();
    let client = Client::new(
        Config::default()
            .webhooks(vec![Webhook::new(url)])
            .proxy_from_env(false)
            .debug(false),
    )
    .unwrap();
    let mut sync = AudienceSync::open(path).unwrap();
    let _pending = sync.emit_audience(&client, "VIP", ["u2", "u3"]).unwrap();
    assert!(client.flush(Some(WAIT)));
    std::process::abort(); // no commit, no destructors: a crash
}

#[test]
fn queue_full_mid_sync_returns_the_error_and_saves_nothing() {
    let stuck = Receiver::hanging();
    let stuck_client = Client::new(
        config(&stuck)
            .max_queue_size(2)
            .timeout(Duration::from_secs(30)),
    )
    .unwrap();
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.set_queue_wait(Duration::from_millis(100));
    let err = sync
        .sync_audience(&stuck_client, "VIP", ["u1", "u2", "u3", "u4"])
        .unwrap_err();
    assert_eq!(err, Error::QueueFull { capacity: 2 });

    let rx = Receiver::start();
    let client = client(&rx);
    let counts = sync
        .sync_audience(&client, "VIP", ["u1", "u2", "u3", "u4"])
        .unwrap();
    assert_eq!(counts.joined, 4, "the failed sync saved nothing");
    assert_eq!(delivered(&client, &rx).len(), 4);
    std::mem::forget(stuck_client); // its requests never end; do not wait for them
}

#[test]
fn closed_client_returns_closed_and_saves_nothing() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let closed = Client::new(config(&rx)).unwrap();
    closed.close(None).unwrap();
    let err = sync.sync_audience(&closed, "VIP", ["u1"]).unwrap_err();
    assert_eq!(err, Error::Closed);
    let counts = sync.sync_audience(&client, "VIP", ["u1"]).unwrap();
    assert_eq!(counts.joined, 1);
}

#[test]
fn sync_larger_than_the_queue_waits_for_room_and_sends_everything() {
    let rx = Receiver::start();
    let client = Client::new(config(&rx).max_queue_size(5)).unwrap();
    let members: Vec<String> = (0..200).map(|i| format!("u{i:03}")).collect();
    let mut sync = AudienceSync::in_memory().unwrap();
    let counts = sync.sync_audience(&client, "VIP", &members).unwrap();
    assert_eq!(counts.joined, 200);
    assert_eq!(delivered(&client, &rx).len(), 200);
    assert_eq!(client.stats().queue_full, 0, "never hit the full queue");
}

#[test]
fn sync_closes_a_partial_batch_when_flush_at_exceeds_the_queue() {
    let rx = Receiver::start();
    let client = Client::new(
        config(&rx)
            .write_key("wk")
            .endpoint(format!("http://127.0.0.1:{}", rx.port))
            .webhooks(Vec::new())
            .flush_at(50)
            .flush_interval(Duration::from_secs(600))
            .max_queue_size(5),
    )
    .unwrap();
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.set_queue_wait(Duration::from_secs(5)); // far less than flush_interval
    let members: Vec<String> = (0..20).map(|i| format!("u{i:02}")).collect();
    let counts = sync.sync_audience(&client, "VIP", &members).unwrap();
    assert_eq!(counts.joined, 20);
    assert_eq!(delivered(&client, &rx).len(), 20);
}

#[test]
fn first_trait_sync_sends_every_value() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let counts = sync
        .sync_trait(
            &client,
            "Lifetime Value",
            [("u1", json!(120.5)), ("u2", json!("gold"))],
        )
        .unwrap();
    assert_eq!((counts.set, counts.cleared, counts.unchanged), (2, 0, 0));
    assert_eq!(
        delivered(&client, &rx),
        vec![
            sent("u1", json!({"lifetime_value": 120.5})),
            sent("u2", json!({"lifetime_value": "gold"})),
        ]
    );
}

#[test]
fn trait_sync_sends_only_new_and_changed_values() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_trait(&client, "ltv", [("u1", json!(1)), ("u2", json!(2))])
        .unwrap();
    delivered(&client, &rx);
    let values = std::collections::HashMap::from([
        ("u1".to_string(), json!(1)),
        ("u2".to_string(), json!(3)),
        ("u3".to_string(), json!([1, 2])),
    ]);
    let counts = sync.sync_trait(&client, "ltv", values).unwrap();
    assert_eq!((counts.set, counts.cleared, counts.unchanged), (2, 0, 1));
    assert_eq!(
        delivered(&client, &rx),
        vec![
            sent("u2", json!({"ltv": 3})),
            sent("u3", json!({"ltv": [1, 2]}))
        ]
    );
}

#[test]
fn user_absent_from_the_new_values_is_sent_null_then_forgotten() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_trait(&client, "ltv", [("u1", json!(1)), ("u2", json!(2))])
        .unwrap();
    delivered(&client, &rx);
    let counts = sync.sync_trait(&client, "ltv", [("u2", json!(2))]).unwrap();
    assert_eq!((counts.set, counts.cleared, counts.unchanged), (0, 1, 1));
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", json!({"ltv": null}))]
    );
    let counts = sync.sync_trait(&client, "ltv", [("u2", json!(2))]).unwrap();
    assert_eq!(counts.cleared, 0, "forgotten: not sent null twice");
    assert_eq!(delivered(&client, &rx), vec![]);
}

#[test]
fn null_value_counts_as_absent() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let counts = sync
        .sync_trait(&client, "ltv", [("u1", Value::Null)])
        .unwrap();
    assert_eq!((counts.set, counts.cleared, counts.unchanged), (0, 0, 0));
    sync.sync_trait(&client, "ltv", [("u1", json!(5))]).unwrap();
    delivered(&client, &rx);
    let counts = sync
        .sync_trait(&client, "ltv", [("u1", Value::Null)])
        .unwrap();
    assert_eq!(counts.cleared, 1);
    assert_eq!(
        delivered(&client, &rx),
        vec![sent("u1", json!({"ltv": null}))]
    );
}

#[test]
fn values_equal_as_a_receiver_reads_them_are_unchanged() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    sync.sync_trait(
        &client,
        "profile",
        [
            ("u1", json!(1)),
            ("u2", json!({"a": 1, "b": {"c": 2, "d": 3}})),
        ],
    )
    .unwrap();
    delivered(&client, &rx);
    let counts = sync
        .sync_trait(
            &client,
            "profile",
            [
                ("u1", json!(1.0)),
                ("u2", json!({"b": {"d": 3, "c": 2}, "a": 1})),
            ],
        )
        .unwrap();
    assert_eq!((counts.set, counts.unchanged), (0, 2));
    assert_eq!(delivered(&client, &rx), vec![]);
}

#[test]
fn empty_trait_user_id_is_refused() {
    let rx = Receiver::start();
    let client = client(&rx);
    let mut sync = AudienceSync::in_memory().unwrap();
    let err = sync
        .sync_trait(&client, "ltv", [("", json!(1))])
        .unwrap_err();
    assert_eq!(err.to_string(), "invalid values: user id must not be empty");
    let err = sync
        .sync_trait(&client, "", [("u1", json!(1))])
        .unwrap_err();
    assert_eq!(err.to_string(), "invalid trait name: must not be empty");
    assert_eq!(delivered(&client, &rx), vec![]);
}

#[test]
fn file_that_is_not_a_database_is_refused_naming_state_path() {
    let path = StateFile::new("garbage");
    std::fs::write(&*path, vec![b'x'; 4096]).unwrap();
    let err = AudienceSync::open(&*path).unwrap_err();
    assert!(
        matches!(&err, Error::Config { setting, .. } if setting == "state_path"),
        "{err}"
    );
}
