//! Moving bytes between a client and a server: both directions at once, each shut down on its
//! own (a FIN one way does not cut the other), with haproxy's inactivity timeouts.
//!
//! Small exchanges go through a pooled buffer; once a flow is bulk, on Linux the bytes go
//! socket -> pipe -> socket with splice(2) and never enter user space. [`Transfer::Buffered`]
//! never splices: the portable path (and what `--copy` asks for).

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWriteExt, Interest, ReadBuf};
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit};
use tokio::time::Instant;

/// The buffer of a direction that is not spliced.
const BUFFER: usize = 16 * 1024;
/// How many bytes one splice moves at most (a pipe's default capacity).
const PIPE: usize = 64 * 1024;

/// How the bytes are moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transfer {
    /// splice(2) through a pipe once a direction carries bulk (Linux).
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
    /// Wakes the watchdog when a direction shuts (the limit may become shorter).
    shut: Notify,
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
    mut client: TcpStream,
    mut server: TcpStream,
    idle: Idle,
    copy: Transfer,
    moved: &Moved,
) -> End {
    let activity = Activity {
        start: Instant::now(),
        last_ms: AtomicU64::new(0),
        half_closed: AtomicBool::new(false),
        shut: Notify::new(),
    };
    let (client_in, client_out) = client.split();
    let (server_in, server_out) = server.split();
    // An error either way (a reset) ends both: the other side is closed at once.
    let both = async {
        tokio::try_join!(
            pump(client_in, server_out, copy, &activity, &moved.up),
            pump(server_in, client_out, copy, &activity, &moved.down)
        )
        .map_or(End::Error, |_| End::Closed)
    };
    tokio::select! {
        end = both => end,
        () = watchdog(&activity, idle) => End::Timeout,
    }
}

/// Returns when the connection has been idle for longer than its limit. Sleeps until the
/// deadline (or a shut direction) rather than ticking: idle connections cost no wakeups.
async fn watchdog(activity: &Activity, idle: Idle) {
    loop {
        let half = activity.half_closed.load(Ordering::Relaxed);
        let Some(limit) = idle.limit(half) else {
            if half || idle.limit(true).is_none() {
                return std::future::pending().await;
            }
            activity.shut.notified().await;
            continue;
        };
        let deadline = activity.last() + limit;
        if Instant::now() >= deadline {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => {}
            () = activity.shut.notified(), if !half => {}
        }
    }
}

/// One direction, `from` to `to`, until `from` ends its side; then `to`'s write side is shut.
///
/// Bytes go through a pooled buffer taken only while they are in flight (an idle connection
/// holds none), read with tokio's AsyncRead, which treats a short read as "drained" and saves
/// the read that would only say EAGAIN. Once a read fills the whole buffer the flow is bulk,
/// and with [`Transfer::Splice`] the rest goes through a pipe with splice(2).
async fn pump(
    mut from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    copy: Transfer,
    activity: &Activity,
    moved: &AtomicU64,
) -> io::Result<()> {
    let mut pipe: Option<(OwnedFd, OwnedFd, OwnedSemaphorePermit)> = None;
    loop {
        let n = match &pipe {
            Some((out, inn, _)) => splice_once(from.as_ref(), to.as_ref(), out, inn).await?,
            None => {
                let (n, full) = copy_once(&mut from, &mut to).await?;
                if full && copy == Transfer::Splice {
                    // A pipe's two descriptors only from what the budget has left.
                    pipe = crate::fds::extra(2)
                        .and_then(|fds| make_pipe().ok().map(|(out, inn)| (out, inn, fds)));
                }
                n
            }
        };
        if n == 0 {
            break;
        }
        activity.touch();
        moved.fetch_add(n as u64, Ordering::Relaxed);
    }
    // The first direction to end passes the FIN on; when the other has already ended, both
    // sockets are about to be closed and the close sends it.
    if activity.half_closed.swap(true, Ordering::Relaxed) {
        return Ok(());
    }
    activity.shut.notify_one();
    match to.shutdown().await {
        Err(e) if e.kind() != io::ErrorKind::NotConnected => Err(e),
        _ => Ok(()),
    }
}

thread_local! {
    /// Buffers for bytes in flight, reused rather than allocated and zeroed every time.
    static BUFFERS: RefCell<Vec<Box<[u8]>>> = const { RefCell::new(Vec::new()) };
}

fn take_buffer() -> Box<[u8]> {
    BUFFERS
        .with(|b| b.borrow_mut().pop())
        .unwrap_or_else(|| vec![0u8; BUFFER].into_boxed_slice())
}

fn give_buffer(buf: Box<[u8]>) {
    BUFFERS.with(|b| {
        let mut b = b.borrow_mut();
        if b.len() < 64 {
            b.push(buf);
        }
    });
}

/// Waits for bytes, then moves what is there through a buffer: (bytes, whether the read
/// filled the buffer). 0 means `from` has ended its side.
async fn copy_once(from: &mut ReadHalf<'_>, to: &mut WriteHalf<'_>) -> io::Result<(usize, bool)> {
    loop {
        from.as_ref().readable().await?;
        let mut buf = take_buffer();
        let read = std::future::poll_fn(|cx| {
            let mut rb = ReadBuf::new(&mut buf);
            match Pin::new(&mut *from).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) => Poll::Ready(Ok(Some(rb.filled().len()))),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                // Readiness was stale: wait again (poll_read has registered the waker).
                Poll::Pending => Poll::Ready(Ok(None)),
            }
        })
        .await;
        let n = match read {
            Ok(Some(n)) => n,
            Ok(None) => {
                give_buffer(buf);
                continue;
            }
            Err(e) => {
                give_buffer(buf);
                return Err(e);
            }
        };
        // A read that filled the buffer has more behind it: no FIN to wait for yet; an end of
        // file has nothing to write.
        let full = n == buf.len();
        let written = if n > 0 && !full && has_ended(from) {
            write_last(to, &buf[..n]).await
        } else {
            to.write_all(&buf[..n]).await
        };
        give_buffer(buf);
        written?;
        return Ok((n, full));
    }
}

/// Whether `from`'s peer has ended its side (its FIN has come, EPOLLRDHUP): what is read now
/// is the last of it, and an end of file follows at once.
fn has_ended(from: &ReadHalf<'_>) -> bool {
    use std::future::Future;
    let ready = std::pin::pin!(from.as_ref().ready(Interest::READABLE));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    matches!(ready.poll(&mut cx), Poll::Ready(Ok(r)) if r.is_read_closed())
}

/// Writes the last bytes of a direction whose FIN is next: held back (`MSG_MORE`) so that the
/// shutdown that follows sends them and the FIN in one segment, as haproxy does (one packet
/// and its ACK fewer per connection). What the socket does not take at once goes the usual
/// way.
async fn write_last(to: &mut WriteHalf<'_>, bytes: &[u8]) -> io::Result<()> {
    use nix::libc::{MSG_MORE, MSG_NOSIGNAL};
    let socket = to.as_ref();
    let sent = socket.try_io(Interest::WRITABLE, || {
        socket2::SockRef::from(socket).send_with_flags(bytes, MSG_MORE | MSG_NOSIGNAL)
    });
    let rest = match sent {
        Ok(n) => &bytes[n..],
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => bytes,
        Err(e) => return Err(e),
    };
    to.write_all(rest).await
}

/// The client's first bytes when they are there already, read before a server is connected
/// so that they can leave with the handshake's last ACK (haproxy's `tcp-smart-connect`).
/// They are kept in an allocation of their own length: a pooled 16 KiB buffer held for as long
/// as a connect takes would cost maxconn x 16 KiB while a server does not answer.
#[derive(Debug)]
pub struct First(Box<[u8]>);

impl First {
    /// What the client has sent so far, if anything, in one non-blocking read: None when
    /// nothing is there yet, the client has closed or the read failed (the forwarding then
    /// sees it as it comes).
    pub fn read(client: &TcpStream) -> Option<First> {
        use std::io::Read;
        let mut buf = take_buffer();
        // A plain recv(2) on the descriptor: tokio's readiness is neither needed nor touched.
        let read = (&*socket2::SockRef::from(client)).read(&mut buf);
        let first = match read {
            Ok(len) if len > 0 => Some(First(buf[..len].into())),
            _ => None,
        };
        give_buffer(buf);
        first
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A non-blocking pipe: (read end, write end).
fn make_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use nix::fcntl::OFlag;
    nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC).map_err(io::Error::from)
}

fn splice(from: impl AsFd, to: impl AsFd, len: usize) -> io::Result<usize> {
    use nix::fcntl::SpliceFFlags;
    let flags = SpliceFFlags::SPLICE_F_MOVE | SpliceFFlags::SPLICE_F_NONBLOCK;
    nix::fcntl::splice(from, None, to, None, len, flags).map_err(io::Error::from)
}

/// Moves what `from` has (up to a pipe's worth) to `to` through the pipe, never through user
/// space. 0 means `from` has ended its side.
async fn splice_once(
    from: &TcpStream,
    to: &TcpStream,
    pipe_out: &OwnedFd,
    pipe_in: &OwnedFd,
) -> io::Result<usize> {
    let n = loop {
        from.readable().await?;
        match from.try_io(Interest::READABLE, || splice(from, pipe_in, PIPE)) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    };
    let mut left = n;
    while left > 0 {
        to.writable().await?;
        match to.try_io(Interest::WRITABLE, || splice(pipe_out, to, left)) {
            Ok(m) => left -= m,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
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
