//! `outbound-relay check --config FILE`: the file checked as a start would check it, nothing
//! started; 0 when the relay would start, 2 when not, every error named by its place.

mod support;

fn check(dir: &std::path::Path, text: &str) -> (i32, String, String) {
    let path = dir.join("relay.toml");
    std::fs::write(&path, text).unwrap();
    let out = support::relay_command()
        .args(["check", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_sound_file_passes_with_its_warnings_and_nothing_is_started() {
    let dir = support::temp_dir();
    let (code, out, err) = check(
        dir.path(),
        "listen = \"127.0.0.1:1\"\ndata_dir = \"data\"\n[[sources]]\nname = \"web\"\n\
         write_keys = [\"wk\"]\n[[sources.webhooks]]\nurl = \"http://127.0.0.1:9/in\"\n",
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("relay.toml: ok (1 source in the file, 1 warning)"),
        "{out}"
    );
    assert!(
        err.contains("warning: ")
            && err.contains(
                "relay.toml: sources[0].webhooks[0] http://127.0.0.1:9/… can never be reached"
            ),
        "{err}"
    );
    assert!(!dir.path().join("data").exists(), "data_dir was created");
}

#[test]
fn every_error_is_named_by_its_place_and_the_exit_is_2() {
    let dir = support::temp_dir();
    let (code, out, err) = check(
        dir.path(),
        "listen = \"127.0.0.1:1\"\n[[sources]]\nname = \"web\"\nwrite_keys = [\"wk\"]\n\
         [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n\
         [[sources]]\nname = \"b\"\nwrite_keys = [\"wk_b\"]\ntimeout = -1\n\
         [[sources]]\nname = \"c\"\nwrite_keys = [\"wk\"]\n[[sources.webhooks]]\nurl = \"ftp://x\"\n",
    );
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.contains("3 errors: the relay would not start"), "{out}");
    for line in [
        "error: ",
        "relay.toml: sources[1].timeout: -1 is not a number of seconds",
        "relay.toml: sources[2].write_keys[0]: this write key is already a key of source \"web\"",
        "relay.toml: sources[2].webhooks[0].url: \"ftp://x\" must be an absolute",
    ] {
        assert!(err.contains(line), "{line:?} not in {err}");
    }
    // A file that is not TOML: its one error, named.
    let (code, _, err) = check(dir.path(), "listen = [\n");
    assert_eq!(code, 2);
    assert!(
        err.contains("error: ") && err.contains("relay.toml"),
        "{err}"
    );
    let (code, _, err) = check(dir.path(), "listen = \"127.0.0.1:1\"\nnope = 1\n");
    assert_eq!(code, 2);
    assert!(err.contains("unknown field `nope`"), "{err}");
    // A webhook's PEM files are read as a start would read them.
    let (code, _, err) = check(
        dir.path(),
        "listen = \"127.0.0.1:1\"\n[[sources]]\nname = \"web\"\nwrite_keys = [\"wk\"]\n\
         [[sources.webhooks]]\nurl = \"https://hooks.example.com/in\"\n\
         tls = { client_cert = \"/nonexistent/c.pem\", client_key = \"/nonexistent/k.pem\" }\n",
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("sources[0].webhooks[0].tls.client_cert: cannot read PEM file"),
        "{err}"
    );
}
