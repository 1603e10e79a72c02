//! A stand-in for the Kubernetes API server: one port that speaks HTTPS (a self-signed
//! certificate) and plain HTTP (told apart by the first byte), answering `GET /readyz` (and a
//! router's `/healthz`, `/healthz/ready`, for [`crate::router::Router`]) with
//! 200 or 503, `GET /bytes/N` with N bytes, and anything else with the server's name, with
//! keep-alive. Health checks reach it over TLS as they reach a real API server; load tests
//! talk plain HTTP through the proxy. It can be stopped (every connection cut, new ones
//! refused, as a killed process) and started again on the same address, or made to reset
//! every connection once its client has spoken.
//!
//! [`ApiServer::start_in`] opens its socket inside a lab host's network namespace; the
//! threads that serve it stay in the test's process.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use crate::lab::in_netns;
use crate::Host;

/// One stand-in API server.
#[derive(Debug)]
pub struct ApiServer {
    address: SocketAddr,
    netns: Option<String>,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    name: String,
    ready: AtomicBool,
    reset: AtomicBool,
    stopping: AtomicBool,
    requests: AtomicU64,
    readyz: AtomicU64,
    resets: AtomicU64,
    connections: Mutex<Vec<TcpStream>>,
}

impl ApiServer {
    /// Starts on `address` in this process's network namespace.
    pub fn start(address: SocketAddr, name: &str) -> io::Result<ApiServer> {
        Self::open(address, None, name)
    }

    /// Starts on `address` inside `host`'s network namespace.
    pub fn start_in(host: &Host, address: SocketAddr, name: &str) -> io::Result<ApiServer> {
        Self::open(address, Some(host.netns().to_string()), name)
    }

    fn open(address: SocketAddr, netns: Option<String>, name: &str) -> io::Result<ApiServer> {
        let shared = Arc::new(Shared {
            name: name.to_string(),
            ready: AtomicBool::new(true),
            reset: AtomicBool::new(false),
            stopping: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            readyz: AtomicU64::new(0),
            resets: AtomicU64::new(0),
            connections: Mutex::new(Vec::new()),
        });
        let mut server = ApiServer {
            address,
            netns,
            shared,
            acceptor: None,
        };
        server.listen()?;
        Ok(server)
    }

    fn listen(&mut self) -> io::Result<()> {
        let listener = match &self.netns {
            None => TcpListener::bind(self.address)?,
            Some(ns) => {
                let address = self.address;
                in_netns(ns, move || TcpListener::bind(address))?
            }
        };
        self.address = listener.local_addr()?;
        self.shared.stopping.store(false, Ordering::SeqCst);
        let shared = Arc::clone(&self.shared);
        self.acceptor = Some(std::thread::spawn(move || accept(listener, shared)));
        Ok(())
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Makes `/readyz` (and `/healthz`, `/healthz/ready`) answer 200 (true) or 503 (false).
    pub fn set_ready(&self, ready: bool) {
        self.shared.ready.store(ready, Ordering::SeqCst);
    }

    /// Makes every new connection end in a reset (TCP RST) once the client has sent its first
    /// bytes, as a server failing mid-stream (true), or serve again (false).
    pub fn set_reset(&self, reset: bool) {
        self.shared.reset.store(reset, Ordering::SeqCst);
    }

    /// Requests answered (all paths).
    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Health requests answered (`/readyz`, `/healthz`, `/healthz/ready`).
    pub fn readyz_requests(&self) -> u64 {
        self.shared.readyz.load(Ordering::SeqCst)
    }

    /// Connections ended with a reset in reset mode ([`ApiServer::set_reset`]).
    pub fn resets(&self) -> u64 {
        self.shared.resets.load(Ordering::SeqCst)
    }

    /// Stops as a killed process would: the port is closed and every connection cut.
    pub fn stop(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wake the accept with a connection of our own.
        let _ = match &self.netns {
            None => TcpStream::connect(self.address).map(drop),
            Some(ns) => {
                let address = self.address;
                in_netns(ns, move || TcpStream::connect(address)).map(drop)
            }
        };
        let _ = acceptor.join();
        for c in lock(&self.shared.connections).drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// Starts again on the same address after [`stop`](Self::stop).
    pub fn restart(&mut self) -> io::Result<()> {
        if self.acceptor.is_none() {
            self.listen()?;
        }
        Ok(())
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn accept(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        if let Ok(clone) = stream.try_clone() {
            let mut all = lock(&shared.connections);
            all.retain(|c| c.peer_addr().is_ok());
            all.push(clone);
        }
        let shared = Arc::clone(&shared);
        std::thread::spawn(move || {
            if resets(&stream, &shared) {
                return;
            }
            // The clone kept for stop() would hold the socket open: close it explicitly.
            let closer = stream.try_clone();
            let _ = serve(stream, &shared);
            if let Ok(c) = closer {
                let _ = c.shutdown(Shutdown::Both);
            }
        });
    }
}

/// In reset mode ([`ApiServer::set_reset`]), waits for the client's first bytes and says
/// true: `stream`, the last handle on the connection once the copy kept for stop() is
/// gone, then closes with a zero linger time, which sends a reset rather than a FIN.
fn resets(stream: &TcpStream, shared: &Shared) -> bool {
    if !shared.reset.load(Ordering::SeqCst) || stream.peek(&mut [0u8; 1]).is_err() {
        return false;
    }
    let peer = stream.peer_addr().ok();
    lock(&shared.connections).retain(|c| c.peer_addr().ok() != peer);
    let reset = socket2::SockRef::from(stream)
        .set_linger(Some(std::time::Duration::ZERO))
        .is_ok();
    if reset {
        shared.resets.fetch_add(1, Ordering::SeqCst);
    }
    reset
}

fn tls_config() -> io::Result<Arc<rustls::ServerConfig>> {
    static CONFIG: OnceLock<Result<Arc<rustls::ServerConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
                .map_err(|e| e.to_string())?;
            let key =
                rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            rustls::ServerConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_no_client_auth()
                .with_single_cert(vec![cert.cert.der().clone()], key)
                .map(Arc::new)
                .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(io::Error::other)
}

fn serve(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let _ = stream.set_nodelay(true);
    let mut first = [0u8; 1];
    if stream.peek(&mut first)? == 0 {
        return Ok(());
    }

    if first[0] == 0x16 {
        let conn = rustls::ServerConnection::new(tls_config()?).map_err(io::Error::other)?;
        http(rustls::StreamOwned::new(conn, stream), shared)
    } else {
        http(stream, shared)
    }
}

/// HTTP/1.x with keep-alive until the client closes or asks to.
fn http<S: Read + Write>(stream: S, shared: &Shared) -> io::Result<()> {
    let mut reader = BufReader::new(stream);
    loop {
        let mut request = String::new();
        if reader.read_line(&mut request)? == 0 {
            return Ok(());
        }
        let mut close = !request.contains("HTTP/1.1");
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            let lower = line.to_ascii_lowercase();
            if lower.starts_with("connection:") {
                close = lower.contains("close");
            }
            if line.trim().is_empty() {
                break;
            }
        }
        let path = request.split_whitespace().nth(1).unwrap_or("/");
        shared.requests.fetch_add(1, Ordering::SeqCst);
        // /readyz is the API server's; /healthz and /healthz/ready a router's (router.rs).
        let (status, body) = if matches!(path, "/readyz" | "/healthz" | "/healthz/ready") {
            shared.readyz.fetch_add(1, Ordering::SeqCst);
            if shared.ready.load(Ordering::SeqCst) {
                ("200 OK", b"ok".to_vec())
            } else {
                ("503 Service Unavailable", b"not ready".to_vec())
            }
        } else if let Some(n) = path
            .strip_prefix("/bytes/")
            .and_then(|n| n.parse::<usize>().ok())
        {
            ("200 OK", vec![b'x'; n.min(1 << 30)])
        } else {
            ("200 OK", format!("{}\n", shared.name).into_bytes())
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/plain\r\n{}\r\n",
            body.len(),
            if close { "Connection: close\r\n" } else { "" }
        );
        let stream = reader.get_mut();
        stream.write_all(head.as_bytes())?;
        stream.write_all(&body)?;
        stream.flush()?;
        if close {
            return Ok(());
        }
    }
}
