//! Fences on what a plugin process gets and may send: an allowlisted environment (a host secret
//! never reaches it), and a stdout flood that is not the protocol costs only the call in flight.
//! (Entry points that escape their directory: `tests/loading_plugins.rs`; line cap, stderr
//! flood and rate limit: `tests/external_faults.rs` and `host/src/external/stderr.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;

use serde_json::json;
use support::{faulty, load_user, two_tool_calls};

#[test]
fn a_plugin_gets_only_the_allowlisted_environment_and_never_a_host_secret() {
    let root = tempfile::tempdir().unwrap();
    // Run by the system python directly (not a shell shim that sets variables of its own).
    let dir = faulty(root.path(), "envy", "env", json!({}));
    let script = std::fs::read_to_string(dir.join("faulty.py")).unwrap();
    let direct = script.replacen("#!/usr/bin/env python3", "#!/usr/bin/python3", 1);
    std::fs::write(dir.join("envdump.py"), direct).unwrap();
    std::fs::set_permissions(
        dir.join("envdump.py"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let manifest = json!({"entry": "envdump.py", "args": ["env"]});
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["hooks", "list", "--plugins"])
        .arg(root.path())
        .arg("--workspace")
        .arg(root.path())
        .env("HOOKLINE_TEST_SECRET", "hunter2-api-key")
        .env("AWS_SECRET_ACCESS_KEY", "also-secret")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("env.json")).unwrap()).unwrap();
    let text = serde_json::to_string(&env).unwrap();
    assert!(
        !text.contains("hunter2") && !text.contains("also-secret"),
        "{text}"
    );
    assert!(
        !env.contains_key("HOOKLINE_TEST_SECRET") && !env.contains_key("AWS_SECRET_ACCESS_KEY")
    );
    // Exactly the allowlist, the host's own additions, and what python sets itself.
    let allowed = hookline::host::external::ALLOWED_ENV;
    let host_given = ["HOOKLINE_PLUGIN", "HOOKLINE_PROTOCOL", "LC_CTYPE"];
    for key in env.keys() {
        assert!(
            allowed.contains(&key.as_str()) || host_given.contains(&key.as_str()),
            "{key} leaked into the plugin"
        );
    }
    assert!(env.contains_key("PATH"), "PATH is allowlisted");
    assert_eq!(env["HOOKLINE_PLUGIN"], "envy");
}

#[actix_rt::test]
async fn a_stdout_flood_that_is_not_the_protocol_costs_only_the_call_in_flight() {
    let root = tempfile::tempdir().unwrap();
    faulty(root.path(), "a-flood", "flood", json!({}));
    faulty(root.path(), "z-last", "ok", json!({}));
    let report = load_user(root.path()).await;
    let (names, notes) = two_tool_calls(&report).await;
    assert_eq!(names, ["t-z-last", "t-a-flood-z-last"]);
    assert_eq!(
        notes,
        ["Plugin hook 'a-flood' tool-call was skipped: it wrote output that is not the protocol."]
    );
    report.shutdown().await;
}
