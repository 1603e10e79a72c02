//! The probes of health checks: the IO that gives [`crate::health`]'s sans-IO core its
//! results (TCP connect, a TLS handshake, an HTTP(S) request as `option httpchk`, or
//! `tcp-check` rules), each within haproxy's timeouts.

use std::net::SocketAddr;
use std::time::Duration;

use crate::config::model::{HttpCheck, TcpRule};

/// Why a check failed (what the stats show as the last check).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The TCP connection failed.
    #[error("connect: {0}")]
    Connect(std::io::Error),
    /// The TCP connection took too long.
    #[error("connect: no answer within {0:?}")]
    ConnectTimeout(Duration),
    /// The TLS handshake took too long.
    #[error("no handshake within {0:?}")]
    HandshakeTimeout(Duration),
    /// The HTTP answer took too long.
    #[error("no answer within {0:?}")]
    AnswerTimeout(Duration),
    /// Connecting, the handshake or the request failed.
    #[error(transparent)]
    Http(#[from] crate::http::Error),
    /// The answer did not pass `http-check expect` (by default: a status of 2xx or 3xx).
    #[error("HTTP status {0}: not as expected")]
    Status(u16),
    /// A `tcp-check` rule failed.
    #[error(transparent)]
    Rule(#[from] crate::tcpcheck::RuleError),
}

/// What one check does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// Connect, then close.
    Tcp,
    /// Connect and complete a TLS handshake (`check-ssl` without `option httpchk`, haproxy's
    /// layer-6 check), certificate not verified.
    Tls,
    /// Send an HTTP request (over TLS when `tls`) and judge the answer (`http-check
    /// expect`; by default a status of 2xx or 3xx passes).
    Http {
        /// The request head, written once.
        head: String,
        /// TLS (`check-ssl` or `http-check connect ssl`), without verifying the certificate
        /// (`verify none`).
        tls: bool,
        /// `http-check connect port N`.
        port: Option<u16>,
        /// The verdict on the answer.
        judge: crate::tcpcheck::HttpJudge,
    },
    /// `option tcp-check` rules (or `option ssl-hello-chk`'s), in order.
    Rules(Vec<crate::tcpcheck::Step>),
}

impl Probe {
    /// The probe of `option httpchk` and its `http-check` rules, of `option tcp-check` and
    /// its rules, or a connect (TLS with `check-ssl`) without either, as haproxy runs them;
    /// the HTTP request has no `Host` header unless `http-check send hdr` gives one.
    pub fn new(httpchk: Option<&HttpCheck>, tcp: Option<&[TcpRule]>, tls: bool) -> Probe {
        match (httpchk, tcp) {
            (Some(c), _) => Probe::Http {
                head: crate::http::head_with(&c.method, &c.uri, &c.version, &c.headers),
                tls: tls || c.ssl,
                port: c.port,
                judge: crate::tcpcheck::HttpJudge::new(c.expect.as_ref()),
            },
            (None, Some(rules)) => Probe::Rules(crate::tcpcheck::steps(rules, tls)),
            (None, None) if !tls => Probe::Tcp,
            (None, None) => Probe::Tls,
        }
    }

    /// Runs the probe against `address`: connecting within `connect`, then the rest (the
    /// handshake, the answer, the rules) within `answer`, or when there is none, all of it
    /// within `connect` (haproxy: with `timeout check`, min(`timeout connect`, `inter`) to
    /// connect and `timeout check` after; without, `inter` for the whole check). Ok when it
    /// passed; Err says why not.
    pub async fn run(
        &self,
        address: SocketAddr,
        connect: Duration,
        answer: Option<Duration>,
    ) -> Result<(), CheckError> {
        let start = tokio::time::Instant::now();
        if let Probe::Rules(steps) = self {
            let deadline = start + answer.map_or(connect, |a| connect + a);
            return Ok(crate::tcpcheck::run(steps, address, connect, deadline).await?);
        }
        let address = match self {
            Probe::Http {
                port: Some(port), ..
            } => SocketAddr::new(address.ip(), *port),
            _ => address,
        };
        let tcp = match tokio::time::timeout(connect, tokio::net::TcpStream::connect(address)).await
        {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => return Err(CheckError::Connect(e)),
            Err(_) => return Err(CheckError::ConnectTimeout(connect)),
        };
        let rest = answer.unwrap_or_else(|| connect.saturating_sub(start.elapsed()));
        let host = address.ip().to_string();
        match self {
            Probe::Tcp | Probe::Rules(_) => Ok(()),
            Probe::Tls => {
                tokio::time::timeout(rest, crate::http::over(tcp, address, Some(&host)))
                    .await
                    .map_err(|_| CheckError::HandshakeTimeout(rest))??;
                Ok(())
            }
            Probe::Http {
                head, tls, judge, ..
            } => {
                let tls_host = tls.then_some(host.as_str());
                let asked = async {
                    let conn = crate::http::over(tcp, address, tls_host).await?;
                    crate::http::ask(conn, head, judge.needs_body()).await
                };
                let got = tokio::time::timeout(rest, asked)
                    .await
                    .map_err(|_| CheckError::AnswerTimeout(rest))??;
                match judge.passes(&got) {
                    true => Ok(()),
                    false => Err(CheckError::Status(got.status)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_are_haproxys_requests() {
        let c = HttpCheck::new("GET", "/readyz", "HTTP/1.0");
        let Probe::Http { head, tls, .. } = Probe::new(Some(&c), None, true) else {
            panic!("an HTTP probe")
        };
        assert!(tls && head.starts_with("GET /readyz HTTP/1.0\r\n"));
        assert_eq!(Probe::new(None, None, false), Probe::Tcp);
        assert_eq!(Probe::new(None, None, true), Probe::Tls);
        let rules = [TcpRule::Send(b"PING\r\n".to_vec())];
        assert!(matches!(Probe::new(None, Some(&rules), false), Probe::Rules(s) if s.len() == 2));
    }
}
