//! `agent:bootstrap` (SPEC G5.4): the workspace files injected at session start, and what the
//! host still does to the list after every handler has had it.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::entry::Config;

/// One bootstrap record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapFile {
    /// The file's name (`AGENTS.md`).
    pub name: String,
    /// Its path; the de-duplication key.
    pub path: String,
    /// Whether the file was looked for and not found.
    pub missing: bool,
    /// Its text, when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
}

/// `agent:bootstrap` (SPEC G5.4). `bootstrapFiles` is the mutable part: each handler may return
/// a replacement, which the next handler sees.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentBootstrapContext {
    /// The agent's workspace directory.
    pub workspace_dir: String,
    /// The files to inject, in order.
    pub bootstrap_files: Vec<BootstrapFile>,
    /// The gateway configuration, when the producer has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cfg: Option<Config>,
    /// The session's key, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The session's id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The agent's id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// What the host applies to the list after the handlers (SPEC G5.4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootstrapPolicy {
    /// The names this kind of session may see (a sub-agent may see fewer); `None` admits all.
    pub allowed_names: Option<Vec<String>>,
    /// Names withheld for privacy in this session (e.g. `MEMORY.md` in a shared chat).
    pub private_names: Vec<String>,
    /// Characters of content one file may inject.
    pub max_file_chars: usize,
    /// Characters of content all files together may inject (the context budget).
    pub max_total_chars: usize,
}

impl Default for BootstrapPolicy {
    fn default() -> Self {
        Self {
            allowed_names: None,
            private_names: Vec::new(),
            max_file_chars: 20_000,
            max_total_chars: 60_000,
        }
    }
}

impl BootstrapPolicy {
    fn admits(&self, file: &BootstrapFile) -> bool {
        let allowed = self
            .allowed_names
            .as_ref()
            .is_none_or(|names| names.contains(&file.name));
        allowed && !self.private_names.contains(&file.name)
    }
}

/// The final list after the handlers (SPEC G5.4), in order:
/// 1. de-duplicate by path, keeping the first record of each path;
/// 2. drop what the session/privacy filter does not admit;
/// 3. fit the context budget: each file's content is cut to `max_file_chars`, then to what is
///    left of `max_total_chars`; a file with content that no longer fits at all is dropped.
///    Missing files cost nothing and are kept, so the agent learns they are absent.
pub fn finalize_bootstrap_files(
    files: Vec<BootstrapFile>,
    policy: &BootstrapPolicy,
) -> Vec<BootstrapFile> {
    let mut seen = HashSet::new();
    let mut left = policy.max_total_chars;
    let mut kept = Vec::with_capacity(files.len());
    for mut file in files {
        if !seen.insert(file.path.clone()) || !policy.admits(&file) {
            continue;
        }
        if let Some(content) = file.content.take() {
            if left == 0 && !content.is_empty() {
                continue;
            }
            let cut = truncate_chars(content, policy.max_file_chars.min(left));
            left -= cut.chars().count();
            file.content = Some(cut);
        }
        kept.push(file);
    }
    kept
}

/// `text` cut to at most `max` characters, on a character boundary.
fn truncate_chars(text: String, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => text[..end].to_owned(),
        None => text,
    }
}
