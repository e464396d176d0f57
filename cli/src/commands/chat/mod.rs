//! `hookline chat [--workspace DIR] [--plugins DIR] [--tools DIR] [--no-demo-plugins]
//! [--verbose] [provider flags]`: an interactive session in the terminal (issue 12 item 6).
//!
//! Type a message and the turn runs: model text streams as it arrives, and the hooks that
//! changed values, the notes, tool calls and approvals show as they happen. When the approval
//! policy asks, answer `y` or `n`. Slash commands (`/mode plan`, `/new`, `/compact`, ...) run as
//! session commands. Ctrl-C (or `/stop`) stops the turn that runs: the model request in flight is
//! dropped, a pending question is refused, and the turn ends cancelled. Ctrl-D ends the session
//! with its session-end hooks, through the host's bounded shutdown.
//!
//! Without `--provider`, the built-in offline model answers: the echo model `hookline serve` uses
//! ([`EchoProvider::new`]: `echo: <message>`, and a tool call only when a message's last line asks
//! for one with `call <tool> <json>`), so the chat always runs. Plugins are found as `hookline run` finds
//! them, with the bundled demo plugins when none is on disk.

mod console;
mod input;
mod operator;
mod streamed;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hookline_messages::scenario::SlashCommand;
use hookline_messages::user::StopReason;
use tokio::sync::{broadcast, mpsc};

use super::plugin_dirs::PluginDirs;
use super::provider::ProviderArgs;
use super::run::plugins;
use console::{Console, LIVE_CAPACITY};
use hookline_host::provider::{EchoProvider, Provider};
use hookline_host::session::{HostError, SessionCommand};
use hookline_host::turn::{StopSignal, UserInput};
use hookline_host::Host;
use input::Input;
use operator::{yes_no, Answers, TerminalOperator};
use streamed::Streamed;

/// How many lines typed during a turn wait for it to end; past that, reading pauses (the
/// terminal buffers) unless an approval question waits for its answer.
const MAX_AHEAD: usize = 64;

/// How long the chat waits for the shared state to close after the shutdown's bounded waits.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Arguments of `hookline chat`.
#[derive(Debug, Args)]
pub(crate) struct ChatArgs {
    /// The workspace: the session works here, and its `.hookline/plugins` overlays the user
    /// plugins (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The user plugins directory (default `$HOOKLINE_HOME/plugins` or `~/.hookline/plugins`).
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// A tools directory: one subdirectory per external tool, each with a `tool.json`.
    #[arg(long, value_name = "DIR")]
    tools: Option<PathBuf>,
    /// Never run the bundled demo plugins, even when no plugin is found on disk.
    #[arg(long)]
    no_demo_plugins: bool,
    /// Show every event (gateway events, model calls, system text), not only the interesting.
    #[arg(long)]
    verbose: bool,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Why the chat could not start.
#[derive(Debug, thiserror::Error)]
enum ChatError {
    #[error("'{}' is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error(transparent)]
    Model(#[from] super::provider::ModelSetupError),
    #[error(transparent)]
    Config(#[from] super::config::ConfigError),
    #[error("{0}")]
    Options(String),
}

/// Runs the command.
pub(crate) fn run(args: ChatArgs) -> ExitCode {
    let system = actix::System::new();
    match system.block_on(chat(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("hookline chat: {error}");
            ExitCode::from(2)
        }
    }
}

/// What the chat loop drives besides the host.
struct Chat {
    console: Arc<Console>,
    answers: Answers,
    /// One signal per approval question asked.
    asked: mpsc::Receiver<()>,
    /// The host's stop signal for the turn in flight.
    stop: Arc<StopSignal>,
    lines: mpsc::Receiver<Input>,
    /// Lines typed while a turn ran, in order: they run after it, like a shell's type-ahead.
    ahead: VecDeque<Input>,
    /// The input has ended (Ctrl-D); nothing more will be read.
    ended: bool,
    interrupts: mpsc::Receiver<()>,
}

async fn chat(args: &ChatArgs) -> Result<(), ChatError> {
    let config = args.provider.config()?;
    for dir in [&args.plugins, &args.workspace, &args.tools]
        .into_iter()
        .flatten()
    {
        if !dir.is_dir() {
            return Err(ChatError::NotADirectory(dir.clone()));
        }
    }
    // The same load options as `run` and `hooks` (one place builds them).
    let dirs = PluginDirs {
        user_dir: args.plugins.clone(),
        workspace: args.workspace.clone(),
        order: Vec::new(),
        trust_file: None,
        verbose: args.verbose,
    };
    let options = dirs.load_options().map_err(ChatError::Options)?;
    let builder = plugins(&options, args.tools.as_deref(), args.no_demo_plugins).await;
    let model = match builder
        .tool_registry()
        .map_err(ChatError::from)
        .and_then(|(tools, _)| Ok(args.provider.build(config.as_ref(), &tools)?))
    {
        Ok(model) => model,
        Err(error) => {
            builder.shutdown_plugins().await;
            return Err(error);
        }
    };
    let (live, feed) = broadcast::channel(LIVE_CAPACITY);
    let console = Arc::new(Console::new(feed, args.verbose));
    let inner: Arc<dyn Provider> = match model {
        Some(model) => model,
        None => Arc::new(EchoProvider::new()),
    };
    let provider = Streamed::new(inner, console.clone());
    let (operator, answers, asked) = TerminalOperator::new(console.clone());
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|source| HostError::Workspace {
            path: ".".into(),
            source,
        })?,
    };
    let mut host = builder
        .provider(Arc::new(provider))
        .operator(Arc::new(operator))
        .workspace(&workspace)
        .start()?;
    host.attach_live(Arc::new(
        move |event: &hookline_host::session::HostEvent| {
            // No receiver is not an error: the console has gone.
            let _ = live.send(Arc::new(event.clone()));
        },
    ));
    let stop = host.stop_signal();
    let model_name = args.provider.describe(config.as_ref()).unwrap_or_else(|| {
        "the built-in offline model (it echoes; `call <tool> <json>` asks it for a tool call)"
            .into()
    });
    console.say(&format!(
        "hookline chat with {model_name}, in {}.\nType a message. /help lists the commands; \
         Ctrl-C stops a turn; Ctrl-D ends the session.",
        workspace.display()
    ));
    let mut chat = Chat {
        console,
        answers,
        asked,
        stop,
        lines: input::lines(),
        ahead: VecDeque::new(),
        ended: false,
        interrupts: interrupts(),
    };
    let outcome = match host.open().await {
        Ok(_) => chat.run(&mut host).await,
        Err(error) => Err(error),
    };
    // SPEC P3.13, G2: the session ends with its end hooks, through the bounded shutdown.
    let reason = if outcome.is_ok() {
        "chat ended"
    } else {
        "chat failed"
    };
    let closed = host.shutdown(reason, None).await;
    host.take_events();
    chat.console.events();
    let closed = closed?.wait(CLOSE_WAIT).await;
    chat.console.say("Session ended.");
    if !closed {
        eprintln!("hookline chat: shutdown handlers still running; exiting without waiting.");
    }
    Ok(outcome?)
}

/// Ctrl-C presses, forwarded as they come (the handler stays installed, so Ctrl-C never kills
/// the chat; Ctrl-D ends it).
fn interrupts() -> mpsc::Receiver<()> {
    let (tx, rx) = mpsc::channel(4);
    actix_rt::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if tx.send(()).await.is_err() {
                return;
            }
        }
    });
    rx
}

const HELP: &str = "Commands: /new /reset /clear /fork /compact /stop /mode work|plan \
/approvals ask-above-read|ask-all|allow-workspace /model NAME /resume ID /cd DIR /space NAME \
/help /quit. Ctrl-C stops a turn; Ctrl-D ends the session.";

impl Chat {
    /// Reads and runs lines until the end of input (or `/quit`).
    async fn run(&mut self, host: &mut Host) -> Result<(), HostError> {
        loop {
            host.take_events();
            let Input::Line(line) = self.next_line().await else {
                return Ok(());
            };
            let line = line.trim();
            match line {
                "" => {}
                "/quit" | "/exit" => return Ok(()),
                "/help" => self.console.say(HELP),
                _ if line.starts_with('/') => self.command(host, line).await?,
                _ => self.turn(host, line).await?,
            }
        }
    }

    /// The next line: one typed ahead, else one read after the prompt.
    async fn next_line(&mut self) -> Input {
        if let Some(input) = self.ahead.pop_front() {
            if let Input::Line(line) = &input {
                self.console.say(&format!("you> {line}"));
            }
            return input;
        }
        if self.ended {
            return Input::End;
        }
        loop {
            self.console.prompt("you> ");
            tokio::select! {
                input = self.lines.recv() => {
                    self.console.typed();
                    let input = input.unwrap_or(Input::End);
                    self.ended = input == Input::End;
                    return input;
                }
                Some(()) = self.interrupts.recv() => {
                    self.console.typed();
                    self.console.say("-- No turn is running; Ctrl-D ends the session.");
                }
            }
        }
    }

    /// One slash command. A command the host cannot run is said, and the chat goes on.
    async fn command(&mut self, host: &mut Host, line: &str) -> Result<(), HostError> {
        let command = match SlashCommand::parse(line) {
            Ok(command) => SessionCommand::from(command),
            Err(problem) => {
                self.console
                    .say(&format!("-- {problem}. /help lists the commands."));
                return Ok(());
            }
        };
        if command == SessionCommand::Stop {
            self.console
                .say("-- No turn is running; /stop stops nothing.");
        }
        match host.command(command).await {
            Ok(()) => self.console.say(&format!("-- {line}: done.")),
            Err(error @ (HostError::UnknownSession(_) | HostError::Workspace { .. })) => {
                self.console.say(&format!("-- {line}: {error}."));
            }
            Err(error) => return Err(error),
        }
        Ok(())
    }

    /// One user turn. Lines typed meanwhile answer the approval question, stop the turn
    /// (`/stop`), or wait for their turn; Ctrl-C stops it.
    async fn turn(&mut self, host: &mut Host, text: &str) -> Result<(), HostError> {
        let input = UserInput {
            mode: host.session_mode(),
            ..UserInput::work(text)
        };
        let turn = host.user_turn(input);
        tokio::pin!(turn);
        let stop_reason = loop {
            tokio::select! {
                result = &mut turn => break result?,
                input = self.lines.recv(), if self.reading() => {
                    self.console.typed();
                    self.during_turn(input.unwrap_or(Input::End));
                }
                Some(()) = self.asked.recv() => self.answer_from_ahead(),
                Some(()) = self.interrupts.recv() => {
                    self.console.typed();
                    self.stop_turn();
                }
            }
        };
        self.console.events();
        if stop_reason != StopReason::Completed {
            self.console
                .say(&format!("-- The turn ended: {stop_reason:?}."));
        }
        Ok(())
    }

    /// Whether to read typed lines during a turn: not after the end of input, and not past
    /// [`MAX_AHEAD`] waiting lines unless a question needs its answer.
    fn reading(&self) -> bool {
        !self.ended && (self.ahead.len() < MAX_AHEAD || self.answers.waiting())
    }

    /// What was typed while a turn runs.
    fn during_turn(&mut self, input: Input) {
        // A line typed while a question waits answers it (lines typed earlier wait their turn).
        let answering = self.answers.waiting();
        match input {
            Input::Line(line) if line.trim() == "/stop" => self.stop_turn(),
            Input::Line(line) if answering => match yes_no(&line) {
                Some(decision) => self.answers.answer(decision),
                None => self.console.prompt("answer y or n: "),
            },
            Input::End if answering => {
                // No answer can come any more.
                self.ended = true;
                self.answers.refuse();
            }
            Input::End => self.ended = true,
            Input::Line(line) => {
                self.console.say("-- Queued; it runs after this turn.");
                self.ahead.push_back(Input::Line(line));
            }
        }
    }

    /// A question was asked: a line typed ahead answers it if it is `y` or `n`; an ended input
    /// refuses it.
    fn answer_from_ahead(&mut self) {
        if !self.answers.waiting() {
            return;
        }
        match self.ahead.front() {
            Some(Input::Line(line)) => match yes_no(line) {
                Some(decision) => {
                    self.console.say(line.trim());
                    self.ahead.pop_front();
                    self.answers.answer(decision);
                }
                // Nothing more can be typed: no answer will come.
                None if self.ended => self.answers.refuse(),
                None => {}
            },
            Some(Input::End) => self.answers.refuse(),
            None if self.ended => self.answers.refuse(),
            None => {}
        }
    }

    fn stop_turn(&self) {
        self.console.say("-- Stopping the turn...");
        self.stop.raise();
        self.answers.refuse();
    }
}
