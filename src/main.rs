//! The `hookline` binary: a thin front over [`hookline::cli`] (built with the `cli` feature).

// Hook calls move many small values (texts, requests) between plugins: a fast allocator is worth
// a measurable share of each call (see docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    hookline::cli::main()
}
