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
    from: std::net::IpAddr,
    backend: &Backend,
) -> Option<(Arc<Server>, TcpStream)> {
    let mut first = Vec::new();
    let mut answer = vec![0; FIRST];
    for _ in 0..=backend.retries {
        let (server, mut up) = connect(backend, from, false).await?;
        let said = exchange(client, &mut up, &mut first, &mut answer);
        let said = match backend.idle.server {
            Some(limit) => tokio::time::timeout(limit, said)
                .await
                .unwrap_or(Answer::Over),
            None => said.await,
        };
        // A server that closed a client which had not said anything whole did what servers
        // do: the first exchange is over, the forwarding passes the close on, and nothing is
        // replayed or counted against the server.
        let said = match said {
            Answer::Silent if !server_at_fault(&first) => {
                tracing::debug!(
                    "{}/{}: closed a client that had sent {} byte(s) of no whole request",
                    backend.name,
                    server.cfg.name,
                    first.len()
                );
                Answer::Over
            }
            said => said,
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

/// Whether a server that closed without a byte of answer failed the client, once it had
/// `first` from it: only when the client had said something whole. A server closing a
/// client that sent nothing, or only part of a TLS handshake message, does what servers do
/// (kube-apiserver drops a TLS handshake that does not finish within 10 s); counted against
/// it (haproxy's `observe layer4` counts connection failures only), four idle clients a
/// second took API servers out, and replayed, one idle client walked through every server.
/// Bytes that are not TLS are a plain protocol, whose whole requests only the server knows:
/// any byte counts.
fn server_at_fault(first: &[u8]) -> bool {
    match first {
        [] => false,
        [kind, 3, ..] | [kind] if (0x14..=0x17).contains(kind) => tls_handshake_whole(first),
        _ => true,
    }
}

/// Whether `bytes`, the start of a TLS stream (RFC 8446 5.1: records of a 5-byte header and
/// up to 2^14 bytes), hold a whole first handshake message (4.: a 1-byte type and a 3-byte
/// length): the ClientHello, which may span records.
fn tls_handshake_whole(bytes: &[u8]) -> bool {
    let mut handshake = Vec::new();
    let mut rest = bytes;
    while let [kind, _, _, hi, lo, body @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo]));
        let Some(payload) = body.get(..len) else {
            break; // a record not all here
        };
        if *kind == 0x16 {
            handshake.extend_from_slice(payload);
        }
        rest = &body[len..];
    }
    match handshake.as_slice() {
        [_, a, b, c, message @ ..] => {
            let len = (usize::from(*a) << 16) | (usize::from(*b) << 8) | usize::from(*c);
            message.len() >= len
        }
        _ => false,
    }
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

#[cfg(test)]
mod tests {
    use super::server_at_fault;

    /// A TLS record of `kind` holding `payload`.
    fn record(kind: u8, payload: &[u8]) -> Vec<u8> {
        let len = u16::try_from(payload.len())
            .unwrap_or(u16::MAX)
            .to_be_bytes();
        [&[kind, 3, 1, len[0], len[1]][..], payload].concat()
    }

    /// A ClientHello-shaped handshake message of `body` bytes.
    fn hello(body: usize) -> Vec<u8> {
        let len = u32::try_from(body).unwrap_or(0).to_be_bytes();
        [&[1, len[1], len[2], len[3]][..], &vec![0x42; body]].concat()
    }

    #[test]
    fn only_a_client_that_said_something_whole_makes_a_silent_close_the_servers_fault() {
        // Idle clients: nothing, a record header, part of a record, part of a message.
        assert!(!server_at_fault(b""));
        assert!(!server_at_fault(&[0x16]));
        assert!(!server_at_fault(&[0x16, 3, 1, 2, 0]));
        let whole = record(0x16, &hello(300));
        assert!(!server_at_fault(&whole[..100]));
        let message = hello(300);
        let (one, two) = message.split_at(200);
        assert!(
            !server_at_fault(&record(0x16, one)),
            "the rest in a record not sent"
        );
        // Whole: in one record, or spread over two; a plain protocol's bytes.
        assert!(server_at_fault(&whole));
        assert!(server_at_fault(
            &[record(0x16, one), record(0x16, two)].concat()
        ));
        assert!(server_at_fault(b"GET / HTTP/1.1\r\n"));
        assert!(
            server_at_fault(&[0x16, 2, 0]),
            "not TLS: SSLv2 or a plain protocol"
        );
    }
}
