//! Hostile input without panics: arbitrary bytes and arbitrary JSON fed to every decoder and
//! parser (protocol lines, `plugin.json`, `tool.json`, scenarios, slash commands, stored records
//! and the log). Each returns a clear error or a value; none panics; each file reader caps its
//! input before parsing. (Tool arguments: `tests/tools_fence.rs`, "arbitrary arguments never
//! panic"; the protocol line codec: `host/src/external/codec.rs` unit properties.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use hookline::host::loading::manifest::MAX_MANIFEST_BYTES;
use hookline::host::loading::{LoadProblem, Manifest};
use hookline::host::store::Log;
use hookline::host::tools::{ExternalTool, ToolRegistry};
use hookline::messages::protocol::{HostMessage, PluginMessage};
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::scenario::SlashCommand;
use proptest::prelude::*;
use serde_json::Value;

/// Any JSON value, nested a few levels, with the protocol's keys likely.
fn json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("type".to_owned()),
        Just("id".to_owned()),
        Just("value".to_owned()),
        Just("hook".to_owned()),
        Just("entry".to_owned()),
        Just("steps".to_owned()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        prop_oneof![
            Just("hello".to_owned()),
            Just("replace".to_owned()),
            Just("keep".to_owned()),
            Just("error".to_owned()),
            Just("on_tool_call".to_owned()),
            ".{0,12}"
        ]
        .prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn protocol_lines_of_any_bytes_or_json_decode_or_fail_cleanly(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        value in json(),
    ) {
        let text = value.to_string();
        for line in [bytes.as_slice(), text.as_bytes()] {
            if let Ok(message) = serde_json::from_slice::<PluginMessage>(line) {
                let _ = message.into_reply();
            }
            let _ = serde_json::from_slice::<HostMessage>(line);
        }
    }

    #[test]
    fn plugin_manifests_of_any_content_load_or_name_their_problem(
        bytes in prop::collection::vec(any::<u8>(), 0..256),
        value in json(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        for content in [bytes, value.to_string().into_bytes()] {
            write(dir.path(), "plugin.json", &content);
            match Manifest::read(dir.path()) {
                Ok(_) | Err(LoadProblem::InvalidManifest(_)) => {}
                Err(other) => prop_assert!(false, "unexpected {other:?}"),
            }
        }
    }

    #[test]
    fn tool_manifests_of_any_content_load_or_say_why_not(value in json()) {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "tool.json", value.to_string().as_bytes());
        if let Err(why) = ExternalTool::load(dir.path()) {
            prop_assert!(!why.is_empty());
        }
    }

    #[test]
    fn scenarios_of_any_content_parse_or_say_why_not(
        text in ".{0,200}",
        value in json(),
    ) {
        let tools = ToolRegistry::with_builtins();
        for content in [text, value.to_string()] {
            if let Err(error) = hookline::host::scenario::parse(Path::new("s.json"), &content, &tools) {
                prop_assert!(!error.to_string().is_empty());
            }
        }
    }

    #[test]
    fn slash_commands_of_any_text_parse_or_say_why_not(line in ".{0,64}") {
        if let Err(why) = SlashCommand::parse(&line) {
            prop_assert!(!why.is_empty());
        }
    }

    #[test]
    fn stored_logs_of_any_bytes_open_with_only_valid_records(
        bytes in prop::collection::vec(any::<u8>(), 0..1024),
    ) {
        let dir = tempfile::tempdir().unwrap();
        for name in ["records.log", "archive.log"] {
            write(dir.path(), name, &bytes);
        }
        // Either the log opens (a torn or corrupt tail is cut off) or it is refused with an
        // error; it never panics, and what it opens again is what it kept.
        if let Ok((_, recovery)) = Log::<Record>::open(&dir.path().join("records.log")) {
            let (_, again) = Log::<Record>::open(&dir.path().join("records.log")).unwrap();
            prop_assert_eq!(again.records, recovery.records);
        }
        let _ = Log::<ArchiveEntry>::open(&dir.path().join("archive.log"));
    }

    #[test]
    fn stored_records_of_any_json_decode_or_fail_cleanly(value in json()) {
        let _ = serde_json::from_value::<Record>(value.clone());
        let _ = serde_json::from_value::<ArchiveEntry>(value);
    }
}

#[test]
fn an_oversized_plugin_manifest_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let padding = " ".repeat(MAX_MANIFEST_BYTES as usize + 1);
    write(
        dir.path(),
        "plugin.json",
        format!("{{\"entry\":\"p.py\"}}{padding}").as_bytes(),
    );
    assert_eq!(
        Manifest::read(dir.path()),
        Err(LoadProblem::InvalidManifest(format!(
            "it is over {MAX_MANIFEST_BYTES} bytes"
        )))
    );
}

#[test]
fn an_oversized_scenario_file_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.json");
    let big = std::fs::File::create(&file).unwrap();
    big.set_len(hookline::host::scenario::MAX_SCENARIO_BYTES + 1)
        .unwrap();
    let error = hookline::host::scenario::load(&file, &ToolRegistry::with_builtins()).unwrap_err();
    assert!(error.to_string().contains("bytes"), "{error}");
}
