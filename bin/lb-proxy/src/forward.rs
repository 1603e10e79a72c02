//! Moving bytes between a client and a server: both directions at once, each shut down on its
//! own (a FIN one way does not cut the other), with haproxy's inactivity timeouts.
//!
//! On Linux the bytes go socket -> pipe -> socket with splice(2) and never enter user space;
//! [`Copy::Buffered`] is the portable fallback through a buffer (and what `--copy` asks for).

use std::io;
use std::net::Shutdown;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// How many bytes one splice or read moves at most.
const CHUNK: usize = 64 * 1024;

/// How the bytes are moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Copy {
    /// splice(2) through a pipe per direction (Linux).
    Splice,
    /// read(2) into a buffer, write(2) out of it.
    Buffered,
}

/// haproxy's inactivity timeouts of an established connection (None: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Idle {
    /// `timeout client`.
    pub client: Option<Duration>,
    /// `timeout server`.
    pub server: Option<Duration>,
    /// `timeout tunnel`: replaces both once the connection is established.
    pub tunnel: Option<Duration>,
    /// `timeout client-fin`: replaces the client side's once one direction is shut.
    pub client_fin: Option<Duration>,
    /// `timeout server-fin`: the same on the server side.
    pub server_fin: Option<Duration>,
}

impl Idle {
    /// How long the connection may go without a byte in either direction, before and after
    /// one direction is shut.
    pub fn limit(&self, half_closed: bool) -> Option<Duration> {
        let client = self.tunnel.or(self.client);
        let server = self.tunnel.or(self.server);
        let (client, server) = if half_closed {
            (self.client_fin.or(client), self.server_fin.or(server))
        } else {
            (client, server)
        };
        match (client, server) {
            (Some(c), Some(s)) => Some(c.min(s)),
            (c, s) => c.or(s),
        }
    }
}

/// How a forwarded connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Both sides closed their direction.
    Closed,
    /// Nothing moved for longer than the timeouts allow.
    Timeout,
    /// A side reset the connection or another error.
    Error,
}

/// Bytes moved, for the stats.
#[derive(Debug, Default)]
pub struct Moved {
    /// Client to server.
    pub up: AtomicU64,
    /// Server to client.
    pub down: AtomicU64,
}

/// What the two directions share: when a byte last moved, and whether one direction is shut.
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    half_closed: AtomicBool,
}

impl Activity {
    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.start + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Forwards between `client` and `server` until both directions are closed, a timeout
/// expires or an error happens; the sockets are closed when it returns.
pub async fn forward(
    client: TcpStream,
    server: TcpStream,
    idle: Idle,
    copy: Copy,
    moved: &Moved,
) -> End {
    let activity = Activity {
        start: Instant::now(),
        last_ms: AtomicU64::new(0),
        half_closed: AtomicBool::new(false),
    };
    // An error either way (a reset) ends both: the other side is closed at once.
    let both = async {
        tokio::try_join!(
            pump(&client, &server, copy, &activity, &moved.up),
            pump(&server, &client, copy, &activity, &moved.down)
        )
        .map_or(End::Error, |_| End::Closed)
    };
    tokio::select! {
        end = both => end,
        () = watchdog(&activity, idle) => End::Timeout,
    }
}

/// Returns when the connection has been idle for longer than its limit.
async fn watchdog(activity: &Activity, idle: Idle) {
    loop {
        let Some(limit) = idle.limit(activity.half_closed.load(Ordering::Relaxed)) else {
            // No limit now; look again in a while (a half-close may bring one).
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        };
        let deadline = activity.last() + limit;
        if Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep_until(deadline.min(Instant::now() + Duration::from_secs(1))).await;
    }
}

/// One direction: `from` to `to` until `from` ends its side, then shut `to`'s write side.
async fn pump(
    from: &TcpStream,
    to: &TcpStream,
    copy: Copy,
    activity: &Activity,
    moved: &AtomicU64,
) -> io::Result<()> {
    let result = match copy {
        Copy::Splice => match pipe() {
            Ok(p) => splice_loop(from, to, &p, activity, moved).await,
            Err(_) => buffered_loop(from, to, activity, moved).await,
        },
        Copy::Buffered => buffered_loop(from, to, activity, moved).await,
    };
    activity.half_closed.store(true, Ordering::Relaxed);
    let shut = socket2::SockRef::from(to).shutdown(Shutdown::Write);
    result.and(shut.or_else(|e| {
        if e.kind() == io::ErrorKind::NotConnected {
            Ok(())
        } else {
            Err(e)
        }
    }))
}

/// A non-blocking pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::OFlag;
    nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).map_err(io::Error::from)
}

fn splice(from: impl AsFd, to: impl AsFd, len: usize) -> io::Result<usize> {
    use nix::fcntl::SpliceFFlags;
    let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
    nix::fcntl::splice(from, None, to, None, len, flags).map_err(io::Error::from)
}

async fn splice_loop(
    from: &TcpStream,
    to: &TcpStream,
    (pipe_out, pipe_in): &(OwnedFd, OwnedFd),
    activity: &Activity,
    moved: &AtomicU64,
) -> io::Result<()> {
    loop {
        let n = loop {
            from.readable().await?;
            match from.try_io(Interest::READABLE, || splice(from, pipe_in, CHUNK)) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            return Ok(());
        }
        activity.touch();
        let mut left = n;
        while left > 0 {
            to.writable().await?;
            match to.try_io(Interest::WRITABLE, || splice(pipe_out, to, left)) {
                Ok(m) => left -= m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        activity.touch();
        moved.fetch_add(n as u64, Ordering::Relaxed);
    }
}

async fn buffered_loop(
    from: &TcpStream,
    to: &TcpStream,
    activity: &Activity,
    moved: &AtomicU64,
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = loop {
            from.readable().await?;
            match from.try_read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        };
        if n == 0 {
            return Ok(());
        }
        activity.touch();
        let mut sent = 0;
        while sent < n {
            to.writable().await?;
            match to.try_write(&buf[sent..n]) {
                Ok(m) => sent += m,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        }
        activity.touch();
        moved.fetch_add(n as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_limits_follow_haproxy() {
        let s = |n| Some(Duration::from_secs(n));
        let idle = Idle {
            client: s(30),
            server: s(20),
            ..Idle::default()
        };
        assert_eq!(idle.limit(false), s(20));
        let idle = Idle {
            tunnel: s(100),
            client_fin: s(5),
            ..idle
        };
        assert_eq!(idle.limit(false), s(100), "tunnel replaces both");
        assert_eq!(idle.limit(true), s(5), "client-fin once half-closed");
        assert_eq!(Idle::default().limit(true), None);
        let one = Idle {
            client: s(7),
            ..Idle::default()
        };
        assert_eq!(one.limit(false), s(7));
    }
}
