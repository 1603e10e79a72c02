//! lb-proxy's `replay-unanswered` (an extension; haproxy's `retry-on empty-response` does
//! this in `mode http` only): what the client sends is passed on and kept (up to 16 KiB)
//! until the server answers, and when the server closes or resets without a byte of answer,
//! it goes again to another server, as a connection that failed (`retries`, and passive health: a failed connection for `observe
//! layer4`). Nothing the server said is lost, so a client sees one answer or none: with TLS
//! the first bytes are the ClientHello, which no server acts on; with a plain protocol they
//! may be a whole request, which a server that closed without answering may or may not have
//! acted on (the risk haproxy's `empty-response` takes too).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::connect::connect;
use super::table::{Backend, Server};
use crate::health::Event;

/// How much of what the client sends before the server's first answer is kept for a replay.
const FIRST: usize = 16 * 1024;

/// How the first exchange on a connection ended.
enum Answer {
    /// The server answered: these bytes, now passed to the client.
    Spoke(usize),
    /// The client closed, or the first exchange took longer than `timeout server`: the rest
    /// is the forwarding's business.
    Over,
    /// The server closed or reset without a byte.
    Silent,
}

/// Connects `client` to a server of `backend` and sees the first exchange through, trying
/// other servers while they close without answering. None when no server answered: the
/// client is closed.
pub async fn first_exchange(
    client: &mut TcpStream,
    backend: &Backend,
) -> Option<(Arc<Server>, TcpStream)> {
    let mut first = Vec::new();
    let mut answer = vec![0; FIRST];
    for _ in 0..=backend.retries {
        let (server, mut up) = connect(backend).await?;
        let said = exchange(client, &mut up, &mut first, &mut answer);
        let said = match backend.idle.server {
            Some(limit) => tokio::time::timeout(limit, said)
                .await
                .unwrap_or(Answer::Over),
            None => said.await,
        };
        match said {
            Answer::Spoke(n) => {
                if client.write_all(&answer[..n]).await.is_err() {
                    return None;
                }
                server
                    .moved
                    .up
                    .fetch_add(first.len() as u64, Ordering::Relaxed);
                server.moved.down.fetch_add(n as u64, Ordering::Relaxed);
                return Some((server, up));
            }
            Answer::Over => {
                server
                    .moved
                    .up
                    .fetch_add(first.len() as u64, Ordering::Relaxed);
                return Some((server, up));
            }
            Answer::Silent => {
                tracing::debug!(
                    "{}/{}: closed without answering {} byte(s): replayed elsewhere",
                    backend.name,
                    server.cfg.name,
                    first.len()
                );
                server.observe(Event::ConnectFailed, &backend.name);
            }
        }
    }
    tracing::warn!("{}: no server answered", backend.name);
    None
}

/// Sends the client's bytes so far (`first`) to `up`, then goes on passing what the client
/// sends (kept in `first`, up to [`FIRST`]) until `up` says something, into `answer`. Past
/// [`FIRST`] kept bytes nothing could be replayed whole: the rest is the forwarding's.
async fn exchange(
    client: &mut TcpStream,
    up: &mut TcpStream,
    first: &mut Vec<u8>,
    answer: &mut [u8],
) -> Answer {
    if !first.is_empty() && up.write_all(first).await.is_err() {
        return Answer::Silent;
    }
    let mut from_client = vec![0; FIRST];
    loop {
        if first.len() >= FIRST {
            return Answer::Over;
        }
        tokio::select! {
            r = client.read(&mut from_client[..FIRST - first.len()]) => match r {
                Ok(0) | Err(_) => return Answer::Over,
                Ok(n) => {
                    first.extend_from_slice(&from_client[..n]);
                    if up.write_all(&from_client[..n]).await.is_err() {
                        return Answer::Silent;
                    }
                }
            },
            r = up.read(answer) => return match r {
                Ok(0) | Err(_) => Answer::Silent,
                Ok(n) => Answer::Spoke(n),
            },
        }
    }
}
