//! Connecting to a server the way haproxy does: retries, `retry-on`, `option redispatch`,
//! the turn-around pause, every attempt within `timeout connect`; and lb-proxy's connect race.
//! What each attempt says about its server goes to the server's passive health.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpSocket, TcpStream};

use super::table::{Backend, Server};
use crate::health::Event;

/// Connects to a server of `backend` the way haproxy does (`back_handle_st_cer` in
/// backend.c): after a failed attempt, `retries` more while `retry-on` has `conn-failure`,
/// each bounded by `timeout connect`; whether a retry goes to another server is
/// [`redispatches`]; a retry to the same server after an error from the network (refused,
/// unreachable; not a timeout) waits min(`timeout connect`, 1 s) first. With lb-proxy's
/// `race-connect`, each attempt may race a second server ([`attempt`]). None when no server
/// is UP or every attempt failed: the client is closed. `client` is the client's address
/// (`balance source` hashes it).
pub async fn connect(
    backend: &Backend,
    client: IpAddr,
    first_bytes: bool,
) -> Option<(Arc<Server>, TcpStream)> {
    let mut server = backend.pick(None, client)?;
    let mut retries = 0;
    loop {
        let failed = match attempt(backend, server, client, first_bytes).await {
            Ok(won) => return Some(won),
            Err(failed) => failed,
        };
        server = failed.server;
        if retries >= backend.retries || !backend.retry_connect {
            tracing::warn!("{}: no server could be reached", backend.name);
            return None;
        }
        retries += 1;
        let up = backend.up_count();
        let elsewhere = redispatches(
            backend.redispatch,
            backend.retries,
            retries,
            server.is_up(),
            up,
        );
        if elsewhere {
            server = backend.pick(Some(&server), client).unwrap_or(server);
        }
        if failed.from_network && (!elsewhere || up <= 1) {
            tokio::time::sleep(backend.connect.min(Duration::from_secs(1))).await;
        }
    }
}

/// Whether retry number `retry` (1 for the first) goes to another server, as haproxy's
/// `stream_choose_redispatch` decides with `option redispatch` (`after`: its N, -1 for the
/// bare option): when the server is not UP, on every Nth retry (N > 0), on the Nth retry
/// before the last (N < 0), and, balancing round robin, whenever more than one server is UP
/// (so `option redispatch 0` still redispatches then, as in haproxy's code). Never without the
/// option.
pub fn redispatches(
    after: Option<i32>,
    retries: u32,
    retry: u32,
    server_up: bool,
    servers_up: usize,
) -> bool {
    let Some(after) = after else {
        return false;
    };
    let every = |period: i64| period > 0 && i64::from(retry) % period == 0;
    !server_up
        || (after > 0 && every(i64::from(after)))
        || (after < 0 && every(i64::from(retries) + 1 + i64::from(after)))
        || servers_up > 1
}

/// A connection attempt that failed.
struct Failed {
    /// The server it went to.
    server: Arc<Server>,
    /// The network said no (refused, unreachable), rather than nothing within the timeout.
    from_network: bool,
}

/// One connection attempt to `first`, bounded by `timeout connect`. With `race-connect`, when
/// it has no answer after the race delay, a second attempt goes to the next server; the first
/// to connect wins and the other is dropped; `first` losing counts against it (passive
/// health).
async fn attempt(
    backend: &Backend,
    first: Arc<Server>,
    client: IpAddr,
    first_bytes: bool,
) -> Result<(Arc<Server>, TcpStream), Failed> {
    let a = dial(backend, &first, first_bytes);
    tokio::pin!(a);
    let Some(race) = backend.race else {
        return settle(backend, first, a.await);
    };
    let second = tokio::select! {
        r = &mut a => return settle(backend, first, r),
        () = tokio::time::sleep(race.delay) => backend.pick(Some(&first), client),
    };
    // The second socket only from what the descriptor budget has left.
    let fds = crate::fds::extra(1);
    let Some(second) = second.filter(|s| !Arc::ptr_eq(s, &first) && fds.is_some()) else {
        return settle(backend, first, a.await);
    };
    tracing::debug!(
        "{}/{}: no answer within {:?}, racing {}",
        backend.name,
        first.cfg.name,
        race.delay,
        second.cfg.name
    );
    let b = dial(backend, &second, first_bytes);
    tokio::pin!(b);
    tokio::select! {
        r = &mut a => match settle(backend, first, r) {
            Ok(won) => Ok(won),
            Err(_) => settle(backend, second, b.await),
        },
        r = &mut b => match settle(backend, second, r) {
            Ok(won) => {
                first.observe(Event::RaceLost, &backend.name);
                Ok(won)
            }
            Err(_) => settle(backend, first, a.await),
        },
    }
}

/// A TCP connection to `server` within `timeout connect`, TCP_NODELAY set; Err(true) when
/// the network said no, Err(false) on the timeout. With `first_bytes` (the client's first
/// bytes are in hand and go out as soon as it is connected), the handshake's last ACK waits
/// for them (TCP_QUICKACK off: haproxy's `tcp-smart-connect`): one packet fewer.
fn dial(
    backend: &Backend,
    server: &Server,
    first_bytes: bool,
) -> impl std::future::Future<Output = Result<TcpStream, (bool, String)>> + 'static {
    let (limit, address) = (backend.connect, server.address());
    async move {
        let Some(address) = address else {
            return Err((true, "no address: its name is not resolved".to_string()));
        };
        let socket = socket_for(address, first_bytes).map_err(|e| (true, e.to_string()))?;
        match tokio::time::timeout(limit, socket.connect(address)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err((true, e.to_string())),
            Err(_) => Err((false, format!("no answer within {limit:?}"))),
        }
    }
}

/// A socket to connect to `address` from: TCP_NODELAY, and TCP_QUICKACK off when
/// `first_bytes` wait to go.
fn socket_for(address: std::net::SocketAddr, first_bytes: bool) -> std::io::Result<TcpSocket> {
    let socket = match address {
        std::net::SocketAddr::V4(_) => TcpSocket::new_v4()?,
        std::net::SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_nodelay(true)?;
    if first_bytes {
        socket2::SockRef::from(&socket).set_tcp_quickack(false)?;
    }
    Ok(socket)
}

/// Counts how an attempt to `server` ended and tells its passive health.
fn settle(
    backend: &Backend,
    server: Arc<Server>,
    result: Result<TcpStream, (bool, String)>,
) -> Result<(Arc<Server>, TcpStream), Failed> {
    match result {
        Ok(s) => {
            server.observe(Event::Connected, &backend.name);
            Ok((server, s))
        }
        Err((from_network, error)) => {
            server.connect_errors.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("{}/{}: connect: {error}", backend.name, server.cfg.name);
            server.observe(Event::ConnectFailed, &backend.name);
            Err(Failed {
                server,
                from_network,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redispatches;

    /// Which of `retries` retries go elsewhere, as a string: `r` redispatched, `.` not.
    fn pattern(after: Option<i32>, retries: u32, up: bool, servers_up: usize) -> String {
        (1..=retries)
            .map(|k| match redispatches(after, retries, k, up, servers_up) {
                true => 'r',
                false => '.',
            })
            .collect()
    }

    #[test]
    fn redispatch_as_haproxy_decides_it() {
        // With one server UP (the one that failed), only the interval counts.
        assert_eq!(pattern(None, 3, true, 1), "...");
        assert_eq!(
            pattern(Some(-1), 3, true, 1),
            "..r",
            "the bare option: the last retry"
        );
        assert_eq!(pattern(Some(1), 3, true, 1), "rrr");
        assert_eq!(pattern(Some(2), 4, true, 1), ".r.r");
        assert_eq!(
            pattern(Some(-2), 3, true, 1),
            ".r.",
            "the 2nd before the last"
        );
        assert_eq!(pattern(Some(0), 3, true, 1), "...");
        // A period of 0 or less (-N past the retries) never matches, and never divides by 0.
        assert_eq!(pattern(Some(-9), 3, true, 1), "...");
        // A server that is DOWN, or round robin with others UP: every retry goes elsewhere.
        assert_eq!(pattern(Some(0), 3, false, 1), "rrr");
        assert_eq!(pattern(Some(-1), 3, true, 2), "rrr");
        assert_eq!(
            pattern(None, 3, false, 2),
            "...",
            "never without the option"
        );
    }
}
