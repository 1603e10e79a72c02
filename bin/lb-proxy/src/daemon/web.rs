//! `mode http` listeners: the monitor URI (200 while lb-proxy runs, 503 when `monitor fail`
//! holds) and the stats page (text, `;json`, and Prometheus metrics at `/metrics`), with
//! haproxy's answers. One request per connection, its head within `timeout http-request`;
//! at most the listener's cap of connections at once (the rest wait in the backlog).
//!
//! `stats auth` guards every stats answer (the page, its JSON and the metrics), whatever the
//! method; the credentials are compared in constant time. The monitor URI answers anyone, as
//! haproxy's does: it tells only whether the proxy is up.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::admit::{Listener, Next};
use super::stats;
use super::table::{Table, Web};

/// The most request-head bytes read.
const MAX_HEAD: usize = 8 * 1024;

/// Serves the web listener called `name` until the task is aborted.
pub async fn accept_loop(listener: Listener, name: String, mut table: watch::Receiver<Arc<Table>>) {
    loop {
        let current = Arc::clone(&table.borrow_and_update());
        let Some(web) = current.webs.get(&name).cloned() else {
            return;
        };
        let gates = [(&web.slots, 1)];
        let admitted = match listener.next(&name, &gates, &mut table).await {
            Next::Admitted(a) => a,
            Next::Again => continue,
            Next::Gone => return,
        };
        tokio::spawn(async move {
            let _permits = admitted.permits;
            let served = serve(admitted.stream, &web, &current);
            let _ = tokio::time::timeout(web.request_timeout, served).await;
        });
    }
}

async fn serve(mut stream: TcpStream, web: &Web, table: &Table) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return Ok(());
        }
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let answer = answer(&head, web, table);
    stream.write_all(answer.as_bytes()).await?;
    stream.shutdown().await
}

/// The whole answer to the request `head`.
pub fn answer(head: &str, web: &Web, table: &Table) -> String {
    let mut lines = head.lines();
    let mut words = lines.next().unwrap_or("").split_whitespace();
    let (Some(_method), Some(uri)) = (words.next(), words.next()) else {
        return page(400, "Your browser (or proxy) sent an invalid request.");
    };
    let authorization = lines.find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("authorization")
            .then(|| v.trim().to_string())
    });
    if web.monitor_uri.as_deref() == Some(uri) {
        return if web.monitor_ok() {
            page(200, "Service ready.")
        } else {
            page(503, "No server is available to handle this request.")
        };
    }
    let stats = &web.stats;
    let stats_uri = stats.uri.as_deref().unwrap_or("/haproxy?stats");
    if stats.enabled && (uri == "/metrics" || uri.starts_with(stats_uri)) {
        if !authorized(stats, authorization.as_deref()) {
            return "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\ncache-control: no-cache\r\n\
                    www-authenticate: Basic realm=\"HAProxy Statistics\"\r\nconnection: close\r\n\r\n"
                .to_string();
        }
        let (kind, body) = if uri == "/metrics" {
            ("text/plain; version=0.0.4", stats::prometheus(table))
        } else if uri.contains(";json") || uri.contains("format=json") {
            ("application/json", stats::json(table, stats.hide_version))
        } else {
            ("text/plain", stats::text(table, stats.hide_version))
        };
        return format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\ncache-control: no-cache\r\ncontent-type: {kind}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
    }
    // Nothing here: haproxy has no backend to send it to.
    page(503, "No server is available to handle this request.")
}

/// haproxy's own small pages.
fn page(status: u16, text: &str) -> String {
    let reason = match status {
        200 => "OK",
        400 => "Bad request",
        _ => "Service Unavailable",
    };
    let body = format!("<html><body><h1>{status} {reason}</h1>\n{text}\n</body></html>\n");
    format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\ncache-control: no-cache\r\n\
         content-type: text/html\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// `stats auth`: no users means no login. Every account is compared, each in constant time
/// ([`ipi_core::secret::eq`]), so the time says neither which account nor how much matched.
fn authorized(stats: &crate::config::model::Stats, header: Option<&str>) -> bool {
    if stats.auth.is_empty() {
        return true;
    }
    // The scheme's name is case-insensitive (RFC 7235 2.1), as haproxy reads it.
    let given = header
        .and_then(|h| h.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"));
    let Some((_, given)) = given else {
        return false;
    };
    let given = given.trim().as_bytes();
    stats.auth.iter().fold(false, |ok, (user, pass)| {
        let expected = base64(format!("{user}:{}", pass.expose()).as_bytes());
        ok | ipi_core::secret::eq(expected.as_bytes(), given)
    })
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_is_rfc_4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"admin:secret"), "YWRtaW46c2VjcmV0");
    }

    #[test]
    fn haproxys_pages() {
        let p = page(200, "Service ready.");
        assert!(
            p.starts_with("HTTP/1.1 200 OK\r\ncontent-length: 58\r\n"),
            "{p}"
        );
        assert!(page(503, "x").starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
    }

    fn stats_with(auth: &[(&str, &str)]) -> crate::config::model::Stats {
        crate::config::model::Stats {
            enabled: true,
            auth: auth
                .iter()
                .map(|(u, p)| (u.to_string(), (*p).into()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn stats_auth_takes_any_account_and_only_those() {
        let s = stats_with(&[("admin", "secret"), ("ops", "other")]);
        let basic = |creds: &str| format!("Basic {}", base64(creds.as_bytes()));
        assert!(authorized(&s, Some(&basic("admin:secret"))));
        assert!(authorized(&s, Some(&basic("ops:other"))));
        for wrong in [
            "admin:other",
            "ops:secret",
            "admin:secre",
            "admin:secret2",
            "",
            "admin",
        ] {
            assert!(!authorized(&s, Some(&basic(wrong))), "{wrong}");
        }
        assert!(!authorized(&s, None));
        assert!(!authorized(&s, Some("Bearer YWRtaW46c2VjcmV0")));
        assert!(
            authorized(&s, Some("basic YWRtaW46c2VjcmV0")),
            "the scheme's case"
        );
        assert!(authorized(&stats_with(&[]), None), "no accounts: no login");
    }
}
