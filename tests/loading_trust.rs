//! Trust for workspace plugins: they run only once trusted, trust is bound to a hash of the
//! manifest and entry point, a changed plugin is untrusted again with a note naming it, and
//! user plugins are trusted by installation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use hookline::host::loading::trust::{fingerprint, Trust, TrustFile};
use hookline::host::loading::{load, LoadOptions, LoadProblem, Manifest, PluginState};
use serde_json::json;
use support::faulty;

struct Dirs {
    _root: tempfile::TempDir,
    user: PathBuf,
    workspace: PathBuf,
    trust_file: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let user = root.path().join("user");
    let workspace = root.path().join("ws/.hookline/plugins");
    std::fs::create_dir_all(&user).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let trust_file = root.path().join("home/trust.json");
    Dirs {
        _root: root,
        user,
        workspace,
        trust_file,
    }
}

fn options(d: &Dirs) -> LoadOptions {
    let mut options = LoadOptions::new(Some(d.user.clone()), Some(d.workspace.clone()));
    options.trust_file = Some(d.trust_file.clone());
    options
}

fn trust(d: &Dirs, dir: &Path) {
    let manifest = Manifest::read(dir).unwrap();
    TrustFile::trust(&d.trust_file, dir, fingerprint(dir, &manifest).unwrap()).unwrap();
}

#[actix_rt::test]
async fn an_untrusted_workspace_plugin_does_not_run_and_a_note_names_it() {
    let d = dirs();
    let dir = faulty(&d.workspace, "repo-hook", "ok", json!({}));
    faulty(&d.user, "mine", "ok", json!({}));
    let report = load(&options(&d)).await;
    let names: Vec<&str> = report.plugins.iter().map(|p| p.name()).collect();
    assert_eq!(names, ["mine"]);
    assert!(!dir.join("transcript.log").exists(), "it must not start");
    let status = report
        .statuses
        .iter()
        .find(|s| s.name == "repo-hook")
        .unwrap();
    assert_eq!(status.trust, Trust::Untrusted);
    assert_eq!(
        status.state,
        PluginState::Skipped(LoadProblem::Untrusted("repo-hook".into()))
    );
    let notes: Vec<String> = report.notes.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [format!(
            "Plugin directory '{}' was skipped: its workspace plugin 'repo-hook' is not trusted \
             (run 'hookline hooks trust repo-hook').",
            dir.display()
        )]
    );
    let mine = report.statuses.iter().find(|s| s.name == "mine").unwrap();
    assert_eq!(mine.trust, Trust::Installed);
    report.shutdown().await;
}

#[actix_rt::test]
async fn a_trusted_workspace_plugin_runs_until_it_changes() {
    let d = dirs();
    let dir = faulty(&d.workspace, "repo-hook", "ok", json!({}));
    trust(&d, &dir);
    let report = load(&options(&d)).await;
    assert_eq!(report.plugins.len(), 1);
    assert_eq!(report.statuses[0].trust, Trust::Trusted);
    assert!(report.notes.is_empty());
    report.shutdown().await;
    // A changed entry point (or manifest) is untrusted again, with a note naming it.
    for (file, text) in [("faulty.py", "\n# changed\n"), ("plugin.json", " ")] {
        let trusted = std::fs::read_to_string(dir.join(file)).unwrap();
        std::fs::write(dir.join(file), format!("{trusted}{text}")).unwrap();
        let report = load(&options(&d)).await;
        assert!(report.plugins.is_empty());
        assert_eq!(report.statuses[0].trust, Trust::Changed);
        assert!(
            report.notes[0]
                .to_string()
                .contains("its workspace plugin 'repo-hook' changed since it was trusted"),
            "{}",
            report.notes[0]
        );
        std::fs::write(dir.join(file), trusted).unwrap();
    }
}

#[actix_rt::test]
async fn without_a_trust_file_no_workspace_plugin_runs() {
    let d = dirs();
    faulty(&d.workspace, "repo-hook", "ok", json!({}));
    let report = load(&LoadOptions::new(None, Some(d.workspace.clone()))).await;
    assert!(report.plugins.is_empty());
    assert_eq!(report.statuses[0].trust, Trust::Untrusted);
}

#[actix_rt::test]
async fn trust_is_per_directory_so_a_same_named_copy_elsewhere_is_untrusted() {
    let d = dirs();
    let dir = faulty(&d.workspace, "repo-hook", "ok", json!({}));
    trust(&d, &dir);
    let other = tempfile::tempdir().unwrap();
    faulty(other.path(), "repo-hook", "ok", json!({}));
    let mut options = options(&d);
    options.workspace_dir = Some(other.path().into());
    let report = load(&options).await;
    assert!(report.plugins.is_empty());
    assert_eq!(report.statuses[0].trust, Trust::Untrusted);
}

fn cli(d: &Dirs, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("hooks")
        .args(args)
        .arg("--plugins")
        .arg(&d.user)
        .arg("--workspace")
        .arg(d.workspace.parent().unwrap().parent().unwrap())
        .arg("--trust-file")
        .arg(&d.trust_file)
        .output()
        .unwrap()
}

#[test]
fn hooks_trust_trusts_and_list_shows_it() {
    let d = dirs();
    faulty(&d.workspace, "repo-hook", "ok", json!({}));
    let before = String::from_utf8_lossy(&cli(&d, &["list"]).stdout).into_owned();
    assert!(before.contains("TRUST"), "{before}");
    let row = before.lines().find(|l| l.starts_with("repo-hook")).unwrap();
    assert!(
        row.contains("untrusted") && row.contains("skipped"),
        "{row}"
    );
    let trusted = cli(&d, &["trust", "repo-hook"]);
    assert!(trusted.status.success(), "{trusted:?}");
    assert!(
        String::from_utf8_lossy(&trusted.stdout).contains("Plugin 'repo-hook' is trusted (sha256:")
    );
    let after = String::from_utf8_lossy(&cli(&d, &["list"]).stdout).into_owned();
    let row = after.lines().find(|l| l.starts_with("repo-hook")).unwrap();
    assert!(row.contains(" trusted") && row.ends_with("loaded"), "{row}");
    let info = String::from_utf8_lossy(&cli(&d, &["info", "repo-hook"]).stdout).into_owned();
    assert!(info.contains("trust        trusted"), "{info}");
}

#[test]
fn hooks_trust_on_a_user_plugin_says_it_is_trusted_by_installation() {
    let d = dirs();
    faulty(&d.user, "mine", "ok", json!({}));
    let out = cli(&d, &["trust", "mine"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("trusted by installation"));
    assert!(!d.trust_file.exists());
}
