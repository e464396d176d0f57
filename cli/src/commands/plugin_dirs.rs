//! Where the CLI finds plugins, in one place: every command that loads plugins (`hooks ...`,
//! `run`) takes these flags and builds its [`LoadOptions`] here, so they all load the same plugins
//! the same way, the trust file included (issue 15 defect 4).

use std::path::PathBuf;

use clap::Args;

use hookline_host::loading::trust::default_trust_file;
use hookline_host::loading::LoadOptions;

/// The plugin directories, the pinned order and the trust file.
#[derive(Debug, Args)]
pub(crate) struct PluginDirs {
    /// The user plugins directory (default `$HOOKLINE_HOME/plugins` or `~/.hookline/plugins`).
    // `--user-dir` is its old, deprecated spelling (`super::deprecated`), not shown in the help.
    #[arg(long = "plugins", global = true, value_name = "DIR")]
    pub(crate) user_dir: Option<PathBuf>,
    /// The workspace whose `.hookline/plugins` overlays the user plugins (default: the current
    /// directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) workspace: Option<PathBuf>,
    /// Plugin names to load first, in this order (comma-separated); the rest follow by name.
    #[arg(long, global = true, value_delimiter = ',', value_name = "NAMES")]
    pub(crate) order: Vec<String>,
    /// The trust file workspace plugins must be trusted in (default `$HOOKLINE_HOME/trust.json`
    /// or `~/.hookline/trust.json`).
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) trust_file: Option<PathBuf>,
    /// Show what each plugin writes to its stderr (its log) on this stderr, each line prefixed
    /// with `[<plugin>] `.
    #[arg(long, short = 'v', global = true)]
    pub(crate) verbose: bool,
}

impl PluginDirs {
    /// The load options every command uses.
    ///
    /// # Errors
    /// A directory given that is not a directory, as an English phrase.
    pub(crate) fn load_options(&self) -> Result<LoadOptions, String> {
        for dir in [&self.user_dir, &self.workspace].into_iter().flatten() {
            if !dir.is_dir() {
                return Err(format!("'{}' is not a directory", dir.display()));
            }
        }
        Ok(self.options_unchecked())
    }

    /// The options with the documented defaults, without checking the directories exist.
    fn options_unchecked(&self) -> LoadOptions {
        let user_dir = self.user_dir.clone().or_else(default_user_dir);
        let workspace = self
            .workspace
            .clone()
            .or_else(|| std::env::current_dir().ok());
        let mut options =
            LoadOptions::new(user_dir, workspace.map(|w| w.join(".hookline/plugins")));
        options.pinned_order = self.order.clone();
        options.trust_file = self.trust_file.clone().or_else(default_trust_file);
        options.echo_stderr = self.verbose;
        options
    }

    /// Where the user and workspace plugins are looked for, for "nothing found" messages.
    pub(crate) fn searched(options: &LoadOptions) -> String {
        let dirs: Vec<String> = [&options.user_dir, &options.workspace_dir]
            .into_iter()
            .flatten()
            .map(|d| d.display().to_string())
            .collect();
        dirs.join(" and ")
    }
}

/// `$HOOKLINE_HOME/plugins`, else `~/.hookline/plugins`.
fn default_user_dir() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("HOOKLINE_HOME") {
        return Some(PathBuf::from(home).join("plugins"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".hookline/plugins"))
}
