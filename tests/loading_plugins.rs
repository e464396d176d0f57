//! Loading plugins from disk: overlay, order, disabled, and every reason a directory is skipped
//! while the others load (SPEC L1 to L3).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use hookline::host::loading::{load, LoadOptions, PluginState, Source};
use serde_json::json;
use support::{faulty, load_user, texts};

fn names(report: &hookline::host::loading::LoadReport) -> Vec<String> {
    report.plugins.iter().map(|p| p.name().to_owned()).collect()
}

#[actix_rt::test]
async fn workspace_plugin_replaces_the_user_plugin_and_order_is_by_name_unless_pinned() {
    let user = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    faulty(user.path(), "beta", "ok", json!({}));
    faulty(user.path(), "alpha", "ok", json!({}));
    faulty(
        workspace.path(),
        "beta",
        "ok",
        json!({"description": "workspace copy"}),
    );
    faulty(workspace.path(), "gamma", "ok", json!({}));
    let mut options = LoadOptions::new(Some(user.path().into()), Some(workspace.path().into()));
    // Workspace plugins run only once trusted (see tests/loading_trust.rs).
    let home = tempfile::tempdir().unwrap();
    options.trust_file = Some(home.path().join("trust.json"));
    for name in ["beta", "gamma"] {
        let dir = workspace.path().join(name);
        let manifest = hookline::host::loading::Manifest::read(&dir).unwrap();
        let hash = hookline::host::loading::trust::fingerprint(&dir, &manifest).unwrap();
        hookline::host::loading::trust::TrustFile::trust(
            &home.path().join("trust.json"),
            &dir,
            hash,
        )
        .unwrap();
    }
    let report = load(&options).await;
    assert_eq!(names(&report), ["alpha", "beta", "gamma"]);
    let beta = &report.statuses[1];
    assert_eq!(beta.source, Source::Workspace);
    assert_eq!(beta.description.as_deref(), Some("workspace copy"));
    assert_eq!(
        beta.replaces.as_deref(),
        Some(user.path().join("beta").as_path())
    );
    report.shutdown().await;
    options.pinned_order = vec!["gamma".into(), "alpha".into()];
    let pinned = load(&options).await;
    assert_eq!(names(&pinned), ["gamma", "alpha", "beta"]);
    pinned.shutdown().await;
}

#[actix_rt::test]
async fn a_pinned_name_no_directory_has_is_a_note_and_the_order_goes_on() {
    let root = tempfile::tempdir().unwrap();
    faulty(root.path(), "alpha", "ok", json!({}));
    faulty(root.path(), "beta", "ok", json!({}));
    let mut options = LoadOptions::new(Some(root.path().into()), None);
    options.pinned_order = vec!["beta".into(), "gone".into()];
    let report = load(&options).await;
    assert_eq!(names(&report), ["beta", "alpha"]);
    assert_eq!(
        texts(&report.notes),
        ["The load order names plugin 'gone', but no plugin directory has that name; it was left out of the order."]
    );
    report.shutdown().await;
}

#[actix_rt::test]
async fn disabled_plugins_do_not_start() {
    let root = tempfile::tempdir().unwrap();
    faulty(root.path(), "off", "ok", json!({"enabled": false}));
    faulty(root.path(), "on", "ok", json!({}));
    let report = load_user(root.path()).await;
    assert_eq!(names(&report), ["on"]);
    assert_eq!(report.statuses[0].state, PluginState::Disabled);
    assert!(!root.path().join("off/transcript.log").exists());
    assert!(report.notes.is_empty());
    report.shutdown().await;
}

#[actix_rt::test]
async fn each_broken_plugin_is_skipped_with_a_note_naming_its_directory_and_the_others_load() {
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    faulty(r, "a-good", "ok", json!({}));
    std::fs::create_dir(r.join("b-no-manifest")).unwrap();
    faulty(r, "c-invalid", "ok", json!({}));
    std::fs::write(r.join("c-invalid/plugin.json"), "{\"enabled\": true}").unwrap();
    faulty(r, "d-escape", "ok", json!({"entry": "../a-good/faulty.py"}));
    faulty(
        r,
        "e-absolute",
        "ok",
        json!({"entry": "/usr/bin/python3", "interpreter": null}),
    );
    faulty(r, "f-symlink", "ok", json!({"entry": "link.py"}));
    std::os::unix::fs::symlink(r.join("a-good/faulty.py"), r.join("f-symlink/link.py")).unwrap();
    faulty(r, "g-interp", "ok", json!({"interpreter": "bash"}));
    faulty(r, "hookline-host", "ok", json!({}));
    faulty(r, "i-dup", "ok", json!({"name": "a-good"}));
    faulty(r, "j-version", "bad-version", json!({}));
    faulty(
        r,
        "k-no-hello",
        "no-hello",
        json!({"hello_timeout_ms": 300}),
    );
    faulty(r, "l-exit", "exit-at-start", json!({}));
    faulty(r, "z-good", "ok", json!({}));
    let mut options = LoadOptions::new(Some(r.into()), None);
    options.hello_timeout = None;
    let report = load(&options).await;
    assert_eq!(names(&report), ["a-good", "z-good"]);
    let dir = |name: &str| r.join(name).display().to_string();
    let expected = [
        format!("Plugin directory '{}' was skipped: it has no plugin.json.", dir("b-no-manifest")),
        format!("Plugin directory '{}' was skipped: its plugin.json is invalid: missing field `entry` at line 1 column 17.", dir("c-invalid")),
        format!("Plugin directory '{}' was skipped: its entry point '../a-good/faulty.py' is outside the plugin directory.", dir("d-escape")),
        format!("Plugin directory '{}' was skipped: its entry point '/usr/bin/python3' is outside the plugin directory.", dir("e-absolute")),
        format!("Plugin directory '{}' was skipped: its entry point 'link.py' is outside the plugin directory.", dir("f-symlink")),
        format!("Plugin directory '{}' was skipped: its interpreter 'bash' is not allowed (allowed: python3, node).", dir("g-interp")),
        format!("Plugin directory '{}' was skipped: its name 'hookline-host' is reserved for the host.", dir("hookline-host")),
        format!("Plugin directory '{}' was skipped: its name 'a-good' is already used by the plugin in '{}'.", dir("i-dup"), dir("a-good")),
        format!("Plugin directory '{}' was skipped: it speaks protocol version 99, but this host speaks version 1.", dir("j-version")),
        format!("Plugin directory '{}' was skipped: it did not say hello within 300 ms.", dir("k-no-hello")),
        format!("Plugin directory '{}' was skipped: it exited before saying hello (-v shows what it wrote to its stderr).", dir("l-exit")),
    ];
    let mut got = texts(&report.notes);
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got, want);
    report.shutdown().await;
}

#[actix_rt::test]
async fn an_entry_point_with_a_reserved_name_is_refused_as_a_reserved_name() {
    let root = tempfile::tempdir().unwrap();
    let dir = faulty(
        root.path(),
        "sneaky",
        "ok",
        json!({"entry": "hookline", "interpreter": null}),
    );
    std::fs::copy(env!("CARGO_BIN_EXE_hookline"), dir.join("hookline")).unwrap();
    let report = load(&LoadOptions {
        hello_timeout: Some(Duration::from_secs(5)),
        ..LoadOptions::new(Some(root.path().into()), None)
    })
    .await;
    assert!(report.plugins.is_empty());
    assert_eq!(
        texts(&report.notes),
        [format!(
            "Plugin directory '{}' was skipped: its entry point 'hookline' has a name reserved for the host.",
            dir.display()
        )]
    );
}

/// Loads a plugin whose entry point `plugin-main` is made from the running binary by `make`.
async fn host_binary_under_another_name(make: fn(&Path, &Path) -> std::io::Result<()>) {
    // Beside the target directory, so a hard link stays on one file system.
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = faulty(
        root.path(),
        "sneaky",
        "ok",
        json!({"entry": "plugin-main", "interpreter": null}),
    );
    make(&std::env::current_exe().unwrap(), &dir.join("plugin-main")).unwrap();
    let report = load(&LoadOptions {
        hello_timeout: Some(Duration::from_secs(5)),
        ..LoadOptions::new(Some(root.path().into()), None)
    })
    .await;
    assert!(report.plugins.is_empty());
    assert_eq!(
        texts(&report.notes),
        [format!(
            "Plugin directory '{}' was skipped: its entry point 'plugin-main' is the host itself, which plugins cannot load.",
            dir.display()
        )]
    );
}

// Issue 15 defect 5: the host is recognised by file identity, not by its name.
#[actix_rt::test]
async fn a_hard_link_to_the_host_binary_is_refused_as_the_host() {
    host_binary_under_another_name(|from, to| std::fs::hard_link(from, to)).await;
}

// Issue 15 defect 5: ... and by content.
#[actix_rt::test]
async fn a_copy_of_the_host_binary_is_refused_as_the_host() {
    host_binary_under_another_name(|from, to| std::fs::copy(from, to).map(drop)).await;
}
