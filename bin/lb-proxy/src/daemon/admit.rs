//! Admission before accept. A connection is taken from the kernel only once it has a slot: its
//! frontend's `maxconn` (or a web listener's cap) and, for a forwarded connection, the
//! process's own. Until then it waits in the listening socket's backlog, as with haproxy, and
//! costs the process nothing: no descriptor, no task, no timer.
//!
//! The process's descriptors ([`Gate`], [`crate::fds`]) keep a reserve: however many clients
//! flood the frontends, the health checks, the DNS lookups, the monitor URI and the stats page
//! still find descriptors, so a flood cannot take the servers DOWN or fail the monitor (which
//! would move the VIP).

use std::io;
use std::sync::Arc;

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::net::TcpStream;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::fds;

/// Descriptors kept for everything but forwarded connections beyond what the table counts
/// (listening sockets, check sockets, the web listeners' caps): the runtime's own (epoll,
/// eventfds, signal pipe), log and systemd sockets, DNS lookups, the redirect's nft.
pub const RESERVE_BASE: u64 = 128;

/// A web listener's cap when its `maxconn` says more: each of its connections is one short
/// request, and they all come out of the reserve.
pub const WEB_MAXCONN: u32 = 256;

/// The process's descriptors for forwarded connections (a connection is admitted with its
/// [`fds::PER_CONNECTION`]; see [`crate::fds`]).
#[derive(Debug, Clone)]
pub struct Gate {
    descriptors: u64,
    connections: u64,
}

impl Gate {
    /// `open_files` descriptors less `reserve`, at most what `global_maxconn` connections hold
    /// when set (haproxy's global `maxconn`); room for one connection at least.
    pub fn new(open_files: u64, reserve: u64, global_maxconn: Option<u32>) -> Gate {
        let per = u64::from(fds::PER_CONNECTION);
        let by_files = open_files.saturating_sub(reserve);
        let descriptors = global_maxconn
            .map_or(by_files, |m| by_files.min(u64::from(m) * per))
            .max(per);
        Gate {
            descriptors,
            connections: descriptors / per,
        }
    }

    /// How many connections it admits at once, when none holds an extra.
    pub fn size(&self) -> u64 {
        self.connections
    }

    /// Its descriptors.
    pub fn descriptors(&self) -> u64 {
        self.descriptors
    }
}

/// The soft limit on open descriptors, as the process has it now.
pub fn open_files() -> u64 {
    use nix::sys::resource::{getrlimit, Resource};
    getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft)
}

/// A connection taken from the backlog, with the slots it holds until it is dropped.
#[derive(Debug)]
pub struct Admitted {
    /// The connection.
    pub stream: TcpStream,
    /// The client's address, as accept(2) gave it.
    pub peer: std::net::SocketAddr,
    /// Its slots, one per gate it passed.
    pub permits: Vec<OwnedSemaphorePermit>,
}

/// A listening socket whose connections are accepted only once admitted.
#[derive(Debug)]
pub struct Listener {
    fd: AsyncFd<std::net::TcpListener>,
}

impl Listener {
    /// Watches `listener` (non-blocking) on the current runtime.
    #[allow(unsafe_code)]
    pub fn new(listener: std::net::TcpListener) -> io::Result<Listener> {
        listener.set_nonblocking(true)?;
        // SAFETY: tokio requires that the descriptor stays open and is not swapped for another
        // while registered. The `TcpListener` owns its descriptor for its whole life and never
        // replaces it, and the `AsyncFd` owns the listener, deregistering before it closes it.
        let fd = unsafe { AsyncFd::register_with_interest(listener, Interest::READABLE) };
        Ok(Listener {
            fd: fd.map_err(|e| e.into_parts().1)?,
        })
    }

    /// With `on`, the connections it accepts delay the ACK of the client's first bytes, so
    /// that it leaves with the answer (TCP_QUICKACK off on the listening socket, which the
    /// accepted sockets inherit: haproxy's `tcp-smart-accept`); the kernel's default without.
    pub fn delay_first_ack(&self, on: bool) -> io::Result<()> {
        socket2::SockRef::from(self.fd.get_ref()).set_tcp_quickack(!on)
    }

    /// Waits for a connection in the backlog, then for its permits in each of `gates` in
    /// order (a semaphore and how many), then accepts it. Cancel-safe: nothing is accepted
    /// until every permit is held.
    pub async fn admit(&self, gates: &[(&Arc<Semaphore>, u32)]) -> io::Result<Admitted> {
        loop {
            let mut ready = self.fd.readable().await?;
            let mut permits = Vec::with_capacity(gates.len());
            for (gate, n) in gates {
                let permit = Arc::clone(gate).acquire_many_owned(*n).await;
                permits.push(permit.map_err(io::Error::other)?);
            }
            match ready.try_io(|l| accept(l.get_ref())) {
                Ok(Ok((stream, peer))) => {
                    return Ok(Admitted {
                        stream,
                        peer,
                        permits,
                    })
                }
                Ok(Err(e)) => return Err(e),
                // Nothing left in the backlog: the readiness is cleared, wait again.
                Err(_would_block) => continue,
            }
        }
    }
}

/// What waiting for the next connection of a listener came to.
#[derive(Debug)]
pub enum Next {
    /// A connection, with its permits.
    Admitted(Admitted),
    /// Look at the table again and wait again: it changed (a reload may change the
    /// listener's limits), or accepting failed (logged, and waited out for 100 ms).
    Again,
    /// The table is gone: the listener stops.
    Gone,
}

impl Listener {
    /// The next connection of the listener called `name` admitted through `gates`, or what
    /// came first: a change of `table`, or an accept error (out of descriptors and the like:
    /// said, breathed, gone on).
    pub async fn next<T>(
        &self,
        name: &str,
        gates: &[(&Arc<Semaphore>, u32)],
        table: &mut watch::Receiver<T>,
    ) -> Next {
        tokio::select! {
            a = self.admit(gates) => match a {
                Ok(a) => Next::Admitted(a),
                Err(e) => {
                    tracing::warn!("{name}: accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    Next::Again
                }
            },
            changed = table.changed() => match changed {
                Ok(()) => Next::Again,
                Err(_) => Next::Gone,
            },
        }
    }
}

/// accept4(2), the new socket non-blocking and close-on-exec in the same call (as tokio's own
/// accept: no fcntl after it).
fn accept(listener: &std::net::TcpListener) -> io::Result<(TcpStream, std::net::SocketAddr)> {
    use nix::libc::{SOCK_CLOEXEC, SOCK_NONBLOCK};
    let (socket, peer) = socket2::SockRef::from(listener).accept4(SOCK_NONBLOCK | SOCK_CLOEXEC)?;
    let peer = peer
        .as_socket()
        .ok_or_else(|| io::Error::other("not an IP peer"))?;
    Ok((TcpStream::from_std(socket.into())?, peer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_keeps_the_reserve_and_the_global_maxconn() {
        assert_eq!(Gate::new(1024, 256, None).descriptors(), 768);
        assert_eq!(Gate::new(1024, 256, None).size(), 384);
        assert_eq!(Gate::new(1_048_576, 256, Some(20_000)).size(), 20_000);
        assert_eq!(Gate::new(1024, 256, Some(20_000)).size(), 384);
        // Fewer descriptors than the reserve: one connection at a time, not none.
        assert_eq!(Gate::new(100, 256, None).size(), 1);
    }

    #[tokio::test]
    async fn nothing_is_accepted_without_a_slot() {
        let std = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = std.local_addr().unwrap();
        let listener = Listener::new(std).unwrap();
        let slots = Arc::new(Semaphore::new(1));
        let _a = std::net::TcpStream::connect(address).unwrap();
        let _b = std::net::TcpStream::connect(address).unwrap();
        let first = listener.admit(&[(&slots, 1)]).await.unwrap();
        // The second waits in the backlog while the slot is held...
        let second = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            listener.admit(&[(&slots, 1)]),
        )
        .await;
        assert!(second.is_err(), "admitted beyond the slots");
        // ...and is taken once it is free.
        drop(first);
        let second = listener.admit(&[(&slots, 1)]).await.unwrap();
        assert_eq!(second.permits.len(), 1);
    }
}
