//! Plugins on disk whose name is already taken when the host starts (issue 15 defect 2, SPEC L:
//! one bad plugin never stops the host). A disk plugin named like an in-process plugin, or like
//! a disk plugin before it, is skipped with a note naming its directory; the others load.

use std::collections::HashSet;
use std::path::PathBuf;

use hookline_actors::plugin::PluginRegistration;
use hookline_messages::note::Note;

/// A plugin loaded from disk: where its registration sits in the builder's load order.
#[derive(Clone, Debug)]
pub(super) struct DiskPlugin {
    /// Its index in the builder's registrations.
    pub(super) index: usize,
    /// Its directory (the note names it).
    pub(super) dir: PathBuf,
}

/// For each disk plugin whose name another registration already has, its position in `disk`
/// and the note that skips it. In-process plugins always keep their name; among disk plugins the
/// first in load order keeps it.
pub(super) fn clashes(plugins: &[PluginRegistration], disk: &[DiskPlugin]) -> Vec<(usize, Note)> {
    let disk_indices: HashSet<usize> = disk.iter().map(|d| d.index).collect();
    let mut skipped = Vec::new();
    for (position, plugin) in disk.iter().enumerate() {
        let Some(name) = plugins.get(plugin.index).map(PluginRegistration::name) else {
            continue;
        };
        let others: Vec<usize> = plugins
            .iter()
            .enumerate()
            .filter(|(index, other)| *index != plugin.index && other.name() == name)
            .map(|(index, _)| index)
            .collect();
        let in_process = others.iter().any(|index| !disk_indices.contains(index));
        let earlier_disk = disk
            .iter()
            .take(position)
            .find(|d| others.contains(&d.index));
        let holder = match (in_process, earlier_disk) {
            (true, _) => "an in-process plugin".to_owned(),
            (false, Some(first)) => format!("the plugin in '{}'", first.dir.display()),
            (false, None) => continue,
        };
        let note = Note::PluginDirectorySkipped {
            dir: plugin.dir.display().to_string(),
            problem: format!("its name '{name}' is already used by {holder}"),
        };
        skipped.push((position, note));
    }
    skipped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn disk(index: usize, dir: &str) -> DiskPlugin {
        DiskPlugin {
            index,
            dir: dir.into(),
        }
    }

    #[test]
    fn an_in_process_name_wins_wherever_it_stands_and_the_first_disk_plugin_wins_otherwise() {
        let plugins: Vec<PluginRegistration> = ["a", "b", "a", "b", "c"]
            .into_iter()
            .map(PluginRegistration::new)
            .collect();
        // `a` at 0 is in process; 2, 3 and 4 come from disk; `b` at 1 is from disk too.
        let on_disk = [
            disk(1, "/p/b"),
            disk(2, "/p/a"),
            disk(3, "/q/b"),
            disk(4, "/p/c"),
        ];
        let skipped: Vec<(usize, String)> = clashes(&plugins, &on_disk)
            .into_iter()
            .map(|(position, note)| (position, note.to_string()))
            .collect();
        assert_eq!(
            skipped,
            [
                (1, "Plugin directory '/p/a' was skipped: its name 'a' is already used by an in-process plugin.".to_owned()),
                (2, "Plugin directory '/q/b' was skipped: its name 'b' is already used by the plugin in '/p/b'.".to_owned()),
            ]
        );
    }
}
