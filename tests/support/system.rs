//! Tests that need a system program the README does not install (HAProxy): found, they run;
//! absent, they say so and skip, unless `HOOKLINE_REQUIRE_SYSTEM_TESTS=1` (which `.ci/run` sets
//! after installing them), where they fail instead, so CI runs every one (issue 20 item 3).
//!
//! libtest has no run-time skip: a skipped test returns early and is listed as passed, so the
//! reason is written straight to the terminal (past libtest's capture) where it cannot be missed.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::PathBuf;

/// The variable that turns a missing program into a failure.
pub(crate) const REQUIRE_ENV: &str = "HOOKLINE_REQUIRE_SYSTEM_TESTS";

/// `program` on the `PATH` or in `extra` directories; `None` (after saying why) when it is
/// missing and the system tests are not required.
///
/// # Panics
/// When the program is missing and `HOOKLINE_REQUIRE_SYSTEM_TESTS=1`, naming how to install it.
pub(crate) fn program(test: &str, program: &str, extra: &[&str], install: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .chain(extra.iter().map(PathBuf::from))
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    });
    if found.is_some() {
        return found;
    }
    let why = format!("{test} needs {program}, which is not on the PATH ({install})");
    assert!(!required(), "{why}; {REQUIRE_ENV}=1 makes this a failure");
    // Straight to stderr, not eprintln!: libtest would capture it and hide it.
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {why}; set {REQUIRE_ENV}=1 to fail instead"
    );
    None
}

/// Whether a missing program fails the test (`HOOKLINE_REQUIRE_SYSTEM_TESTS=1`).
pub(crate) fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// Whether `python3` imports every one of `modules` (PyPI packages: `ziglang`, `wasmtime`);
/// `false` (after saying why) when one is missing and the system tests are not required.
///
/// # Panics
/// When one is missing and `HOOKLINE_REQUIRE_SYSTEM_TESTS=1`, naming how to install it.
pub(crate) fn python_modules(test: &str, modules: &[&str]) -> bool {
    let imports = std::process::Command::new("python3")
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .output();
    if imports.is_ok_and(|out| out.status.success()) {
        return true;
    }
    let install = format!("python3 -m pip install {}", modules.join(" "));
    let why = format!(
        "{test} needs the Python packages {}, which python3 cannot import ({install})",
        modules.join(" and ")
    );
    assert!(!required(), "{why}; {REQUIRE_ENV}=1 makes this a failure");
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {why}; set {REQUIRE_ENV}=1 to fail instead"
    );
    false
}
