//! What a WebAssembly guest may reach beyond its own memory (docs/wasm.md "The manifest"): the
//! manifest's `wasm.capabilities`, and the imports each one grants. A guest gets nothing by
//! default; an import its capabilities do not grant, or one the host does not provide, refuses
//! the plugin at load.

use std::fmt;

use serde::Serialize;

/// One capability a manifest may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Capability {
    /// The guest's log lines (`hookline.log`) reach the plugin's log.
    Stdio,
    /// Wall-clock time (`hookline.wall_clock_ms`); without it, monotonic time only.
    Clock,
    /// The environment an external plugin gets (components only: a core module has no import
    /// that reads it).
    Environment,
    /// The plugin's own directory, read-only (components only).
    Filesystem,
    /// Outbound TCP, UDP and name lookup (components only).
    Network,
}

impl Capability {
    /// Every capability, in the order docs/wasm.md lists them.
    pub const ALL: [Self; 5] = [
        Self::Stdio,
        Self::Clock,
        Self::Environment,
        Self::Filesystem,
        Self::Network,
    ];

    /// The name a manifest uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdio => "stdio",
            Self::Clock => "clock",
            Self::Environment => "environment",
            Self::Filesystem => "filesystem",
            Self::Network => "network",
        }
    }

    /// The capability a manifest names, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|cap| cap.as_str() == name)
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The module every host import lives in.
pub const IMPORT_MODULE: &str = "hookline";

/// A host import a core module may have: its name and the capability it needs (`None`: always
/// granted).
pub(crate) const IMPORTS: &[(&str, Option<Capability>)] = &[
    ("log", Some(Capability::Stdio)),
    ("monotonic_ns", None),
    ("wall_clock_ms", Some(Capability::Clock)),
];

/// Why an import refuses a guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ImportRefusal {
    /// The host provides no such import.
    NotProvided(String),
    /// The import needs a capability the manifest does not grant.
    NotGranted {
        /// `module.name`.
        import: String,
        /// What it needs.
        capability: Capability,
    },
}

/// Checks one import of a core module against the granted capabilities.
pub(crate) fn check_import(
    module: &str,
    name: &str,
    granted: &[Capability],
) -> Result<(), ImportRefusal> {
    let import = format!("{module}.{name}");
    let needs = (module == IMPORT_MODULE)
        .then(|| IMPORTS.iter().find(|(known, _)| *known == name))
        .flatten()
        .ok_or_else(|| ImportRefusal::NotProvided(import.clone()))?;
    match needs.1 {
        Some(capability) if !granted.contains(&capability) => {
            Err(ImportRefusal::NotGranted { import, capability })
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_parse_by_their_manifest_names() {
        for cap in Capability::ALL {
            assert_eq!(Capability::parse(cap.as_str()), Some(cap));
        }
        assert_eq!(Capability::parse("Stdio"), None);
        assert_eq!(Capability::parse("gpu"), None);
    }

    #[test]
    fn imports_need_their_capability_and_unknown_ones_are_refused() {
        assert_eq!(check_import("hookline", "monotonic_ns", &[]), Ok(()));
        assert_eq!(
            check_import("hookline", "log", &[]),
            Err(ImportRefusal::NotGranted {
                import: "hookline.log".into(),
                capability: Capability::Stdio
            })
        );
        assert_eq!(
            check_import("hookline", "log", &[Capability::Stdio]),
            Ok(())
        );
        assert_eq!(
            check_import("wasi_snapshot_preview1", "fd_write", &[Capability::Stdio]),
            Err(ImportRefusal::NotProvided(
                "wasi_snapshot_preview1.fd_write".into()
            ))
        );
    }
}
