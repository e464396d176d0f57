//! `hookline bench --plugins DIR` as a user runs it (issue 39): a plugin set of two Python
//! plugins on the Python kit, one of which sleeps 1 ms on `on_tool_call` in its slow version.
//! The report names the slow plugin with about 1 ms more on that hook and nothing more on the
//! others; the slow set fails the fast set's baseline with `--fail-above 50`; a set passes its
//! own baseline five times out of five; every bad input ends with a sentence and exit 2.
//!
//! The timed runs hold one lock (a test binary's tests run at once, and two benchmarks side by
//! side would each be the other's noise), and each is short but split into 12 rounds, so a
//! baseline's noise comes from its rounds on a loaded machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::{json, Value};

/// One timed benchmark at a time.
static TIMED: Mutex<()> = Mutex::new(());

const TIMED_RUN: &[&str] = &["--duration", "3", "--rounds", "12", "--json"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn hookline(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(args)
        .current_dir(cwd)
        .env("HOOKLINE_HOME", cwd.join("home"))
        .output()
        .unwrap()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A plugin on the Python kit (copied in: a plugin resolves nothing outside its directory)
/// implementing `on_user_message`, `on_prompt` and `on_tool_call`, keeping every value, and
/// sleeping `sleep_s` seconds on `on_tool_call`.
fn kit_plugin(dir: &Path, sleep_s: f64) {
    copy_dir(
        &repo().join("sdk/python/src/hookline_plugin"),
        &dir.join("hookline_plugin"),
    );
    let manifest = json!({"entry": "plugin.py", "interpreter": "python3"});
    std::fs::write(dir.join("plugin.json"), manifest.to_string()).unwrap();
    let source = format!(
        r#"import time
from hookline_plugin import Plugin

plugin = Plugin()


@plugin.hook("on_user_message")
async def user(message, cx):
    return None


@plugin.hook("on_prompt")
async def prompt(value, cx):
    return None


@plugin.hook("on_tool_call")
async def tool(call, cx):
    if {sleep_s}:
        time.sleep({sleep_s})
    return None


if __name__ == "__main__":
    plugin.run()
"#
    );
    std::fs::write(dir.join("plugin.py"), source).unwrap();
}

/// `<root>/<name>/` with the plugins `fast` and `slow` (which sleeps `slow_sleep_s` on
/// `on_tool_call`).
fn plugin_set(root: &Path, name: &str, slow_sleep_s: f64) -> PathBuf {
    let dir = root.join(name);
    kit_plugin(&dir.join("fast"), 0.0);
    kit_plugin(&dir.join("slow"), slow_sleep_s);
    dir
}

fn bench(dir: &Path, cwd: &Path, more: &[&str]) -> Output {
    let mut args = vec!["bench", "--plugins", dir.to_str().unwrap()];
    args.extend_from_slice(more);
    hookline(&args, cwd)
}

fn report(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no report ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn succeeded(out: Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    report(&out)
}

/// `plugin`'s p10 at `hook` (the figure a loaded machine moves least), in milliseconds.
fn p10_ms(report: &Value, hook: &str, plugin: &str) -> f64 {
    let hook = report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["hook"] == hook)
        .unwrap_or_else(|| panic!("no {hook} in {report:#}"));
    let plugin = hook["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["plugin"] == plugin)
        .unwrap_or_else(|| panic!("no {plugin} at {hook:#}"));
    plugin["p10_ns"].as_f64().unwrap() / 1e6
}

#[test]
fn the_slow_plugin_is_named_with_about_a_millisecond_more_on_its_hook_and_fails_the_baseline() {
    let root = tempfile::tempdir().unwrap();
    let fast = plugin_set(root.path(), "fast-set", 0.0);
    let slow = plugin_set(root.path(), "slow-set", 0.001);
    let baseline = root.path().join("baseline.json");
    let _timed = TIMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut args = TIMED_RUN.to_vec();
    args.extend(["--save-baseline", baseline.to_str().unwrap()]);
    let before = succeeded(bench(&fast, root.path(), &args));
    let mut args = TIMED_RUN.to_vec();
    args.extend([
        "--baseline",
        baseline.to_str().unwrap(),
        "--fail-above",
        "50",
    ]);
    let out = bench(&slow, root.path(), &args);
    let after = report(&out);
    assert_eq!(out.status.code(), Some(1), "{after:#}");
    // About 1 ms more on on_tool_call for the slow plugin, more than for the fast one.
    let slower = |hook, plugin| p10_ms(&after, hook, plugin) - p10_ms(&before, hook, plugin);
    let more = slower("on_tool_call", "slow");
    assert!((0.7..2.5).contains(&more), "{more} ms more\n{after:#}");
    assert!(more > slower("on_tool_call", "fast") + 0.5, "{after:#}");
    for hook in ["on_user_message", "on_prompt"] {
        for plugin in ["fast", "slow"] {
            let more = slower(hook, plugin);
            assert!(more < 0.4, "{plugin} at {hook}: {more} ms more\n{after:#}");
        }
    }
    // The comparison fails on that hook and that plugin. (Not always on it alone: on this
    // shared machine the slow set's other hooks can come out up to 2x their baseline's best
    // round, about 0.1 to 0.2 ms on a 0.2 ms round trip; the figures above stay within 0.4 ms.)
    let comparison = &after["comparison"];
    assert_eq!(comparison["failed"], true);
    let failing: Vec<&Value> = comparison["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["fails"] == true)
        .collect();
    assert!(
        failing
            .iter()
            .any(|e| e["hook"] == "on_tool_call" && e["plugin"] == "slow"),
        "{comparison:#}"
    );
}

#[test]
fn a_set_against_its_own_baseline_passes_five_times_out_of_five() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let baseline = root.path().join("baseline.json");
    let _timed = TIMED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut args = TIMED_RUN.to_vec();
    args.extend(["--save-baseline", baseline.to_str().unwrap()]);
    succeeded(bench(&set, root.path(), &args));
    for run in 1..=5 {
        let mut args = TIMED_RUN.to_vec();
        args.extend([
            "--baseline",
            baseline.to_str().unwrap(),
            "--fail-above",
            "50",
        ]);
        let report = succeeded(bench(&set, root.path(), &args));
        assert_eq!(
            report["comparison"]["failed"], false,
            "run {run}: {report:#}"
        );
    }
}

#[test]
fn the_report_has_every_hook_the_set_implements_beside_the_bare_pipeline_and_the_direct_loop() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let report = succeeded(bench(&set, root.path(), &["--duration", "0.5", "--json"]));
    let hooks: Vec<&str> = report["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["hook"].as_str().unwrap())
        .collect();
    assert_eq!(hooks, ["on_prompt", "on_user_message", "on_tool_call"]);
    for hook in report["hooks"].as_array().unwrap() {
        assert!(hook["call"]["calls"].as_u64().unwrap() > 0, "{hook:#}");
        assert!(hook["bare_pipeline"]["calls"].as_u64().unwrap() > 0);
        assert!(hook["direct_loop"]["calls"].as_u64().unwrap() > 0);
        assert_eq!(hook["rounds_p10_ns"].as_array().unwrap().len(), 5);
        let plugins: Vec<&Value> = hook["plugins"].as_array().unwrap().iter().collect();
        assert_eq!(plugins.len(), 2);
        assert!(plugins.iter().all(|p| p["timed"].as_u64().unwrap() > 0));
    }
    // One hook asked for, and the text table.
    let out = bench(
        &set,
        root.path(),
        &["--duration", "0.3", "--hook", "on_tool_call"],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("on_tool_call (default: a read_file call with arguments)"),
        "{text}"
    );
    assert!(
        text.contains("bare pipeline") && text.contains("direct loop"),
        "{text}"
    );
    assert!(!text.contains("on_prompt"), "{text}");
}

#[test]
fn the_set_loads_as_run_loads_it_in_its_pinned_order_without_its_disabled_plugins() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let off = set.join("off");
    kit_plugin(&off, 0.0);
    let manifest = json!({"entry": "plugin.py", "interpreter": "python3", "enabled": false});
    std::fs::write(off.join("plugin.json"), manifest.to_string()).unwrap();
    let args = ["--duration", "0.3", "--json", "--order", "slow,fast"];
    let report = succeeded(bench(&set, root.path(), &args));
    let plugins: Vec<(&str, &str)> = report["plugin_set"]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        plugins,
        [("slow", "loaded"), ("fast", "loaded"), ("off", "disabled")]
    );
    for hook in report["hooks"].as_array().unwrap() {
        let names: Vec<&str> = hook["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["plugin"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["slow", "fast"], "{hook:#}");
    }
}

#[test]
fn values_come_from_a_file_and_from_recorded_sessions() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let values = root.path().join("values.json");
    let file = json!({"on_user_message": [{"text": "one"}, {"text": "two"}]});
    std::fs::write(&values, file.to_string()).unwrap();
    let quick = ["--duration", "0.3", "--json", "--hook", "on_user_message"];
    let mut args = quick.to_vec();
    args.extend(["--values", values.to_str().unwrap()]);
    let report = succeeded(bench(&set, root.path(), &args));
    assert_eq!(
        report["hooks"][0]["values"],
        "2 values from the values file"
    );
    // A recorded session: the bundled demo, played by `hookline run`.
    let mut scenario: Value = serde_json::from_str(hookline::host::demo::DEMO_SCENARIO).unwrap();
    scenario["workspace"] = json!("ws");
    std::fs::write(root.path().join("demo.json"), scenario.to_string()).unwrap();
    let out = hookline(&["run", "demo.json"], root.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let store = root.path().join("ws/.hookline");
    let mut args = quick.to_vec();
    args.extend(["--from-store", store.to_str().unwrap()]);
    let report = succeeded(bench(&set, root.path(), &args));
    let described = report["hooks"][0]["values"].as_str().unwrap();
    assert!(
        described.ends_with("recorded values") || described.ends_with("recorded value"),
        "{described}"
    );
}

#[test]
fn every_one_of_the_sixteen_hooks_runs_with_its_default_value() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("set/all");
    kit_plugin(&dir, 0.0);
    let mut source = String::from("from hookline_plugin import Plugin\n\nplugin = Plugin()\n");
    let raw = [
        "rebuild_model",
        "rewrite_prompt",
        "rewrite_compaction",
        "rewrite_approval",
    ];
    let ordinary = [
        "on_session_started",
        "on_session_ended",
        "on_prompt",
        "on_user_message",
        "on_turn_started",
        "on_turn_finished",
        "transform_model",
        "on_model_response",
        "on_tool_call",
        "on_tool_result",
        "on_approval",
        "on_compaction",
    ];
    for (kind, hooks) in [("hook", &ordinary[..]), ("raw_hook", &raw[..])] {
        for hook in hooks {
            source.push_str(&format!(
                "\n\n@plugin.{kind}(\"{hook}\")\nasync def {hook}(value, cx):\n    return None\n"
            ));
        }
    }
    source.push_str("\n\nif __name__ == \"__main__\":\n    plugin.run()\n");
    std::fs::write(dir.join("plugin.py"), source).unwrap();
    let set = root.path().join("set");
    let args = ["--duration", "1", "--rounds", "2", "--json"];
    let report = succeeded(bench(&set, root.path(), &args));
    let hooks = report["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 16, "{report:#}");
    for hook in hooks {
        let plugin = &hook["plugins"][0];
        assert!(plugin["timed"].as_u64().unwrap() > 0, "{hook:#}");
        assert_eq!(plugin["skips"], json!({}), "{hook:#}");
    }
    let notes = report["load_notes"].to_string();
    assert!(notes.contains("registered a raw hook"), "{notes}");
}

/// Runs `hookline bench` and expects exit 2 with `phrase` on stderr, and no panic.
fn refused(args: &[&str], cwd: &Path, phrase: &str) {
    let out = hookline(args, cwd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(phrase), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_directory_without_plugins_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let empty = root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let args = ["bench", "--plugins", empty.to_str().unwrap()];
    refused(&args, root.path(), "there are no plugins in");
    let missing = root.path().join("missing");
    let args = ["bench", "--plugins", missing.to_str().unwrap()];
    refused(&args, root.path(), "is not a directory");
    // `--plugins-dir`, the old spelling (issue 46 item 4), still names the set, with a line
    // saying it is deprecated.
    let args = ["bench", "--plugins-dir", empty.to_str().unwrap()];
    refused(&args, root.path(), "there are no plugins in");
    refused(
        &args,
        root.path(),
        &format!(
            "hookline bench: `--plugins-dir {0}` is deprecated; use `--plugins {0}`.\n",
            empty.display()
        ),
    );
}

#[test]
fn a_plugin_that_fails_to_load_is_refused_by_name() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let broken = set.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("plugin.json"),
        r#"{"entry": "gone.py", "interpreter": "python3"}"#,
    )
    .unwrap();
    let args = [
        "bench",
        "--plugins",
        set.to_str().unwrap(),
        "--duration",
        "0.2",
    ];
    refused(&args, root.path(), "a plugin failed to load");
    refused(&args, root.path(), "broken");
}

#[test]
fn a_hook_no_plugin_implements_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let dir = set.to_str().unwrap();
    let args = ["bench", "--plugins", dir, "--hook", "on_compaction"];
    refused(
        &args,
        root.path(),
        "no plugin of the set implements on_compaction",
    );
    let args = ["bench", "--plugins", dir, "--hook", "on_compactoin"];
    refused(&args, root.path(), "is not a hook");
}

#[test]
fn a_value_that_is_not_the_hooks_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let values = root.path().join("values.json");
    std::fs::write(&values, r#"{"on_tool_call": {"text": "not a call"}}"#).unwrap();
    let args = [
        "bench",
        "--plugins",
        set.to_str().unwrap(),
        "--values",
        values.to_str().unwrap(),
    ];
    refused(
        &args,
        root.path(),
        "value 1 of on_tool_call is not a value of that hook",
    );
}

#[test]
fn a_baseline_of_another_plugin_set_or_version_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let set = plugin_set(root.path(), "set", 0.0);
    let other = root.path().join("other");
    kit_plugin(&other.join("fast"), 0.0);
    let baseline = root.path().join("baseline.json");
    let quick = ["--duration", "0.3", "--json"];
    let mut args = quick.to_vec();
    args.extend(["--save-baseline", baseline.to_str().unwrap()]);
    let saved = succeeded(bench(&other, root.path(), &args));
    let file = baseline.to_str().unwrap();
    let args = [
        "bench",
        "--plugins",
        set.to_str().unwrap(),
        "--duration",
        "0.3",
        "--baseline",
        file,
    ];
    refused(&args, root.path(), "measured another plugin set");
    let mut older = saved;
    older["hookline_version"] = json!("0.0.1");
    std::fs::write(&baseline, older.to_string()).unwrap();
    refused(&args, root.path(), "was measured by hookline 0.0.1");
    std::fs::write(&baseline, "{}").unwrap();
    refused(&args, root.path(), "is not a plugin set report");
}
