//! Asking a process to terminate (SIGTERM) before killing it.

/// Sends SIGTERM to `pid`. Best effort: the process may be gone already.
#[cfg(unix)]
pub(crate) fn terminate(pid: u32) {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    }
}

/// Elsewhere there is no gentle signal; the caller kills next.
#[cfg(not(unix))]
pub(crate) fn terminate(_pid: u32) {}
