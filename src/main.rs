//! The `hookline` binary: a thin front over [`hookline::cli`] (built with the `cli` feature).

// Hook calls move many small values (texts, requests) between plugins: a fast allocator is worth
// a measurable share of each call (see docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    keep_pages_small();
    hookline::cli::main()
}

/// Turns transparent huge pages off for this process (and the plugin processes it starts, which
/// inherit it), unless `MIMALLOC_ALLOW_THP` is set, which then decides, as mimalloc reads it.
///
/// mimalloc asks for huge pages for its arenas, and where the kernel grants them (`madvise` or
/// `always` in `/sys/kernel/mm/transparent_hugepage/enabled`) a server's memory is resident in
/// 2 MiB pieces that are given back only whole: measured with 200 sessions (docs/performance.md,
/// "Replacing a server"), the server held about twice the resident memory (480 against 245 MiB
/// after 70,000 turns), grew by steps of 100-170 MiB, and a successor holding the same sessions
/// held up to 1.5 times its predecessor; turns were 2-5% faster with them.
fn keep_pages_small() {
    #[cfg(target_os = "linux")]
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        // A kernel without the setting keeps what it has: the server runs either way.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}
