//! A TCP frontend at work: admit a connection once its frontend's `maxconn` and the process
//! have a slot for it (the rest waits in the kernel's backlog, as with haproxy: [`super::admit`]),
//! pick a server and connect ([`super::connect`], or [`super::replay`]), then forward until both
//! sides are done.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};

use super::admit::{Listener, Next};
use super::connect::connect;
use super::pulse::Pulse;
use super::table::{Backend, Frontend, Table};
use super::{inspect, replay};
use crate::forward::{self, End, Idle, Transfer};

/// Accepts on `listener` for the frontend called `name`, reading the current table from
/// `table` at every connection, until the task is aborted; tells `pulse` of each connection.
///
/// A connection is accepted only with a slot of its frontend's and its descriptors from the
/// process's budget (`gate`, [`crate::fds`]), each listening socket (one per core) waiting for a slot only while the kernel
/// holds a connection for it: a socket with nothing pending holds no slot, so none starves
/// another, and beyond the slots nothing is accepted.
pub async fn accept_loop(
    listener: Listener,
    name: String,
    mut table: watch::Receiver<Arc<Table>>,
    copy: Transfer,
    gate: Arc<Semaphore>,
    pulse: Arc<Pulse>,
) {
    let mut smart_accept = None;
    loop {
        let Some(frontend) = table.borrow_and_update().frontends.get(&name).cloned() else {
            return;
        };
        // At the start and after a reload that changed it: one system call, not one per
        // connection (accepted sockets inherit it).
        if smart_accept != Some(frontend.smart_accept) {
            smart_accept = Some(frontend.smart_accept);
            if let Err(e) = listener.delay_first_ack(frontend.smart_accept) {
                tracing::warn!("{name}: tcp-smart-accept: {e}");
            }
        }
        // Wait for a connection and its slots, or for a reload that may change the frontend.
        let gates = [(&frontend.slots, 1), (&gate, crate::fds::PER_CONNECTION)];
        let admitted = match listener.next(&name, &gates, &mut table).await {
            Next::Admitted(a) => a,
            Next::Again => continue,
            Next::Gone => return,
        };
        // Counted when accepted, as haproxy's stot: exact before the client hears anything.
        frontend.sessions.fetch_add(1, Ordering::Relaxed);
        pulse.beat();
        let live = Live::new(&frontend);
        tokio::spawn(async move {
            let (_live, _permits) = (live, admitted.permits);
            let peer = admitted.peer;
            match inspect::backend(&admitted.stream, &frontend).await {
                Some(Some(backend)) => {
                    session(admitted.stream, peer, &frontend, &backend, copy).await;
                }
                Some(None) => tracing::debug!("{}: {peer}: no backend, closed", frontend.name),
                None => tracing::debug!("{}: {peer}: rejected by the content rules", frontend.name),
            }
        });
    }
}

/// Connections in the whole process, from accept to close, whichever table (before or after a
/// reload) they came in under: what a soft stop waits for.
static LIVE: AtomicUsize = AtomicUsize::new(0);

/// Connections open now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Counts one connection, in the process and in its frontend, until dropped.
struct Live(Arc<Frontend>);

impl Live {
    fn new(frontend: &Arc<Frontend>) -> Live {
        LIVE.fetch_add(1, Ordering::Relaxed);
        frontend.active.fetch_add(1, Ordering::Relaxed);
        Live(Arc::clone(frontend))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, Ordering::Relaxed);
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// One client connection.
async fn session(
    mut client: TcpStream,
    peer: std::net::SocketAddr,
    frontend: &Frontend,
    backend: &Backend,
    copy: Transfer,
) {
    let first = (!backend.replay && backend.smart_connect)
        .then(|| forward::First::read(&client))
        .flatten();
    let connected = if backend.replay {
        replay::first_exchange(&mut client, peer.ip(), backend).await
    } else {
        connect(backend, peer.ip(), first.is_some()).await
    };
    let Some((server, mut upstream)) = connected else {
        return;
    };
    if let Some(first) = first {
        if upstream.write_all(first.bytes()).await.is_err() {
            return;
        }
        let sent = first.bytes().len() as u64;
        server.moved.up.fetch_add(sent, Ordering::Relaxed);
    }
    server.sessions.fetch_add(1, Ordering::Relaxed);
    server.active.fetch_add(1, Ordering::Relaxed);
    let idle = Idle {
        client: frontend.idle.client,
        client_fin: frontend.idle.client_fin,
        server: backend.idle.server,
        server_fin: backend.idle.server_fin,
        tunnel: backend.idle.tunnel.or(frontend.idle.tunnel),
    };
    let end = if server.cfg.shutdown_sessions_on_down {
        let mut down = server.down_epoch.subscribe();
        tokio::select! {
            end = forward::forward(client, upstream, idle, copy, &server.moved) => end,
            _ = down.changed() => End::Error,
        }
    } else {
        forward::forward(client, upstream, idle, copy, &server.moved).await
    };
    server.active.fetch_sub(1, Ordering::Relaxed);
    tracing::trace!("{}/{}: {end:?}", backend.name, server.cfg.name);
}
