//! Embedding the host without traps (issue 15): a plugin on disk named like an in-process plugin
//! is skipped with a note instead of stopping the host (defect 2, SPEC L); every load note is
//! available as soon as the host starts; the stored records and archive are read through typed
//! accessors; a host without an operator says so when it denies a call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;
mod support;

use std::sync::Arc;

use hookline::actors::plugin::PluginRegistration;
use hookline::host::loading::LoadOptions;
use hookline::host::provider::ScriptedProvider;
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::session::ApprovalMode;
use host_support::{call, text};
use serde_json::json;
use support::{faulty, texts};

// Issue 15 defect 2.
#[actix_rt::test]
async fn a_disk_plugin_named_like_an_in_process_plugin_is_skipped_and_the_host_starts() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    let clash = faulty(&plugins, "guard", "ok", json!({}));
    faulty(&plugins, "other", "ok", json!({}));
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let host = Host::builder()
        .plugin(PluginRegistration::new("guard"))
        .load_plugins(&LoadOptions::new(Some(plugins.clone()), None))
        .await
        .workspace(dir.path().join("ws"))
        .spaces_root(dir.path())
        .start();
    let Ok(host) = host else {
        panic!("the host must start: {:?}", host.err());
    };
    let names: Vec<&str> = host.loaded_plugins().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["other"]);
    let expected = format!(
        "Plugin directory '{}' was skipped: its name 'guard' is already used by an in-process plugin.",
        clash.display()
    );
    assert!(
        texts(host.load_notes()).contains(&expected),
        "{:?}",
        texts(host.load_notes())
    );
    support::shut_down(host).await;
    assert!(
        !clash.join("transcript.log").exists() || {
            let log = std::fs::read_to_string(clash.join("transcript.log")).unwrap();
            !log.contains("\"hook\"")
        },
        "the skipped plugin never runs a hook"
    );
}

// Issue 15 trap: load notes only after open().
#[actix_rt::test]
async fn every_load_note_is_available_once_the_host_has_started() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(plugins.join("broken")).unwrap();
    faulty(&plugins, "typo", "ok", json!({}));
    std::fs::write(
        plugins.join("typo/plugin.json"),
        json!({"entry": "faulty.py", "interpreter": "python3", "args": ["ok"]}).to_string(),
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    let host = Host::builder()
        .load_plugins(&LoadOptions::new(Some(plugins.clone()), None))
        .await
        .workspace(dir.path().join("ws"))
        .spaces_root(dir.path())
        .start()
        .unwrap();
    let notes = texts(host.load_notes());
    assert_eq!(
        notes,
        [format!(
            "Plugin directory '{}' was skipped: it has no plugin.json.",
            plugins.join("broken").display()
        )]
    );
    support::shut_down(host).await;
}

// Issue 15 traps: typed records and archive; a host without an operator says why it denies.
#[actix_rt::test]
async fn records_and_archive_are_typed_and_a_missing_operator_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "hi").unwrap();
    let provider = ScriptedProvider::new(false);
    provider.push_replies(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        text("done"),
    ]);
    let mut host = Host::builder()
        .tools(ToolRegistry::with_builtins())
        .provider(Arc::new(provider))
        .workspace(&ws)
        .spaces_root(dir.path())
        .approval_mode(ApprovalMode::AskAll)
        .start()
        .unwrap();
    let id = host.open().await.unwrap();
    host.user_turn(UserInput::work("read it")).await.unwrap();
    let records = host.stored_records(&id).await.unwrap();
    assert!(
        matches!(records.first(), Some(Record::User { .. })),
        "{records:?}"
    );
    let archive = host.stored_archive(&id).await.unwrap();
    let notes: Vec<String> = archive
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::Note { note, .. } => Some(note.to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        notes,
        ["Tool call 'c1' (read_file) was denied: no operator is configured to ask (HostBuilder::operator)."]
    );
    assert!(host.stored_records(&"nope".into()).await.is_err());
    host.shutdown("done", None).await.unwrap();
}
