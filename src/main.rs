//! The `hookline` binary: a thin front over `hookline_host::cli`.

// Hook calls move many small values (texts, requests) between plugins: a fast allocator is worth
// a measurable share of each call (see docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    hookline_host::cli::main()
}
