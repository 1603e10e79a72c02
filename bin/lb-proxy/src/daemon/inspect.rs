//! A frontend's TLS routing at a connection's start, as haproxy runs it: the client's first
//! bytes are looked at without being taken (`MSG_PEEK`, so they go to the server as they
//! came), the `tcp-request content` rules wait for them until `tcp-request inspect-delay`
//! has passed, then the first `use_backend` that matches picks the backend, else the
//! default. The judging is [`crate::config::routing`]'s; this is the waiting.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use super::table::{Backend, Frontend};
use crate::config::routing::{self, Verdict};

/// The most of the client's bytes looked at: haproxy's buffer (`tune.bufsize` 16384).
const LOOKED_AT: usize = 16_384;

/// The longest pause between two looks while the rules wait for more bytes.
const MOST_PAUSE: Duration = Duration::from_millis(20);

/// The backend for a connection from `client` to `frontend`: `Some(None)` when none takes it
/// (no default backend), `None` when a content rule rejects it or the client is gone.
pub async fn backend(client: &TcpStream, frontend: &Frontend) -> Option<Option<Arc<Backend>>> {
    let rules = &frontend.routing;
    if rules.is_empty() {
        return Some(frontend.backend.clone());
    }
    let deadline = Instant::now() + rules.inspect_delay.unwrap_or(Duration::ZERO);
    let mut data = vec![0; LOOKED_AT];
    let mut seen = 0;
    let mut pause = Duration::from_millis(1);
    loop {
        let mut expired = Instant::now() >= deadline;
        if !expired {
            match tokio::time::timeout_at(deadline, client.peek(&mut data)).await {
                Ok(Ok(0)) | Err(_) => expired = true,
                Ok(Ok(n)) => seen = n,
                Ok(Err(_)) => return None,
            }
        }
        // All there is room for, or the client has finished: nothing more will change it.
        let done = expired || seen == LOOKED_AT;
        match routing::content(rules, &data[..seen], done) {
            Verdict::Yes => break,
            Verdict::No => return None,
            Verdict::NotYet => {
                // Bytes are waiting, so the socket stays readable: look again a little later.
                tokio::time::sleep_until((Instant::now() + pause).min(deadline)).await;
                pause = (pause * 2).min(MOST_PAUSE);
            }
        }
    }
    let chosen = routing::route(rules, &data[..seen]).and_then(|b| frontend.routes.get(b));
    Some(chosen.cloned().or_else(|| frontend.backend.clone()))
}
