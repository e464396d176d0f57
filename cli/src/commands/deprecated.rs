//! Old spellings of flags, still accepted for a while (issue 46 item 4: one flag, one meaning).
//! `--plugins DIR` is a plugin directory in every command; what other spellings meant is
//! rewritten here, before the command line is parsed, with a one-line deprecation on stderr:
//!
//! - `bench --plugins N` (a number) was the plugin count: now `--plugin-count N`;
//! - `bench --plugins-dir DIR` was the plugin set's directory: now `--plugins DIR`;
//! - `run`, `hooks` and `replay` `--user-dir DIR` was the user plugins directory: now
//!   `--plugins DIR`.
//!
//! None of the old spellings shows in `--help`.

use std::ffi::OsString;

/// One rewrite: the old flag, the new one, and whether only a number value is rewritten.
struct Old {
    commands: &'static [&'static str],
    flag: &'static str,
    new: &'static str,
    numbers_only: bool,
}

const OLD: &[Old] = &[
    Old {
        commands: &["bench"],
        flag: "--plugins",
        new: "--plugin-count",
        numbers_only: true,
    },
    Old {
        commands: &["bench"],
        flag: "--plugins-dir",
        new: "--plugins",
        numbers_only: false,
    },
    Old {
        commands: &["run", "hooks", "replay"],
        flag: "--user-dir",
        new: "--plugins",
        numbers_only: false,
    },
];

/// The command line with every old spelling replaced by its new one, and the deprecation lines
/// to print (one per old spelling used).
pub(super) fn rewrite(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    // The subcommand: the first argument after the program's name (the top level has no flags
    // that take a value).
    let Some(command) = args.get(1).and_then(|a| a.to_str()).map(str::to_owned) else {
        return (args, Vec::new());
    };
    let mut out = Vec::with_capacity(args.len());
    let mut notes = Vec::new();
    let mut iter = args.into_iter().enumerate().peekable();
    while let Some((index, arg)) = iter.next() {
        if index < 2 || arg == "--" {
            let done = arg == "--" && index >= 2;
            out.push(arg);
            if done {
                out.extend(iter.by_ref().map(|(_, a)| a));
                break;
            }
            continue;
        }
        let Some(text) = arg.to_str() else {
            out.push(arg);
            continue;
        };
        let found = OLD.iter().find_map(|old| {
            if !old.commands.contains(&command.as_str()) {
                return None;
            }
            if text == old.flag {
                Some((old, None))
            } else {
                text.strip_prefix(old.flag)
                    .and_then(|rest| rest.strip_prefix('='))
                    .map(|value| (old, Some(value.to_owned())))
            }
        });
        let Some((old, inline)) = found else {
            out.push(arg);
            continue;
        };
        let value = match &inline {
            Some(value) => Some(value.clone()),
            None => iter
                .peek()
                .and_then(|(_, next)| next.to_str())
                .map(str::to_owned),
        };
        let is_number = value
            .as_deref()
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
        if old.numbers_only && !is_number {
            out.push(arg);
            continue;
        }
        let shown = value.as_deref().unwrap_or("...");
        let meaning = if old.numbers_only {
            " (`--plugins DIR` is a plugin directory, as in every command)"
        } else {
            ""
        };
        notes.push(format!(
            "hookline {command}: `{} {shown}` is deprecated; use `{} {shown}`{meaning}.",
            old.flag, old.new
        ));
        match inline {
            Some(value) => out.push(format!("{}={value}", old.new).into()),
            None => out.push(old.new.into()),
        }
    }
    (out, notes)
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    fn run(args: &[&str]) -> (Vec<String>, Vec<String>) {
        let (out, notes) = rewrite(args.iter().map(Into::into).collect());
        (
            out.into_iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            notes,
        )
    }

    #[test]
    fn a_number_after_bench_plugins_is_the_count_and_a_path_is_a_directory() {
        let (out, notes) = run(&["hookline", "bench", "--plugins", "8", "--sessions", "2"]);
        assert_eq!(
            out,
            [
                "hookline",
                "bench",
                "--plugin-count",
                "8",
                "--sessions",
                "2"
            ]
        );
        assert_eq!(
            notes,
            ["hookline bench: `--plugins 8` is deprecated; use `--plugin-count 8` (`--plugins DIR` \
              is a plugin directory, as in every command)."]
        );
        let (out, notes) = run(&["hookline", "bench", "--plugins", "plugins"]);
        assert_eq!(out, ["hookline", "bench", "--plugins", "plugins"]);
        assert!(notes.is_empty());
        let (out, notes) = run(&["hookline", "bench", "--plugins=4"]);
        assert_eq!(out, ["hookline", "bench", "--plugin-count=4"]);
        assert_eq!(notes.len(), 1);
    }

    #[test]
    fn the_old_directory_flags_become_plugins_only_in_their_commands() {
        let (out, notes) = run(&["hookline", "bench", "--plugins-dir", "d", "--json"]);
        assert_eq!(out, ["hookline", "bench", "--plugins", "d", "--json"]);
        assert_eq!(
            notes,
            ["hookline bench: `--plugins-dir d` is deprecated; use `--plugins d`."]
        );
        let (out, _) = run(&["hookline", "hooks", "list", "--user-dir=d"]);
        assert_eq!(out, ["hookline", "hooks", "list", "--plugins=d"]);
        // Not an old spelling of `serve`, nor after `--`, nor the subcommand itself.
        let (out, notes) = run(&["hookline", "serve", "--user-dir", "d"]);
        assert_eq!(out, ["hookline", "serve", "--user-dir", "d"]);
        assert!(notes.is_empty());
        let (out, notes) = run(&["hookline", "run", "--", "--user-dir"]);
        assert_eq!(out, ["hookline", "run", "--", "--user-dir"]);
        assert!(notes.is_empty());
    }
}
