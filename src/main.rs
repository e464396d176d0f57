//! The `hookline` binary: a thin front over `hookline_host::cli`.

fn main() -> std::process::ExitCode {
    hookline_host::cli::main()
}
