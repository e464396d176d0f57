//! `hookline new plugin NAME --lang python|node|rust|c|zig [--dir DIR] [--kit DIR]`: writes a
//! working plugin directory `DIR/NAME` (default: the current directory) built on the plugin kit
//! of that language (`sdk/`), with a README for its author. The Python and Node kits are copied
//! in (a plugin resolves nothing outside its directory, SPEC L2), so `hookline hooks check`
//! passes and `hookline run` loads it at once; a Rust plugin is a Cargo project that depends on
//! the Rust kit (`--kit`, default `sdk/rust` of the checkout this binary was built from) and loads
//! once built into `bin/` (its README says how). A C or Zig plugin is a WebAssembly plugin
//! (docs/wasm.md): the WebAssembly kit (`sdk/wasm-c`, `sdk/wasm-zig`) is copied in beside a
//! handler and a `build.sh` that builds `plugin.wasm` with `python3 -m ziglang`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand, ValueEnum};

use hookline_host::loading::check_name;

/// `hookline new ...`
#[derive(Debug, Args)]
pub(crate) struct NewArgs {
    #[command(subcommand)]
    what: NewCommand,
}

#[derive(Debug, Subcommand)]
enum NewCommand {
    /// A plugin directory built on the plugin kit of a language (python, node, rust, c, zig),
    /// with a README.
    Plugin(PluginArgs),
}

#[derive(Debug, Args)]
struct PluginArgs {
    /// The plugin's name (its directory name).
    name: String,
    /// The language: python, node or rust (a plugin process), c or zig (a WebAssembly plugin).
    #[arg(long, value_enum)]
    lang: Lang,
    /// Where to create the plugin directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// For `--lang rust`: the Rust kit's directory (default: `sdk/rust` of this build's checkout).
    #[arg(long, value_name = "DIR")]
    kit: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Lang {
    Python,
    Node,
    Rust,
    C,
    Zig,
}

const PYTHON_KIT: &str = include_str!("../../../sdk/python/src/hookline_plugin/__init__.py");
const NODE_KIT: &str = include_str!("../../../sdk/node/index.js");
const NODE_TYPES: &str = include_str!("../../../sdk/node/index.d.ts");
const NODE_PROTOCOL: &str = include_str!("../../../sdk/node/protocol.d.ts");
const NODE_PACKAGE: &str = include_str!("../../../sdk/node/package.json");
const README: &str = include_str!("templates/README.md.in");
const WASM_C_HEADER: &str = include_str!("../../../sdk/wasm-c/hookline.h");
const WASM_C_KIT: &str = include_str!("../../../sdk/wasm-c/hookline.c");
const WASM_ZIG_KIT: &str = include_str!("../../../sdk/wasm-zig/hookline.zig");
const WASM_README: &str = include_str!("templates/README.wasm.md.in");

/// Runs `hookline new`.
pub(crate) fn run(args: NewArgs) -> ExitCode {
    let NewCommand::Plugin(args) = args.what;
    match plugin(&args) {
        Ok(dir) => {
            println!(
                "Wrote the {:?} plugin '{}' in {}.",
                args.lang,
                args.name,
                dir.display()
            );
            println!("Read {} next.", dir.join("README.md").display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("hookline new plugin: {message}");
            ExitCode::from(2)
        }
    }
}

fn plugin(args: &PluginArgs) -> Result<PathBuf, String> {
    check_name(&args.name).map_err(|problem| format!("'{}': {problem}", args.name))?;
    let parent = match &args.dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("no current directory: {e}"))?,
    };
    let dir = parent.join(&args.name);
    if dir.exists() {
        return Err(format!("{} already exists", dir.display()));
    }
    let files = files(args, &parent)?;
    for (path, text) in &files {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&target, text).map_err(|e| format!("{}: {e}", target.display()))?;
        if path.ends_with(".sh") {
            executable(&target)?;
        }
    }
    Ok(dir)
}

#[cfg(unix)]
fn executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(not(unix))]
fn executable(_path: &Path) -> Result<(), String> {
    Ok(())
}

/// Every file of the plugin directory, by relative path.
fn files(args: &PluginArgs, parent: &Path) -> Result<Vec<(&'static str, String)>, String> {
    let name = args.name.as_str();
    let fill = |text: &str| text.replace("{{name}}", name);
    let (language, build, mut files) = match args.lang {
        Lang::C | Lang::Zig => return Ok(wasm_files(args, parent)),
        Lang::Python => (
            "Python",
            String::new(),
            vec![
                ("plugin.json", manifest("plugin.py", Some("python3"))),
                ("plugin.py", fill(include_str!("templates/plugin.py"))),
                ("hookline_plugin/__init__.py", PYTHON_KIT.to_owned()),
                ("hookline_plugin/py.typed", String::new()),
            ],
        ),
        Lang::Node => (
            "JavaScript (Node.js 20+)",
            String::new(),
            vec![
                ("plugin.json", manifest("plugin.mjs", Some("node"))),
                ("plugin.mjs", fill(include_str!("templates/plugin.mjs"))),
                ("hookline_plugin/index.js", NODE_KIT.to_owned()),
                ("hookline_plugin/index.d.ts", NODE_TYPES.to_owned()),
                ("hookline_plugin/protocol.d.ts", NODE_PROTOCOL.to_owned()),
                ("hookline_plugin/package.json", NODE_PACKAGE.to_owned()),
            ],
        ),
        Lang::Rust => {
            let crate_name = name.replace('.', "_");
            let kit = rust_kit(args.kit.as_deref())?;
            let cargo = include_str!("templates/Cargo.toml.in")
                .replace("{{name}}", &crate_name)
                .replace("{{kit}}", &kit.display().to_string().replace('\\', "/"));
            let build = format!(
                "## Build\n\nThe host runs `bin/{crate_name}`; build it after every change:\n\n\
                 ```sh\ncargo build --release && mkdir -p bin && cp target/release/{crate_name} bin/\n```\n"
            );
            let entry = format!("bin/{crate_name}");
            let files = vec![
                ("plugin.json", manifest(&entry, None)),
                ("Cargo.toml", cargo),
                ("main.rs", fill(include_str!("templates/main.rs"))),
                (".gitignore", "/target\n/bin\n".to_owned()),
            ];
            ("Rust", build, files)
        }
    };
    // A scripted turn calling the tool, then `/new`: the event the README promises a line for.
    files.push((
        "scenario.json",
        include_str!("templates/scenario-kit.json").to_owned(),
    ));
    let readme = README
        .replace("{{name}}", name)
        .replace("{{language}}", language)
        .replace("{{build}}", &build)
        .replace("{{parent}}", &parent.display().to_string());
    files.push(("README.md", readme));
    Ok(files)
}

/// A WebAssembly plugin: the kit, a handler, `build.sh`, a scenario calling its tool, a README.
fn wasm_files(args: &PluginArgs, parent: &Path) -> Vec<(&'static str, String)> {
    let name = args.name.as_str();
    let fill = |text: &str| text.replace("{{name}}", name);
    // The README's commands work from any directory.
    let absolute = std::path::absolute(parent).unwrap_or_else(|_| parent.to_path_buf());
    let (language, kit, sdk, compiler, command, mut files) = if args.lang == Lang::C {
        (
            "C",
            "`hookline.h`, `hookline.c`",
            "wasm-c",
            "Zig's clang",
            "python3 -m ziglang cc --target=wasm32-freestanding -nostdlib -Os -Wl,--no-entry \\\n    \
             -o plugin.wasm plugin.c hookline.c",
            vec![
                ("plugin.c", fill(include_str!("templates/plugin.c"))),
                ("hookline.h", WASM_C_HEADER.to_owned()),
                ("hookline.c", WASM_C_KIT.to_owned()),
                ("build.sh", include_str!("templates/build-c.sh").to_owned()),
                (".gitignore", "/plugin.wasm\n".to_owned()),
            ],
        )
    } else {
        (
            "Zig (0.17)",
            "`hookline.zig`",
            "wasm-zig",
            "Zig",
            "python3 -m ziglang build-exe plugin.zig -target wasm32-freestanding -fno-entry \\\n    \
             -O ReleaseSmall --export=hookline_abi --export=hookline_alloc \\\n    \
             --export=hookline_hello --export=hookline_call -femit-bin=plugin.wasm",
            vec![
                ("plugin.zig", fill(include_str!("templates/plugin.zig"))),
                ("hookline.zig", WASM_ZIG_KIT.to_owned()),
                ("build.sh", include_str!("templates/build-zig.sh").to_owned()),
                (".gitignore", "/plugin.wasm\n/.zig-cache/\n".to_owned()),
            ],
        )
    };
    let manifest = serde_json::json!({
        "entry": "plugin.wasm",
        "description": "A WebAssembly plugin written with the hookline WebAssembly kit; see README.md.",
        "wasm": { "memory_mb": 16 },
    });
    let mut manifest = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    manifest.push('\n');
    files.push(("plugin.json", manifest));
    files.push((
        "scenario.json",
        include_str!("templates/scenario.json").to_owned(),
    ));
    let readme = WASM_README
        .replace("{{name}}", name)
        .replace("{{language}}", language)
        .replace("{{kit}}", kit)
        .replace("{{sdk}}", sdk)
        .replace("{{compiler}}", compiler)
        .replace("{{command}}", command)
        .replace("{{parent}}", &absolute.display().to_string());
    files.push(("README.md", readme));
    files
}

fn manifest(entry: &str, interpreter: Option<&str>) -> String {
    let mut manifest = serde_json::json!({
        "entry": entry,
        "description": "A plugin written with the hookline plugin kit; see README.md.",
        // Room for an interpreter's start on a busy machine (the default is 5 s).
        "hello_timeout_ms": 10_000,
    });
    if let (Some(interpreter), Some(object)) = (interpreter, manifest.as_object_mut()) {
        object.insert("interpreter".into(), interpreter.into());
    }
    let mut text = serde_json::to_string_pretty(&manifest).unwrap_or_default();
    text.push('\n');
    text
}

/// The Rust kit's directory: `--kit`, else `sdk/rust` of the checkout this binary was built
/// from, if it is still there.
fn rust_kit(given: Option<&Path>) -> Result<PathBuf, String> {
    let kit = match given {
        Some(kit) => kit.to_path_buf(),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../sdk/rust"),
    };
    let kit = kit.canonicalize().map_err(|e| {
        format!(
            "the Rust kit is not at {} ({e}); pass --kit DIR (the `sdk/rust` directory of a hookline checkout)",
            kit.display()
        )
    })?;
    if !kit.join("Cargo.toml").is_file() {
        return Err(format!("{} holds no Cargo.toml", kit.display()));
    }
    Ok(kit)
}
