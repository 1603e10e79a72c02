//! The smallest HTTP/1 client a health check needs: one GET over TCP or TLS (certificates not
//! verified, as haproxy's `verify none` and `curl -k`), the status code and `Location`. Used by
//! the health checks and by `lb-proxy check`, which follows redirects as `curl -kLfs`.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// How many redirects `check` follows (curl's default is 50; a health URL needs few).
const MAX_REDIRECTS: usize = 10;
/// The most header bytes read from an answer.
const MAX_HEAD: usize = 16 * 1024;

/// A URL that is not `http[s]://HOST[:PORT][/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Another scheme.
    #[error("`{0}`: only http:// and https:// URLs")]
    Scheme(String),
    /// The port is no number up to 65535.
    #[error("`{0}`: bad port")]
    Port(String),
    /// `[` without `]`.
    #[error("`{0}`: unclosed `[`")]
    Unclosed(String),
    /// Something between `]` and the port.
    #[error("`{0}`: junk after `]`")]
    AfterBracket(String),
    /// No host, or user info.
    #[error("`{0}`: no usable host")]
    Host(String),
}

/// Why a request got no answer, or `check` failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The TCP connection failed.
    #[error("{address}: {source}")]
    Connect {
        /// Where to.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS handshake failed.
    #[error("{address}: TLS: {source}")]
    Tls {
        /// Where to.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The TLS client could not be set up.
    #[error("{0}")]
    TlsConfig(rustls::Error),
    /// Writing the request or reading the answer failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The answer's first line is no HTTP status line.
    #[error("not an HTTP answer: {0:?}")]
    NotHttp(String),
    /// A host name that does not resolve.
    #[error("{host}: {source}")]
    Resolve {
        /// The name.
        host: String,
        /// Why.
        source: std::io::Error,
    },
    /// A host name without an address.
    #[error("{0}: no address")]
    NoAddress(String),
    /// A redirect to a bad URL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// An answer of 400 or more.
    #[error("answered {0}")]
    Status(u16),
    /// Redirected too often.
    #[error("more than {MAX_REDIRECTS} redirects")]
    Redirects,
    /// No final answer in time.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
}

/// A URL of the form `http[s]://HOST[:PORT][/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// TLS or not.
    pub https: bool,
    /// The host (a name, an IPv4 address, or an IPv6 address without brackets).
    pub host: String,
    /// The port.
    pub port: u16,
    /// The path and query, from `/`.
    pub path: String,
}

impl Url {
    /// Parses `text`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Url, UrlError> {
        let (https, rest) = if let Some(r) = text.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = text.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(UrlError::Scheme(text.to_string()));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest[i..].starts_with('?') => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        let bad_port = |_| UrlError::Port(text.to_string());
        let default = if https { 443 } else { 80 };
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| UrlError::Unclosed(text.to_string()))?;
            match after.strip_prefix(':') {
                Some(p) => (h, p.parse().map_err(bad_port)?),
                None if after.is_empty() => (h, default),
                None => return Err(UrlError::AfterBracket(text.to_string())),
            }
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, p.parse().map_err(bad_port)?),
                None => (authority, default),
            }
        };
        if host.is_empty() || host.contains(['@', ' ']) {
            return Err(UrlError::Host(text.to_string()));
        }
        Ok(Url {
            https,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// A `Location` resolved against this URL.
    pub fn join(&self, location: &str) -> Result<Url, UrlError> {
        if location.starts_with("http://") || location.starts_with("https://") {
            return Url::parse(location);
        }
        let path = if location.starts_with('/') {
            location.to_string()
        } else {
            let dir = self.path.rsplit_once('/').map_or("", |(d, _)| d);
            format!("{dir}/{location}")
        };
        Ok(Url {
            path,
            ..self.clone()
        })
    }

    /// The `Host` header.
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Accepts any certificate (`curl -k`, haproxy's `verify none`) but still checks that the
/// server signed the handshake with the key of the certificate it sent.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// One TLS client configuration for the whole process (built on first use).
fn tls() -> Result<tokio_rustls::TlsConnector, Error> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, rustls::Error>> = OnceLock::new();
    let config = CONFIG.get_or_init(|| {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth();
        Ok(Arc::new(config))
    });
    config
        .clone()
        .map(tokio_rustls::TlsConnector::from)
        .map_err(Error::TlsConfig)
}

/// What a GET got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The `Location` header, if any.
    pub location: Option<String>,
    /// The body as far as it was read (see [`exchange_body`]; empty from [`exchange`]).
    pub body: Vec<u8>,
}

/// A connection to a server, plain or TLS.
#[derive(Debug)]
pub enum Conn {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS over TCP.
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// Connects to `address`, and when `tls_host` is given completes a TLS handshake (SNI
/// `tls_host` when it is a name). The caller bounds the time with a timeout.
pub async fn connect(address: SocketAddr, tls_host: Option<&str>) -> Result<Conn, Error> {
    let tcp = TcpStream::connect(address)
        .await
        .map_err(|source| Error::Connect { address, source })?;
    over(tcp, address, tls_host).await
}

/// A connection on `tcp`, which is connected to `address`: as it is, or when `tls_host` is
/// given, after a TLS handshake (as [`connect`]).
pub async fn over(
    tcp: TcpStream,
    address: SocketAddr,
    tls_host: Option<&str>,
) -> Result<Conn, Error> {
    let _ = tcp.set_nodelay(true);
    let Some(host) = tls_host else {
        return Ok(Conn::Plain(tcp));
    };
    let name = ServerName::try_from(host.to_string())
        .unwrap_or_else(|_| ServerName::IpAddress(address.ip().into()));
    let stream = tls()?
        .connect(name, tcp)
        .await
        .map_err(|source| Error::Tls { address, source })?;
    Ok(Conn::Tls(Box::new(stream)))
}

/// Sends the request `head` to `address` (over TLS when `tls_host` is given) and reads the
/// answer's status and `Location`. The caller bounds the time with a timeout.
pub async fn request(
    address: SocketAddr,
    tls_host: Option<&str>,
    head: &str,
) -> Result<Answer, Error> {
    ask(connect(address, tls_host).await?, head, false).await
}

/// Sends the request `head` on `conn` and reads the answer (as [`request`]); with `body`,
/// the body too (as [`exchange_body`]).
pub async fn ask(conn: Conn, head: &str, body: bool) -> Result<Answer, Error> {
    match (conn, body) {
        (Conn::Plain(s), false) => exchange(s, head).await,
        (Conn::Tls(s), false) => exchange(s, head).await,
        (Conn::Plain(s), true) => exchange_body(s, head).await,
        (Conn::Tls(s), true) => exchange_body(s, head).await,
    }
}

/// Writes the request head on `stream`, reads the answer's status line and headers (at most
/// 16 KiB of them).
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    head: &str,
) -> Result<Answer, Error> {
    answer(stream, head, false, MAX_HEAD).await
}

/// As [`exchange`], and the body after the headers: `Content-Length` bytes, or up to the
/// end of the connection, within the same 16 KiB as haproxy's check buffer (what is past
/// them is not read, as haproxy judges a full buffer).
pub async fn exchange_body<S: AsyncRead + AsyncWrite + Unpin>(
    stream: S,
    head: &str,
) -> Result<Answer, Error> {
    answer(stream, head, true, MAX_HEAD).await
}

/// The answer to `head` on `stream`, with its body when `with_body`; at most `limit` bytes of
/// it all are read, a status line without an end included: a server cannot make a check hold
/// more than that however fast it talks.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    head: &str,
    with_body: bool,
    limit: usize,
) -> Result<Answer, Error> {
    stream.write_all(head.as_bytes()).await?;
    stream.flush().await?;
    let mut reader = BufReader::new(stream.take(limit as u64));
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let status = line
        .strip_prefix("HTTP/")
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or_else(|| Error::NotHttp(line.trim_end().to_string()))?;
    let (mut location, mut length) = (None, None);
    loop {
        line.clear();
        let n = reader.read_line(&mut line).await?;
        if n == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("location") {
                location = Some(value.trim().to_string());
            } else if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<u64>().ok();
            }
        }
    }
    let mut body = Vec::new();
    if with_body {
        match length {
            Some(n) => reader.take(n).read_to_end(&mut body).await?,
            None => reader.read_to_end(&mut body).await?,
        };
    }
    Ok(Answer {
        status,
        location,
        body,
    })
}

/// The request head of a health check: haproxy's `option httpchk METHOD URI VERSION`.
pub fn head(method: &str, uri: &str, version: &str, host: Option<&str>) -> String {
    let headers: Vec<(String, String)> = host
        .map(|h| ("Host".to_string(), h.to_string()))
        .into_iter()
        .collect();
    head_with(method, uri, version, &headers)
}

/// A request head with `headers` (`http-check send hdr NAME VALUE`), then lb-proxy's own
/// (`User-Agent`, `Accept`, `Connection: close`) where `headers` does not give them.
pub fn head_with(method: &str, uri: &str, version: &str, headers: &[(String, String)]) -> String {
    let mut h = format!("{method} {uri} {version}\r\n");
    for (name, value) in headers {
        h.push_str(&format!("{name}: {value}\r\n"));
    }
    for (name, value) in [
        ("User-Agent", "lb-proxy"),
        ("Accept", "*/*"),
        ("Connection", "close"),
    ] {
        if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            h.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    h.push_str("\r\n");
    h
}

/// The most of a page [`page`] reads (a stats page of hundreds of servers fits).
const MAX_PAGE: usize = 4 << 20;

/// `GET url` once (no redirect followed), the answer with its body (at most 4 MiB), within
/// `timeout` in all.
pub async fn page(url: &Url, timeout: Duration) -> Result<Answer, Error> {
    let get = async {
        let address = resolve(url).await?;
        let h = head("GET", &url.path, "HTTP/1.1", Some(&url.authority()));
        match connect(address, url.https.then_some(url.host.as_str())).await? {
            Conn::Plain(s) => answer(s, &h, true, MAX_PAGE).await,
            Conn::Tls(s) => answer(s, &h, true, MAX_PAGE).await,
        }
    };
    tokio::time::timeout(timeout, get)
        .await
        .unwrap_or(Err(Error::Timeout(timeout)))
}

/// The first address of `url`'s host.
async fn resolve(url: &Url) -> Result<SocketAddr, Error> {
    tokio::net::lookup_host((url.host.as_str(), url.port))
        .await
        .map_err(|source| Error::Resolve {
            host: url.host.clone(),
            source,
        })?
        .next()
        .ok_or_else(|| Error::NoAddress(url.host.clone()))
}

/// `lb-proxy check`: follows `url` as `curl -kLfs` does, within `timeout` in all. Ok(final
/// status) when it is below 400; Err says why not.
pub async fn check(url: &Url, timeout: Duration) -> Result<u16, Error> {
    tokio::time::timeout(timeout, follow(url.clone()))
        .await
        .unwrap_or(Err(Error::Timeout(timeout)))
}

async fn follow(mut url: Url) -> Result<u16, Error> {
    for _ in 0..=MAX_REDIRECTS {
        let address = resolve(&url).await?;
        let h = head("GET", &url.path, "HTTP/1.1", Some(&url.authority()));
        let tls_host = url.https.then_some(url.host.as_str());
        let answer = request(address, tls_host, &h).await?;
        match (answer.status, answer.location) {
            (300..=399, Some(next)) => url = url.join(&next)?,
            (s, _) if s < 400 => return Ok(s),
            (s, _) => return Err(Error::Status(s)),
        }
    }
    Err(Error::Redirects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("https://localhost:9444/haproxy_ready").unwrap();
        assert_eq!(
            (u.https, u.host.as_str(), u.port, u.path.as_str()),
            (true, "localhost", 9444, "/haproxy_ready")
        );
        let u = Url::parse("http://[2001:db8::1]/x?y").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("2001:db8::1", 80, "/x?y")
        );
        assert_eq!(u.authority(), "[2001:db8::1]:80");
        assert_eq!(Url::parse("http://h").unwrap().path, "/");
        assert_eq!(Url::parse("http://h?q").unwrap().path, "/?q");
        assert!(Url::parse("ftp://h/").is_err());
        assert!(Url::parse("http://:80/").is_err());
        assert!(Url::parse("http://h:x/").is_err());
        assert!(Url::parse("http://[::1]x/").is_err());
        assert!(Url::parse("http://u@h/").is_err());
        let base = Url::parse("http://h/a/b").unwrap();
        assert_eq!(base.join("/c").unwrap().path, "/c");
        assert_eq!(base.join("c").unwrap().path, "/a/c");
        assert!(base.join("https://o:8443/").unwrap().https);
    }

    #[test]
    fn check_heads_are_haproxys() {
        assert_eq!(
            head("GET", "/readyz", "HTTP/1.0", None),
            "GET /readyz HTTP/1.0\r\nUser-Agent: lb-proxy\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }
}
