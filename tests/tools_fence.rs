//! The built-in file tools stay inside the workspace root (issue 4 item 3, issue 8 item 4):
//! `..` escapes, absolute paths outside the root and symbolic links that resolve outside are
//! refused; inside, the tools read, list and write.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use hookline::host::tools::{ToolContext, ToolOutput, ToolRegistry, MAX_READ_BYTES};
use serde_json::{json, Value};

struct Fixture {
    /// Holds the workspace `ws/` and a sibling `outside/` with `secret.txt`.
    dir: tempfile::TempDir,
    tools: ToolRegistry,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("ws/sub")).unwrap();
        fs::write(dir.path().join("ws/sub/inside.txt"), "inside").unwrap();
        fs::create_dir(dir.path().join("outside")).unwrap();
        fs::write(dir.path().join("outside/secret.txt"), "TOP-SECRET-CONTENT").unwrap();
        Self {
            dir,
            tools: ToolRegistry::with_builtins(),
        }
    }

    fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    fn outside(&self) -> std::path::PathBuf {
        self.dir.path().join("outside")
    }

    async fn run(&self, tool: &str, arguments: Value) -> ToolOutput {
        let cx = ToolContext {
            workspace_root: self.ws(),
            session_id: "s1".into(),
            approval_mode: Default::default(),
        };
        self.tools.get(tool).unwrap().run(&cx, arguments).await
    }
}

fn assert_refused(output: &ToolOutput, what: &str) {
    assert!(!output.success, "{what} was not refused: {output:?}");
    assert!(
        !output.text.contains("TOP-SECRET"),
        "{what} leaked: {output:?}"
    );
}

#[tokio::test]
async fn files_inside_the_workspace_are_read_listed_and_written() {
    let f = Fixture::new();
    let read = f.run("read_file", json!({"path": "sub/inside.txt"})).await;
    assert_eq!((read.success, read.text.as_str()), (true, "inside"));
    let list = f.run("list_dir", json!({})).await;
    assert_eq!((list.success, list.text.as_str()), (true, "sub/"));
    let write = f
        .run(
            "write_file",
            json!({"path": "new/deep/file.txt", "content": "hi"}),
        )
        .await;
    assert!(write.success, "{write:?}");
    assert_eq!(
        fs::read_to_string(f.ws().join("new/deep/file.txt")).unwrap(),
        "hi"
    );
    let abs = f.ws().join("sub/inside.txt");
    let read_abs = f.run("read_file", json!({"path": abs})).await;
    assert!(
        read_abs.success,
        "an absolute path inside the root is fine: {read_abs:?}"
    );
}

#[tokio::test]
async fn dot_dot_escapes_are_refused() {
    let f = Fixture::new();
    assert_refused(
        &f.run("read_file", json!({"path": "../outside/secret.txt"}))
            .await,
        "read ..",
    );
    assert_refused(
        &f.run("read_file", json!({"path": "sub/../../outside/secret.txt"}))
            .await,
        "read sub/../..",
    );
    assert_refused(&f.run("list_dir", json!({"path": ".."})).await, "list ..");
    let out = f
        .run(
            "write_file",
            json!({"path": "../outside/new.txt", "content": "x"}),
        )
        .await;
    assert_refused(&out, "write ..");
    let out = f
        .run(
            "write_file",
            json!({"path": "nope/../../outside/new.txt", "content": "x"}),
        )
        .await;
    assert_refused(&out, "write through a missing dir and ..");
    assert!(!f.outside().join("new.txt").exists());
    assert!(
        out.text.contains("nope/../../outside/new.txt"),
        "the refusal names the path: {}",
        out.text
    );
}

#[tokio::test]
async fn absolute_paths_outside_the_root_are_refused() {
    let f = Fixture::new();
    let secret = f.outside().join("secret.txt");
    let out = f.run("read_file", json!({"path": secret})).await;
    assert_refused(&out, "read absolute");
    assert!(out.text.contains("outside the workspace"), "{}", out.text);
    assert_refused(
        &f.run("list_dir", json!({"path": f.outside()})).await,
        "list absolute",
    );
    let target = f.outside().join("new.txt");
    assert_refused(
        &f.run("write_file", json!({"path": target, "content": "x"}))
            .await,
        "write absolute",
    );
    assert!(!target.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_that_resolve_outside_are_refused() {
    use std::os::unix::fs::symlink;
    let f = Fixture::new();
    symlink(f.outside().join("secret.txt"), f.ws().join("file-link")).unwrap();
    symlink(f.outside(), f.ws().join("dir-link")).unwrap();
    symlink(f.outside().join("missing.txt"), f.ws().join("dangling")).unwrap();
    symlink(f.ws().join("sub/inside.txt"), f.ws().join("inner-link")).unwrap();

    assert_refused(
        &f.run("read_file", json!({"path": "file-link"})).await,
        "read via file link",
    );
    assert_refused(
        &f.run("read_file", json!({"path": "dir-link/secret.txt"}))
            .await,
        "read via dir link",
    );
    assert_refused(
        &f.run("list_dir", json!({"path": "dir-link"})).await,
        "list via dir link",
    );
    let writes = [
        ("file-link", "overwrite via link"),
        ("dir-link/new.txt", "create via dir link"),
        ("dangling", "create via dangling link"),
        ("dir-link/a/b.txt", "create deep via dir link"),
    ];
    for (path, what) in writes {
        assert_refused(
            &f.run("write_file", json!({"path": path, "content": "pwned"}))
                .await,
            what,
        );
    }
    assert_eq!(
        fs::read_to_string(f.outside().join("secret.txt")).unwrap(),
        "TOP-SECRET-CONTENT"
    );
    assert!(!f.outside().join("missing.txt").exists() && !f.outside().join("new.txt").exists());
    assert!(!f.outside().join("a").exists());

    let inner = f.run("read_file", json!({"path": "inner-link"})).await;
    assert_eq!(
        (inner.success, inner.text.as_str()),
        (true, "inside"),
        "links inside are fine"
    );
}

#[tokio::test]
async fn reads_are_bounded() {
    let f = Fixture::new();
    let big = "y".repeat(MAX_READ_BYTES as usize + 10);
    fs::write(f.ws().join("big.txt"), &big).unwrap();
    let out = f.run("read_file", json!({"path": "big.txt"})).await;
    assert!(out.success);
    assert!(out.text.starts_with(&big[..MAX_READ_BYTES as usize]));
    assert!(
        out.text.len() < MAX_READ_BYTES as usize + 200,
        "cut to the bound"
    );
    assert!(out.text.contains("only the first"), "the cut is said");
}

#[tokio::test]
async fn bad_arguments_and_missing_files_are_failures_not_panics() {
    let f = Fixture::new();
    for (tool, arguments) in [
        ("read_file", json!({})),
        ("read_file", json!({"path": 3})),
        ("read_file", json!("just a string")),
        ("write_file", json!({"path": "x"})),
        ("list_dir", json!({"path": "sub", "extra": true})),
        ("read_file", json!({"path": "missing.txt"})),
        ("read_file", json!({"path": "sub"})),
        ("list_dir", json!({"path": "sub/inside.txt"})),
        ("write_file", json!({"path": "sub", "content": "x"})),
    ] {
        let out = f.run(tool, arguments.clone()).await;
        assert!(
            !out.success && !out.text.is_empty(),
            "{tool} {arguments}: {out:?}"
        );
    }
    assert!(
        Path::new(&f.ws().join("sub")).is_dir(),
        "write_file did not replace a directory"
    );
}

mod properties {
    use super::*;
    use hookline::host::tools::fence;
    use proptest::prelude::*;

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("..".to_owned()),
            Just(".".to_owned()),
            Just("".to_owned()),
            Just("sub".to_owned()),
            Just("outside".to_owned()),
            Just("ws".to_owned()),
            Just("link".to_owned()),
            Just("secret.txt".to_owned()),
            "[a-z\\-. ]{1,6}",
        ]
    }

    fn path() -> impl Strategy<Value = String> {
        (any::<bool>(), proptest::collection::vec(segment(), 0..8)).prop_map(|(absolute, parts)| {
            format!("{}{}", if absolute { "/" } else { "" }, parts.join("/"))
        })
    }

    proptest! {
        /// Issue 8 items 2 and 4: whatever the path, the fence either refuses it or gives a
        /// path inside the canonical root, and never panics.
        #[test]
        fn the_fence_never_lets_a_path_out(requested in path()) {
            let f = Fixture::new();
            #[cfg(unix)]
            std::os::unix::fs::symlink(f.outside(), f.ws().join("link")).unwrap();
            let root = fs::canonicalize(f.ws()).unwrap();
            if let Ok(fenced) = fence::resolve(&f.ws(), &requested) {
                prop_assert!(fenced.path.starts_with(&root), "{requested:?} -> {fenced:?}");
                if fenced.exists {
                    let real = fs::canonicalize(&fenced.path).unwrap();
                    prop_assert!(real.starts_with(&root), "{requested:?} -> {real:?}");
                }
            }
        }

        /// Arbitrary JSON as arguments: every built-in answers (success or a failure text),
        /// never panics, and never writes outside the workspace.
        #[test]
        fn arbitrary_arguments_never_panic(arguments in arguments(), tool in 0..3usize) {
            let f = Fixture::new();
            let name = ["read_file", "list_dir", "write_file"][tool];
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let out = rt.block_on(f.run(name, arguments));
            prop_assert!(out.success || !out.text.is_empty());
            let outside: Vec<_> = fs::read_dir(f.outside()).unwrap().collect();
            prop_assert_eq!(outside.len(), 1);
        }
    }

    fn arguments() -> impl Strategy<Value = Value> {
        let text = prop_oneof![path(), any::<String>()];
        prop_oneof![
            (path(), text.clone()).prop_map(|(p, c)| json!({"path": p, "content": c})),
            path().prop_map(|p| json!({ "path": p })),
            text.prop_map(Value::String),
            any::<i64>().prop_map(|n| json!({ "path": n })),
            Just(json!(null)),
            Just(json!([1, 2])),
        ]
    }
}
