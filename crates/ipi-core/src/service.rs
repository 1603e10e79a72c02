//! What every ipi-net program does the same way: log lines on stderr, tell systemd
//! (`Type=notify`) how it is doing, and run its async work on one kind of runtime.

use std::path::Path;

/// Log lines on stderr: info by default, debug with -v, trace with -vv, warnings only with -q.
/// No ANSI colours unless stderr is a terminal.
pub fn logging(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => tracing::Level::WARN,
        (false, 0) => tracing::Level::INFO,
        (false, 1) => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .try_init();
}

/// Tells systemd something (`READY=1`, `RELOADING=1`, `STOPPING=1`...) when it is listening
/// (`NOTIFY_SOCKET` is set); otherwise does nothing.
pub fn notify_systemd(message: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let socket = match std::os::unix::net::UnixDatagram::unbound() {
        Ok(s) => s,
        Err(_) => return,
    };
    let bytes = path.as_encoded_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name)
            .and_then(|addr| socket.send_to_addr(message.as_bytes(), &addr))
    } else {
        socket.send_to(message.as_bytes(), Path::new(&path))
    };
    if let Err(e) = sent {
        tracing::warn!("sd_notify: {e}");
    }
}

/// The runtime every program's async work runs on: one thread, every driver (IO, time) on.
/// One thread is enough for a daemon whose work is a few sockets and timers, and it keeps the
/// order of events what the code says. lb-proxy's forwarding runtimes are its own choice
/// (`--runtime`); everything else uses this one.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Empties this process's ambient capability set, keeping its permitted and effective ones: a
/// unit's `AmbientCapabilities=` are for the daemon, and a program it starts afterwards (vrrpd's
/// track and notify scripts, as whatever user) would otherwise get them all at its `execve`,
/// `CAP_SETUID` included, since a change between two users other than root keeps them. Programs
/// started as root get root's capabilities whatever this does. Returns how many capabilities
/// were ambient; an error only if the kernel refused (it has no ambient set before Linux 4.3).
pub fn clear_ambient_capabilities() -> std::io::Result<u32> {
    let ambient = ambient_capabilities()?;
    if ambient != 0 {
        // SAFETY: prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL) takes no pointers.
        #[allow(unsafe_code)]
        let r = unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(ambient.count_ones())
}

/// This process's ambient capabilities, as the bit mask of `/proc/self/status`'s `CapAmb:`.
fn ambient_capabilities() -> std::io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapAmb:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .ok_or_else(|| std::io::Error::other("/proc/self/status: no CapAmb: line"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In a child (the test process keeps its own set): raise CAP_NET_RAW into the ambient set
    /// where the test may, clear, and see a program started afterwards without it.
    #[test]
    fn cleared_ambient_capabilities_are_not_passed_on() {
        use std::process::Command;
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        if std::env::var_os("IPI_CORE_AMBIENT_CHILD").is_some()
            || !ipi_lab::tool("setpriv", "util-linux")
        {
            return;
        }
        // Raised and inherited by a child: what a unit's AmbientCapabilities= does.
        let raised = Command::new("setpriv")
            .args([
                "--inh-caps=+net_raw",
                "--ambient-caps=+net_raw",
                "grep",
                "CapAmb",
                "/proc/self/status",
            ])
            .output();
        let raised = raised.unwrap();
        if !raised.status.success() {
            ipi_lab::cannot_run("cannot raise an ambient capability here (not root?)");
            return;
        }
        assert!(String::from_utf8_lossy(&raised.stdout).contains("0000000000002000"));
        let out = Command::new("setpriv")
            .args(["--inh-caps=+net_raw", "--ambient-caps=+net_raw"])
            .arg(&exe)
            .args([
                "--exact",
                "--ignored",
                "service::tests::child_clears",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("IPI_CORE_AMBIENT_CHILD", "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains("cleared 1; after: CapAmb:\t0000000000000000"),
            "{text}"
        );
    }

    /// The child of the test above, which runs it (`--ignored`): it clears what it was given.
    #[test]
    #[ignore = "run by cleared_ambient_capabilities_are_not_passed_on, in a child"]
    fn child_clears() {
        let cleared = clear_ambient_capabilities().unwrap();
        let after = std::process::Command::new("grep")
            .args(["CapAmb", "/proc/self/status"])
            .output()
            .unwrap();
        println!(
            "cleared {cleared}; after: {}",
            String::from_utf8_lossy(&after.stdout).trim()
        );
    }
}
