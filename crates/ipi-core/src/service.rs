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
