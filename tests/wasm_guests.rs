//! WebAssembly plugins with hand-written guests (issue 36 items 1 to 3; docs/wasm.md): no
//! toolchain needed, the `wat` crate assembles each guest. They load from plugin directories like
//! every plugin, chain in load order, and every fault a guest can make (a trap, an infinite
//! loop, running out of memory, an answer that is not the protocol, a bad pointer, a wrong id)
//! skips that hook with its English note while later calls go on; a guest that keeps trapping is
//! disabled; imports beyond the granted capabilities or the host's, and other ABI versions are
//! refused at load with a note. The same guests wrapped as components (the WIT world, WASI
//! linked) chain with the core ones and fail the same ways with the same notes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hookline::actors::Pipeline;
use hookline::host::loading::{
    load, trust, LiveState, LoadOptions, LoadReport, Manifest, PluginState,
};
use hookline::host::tools::{Tool, ToolContext};
use hookline::host::wasm::{Compiled, WasmPlugin};
use hookline::messages::hook::{OnToolCall, OnTurnStarted, OnUserMessage};
use hookline::messages::prompt::PromptMode;
use hookline::messages::session::SessionId;
use hookline::messages::user::{TurnInfo, UserMessage};
use serde_json::json;
use support::{texts, tool_call};

const ECHO: &str = include_str!("../benches/plugins/echo.wat");

/// A guest of the ABI v1 written in WAT: it says `hello`, reads each request's id, runs `body`
/// (WAT instructions, which may `return` a packed reply early) and else keeps the value. `data`
/// adds strings at fixed addresses the body can reply with through `$reply`.
struct Guest {
    hello: String,
    body: String,
    data: Vec<(u32, String)>,
    imports: String,
    abi: i32,
}

impl Guest {
    fn new(hello: serde_json::Value) -> Self {
        let mut hello = hello;
        hello["type"] = json!("hello");
        hello["protocol"] = json!(1);
        Self {
            hello: hello.to_string(),
            body: String::new(),
            data: Vec::new(),
            imports: String::new(),
            abi: 1,
        }
    }

    fn hooks(hooks: &[&str]) -> Self {
        Self::new(json!({ "hooks": hooks }))
    }

    fn body(mut self, body: &str) -> Self {
        self.body = body.to_owned();
        self
    }

    /// A string at `addr` (between 4096 and 8191).
    fn string(mut self, addr: u32, text: &str) -> Self {
        self.data.push((addr, text.to_owned()));
        self
    }

    fn import(mut self, import: &str) -> Self {
        self.imports.push_str(import);
        self
    }

    fn abi(mut self, abi: i32) -> Self {
        self.abi = abi;
        self
    }

    fn wat(&self) -> String {
        let data: String = self
            .data
            .iter()
            .map(|(addr, text)| format!("(data (i32.const {addr}) \"{}\")\n", escape(text)))
            .collect();
        format!(
            r#"(module
  {imports}
  (memory (export "memory") 1)
  (global $id (mut i64) (i64.const 0))
  (global $out (mut i32) (i32.const 0))
  (data (i32.const 0) "{hello}")
  (data (i32.const 4000) "{{\"type\":\"keep\",\"id\":")
  (data (i32.const 4040) "}}")
  {data}
  (func (export "hookline_abi") (result i32) (i32.const {abi}))
  (func $hello (export "hookline_hello") (result i64) (i64.const {hello_len}))
  (func (export "hookline_alloc") (param $len i32) (result i32) (i32.const 16384))
  (func $parse_id (param $p i32) (param $len i32)
    (local $end i32) (local $c i32)
    (local.set $end (i32.add (local.get $p) (local.get $len)))
    (global.set $id (i64.const 0))
    (block $found
      (loop $scan
        (br_if $found (i32.ge_u (i32.add (local.get $p) (i32.const 5)) (local.get $end)))
        (if (i32.and (i32.eq (i32.load (local.get $p)) (i32.const 0x22646922))
                     (i32.eq (i32.load8_u offset=4 (local.get $p)) (i32.const 0x3a)))
          (then (local.set $p (i32.add (local.get $p) (i32.const 5))) (br $found)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $scan)))
    (block $done
      (loop $digits
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $c (i32.sub (i32.load8_u (local.get $p)) (i32.const 48)))
        (br_if $done (i32.gt_u (local.get $c) (i32.const 9)))
        (global.set $id (i64.add (i64.mul (global.get $id) (i64.const 10))
                                 (i64.extend_i32_u (local.get $c))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $digits))))
  (func $emit (param $src i32) (param $len i32)
    (memory.copy (global.get $out) (local.get $src) (local.get $len))
    (global.set $out (i32.add (global.get $out) (local.get $len))))
  (func $emit_id
    (local $n i64) (local $start i32) (local $end i32) (local $t i32)
    (local.set $n (global.get $id))
    (local.set $start (global.get $out))
    (loop $d
      (i32.store8 (global.get $out)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $n) (i64.const 10)))))
      (global.set $out (i32.add (global.get $out) (i32.const 1)))
      (local.set $n (i64.div_u (local.get $n) (i64.const 10)))
      (br_if $d (i64.ne (local.get $n) (i64.const 0))))
    (local.set $end (i32.sub (global.get $out) (i32.const 1)))
    (block $r
      (loop $rev
        (br_if $r (i32.ge_u (local.get $start) (local.get $end)))
        (local.set $t (i32.load8_u (local.get $start)))
        (i32.store8 (local.get $start) (i32.load8_u (local.get $end)))
        (i32.store8 (local.get $end) (local.get $t))
        (local.set $start (i32.add (local.get $start) (i32.const 1)))
        (local.set $end (i32.sub (local.get $end) (i32.const 1)))
        (br $rev))))
  ;; prefix, the request's id, suffix; packed.
  (func $reply (param $p i32) (param $pl i32) (param $s i32) (param $sl i32) (result i64)
    (global.set $out (i32.const 8192))
    (call $emit (local.get $p) (local.get $pl))
    (call $emit_id)
    (call $emit (local.get $s) (local.get $sl))
    (i64.or (i64.shl (i64.const 8192) (i64.const 32))
            (i64.extend_i32_u (i32.sub (global.get $out) (i32.const 8192)))))
  (func $first (result i32) (i64.eq (global.get $id) (i64.const 1)))
  (func $call (export "hookline_call") (param $ptr i32) (param $len i32) (result i64)
    (call $parse_id (local.get $ptr) (local.get $len))
    {body}
    (call $reply (i32.const 4000) (i32.const 20) (i32.const 4040) (i32.const 1)))
)"#,
            imports = self.imports,
            hello = escape(&self.hello),
            hello_len = self.hello.len(),
            abi = self.abi,
            body = self.body,
        )
    }
}

impl Guest {
    /// The same guest as a component of the world `hookline:plugin/plugin`
    /// (docs/wasm/hookline-plugin.wit): its core module, plus the canonical ABI's `realloc` and
    /// two adapters that turn a packed `ptr << 32 | len` into the return area a lifted string is
    /// read from.
    fn component(&self) -> String {
        let adapters = r#"
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32) (i32.const 16384))
  (func $ret (param $packed i64) (result i32)
    (i32.store (i32.const 12000) (i32.wrap_i64 (i64.shr_u (local.get $packed) (i64.const 32))))
    (i32.store (i32.const 12004) (i32.wrap_i64 (local.get $packed)))
    (i32.const 12000))
  (func (export "c_hello") (result i32) (call $ret (call $hello)))
  (func (export "c_call") (param i32 i32) (result i32)
    (call $ret (call $call (local.get 0) (local.get 1))))"#;
        let module = self
            .wat()
            .replacen("(module", "(core module $m", 1)
            .trim_end()
            .strip_suffix(')')
            .map(|inner| format!("{inner}{adapters}\n)"))
            .unwrap();
        format!(
            r#"(component
{module}
  (core instance $i (instantiate $m))
  (func $hello (result string)
    (canon lift (core func $i "c_hello") (memory (core memory $i "memory"))
      (realloc (core func $i "cabi_realloc"))))
  (func $call (param "request" string) (result string)
    (canon lift (core func $i "c_call") (memory (core memory $i "memory"))
      (realloc (core func $i "cabi_realloc"))))
  (instance $guest (export "hello" (func $hello)) (export "call" (func $call)))
  (export "hookline:plugin/guest@1.0.0" (instance $guest))
)"#
        )
    }
}

/// WAT string escapes: every byte that is not plain printable ASCII as `\hh`.
fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' => format!("\\{b:02x}"),
            0x20..=0x7e => char::from(b).to_string(),
            _ => format!("\\{b:02x}"),
        })
        .collect()
}

/// `<root>/<name>/` with `plugin.wasm` (assembled from `wat`) and a manifest with `extra`.
fn plugin(root: &Path, name: &str, wat: &str, extra: serde_json::Value) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plugin.wasm"), wat::parse_str(wat).unwrap()).unwrap();
    write_manifest(&dir, extra);
    dir
}

fn write_manifest(dir: &Path, extra: serde_json::Value) {
    let mut manifest = json!({"entry": "plugin.wasm"});
    if let (Some(target), Some(more)) = (manifest.as_object_mut(), extra.as_object()) {
        target.extend(more.clone());
    }
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
}

async fn load_dir(root: &Path, cache: &Path) -> LoadReport {
    let mut options = LoadOptions::new(Some(root.to_path_buf()), None);
    options.wasm_cache_dir = Some(cache.to_path_buf());
    load(&options).await
}

/// Loads `root` and runs one `on_user_message` per session, in order; returns each final text
/// and every note.
async fn user_messages(root: &Path, sessions: &[&str]) -> (Vec<String>, Vec<String>) {
    let cache = tempfile::tempdir().unwrap();
    let report = load_dir(root, cache.path()).await;
    assert!(report.notes.is_empty(), "{:?}", texts(&report.notes));
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let mut finals = Vec::new();
    let mut notes = Vec::new();
    for session in sessions {
        let outcome = pipeline
            .call::<OnUserMessage>(&SessionId::new(*session), UserMessage::new("hi"))
            .await
            .unwrap();
        finals.push(outcome.value.text);
        notes.extend(texts(&outcome.notes));
    }
    (finals, notes)
}

/// A faulty guest `m-guest` between two echo guests: the note each session got and the final
/// texts. The echo guests append " #e" each.
async fn between_echoes(body: &str, extra: serde_json::Value) -> (Vec<String>, Vec<String>) {
    let guest = Guest::hooks(&["on_user_message"]).body(body);
    between_echoes_as(&guest.wat(), extra).await
}

/// As [`between_echoes`], with the middle guest's text (a module or a component) given.
async fn between_echoes_as(text: &str, extra: serde_json::Value) -> (Vec<String>, Vec<String>) {
    let root = tempfile::tempdir().unwrap();
    plugin(root.path(), "a-echo", ECHO, json!({}));
    plugin(root.path(), "m-guest", text, extra);
    plugin(root.path(), "z-echo", ECHO, json!({}));
    user_messages(root.path(), &["s1", "s2"]).await
}

async fn assert_first_call_skipped(body: &str, extra: serde_json::Value, reason: &str) {
    let (finals, notes) = between_echoes(body, extra).await;
    assert_skipped_once(&finals, &notes, reason);
}

/// The same fault in a component guest: the same note, the same recovery.
async fn assert_first_component_call_skipped(body: &str, extra: serde_json::Value, reason: &str) {
    let guest = Guest::hooks(&["on_user_message"]).body(body);
    let (finals, notes) = between_echoes_as(&guest.component(), extra).await;
    assert_skipped_once(&finals, &notes, reason);
}

fn assert_skipped_once(finals: &[String], notes: &[String], reason: &str) {
    // SPEC P1.4: the faulty hook is skipped, the plugins after it still run, later calls go on
    // (on a fresh instance).
    assert_eq!(finals, ["hi #e #e", "hi #e #e"]);
    assert_eq!(
        notes,
        [format!(
            "Plugin hook 'm-guest' user-message was skipped: {reason}"
        )]
    );
}

#[actix_rt::test]
async fn a_component_guest_chains_with_core_guests_in_load_order() {
    // A component (the WIT world of docs/wasm/hookline-plugin.wit) replaces the text; the core
    // echo after it sees the replacement (SPEC P1.2), the one before it is replaced.
    const PREFIX: &str = r#"{"type":"replace","id":"#;
    const SUFFIX: &str = r#","value":{"text":"from the component"}}"#;
    let guest = Guest::hooks(&["on_user_message"])
        .body(&format!(
            "(return (call $reply (i32.const 4096) (i32.const {}) (i32.const 4160) (i32.const {})))",
            PREFIX.len(),
            SUFFIX.len()
        ))
        .string(4096, PREFIX)
        .string(4160, SUFFIX);
    let (finals, notes) = between_echoes_as(&guest.component(), json!({})).await;
    assert_eq!(finals, ["from the component #e", "from the component #e"]);
    assert!(notes.is_empty(), "{notes:?}");
}

/// A fault of a guest's, tested in a core module and in a component alike: the same note for
/// the first call, the same recovery for the next (SPEC P1.4).
macro_rules! fault {
    ($core:ident, $component:ident: $body:expr, $extra:expr, $reason:expr $(,)?) => {
        #[actix_rt::test]
        async fn $core() {
            assert_first_call_skipped($body, $extra, $reason).await;
        }

        #[actix_rt::test]
        async fn $component() {
            assert_first_component_call_skipped($body, $extra, $reason).await;
        }
    };
}

fault!(
    a_trap_is_skipped_with_its_note_and_the_next_call_gets_a_fresh_instance,
    a_component_that_traps_is_skipped_and_the_next_call_gets_a_fresh_instance:
    "(if (call $first) (then unreachable))",
    json!({}),
    "it trapped: wasm `unreachable` instruction executed.",
);

fault!(
    an_infinite_loop_is_stopped_at_the_hook_timeout,
    a_component_in_an_infinite_loop_is_stopped_at_the_hook_timeout:
    "(if (call $first) (then (loop $forever (br $forever))))",
    json!({"timeout_ms": 200}),
    "it timed out after 200 ms.",
);

fault!(
    a_guest_past_its_memory_cap_is_skipped_as_out_of_memory,
    a_component_past_its_memory_cap_is_skipped_as_out_of_memory:
    "(if (call $first) (then (if (i32.eq (memory.grow (i32.const 64)) (i32.const -1)) \
     (then unreachable))))",
    json!({"wasm": {"memory_mb": 1}}),
    "it ran out of memory (its cap is 1 MiB).",
);

#[actix_rt::test]
async fn a_component_with_an_answer_that_is_not_a_reply_is_skipped_as_not_the_protocol() {
    assert_first_component_call_skipped(
        "(if (call $first) (then (return (i64.or (i64.shl (i64.const 4096) \
         (i64.const 32)) (i64.const 8)))))",
        json!({}),
        "it wrote output that is not the protocol.",
    )
    .await;
}

#[actix_rt::test]
async fn a_component_importing_what_the_host_does_not_provide_is_refused_at_load() {
    let guest = Guest::hooks(&["on_prompt"]).component().replacen(
        "(component",
        "(component\n  (import \"acme:thing/api@1.0.0\" (instance (export \"f\" (func))))",
        1,
    );
    let reason = refused(Ok(&guest), json!({})).await;
    assert!(
        reason.starts_with(
            "it imports what the host does not provide (WASI 0.2 only, docs/wasm.md): "
        ) && reason.contains("acme:thing/api@1.0.0"),
        "{reason}"
    );
}

#[actix_rt::test]
async fn wasm_guests_chain_in_load_order_each_seeing_the_previous_replacement() {
    let root = tempfile::tempdir().unwrap();
    for name in ["a-echo", "b-echo", "c-echo"] {
        plugin(root.path(), name, ECHO, json!({}));
    }
    let (finals, notes) = user_messages(root.path(), &["s1", "s2"]).await;
    assert_eq!(finals, ["hi #e #e #e", "hi #e #e #e"]);
    assert!(notes.is_empty(), "{notes:?}");
}

#[actix_rt::test]
async fn a_wasm_plugin_is_listed_with_its_kind_hooks_and_capabilities() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let guest = Guest::hooks(&["on_prompt"])
        .import(r#"(import "hookline" "log" (func $log (param i32 i32)))"#);
    plugin(
        root.path(),
        "logger",
        &guest.wat(),
        json!({"wasm": {"memory_mb": 2, "capabilities": ["stdio"]}}),
    );
    let report = load_dir(root.path(), cache.path()).await;
    assert!(report.notes.is_empty(), "{:?}", texts(&report.notes));
    let status = &report.statuses[0];
    assert_eq!(status.kind, "wasm");
    assert_eq!(status.capabilities, ["stdio"]);
    assert_eq!(status.state, PluginState::Loaded);
    let hello = status.hello.as_ref().unwrap();
    assert_eq!(
        hello
            .hooks
            .iter()
            .map(|h| h.wire_name())
            .collect::<Vec<_>>(),
        ["on_prompt"]
    );
    let wasm = report.plugins[0].as_wasm().unwrap();
    assert_eq!(wasm.name(), "logger");
}

#[actix_rt::test]
async fn an_answer_that_is_not_a_reply_is_skipped_as_not_the_protocol() {
    let body = "(if (call $first) (then (return (i64.or (i64.shl (i64.const 4096) \
                (i64.const 32)) (i64.const 8)))))";
    let root = tempfile::tempdir().unwrap();
    plugin(root.path(), "a-echo", ECHO, json!({}));
    let guest = Guest::hooks(&["on_user_message"])
        .body(body)
        .string(4096, "not json");
    plugin(root.path(), "m-guest", &guest.wat(), json!({}));
    plugin(root.path(), "z-echo", ECHO, json!({}));
    let (finals, notes) = user_messages(root.path(), &["s1", "s2"]).await;
    assert_eq!(finals, ["hi #e #e", "hi #e #e"]);
    assert_eq!(
        notes,
        ["Plugin hook 'm-guest' user-message was skipped: it wrote output that is not the protocol."]
    );
}

#[actix_rt::test]
async fn a_reply_outside_the_guests_memory_is_skipped_as_not_the_protocol() {
    assert_first_call_skipped(
        "(if (call $first) (then (return (i64.const 0x7fff000000000010))))",
        json!({}),
        "it wrote output that is not the protocol.",
    )
    .await;
}

#[actix_rt::test]
async fn a_reply_with_another_id_is_skipped_with_the_unknown_id_note() {
    let body = "(if (call $first) (then (return (i64.or (i64.shl (i64.const 4096) \
                (i64.const 32)) (i64.const 26)))))";
    let root = tempfile::tempdir().unwrap();
    let guest = Guest::hooks(&["on_user_message"])
        .body(body)
        .string(4096, r#"{"type":"keep","id":99999}"#);
    plugin(root.path(), "m-guest", &guest.wat(), json!({}));
    let (finals, notes) = user_messages(root.path(), &["s1", "s2"]).await;
    assert_eq!(finals, ["hi", "hi"]);
    assert_eq!(
        notes,
        ["Plugin hook 'm-guest' user-message was skipped: it replied with an id it was never given."]
    );
}

#[actix_rt::test]
async fn a_replacement_that_breaks_the_rule_is_refused_as_for_every_plugin() {
    // SPEC P2.3's rule for the user message applies to a guest's replacement too: the echo
    // guest appends, so an empty replacement shows the rule, not the transport, deciding.
    const PREFIX: &str = r#"{"type":"replace","id":"#;
    const SUFFIX: &str = r#","value":{"text":""}}"#;
    let body = format!(
        "(return (call $reply (i32.const 4096) (i32.const {}) (i32.const 4160) (i32.const {})))",
        PREFIX.len(),
        SUFFIX.len()
    );
    let root = tempfile::tempdir().unwrap();
    let guest = Guest::hooks(&["on_user_message"])
        .body(&body)
        .string(4096, PREFIX)
        .string(4160, SUFFIX);
    plugin(root.path(), "blanker", &guest.wat(), json!({}));
    let (finals, notes) = user_messages(root.path(), &["s1"]).await;
    assert_eq!(finals, ["hi"], "{notes:?}");
    assert_eq!(
        notes,
        ["Plugin hook 'blanker' user-message was skipped: it returned an empty message."]
    );
}

#[actix_rt::test]
async fn a_guest_that_keeps_trapping_is_disabled_after_three_traps() {
    let root = tempfile::tempdir().unwrap();
    let guest = Guest::hooks(&["on_user_message"]).body("unreachable");
    plugin(root.path(), "crasher", &guest.wat(), json!({}));
    let (finals, notes) = user_messages(root.path(), &["s1", "s2", "s3", "s4"]).await;
    assert_eq!(finals, ["hi", "hi", "hi", "hi"]);
    let trapped = "Plugin hook 'crasher' user-message was skipped: it trapped: wasm `unreachable` \
                   instruction executed.";
    assert_eq!(
        notes,
        [
            trapped,
            trapped,
            trapped,
            "Plugin hook 'crasher' user-message was skipped: it was disabled after 3 crashes in 5 minutes."
        ]
    );
}

/// Its live state (`GET /v1/plugins`, issue 46 item 2): loaded, then suspended after three
/// traps, with why.
#[actix_rt::test]
async fn a_guest_suspended_after_three_traps_says_so_in_its_live_state() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let guest = Guest::hooks(&["on_user_message"]).body("unreachable");
    plugin(root.path(), "crasher", &guest.wat(), json!({}));
    let report = load_dir(root.path(), cache.path()).await;
    let live = report.plugins[0].live();
    assert_eq!(live.state, LiveState::Loaded);
    assert_eq!(live.reason, None);
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    for session in ["s1", "s2", "s3"] {
        pipeline
            .call::<OnUserMessage>(&SessionId::new(session), UserMessage::new("hi"))
            .await
            .unwrap();
    }
    let live = report.plugins[0].live();
    assert_eq!(live.state, LiveState::Suspended);
    assert_eq!(
        live.reason.map(|r| r.to_string()).as_deref(),
        Some("it trapped 3 times in 5 minutes, so the runtime stopped calling it (it stays suspended until the host restarts)")
    );
}

#[actix_rt::test]
async fn the_host_goes_on_while_a_guest_loops_in_another_session() {
    // A looping guest holds only its own call: the same plugin serves another session's call
    // from another instance meanwhile, and the looping one ends at its timeout.
    let root = tempfile::tempdir().unwrap();
    let guest = Guest::hooks(&["on_tool_call"])
        .body("(if (call $first) (then (loop $forever (br $forever))))");
    plugin(
        root.path(),
        "looper",
        &guest.wat(),
        json!({"timeout_ms": 300}),
    );
    let cache = tempfile::tempdir().unwrap();
    let report = load_dir(root.path(), cache.path()).await;
    let plugin = report.plugins[0].as_wasm().unwrap().clone();
    let looping = {
        let plugin = plugin.clone();
        std::thread::spawn(move || call_tool_hook(&plugin, "s1"))
    };
    std::thread::sleep(Duration::from_millis(50));
    let started = std::time::Instant::now();
    assert_eq!(call_tool_hook(&plugin, "s2"), "keep");
    assert!(started.elapsed() < Duration::from_millis(250));
    assert_eq!(looping.join().unwrap(), "it timed out after 300 ms.");
}

fn call_tool_hook(plugin: &Arc<WasmPlugin>, session: &str) -> String {
    let call = tool_call("t", "c1");
    match plugin.call_hook(
        hookline::messages::hook::HookKind::OnToolCall,
        &SessionId::new(session),
        &call,
        Duration::from_millis(300),
    ) {
        Ok(body) => format!("{body:?}").to_lowercase(),
        Err(reason) => reason.to_string(),
    }
}

/// Loads one guest and returns the note that skipped it.
async fn refused(wat_or_bytes: Result<&str, &[u8]>, extra: serde_json::Value) -> String {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dir = root.path().join("refused");
    std::fs::create_dir_all(&dir).unwrap();
    let bytes = match wat_or_bytes {
        Ok(wat) => wat::parse_str(wat).unwrap(),
        Err(bytes) => bytes.to_vec(),
    };
    std::fs::write(dir.join("plugin.wasm"), bytes).unwrap();
    write_manifest(&dir, extra);
    let report = load_dir(root.path(), cache.path()).await;
    assert!(report.plugins.is_empty());
    let notes = texts(&report.notes);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let prefix = format!("Plugin directory '{}' was skipped: ", dir.display());
    notes[0]
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{notes:?}"))
        .to_owned()
}

#[actix_rt::test]
async fn an_import_its_capabilities_do_not_grant_refuses_the_guest_at_load() {
    let guest =
        Guest::hooks(&["on_prompt"]).import(r#"(import "hookline" "log" (func (param i32 i32)))"#);
    assert_eq!(
        refused(Ok(&guest.wat()), json!({})).await,
        "it imports 'hookline.log', which needs the capability 'stdio' its manifest does not \
         grant."
    );
    let clock = Guest::hooks(&["on_prompt"])
        .import(r#"(import "hookline" "wall_clock_ms" (func (result i64)))"#);
    assert_eq!(
        refused(
            Ok(&clock.wat()),
            json!({"wasm": {"capabilities": ["stdio"]}})
        )
        .await,
        "it imports 'hookline.wall_clock_ms', which needs the capability 'clock' its manifest \
         does not grant."
    );
}

#[actix_rt::test]
async fn an_import_the_host_does_not_provide_refuses_the_guest_at_load() {
    let guest = Guest::hooks(&["on_prompt"]).import(
        r#"(import "wasi_snapshot_preview1" "fd_write" (func (param i32 i32 i32 i32) (result i32)))"#,
    );
    assert_eq!(
        refused(
            Ok(&guest.wat()),
            json!({"wasm": {"capabilities": ["stdio"]}})
        )
        .await,
        "it imports 'wasi_snapshot_preview1.fd_write', which the host does not provide \
         (docs/wasm.md lists the imports)."
    );
}

#[actix_rt::test]
async fn manifests_asking_for_unknown_capabilities_or_too_much_memory_are_refused() {
    let guest = Guest::hooks(&["on_prompt"]).wat();
    assert_eq!(
        refused(Ok(&guest), json!({"wasm": {"capabilities": ["gpu"]}})).await,
        "its plugin.json asks for the capability 'gpu', which does not exist (there are: \
         stdio, clock, environment, filesystem, network)."
    );
    assert_eq!(
        refused(Ok(&guest), json!({"wasm": {"memory_mb": 5000}})).await,
        "its plugin.json is invalid: wasm.memory_mb is 5000; it must be 1 to 4096."
    );
}

#[actix_rt::test]
async fn components_other_abi_versions_and_invalid_modules_are_refused_with_a_note() {
    // An empty component: the preamble alone (layer 1), so without the guest interface.
    let component = b"\0asm\x0d\x00\x01\x00";
    assert_eq!(
        refused(Err(component), json!({})).await,
        "it does not export 'hookline:plugin/guest@1.0.0#hello' as the guest ABI says \
         (docs/wasm.md)."
    );
    assert_eq!(
        refused(Ok(&Guest::hooks(&["on_prompt"]).abi(2).wat()), json!({})).await,
        "it speaks guest ABI version 2, but this host speaks version 1."
    );
    assert!(refused(Err(b"\0asm\x01\x00\x00\x00garbage"), json!({}))
        .await
        .starts_with("its module is not valid WebAssembly: "));
    let no_exports = "(module (memory (export \"memory\") 1))";
    assert_eq!(
        refused(Ok(no_exports), json!({})).await,
        "it does not export 'hookline_alloc' as the guest ABI says (docs/wasm.md)."
    );
}

#[actix_rt::test]
async fn a_module_bigger_than_its_cap_at_start_is_refused() {
    let big = Guest::hooks(&["on_prompt"]).wat().replace(
        "(memory (export \"memory\") 1)",
        "(memory (export \"memory\") 32)",
    );
    assert_eq!(
        refused(Ok(&big), json!({"wasm": {"memory_mb": 1}})).await,
        "it needs more memory than its cap of 1 MiB."
    );
}

#[actix_rt::test]
async fn the_compiled_module_is_cached_by_content_and_read_on_the_next_load() {
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin(root.path(), "echo", ECHO, json!({}));
    let first = load_dir(root.path(), cache.path()).await;
    assert_eq!(
        first.plugins[0].as_wasm().unwrap().compiled(),
        Compiled::Now
    );
    let entries: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
    assert_eq!(entries.len(), 1);
    let second = load_dir(root.path(), cache.path()).await;
    assert_eq!(
        second.plugins[0].as_wasm().unwrap().compiled(),
        Compiled::FromCache
    );
    // A corrupt entry is compiled again, not trusted.
    let entry = entries[0].as_ref().unwrap().path();
    std::fs::write(&entry, b"not a compiled module").unwrap();
    let third = load_dir(root.path(), cache.path()).await;
    assert_eq!(
        third.plugins[0].as_wasm().unwrap().compiled(),
        Compiled::Now
    );
    // Other bytes, another entry.
    let guest = Guest::hooks(&["on_prompt"]).wat();
    std::fs::write(dir.join("plugin.wasm"), wat::parse_str(guest).unwrap()).unwrap();
    let fourth = load_dir(root.path(), cache.path()).await;
    assert_eq!(
        fourth.plugins[0].as_wasm().unwrap().compiled(),
        Compiled::Now
    );
    assert_eq!(std::fs::read_dir(cache.path()).unwrap().count(), 2);
}

#[actix_rt::test]
async fn trust_covers_the_modules_bytes() {
    let root = tempfile::tempdir().unwrap();
    let dir = plugin(root.path(), "echo", ECHO, json!({}));
    let manifest = Manifest::read(&dir).unwrap();
    let before = trust::fingerprint(&dir, &manifest).unwrap();
    let guest = Guest::hooks(&["on_prompt"]).wat();
    std::fs::write(dir.join("plugin.wasm"), wat::parse_str(guest).unwrap()).unwrap();
    assert_ne!(trust::fingerprint(&dir, &manifest).unwrap(), before);
}

#[actix_rt::test]
async fn a_wasm_tool_runs_in_the_guest() {
    const PREFIX: &str = r#"{"type":"replace","id":"#;
    const SUFFIX: &str = r#","value":{"text":"HI","success":true}}"#;
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let guest = Guest::new(json!({"tools": [
        {"name": "shout", "description": "Shouts.", "risk": "read", "authority": "workspace"}
    ]}))
    .body(&format!(
        "(return (call $reply (i32.const 4096) (i32.const {}) (i32.const 4160) (i32.const {})))",
        PREFIX.len(),
        SUFFIX.len()
    ))
    .string(4096, PREFIX)
    .string(4160, SUFFIX);
    plugin(root.path(), "shouter", &guest.wat(), json!({}));
    let report = load_dir(root.path(), cache.path()).await;
    let tools = report.tools();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].plugin_name(), "shouter");
    let cx = ToolContext {
        workspace_root: root.path().to_path_buf(),
        session_id: SessionId::new("s1"),
        approval_mode: Default::default(),
    };
    let output = tools[0].run(&cx, json!({"text": "hi"})).await;
    assert!(output.success, "{}", output.text);
    assert_eq!(output.text, "HI");
}

#[actix_rt::test]
async fn wasm_and_external_plugins_share_one_load_order() {
    // Two echo guests around a Python plugin: the order is the directories' order whatever the
    // kind (SPEC L1). Needs python3, as the other external tests do.
    let root = tempfile::tempdir().unwrap();
    plugin(root.path(), "a-echo", ECHO, json!({}));
    support::faulty(root.path(), "m-python", "ok", json!({}));
    plugin(root.path(), "z-echo", ECHO, json!({}));
    let cache = tempfile::tempdir().unwrap();
    let report = load_dir(root.path(), cache.path()).await;
    let names: Vec<&str> = report.plugins.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        ["a-echo", "m-python", "z-echo"],
        "{:?}",
        texts(&report.notes)
    );
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnToolCall>(&SessionId::new("s1"), tool_call("t", "c1"))
        .await
        .unwrap();
    assert_eq!(
        outcome.value.name,
        "t-m-python",
        "{:?}",
        texts(&outcome.notes)
    );
    report.shutdown().await;
}

#[actix_rt::test]
async fn the_bench_echo_guest_appends_to_long_texts_with_escapes() {
    // benches/plugins/echo.wat skips eight bytes at a time to the text's closing quote; quotes,
    // backslashes and non-ASCII on either side of a word boundary must still be found.
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    plugin(root.path(), "echo", ECHO, json!({}));
    let report = load_dir(root.path(), cache.path()).await;
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    for text in [
        "",
        "1234567",
        "12345678",
        "a \"quoted\" word, a back\\slash and more than eight bytes",
        "ends with a quote\"",
        "\\\\\\\\\\\\\\\\\"",
        "ünïcödé, ✓ and tabs\tand\nnewlines, long enough to skip",
    ] {
        let outcome = pipeline
            .call::<OnUserMessage>(&SessionId::new("s1"), UserMessage::new(text))
            .await
            .unwrap();
        assert!(outcome.notes.is_empty(), "{:?}", texts(&outcome.notes));
        assert_eq!(outcome.value.text, format!("{text} #e"));
    }
}

#[actix_rt::test]
async fn a_read_only_hooks_answer_changes_nothing_and_only_its_error_is_reported() {
    // SPEC P2.4: whatever a guest returns to `on_turn_started` is ignored (its value is skipped
    // over unread, even one that is not a turn at all); an error is the usual skip.
    const REPLACE: &str = r#"{"type":"replace","id":"#;
    const NOT_A_TURN: &str = r#","value":[1,{"no":"turn"}]}"#;
    const ERROR: &str = r#"{"type":"error","id":"#;
    const WHY: &str = r#","message":"the guest says no"}"#;
    let answer = |prefix: &str, suffix: &str| {
        format!(
            "(return (call $reply (i32.const 4096) (i32.const {}) (i32.const 4160) (i32.const {})))",
            prefix.len(),
            suffix.len()
        )
    };
    let root = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let replacer = Guest::hooks(&["on_turn_started"])
        .body(&answer(REPLACE, NOT_A_TURN))
        .string(4096, REPLACE)
        .string(4160, NOT_A_TURN);
    plugin(root.path(), "a-replacer", &replacer.wat(), json!({}));
    let refuser = Guest::hooks(&["on_turn_started"])
        .body(&answer(ERROR, WHY))
        .string(4096, ERROR)
        .string(4160, WHY);
    plugin(root.path(), "b-refuser", &refuser.wat(), json!({}));
    let report = load_dir(root.path(), cache.path()).await;
    assert!(report.notes.is_empty(), "{:?}", texts(&report.notes));
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let turn = TurnInfo {
        user_text: "hi".into(),
        mode: PromptMode::Work,
        stop_reason: None,
    };
    let outcome = pipeline
        .call::<OnTurnStarted>(&SessionId::new("s1"), turn.clone())
        .await
        .unwrap();
    assert_eq!(outcome.value, turn);
    assert_eq!(
        texts(&outcome.notes),
        ["Plugin hook 'b-refuser' turn-start was skipped: the guest says no"]
    );
}
