//! What the lb-proxy tests share: stand-in API servers on loopback, lb-proxy or haproxy
//! running a config, one-shot HTTP requests and a load of clients counting failures.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use ipi_lab::api::ApiServer;

/// The loopback address this test process listens on. lb-proxy and haproxy bind with
/// SO_REUSEPORT, so two tests that happened to pick the same port on 127.0.0.1 would both
/// bind it without an error and the kernel would split each one's connections between them
/// (a counter reading 3 after 4 connections). An address of the process's own, from its pid,
/// keeps a test's ports to itself.
pub fn loopback() -> Ipv4Addr {
    let [_, high, middle, low] = std::process::id().to_be_bytes();
    // pids stay below 2^22: the second octet runs from 100 to 163, never 127.0.0.x.
    Ipv4Addr::new(127, 100 + (high & 0x3f), middle, low)
}

/// A port free on [`loopback`] just now, never one this process was given before.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind((loopback(), 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut given = GIVEN.lock().unwrap();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Three stand-in API servers on loopback, named a, b and c.
pub fn backends(n: usize) -> Vec<ApiServer> {
    (0..n)
        .map(|i| {
            let name = ((b'a' + i as u8) as char).to_string();
            ApiServer::start("127.0.0.1:0".parse().unwrap(), &name).unwrap()
        })
        .collect()
}

/// The ports a test config uses.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    pub front: u16,
    pub monitor: u16,
    pub stats: u16,
}

impl Ports {
    pub fn new() -> Ports {
        Ports {
            front: free_port(),
            monitor: free_port(),
            stats: free_port(),
        }
    }

    pub fn front(&self) -> SocketAddr {
        SocketAddr::from((loopback(), self.front))
    }

    pub fn monitor(&self) -> SocketAddr {
        SocketAddr::from((loopback(), self.monitor))
    }

    pub fn stats(&self) -> SocketAddr {
        SocketAddr::from((loopback(), self.stats))
    }
}

/// A config in OpenShift's shape on loopback: `extra_defaults` go into `defaults`,
/// `server_options` onto every server line.
pub fn config(
    p: Ports,
    servers: &[&ApiServer],
    extra_defaults: &str,
    server_options: &str,
) -> String {
    let mut s = format!(
        "global\n  maxconn 4000\n\
         defaults\n  mode tcp\n  timeout connect 1s\n  timeout client 30s\n  timeout server 30s\n  \
         retries 3\n  option redispatch\n{extra_defaults}\
         frontend main\n  bind {}\n  default_backend masters\n\
         frontend monitor\n  bind {}\n  mode http\n  monitor-uri /haproxy_ready\n  \
         monitor fail if {{ nbsrv(masters) lt 1 }}\n\
         listen stats\n  bind {}\n  mode http\n  stats enable\n  stats uri /\n\
         backend masters\n  option httpchk GET /readyz HTTP/1.0\n  balance roundrobin\n",
        p.front(),
        p.monitor(),
        p.stats()
    );
    for (i, b) in servers.iter().enumerate() {
        s.push_str(&format!(
            "  server m{i} {} weight 1 verify none check check-ssl {server_options}\n",
            b.address()
        ));
    }
    s
}

/// Which program runs the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    LbProxy,
    Haproxy,
}

/// A running proxy.
#[derive(Debug)]
pub struct Proxy {
    pub kind: Kind,
    child: Child,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl Proxy {
    pub fn start(kind: Kind, config: &str, ports: Ports, args: &[&str]) -> Proxy {
        Proxy::start_limited(kind, config, ports, args, None)
    }

    /// The same, with at most `open_files` descriptors (soft and hard limit, by prlimit(1)).
    pub fn start_limited(
        kind: Kind,
        config: &str,
        ports: Ports,
        args: &[&str],
        open_files: Option<u64>,
    ) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("haproxy.cfg");
        std::fs::write(&path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let mut cmd = Command::new("prlimit");
        if let Some(n) = open_files {
            cmd.arg(format!("--nofile={n}:{n}"));
        }
        cmd.arg("--");
        match kind {
            Kind::LbProxy => {
                cmd.arg(env!("CARGO_BIN_EXE_lb-proxy"));
                cmd.args(["run", "-f"]).arg(&path).args(args);
            }
            Kind::Haproxy => {
                cmd.args(["haproxy", "-db", "-f"]).arg(&path);
            }
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start the proxy");
        let p = Proxy {
            kind,
            child,
            dir,
            config: path,
        };
        let up = ipi_lab::wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
            get(ports.monitor(), "/haproxy_ready").is_ok()
        });
        assert!(up.is_some(), "{kind:?} did not start:\n{}", p.log());
        p
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
    }

    /// Writes `config` and sends SIGHUP.
    pub fn reload(&self, config: &str) {
        std::fs::write(&self.config, config).unwrap();
        self.signal(nix::sys::signal::Signal::SIGHUP);
    }

    pub fn wait(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.0 request (`Connection: close`): the status and the body.
pub fn get(address: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    request(address, path, "")
}

/// One request with extra header lines.
pub fn request(address: SocketAddr, path: &str, headers: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect_timeout(&address, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.0\r\n{headers}\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no HTTP answer: {answer:?}")))?;
    let body = answer
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Ok((status, body))
}

/// Clients sending requests through the proxy, one connection each, as fast as they can.
#[derive(Debug)]
pub struct Load {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failures: Arc<Mutex<Vec<Failure>>>,
    threads: Vec<JoinHandle<()>>,
}

/// A request that got no 200: when it started and ended, and what came instead.
#[derive(Debug, Clone)]
pub struct Failure {
    pub started: Instant,
    pub ended: Instant,
    pub error: String,
}

/// What a [`Load`] saw in all.
#[derive(Debug)]
pub struct Outcome {
    /// Requests answered 200.
    pub ok: u64,
    /// The others, in the order they ended.
    pub failures: Vec<Failure>,
}

impl Outcome {
    /// How many failed.
    pub fn failed(&self) -> usize {
        self.failures.len()
    }

    /// The first few failures, for a message.
    pub fn errors(&self) -> Vec<&str> {
        self.failures
            .iter()
            .take(5)
            .map(|f| f.error.as_str())
            .collect()
    }
}

impl Load {
    pub fn start(address: SocketAddr, clients: usize) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicU64::new(0));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..clients)
            .map(|_| {
                let (stop, ok, failures) = (stop.clone(), ok.clone(), failures.clone());
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let started = Instant::now();
                        match get(address, "/") {
                            Ok((200, _)) => {
                                ok.fetch_add(1, Ordering::Relaxed);
                            }
                            other => failures.lock().unwrap().push(Failure {
                                started,
                                ended: Instant::now(),
                                error: format!("{other:?}"),
                            }),
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                })
            })
            .collect();
        Load {
            stop,
            ok,
            failures,
            threads,
        }
    }

    /// (succeeded, failed) so far.
    pub fn counts(&self) -> (u64, usize) {
        (
            self.ok.load(Ordering::Relaxed),
            self.failures.lock().unwrap().len(),
        )
    }

    /// Waits until `more` further requests have been answered 200 (at most `timeout`).
    pub fn serve(&self, more: u64, timeout: Duration) {
        let target = self.counts().0 + more;
        let done = ipi_lab::wait_for(timeout, Duration::from_millis(10), || {
            self.counts().0 >= target
        });
        assert!(
            done.is_some(),
            "the load did not get {more} more answers in {timeout:?}: {:?}",
            self.counts()
        );
    }

    /// Stops the clients, after each finished its request.
    pub fn stop(self) -> Outcome {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        Outcome {
            ok: self.ok.load(Ordering::Relaxed),
            failures: self.failures.lock().unwrap().clone(),
        }
    }
}

/// The stats JSON of a running lb-proxy.
pub fn stats(ports: Ports) -> serde_json::Value {
    let (_, body) = get(ports.stats(), "/;json").unwrap();
    serde_json::from_str(&body).unwrap()
}

/// A server's status in the stats ("UP" / "DOWN").
pub fn status(ports: Ports, server: &str) -> String {
    let s = stats(ports);
    s["backends"][0]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == server)
        .map(|v| v["status"].as_str().unwrap().to_string())
        .unwrap_or_default()
}
