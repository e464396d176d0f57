//! Session transitions (SPEC P3.10 to P3.13) and resuming after a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;

use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline::host::turn::UserInput;
use hookline::host::{HostError, SessionCommand};
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::model::ItemBody;
use hookline::messages::record::ArchiveEntry;
use hookline::messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline::messages::user::UserMessage;
use host_support::*;

struct Watcher(Seen);

#[async_trait]
impl Plugin for Watcher {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnSessionStarted, HookKind::OnSessionEnded])
    }
    async fn on_session_started(&self, cx: &HookContext, s: SessionInfo) -> HookResult<()> {
        assert_eq!(cx.session_id, s.session_id);
        self.0
            .lock()
            .unwrap()
            .push(format!("start {} {}", s.session_id, s.workspace_root));
        Ok(())
    }
    async fn on_session_ended(&self, cx: &HookContext, s: SessionInfo) -> HookResult<()> {
        assert_eq!(cx.session_id, s.session_id);
        self.0
            .lock()
            .unwrap()
            .push(format!("end {} {}", s.session_id, s.workspace_root));
        Ok(())
    }
}

/// A host with `plugin` as its one plugin, named `name`, asking before anything above reads.
fn rig_with(name: &str, plugin: Arc<dyn Plugin>) -> Rig {
    rig(
        vec![PluginRegistration::new(name).with_hooks(plugin)],
        false,
        ApprovalMode::AskAboveRead,
    )
}

#[actix_rt::test]
async fn every_transition_runs_end_then_start_with_the_session_and_workspace_left() {
    let log = Seen::default();
    let mut rig = rig_with("w", Arc::new(Watcher(log.clone())));
    std::fs::create_dir_all(rig.workspace().join("sub")).unwrap();
    let ws = rig.workspace().display().to_string();
    let sub = format!("{ws}/sub");
    let other = std::fs::canonicalize(rig.dir.path())
        .unwrap()
        .join("other")
        .display()
        .to_string();
    rig.host.open().await.unwrap();
    rig.host.command(SessionCommand::Clear).await.unwrap();
    rig.host.command(SessionCommand::Fork).await.unwrap();
    rig.host
        .command(SessionCommand::Resume(SessionId::new("s1")))
        .await
        .unwrap();
    rig.host
        .command(SessionCommand::Cd("sub".into()))
        .await
        .unwrap();
    rig.host
        .command(SessionCommand::Space("other".into()))
        .await
        .unwrap();
    // SPEC P3.12: a resume that changes the workspace is exactly one end and one start.
    rig.host
        .command(SessionCommand::Resume(SessionId::new("s2")))
        .await
        .unwrap();
    rig.host.command(SessionCommand::New).await.unwrap();
    rig.host.close().await.unwrap();
    rig.host.close().await.unwrap();
    let expected = [
        format!("start s1 {ws}"),
        format!("end s1 {ws}"),
        format!("start s2 {ws}"),
        format!("end s2 {ws}"),
        format!("start s3 {ws}"),
        format!("end s3 {ws}"),
        format!("start s1 {ws}"),
        format!("end s1 {ws}"),
        format!("start s4 {sub}"),
        format!("end s4 {sub}"),
        format!("start s5 {other}"),
        format!("end s5 {other}"),
        format!("start s2 {ws}"),
        format!("end s2 {ws}"),
        format!("start s6 {ws}"),
        format!("end s6 {ws}"),
    ];
    assert_eq!(seen(&log), expected);
}

#[actix_rt::test]
async fn resuming_the_active_session_runs_no_transition() {
    let log = Seen::default();
    let mut rig = rig_with("w", Arc::new(Watcher(log.clone())));
    rig.host.open().await.unwrap();
    rig.host
        .command(SessionCommand::Resume(SessionId::new("s1")))
        .await
        .unwrap();
    assert_eq!(seen(&log).len(), 1);
    let missing = rig
        .host
        .command(SessionCommand::Resume(SessionId::new("nope")))
        .await;
    assert!(matches!(missing, Err(HostError::UnknownSession(id)) if id == "nope"));
}

#[actix_rt::test]
async fn a_fork_copies_the_stored_records_into_a_new_session() {
    let mut rig = rig(vec![], false, ApprovalMode::AskAboveRead);
    rig.host.open().await.unwrap();
    rig.replies(vec![text("a")]);
    rig.host.user_turn(UserInput::work("q")).await.unwrap();
    rig.host.command(SessionCommand::Fork).await.unwrap();
    assert_eq!(
        rig.host
            .active()
            .map(|s| s.session_id.to_string())
            .as_deref(),
        Some("s2")
    );
    assert_eq!(rig.records("s2"), rig.records("s1"));
}

/// Records the session each `on_user_message` call is made for.
struct SessionOfCalls(Seen);

#[async_trait]
impl Plugin for SessionOfCalls {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage])
    }
    async fn on_user_message(
        &self,
        cx: &HookContext,
        message: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        self.0
            .lock()
            .unwrap()
            .push(format!("{} {}", cx.session_id, message.text));
        Ok(Reply::Keep)
    }
}

// The host calls a session's hooks by the key the pipeline gave it when it became active: each
// turn's hooks see the session active at that turn, through `/new`, `/fork` and a resume.
#[actix_rt::test]
async fn each_turns_hooks_are_called_for_the_session_active_then() {
    let log = Seen::default();
    let mut rig = rig_with("s", Arc::new(SessionOfCalls(log.clone())));
    rig.host.open().await.unwrap();
    rig.replies(vec![text("a"), text("b"), text("c"), text("d")]);
    rig.host.user_turn(UserInput::work("one")).await.unwrap();
    rig.host.command(SessionCommand::New).await.unwrap();
    rig.host.user_turn(UserInput::work("two")).await.unwrap();
    rig.host.command(SessionCommand::Fork).await.unwrap();
    rig.host.user_turn(UserInput::work("three")).await.unwrap();
    rig.host
        .command(SessionCommand::Resume(SessionId::new("s1")))
        .await
        .unwrap();
    rig.host.user_turn(UserInput::work("four")).await.unwrap();
    assert_eq!(seen(&log), ["s1 one", "s2 two", "s3 three", "s1 four"]);
}

// A session the conversation leaves is forgotten by the pipeline (its slot, its seen notes), as
// a closed one is: a long conversation's `/new`s do not pile up there.
#[actix_rt::test]
async fn the_pipeline_holds_only_the_active_session_after_switches() {
    let log = Seen::default();
    let mut rig = rig_with("s", Arc::new(SessionOfCalls(log.clone())));
    rig.host.open().await.unwrap();
    rig.replies(vec![text("a"), text("b")]);
    rig.host.user_turn(UserInput::work("one")).await.unwrap();
    for command in [
        SessionCommand::New,
        SessionCommand::Clear,
        SessionCommand::Fork,
        SessionCommand::Reset,
    ] {
        rig.host.command(command).await.unwrap();
    }
    rig.host
        .command(SessionCommand::Resume(SessionId::new("s1")))
        .await
        .unwrap();
    rig.host.user_turn(UserInput::work("two")).await.unwrap();
    assert_eq!(seen(&log), ["s1 one", "s1 two"]);
    let held = rig.host.pipeline().admitted().await.unwrap();
    assert_eq!(held.sessions, 1, "only the active session: {held:?}");
    rig.host.close().await.unwrap();
    assert_eq!(rig.host.pipeline().admitted().await.unwrap().sessions, 0);
}

#[test]
fn a_store_reopened_after_a_restart_resumes_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let start = |ws: std::path::PathBuf| {
        let provider = hookline::host::provider::ScriptedProvider::new(false);
        let host = hookline::host::Host::builder()
            .provider(Arc::new(provider.clone()))
            .workspace(ws)
            .start()
            .unwrap();
        (host, provider)
    };
    // First process: one turn, then the system (and every actor) goes away.
    actix::System::new().block_on(async {
        let (mut host, provider) = start(ws.clone());
        host.open().await.unwrap();
        provider.push_replies(vec![text("remembered answer")]);
        host.user_turn(UserInput::work("remember me"))
            .await
            .unwrap();
        host.close().await.unwrap();
    });
    // Second process: a new host over the same store resumes s1 and builds from its records.
    actix::System::new().block_on(async {
        let (mut host, provider) = start(ws.clone());
        host.resume(&SessionId::new("s1")).await.unwrap();
        provider.push_replies(vec![text("ok")]);
        host.user_turn(UserInput::work("again")).await.unwrap();
        let texts: Vec<String> = provider.sent()[0]
            .items
            .iter()
            .filter_map(|i| match &i.body {
                ItemBody::User { text, .. } | ItemBody::Assistant { text, .. } => {
                    Some(text.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(texts, ["remember me", "remembered answer", "again"]);
        // A fresh session after the restart does not reuse a stored id.
        host.command(SessionCommand::New).await.unwrap();
        assert_eq!(
            host.active().map(|s| s.session_id.to_string()).as_deref(),
            Some("s2")
        );
    });
}

/// Issue 26: `/resume` in a one-conversation host (what `hookline run` and `chat` use) restores
/// the session's approval mode as last set, its model and turn mode, although this host's own
/// default is looser; a `/new` afterwards keeps them.
#[test]
fn a_host_resume_restores_the_policy_the_operator_set() {
    use hookline::messages::prompt::PromptMode;
    let dir = tempfile::tempdir().unwrap();
    let start = || {
        hookline::host::Host::builder()
            .provider(Arc::new(hookline::host::provider::EchoProvider::new()))
            .approval_mode(ApprovalMode::AllowWorkspace)
            .workspace(dir.path())
            .start()
            .unwrap()
    };
    let id = actix::System::new().block_on(async {
        let mut host = start();
        let id = host.open().await.unwrap();
        host.command(SessionCommand::Approvals(ApprovalMode::AskAll))
            .await
            .unwrap();
        host.command(SessionCommand::Model("claude".into()))
            .await
            .unwrap();
        host.command(SessionCommand::Mode(PromptMode::Plan))
            .await
            .unwrap();
        host.user_turn(UserInput::work("one")).await.unwrap();
        host.close().await.unwrap();
        id
    });
    actix::System::new().block_on(async {
        let mut host = start();
        host.open().await.unwrap();
        assert_eq!(host.approval_mode(), ApprovalMode::AllowWorkspace);
        host.command(SessionCommand::Resume(id.clone()))
            .await
            .unwrap();
        assert_eq!(host.approval_mode(), ApprovalMode::AskAll);
        assert_eq!(host.model(), Some("claude"));
        assert_eq!(host.session_mode(), PromptMode::Plan);
        assert_eq!(host.user_turns(), 1);
        host.command(SessionCommand::New).await.unwrap();
        assert_ne!(host.active().map(|s| &s.session_id), Some(&id));
        assert_eq!(host.approval_mode(), ApprovalMode::AskAll);
        assert_eq!(host.model(), Some("claude"));
        host.close().await.unwrap();
    });
}

fn one_place_rig(plugins: Vec<PluginRegistration>) -> Rig {
    rig_from(
        hookline::host::Host::builder()
            .plugins(plugins)
            .shards(1)
            .max_pending(1),
        false,
        ApprovalMode::AskAboveRead,
    )
}

/// The pipeline is full for a moment when `/new` runs: the host asks again (the lifecycle runs
/// what had not run) and the switch completes, each hook once, the end archived.
#[actix_rt::test]
async fn a_switch_the_pipeline_refuses_for_a_moment_completes() {
    let log = Seen::default();
    let release = Arc::new(tokio::sync::Notify::new());
    let mut rig = one_place_rig(vec![
        lifecycle_logger(&log, &Arc::default()),
        blocker(&release),
    ]);
    rig.host.open().await.unwrap();
    let first = rig.host.active().unwrap().session_id.clone();
    let busy = rig
        .host
        .pipeline()
        .submit::<hookline::messages::hook::OnUserMessage>(
            SessionId::new("elsewhere"),
            UserMessage::new("x"),
        );
    let later = release.clone();
    actix_rt::spawn(async move {
        actix_rt::time::sleep(std::time::Duration::from_millis(30)).await;
        later.notify_one();
    });
    rig.host.command(SessionCommand::New).await.unwrap();
    busy.await.unwrap();
    let second = rig.host.active().unwrap().session_id.clone();
    assert_eq!(
        seen(&log),
        [
            format!("start {first}"),
            format!("end {first}"),
            format!("start {second}")
        ]
    );
    assert!(rig
        .archive(first.as_str())
        .iter()
        .any(|e| matches!(e, ArchiveEntry::SessionEnded(info) if info.session_id == first)));
}

/// The session left ends, then the pipeline stays full past the retries and the next start is
/// refused: the end that ran is archived in the session left, no session is active (none has
/// started), and the next `/new` runs a start only.
#[actix_rt::test]
async fn a_start_refused_after_the_end_ran_leaves_the_end_archived_and_no_session_active() {
    let log = Seen::default();
    let hold = Arc::default();
    let release = Arc::new(tokio::sync::Notify::new());
    let mut rig = one_place_rig(vec![lifecycle_logger(&log, &hold), blocker(&release)]);
    rig.host.open().await.unwrap();
    let first = rig.host.active().unwrap().session_id.clone();
    *hold.lock().unwrap() = Some(rig.host.pipeline().clone());

    let refused = rig.host.command(SessionCommand::New).await;
    assert!(
        matches!(
            refused,
            Err(HostError::Pipeline(
                hookline::actors::PipelineError::Overloaded
            ))
        ),
        "{refused:?}"
    );
    assert_eq!(rig.host.active(), None);
    assert!(rig
        .archive(first.as_str())
        .iter()
        .any(|e| matches!(e, ArchiveEntry::SessionEnded(info) if info.session_id == first)));

    hold.lock().unwrap().take();
    release.notify_one();
    while rig.host.pipeline().admitted().await.unwrap().calls > 0 {
        actix_rt::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    rig.host.command(SessionCommand::New).await.unwrap();
    let third = rig.host.active().unwrap().session_id.clone();
    let log = seen(&log);
    assert_eq!(log.len(), 3, "{log:?}");
    assert_eq!(log[..2], [format!("start {first}"), format!("end {first}")]);
    assert_eq!(log[2], format!("start {third}"));
}
