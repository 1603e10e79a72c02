//! The metrics endpoint (`vrrpd run --metrics ADDR:PORT`): a minimal HTTP/1.1 responder that
//! answers `GET /metrics` with the Prometheus text exposition and nothing else. No HTTP server
//! crate is among the chosen dependencies, and this needs one request per connection only.
//!
//! It never holds up the VRRP loop: each connection is its own task with a deadline for the
//! whole exchange ([`DEADLINE`]: a slow or silent client is cut), at most [`MAX_CONNECTIONS`]
//! are served at once (more are closed at accept), a request head is read up to [`MAX_HEAD`]
//! bytes, and the exposition is asked of the daemon loop through a bounded queue (full: 503),
//! which answers between two events.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// A scrape waiting for the exposition: the daemon loop sends it here.
pub type Scrape = oneshot::Sender<Arc<str>>;

/// Connections served at once; more are closed as soon as they are accepted.
pub const MAX_CONNECTIONS: usize = 64;
/// The longest a whole exchange may take (reading the request, writing the answer).
pub const DEADLINE: Duration = Duration::from_secs(5);
/// The most bytes of request head read.
pub const MAX_HEAD: usize = 8 * 1024;

/// The content type of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What a request asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `GET /metrics` (a query string is ignored).
    Metrics,
    /// Another path.
    NotFound,
    /// Another method.
    MethodNotAllowed,
    /// Not an HTTP request line.
    Bad,
}

/// Reads the request line of `head`.
pub fn request(head: &[u8]) -> Request {
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let Ok(line) = std::str::from_utf8(&head[..line_end]) else {
        return Request::Bad;
    };
    let mut words = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Request::Bad;
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') || method.is_empty() {
        return Request::Bad;
    }
    if method != "GET" {
        return Request::MethodNotAllowed;
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    if path == "/metrics" {
        Request::Metrics
    } else {
        Request::NotFound
    }
}

/// A whole response, `Connection: close`.
pub fn response(status: u16, content_type: &str, body: &str) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Service Unavailable",
    };
    let allow = if status == 405 { "Allow: GET\r\n" } else { "" };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         {allow}Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

/// Serves `listener` in a task until it is aborted; each scrape is sent to `scrapes`.
pub fn spawn(
    listener: std::net::TcpListener,
    scrapes: mpsc::Sender<Scrape>,
) -> std::io::Result<JoinHandle<()>> {
    listener.set_nonblocking(true)?;
    let listener = TcpListener::from_std(listener)?;
    Ok(tokio::spawn(accept_loop(listener, scrapes)))
}

async fn accept_loop(listener: TcpListener, scrapes: mpsc::Sender<Scrape>) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, say: wait rather than spin.
                tracing::debug!("metrics endpoint: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if open.fetch_add(1, Ordering::Relaxed) >= MAX_CONNECTIONS {
            open.fetch_sub(1, Ordering::Relaxed);
            drop(stream);
            continue;
        }
        let (open, scrapes) = (Arc::clone(&open), scrapes.clone());
        tokio::spawn(async move {
            let _ = tokio::time::timeout(DEADLINE, serve(stream, &scrapes)).await;
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

async fn serve(mut stream: TcpStream, scrapes: &mpsc::Sender<Scrape>) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        if head.len() + n > MAX_HEAD {
            let answer = response(400, "text/plain", "request head too long\n");
            return stream.write_all(&answer).await;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let answer = match request(&head) {
        Request::Metrics => match exposition(scrapes).await {
            Some(body) => response(200, CONTENT_TYPE, &body),
            None => response(503, "text/plain", "vrrpd is busy, try again\n"),
        },
        Request::NotFound => response(404, "text/plain", "only /metrics is here\n"),
        Request::MethodNotAllowed => response(405, "text/plain", "only GET is served\n"),
        Request::Bad => response(400, "text/plain", "not an HTTP/1 request\n"),
    };
    stream.write_all(&answer).await?;
    stream.shutdown().await
}

/// Asks the daemon loop for the exposition; None when its queue is full or it is gone.
async fn exposition(scrapes: &mpsc::Sender<Scrape>) -> Option<Arc<str>> {
    let (tx, rx) = oneshot::channel();
    scrapes.try_send(tx).ok()?;
    rx.await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_metrics_is_served() {
        assert_eq!(
            request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Request::Metrics
        );
        assert_eq!(request(b"GET /metrics?x=1 HTTP/1.0\n\n"), Request::Metrics);
        assert_eq!(request(b"GET / HTTP/1.1\r\n\r\n"), Request::NotFound);
        assert_eq!(
            request(b"GET /metricsx HTTP/1.1\r\n\r\n"),
            Request::NotFound
        );
        assert_eq!(
            request(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Request::MethodNotAllowed
        );
        assert_eq!(
            request(b"HEAD /metrics HTTP/1.1\r\n\r\n"),
            Request::MethodNotAllowed
        );
        for bad in [
            &b""[..],
            b"\r\n\r\n",
            b"GET\r\n\r\n",
            b"GET /metrics\r\n\r\n",
            b"GET /metrics HTTP/2 extra\r\n\r\n",
            b"GET metrics HTTP/1.1\r\n\r\n",
            b"GET /metrics SPDY/3\r\n\r\n",
            b"\xff\xfe /metrics HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(request(bad), Request::Bad, "{bad:?}");
        }
    }

    #[test]
    fn responses_carry_their_length() {
        let r = String::from_utf8(response(200, CONTENT_TYPE, "a 1\n")).unwrap();
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"), "{r}");
        assert!(r.contains("Content-Length: 4\r\n"), "{r}");
        assert!(r.contains("version=0.0.4"), "{r}");
        assert!(r.ends_with("\r\n\r\na 1\n"), "{r}");
        let r = String::from_utf8(response(405, "text/plain", "")).unwrap();
        assert!(r.contains("Allow: GET\r\n"), "{r}");
    }

    /// A client that never sends, a flood of connections and garbage: the endpoint keeps
    /// answering a well-formed scrape, and the runtime's one thread never blocks on them.
    #[tokio::test]
    async fn bad_and_slow_clients_do_not_stop_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let (tx, mut rx) = mpsc::channel::<Scrape>(8);
        let server = spawn(listener, tx).unwrap();
        tokio::spawn(async move {
            while let Some(reply) = rx.recv().await {
                let _ = reply.send(Arc::from("vrrpd_up 1\n"));
            }
        });
        let mut idle = Vec::new();
        for _ in 0..(MAX_CONNECTIONS + 10) {
            idle.push(TcpStream::connect(address).await.unwrap());
        }
        let mut garbage = TcpStream::connect(address).await.unwrap();
        let _ = garbage.write_all(&[0xff; MAX_HEAD + 10]).await;
        drop(idle);
        // The idle ones are dropped by the client; a proper scrape is then served.
        let answer = loop {
            let mut s = TcpStream::connect(address).await.unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").await.unwrap();
            let mut answer = String::new();
            let _ = s.read_to_string(&mut answer).await;
            if !answer.is_empty() {
                break answer;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.ends_with("\r\n\r\nvrrpd_up 1\n"), "{answer}");
        server.abort();
    }
}
