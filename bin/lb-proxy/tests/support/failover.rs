//! A backend failure as the API's clients see it (issue 16): three stand-in API servers on
//! lab hosts of their own, a proxy on a fourth, and a client on the proxy's host doing an
//! HTTPS `GET /readyz` through it every 50 ms (3 s limit each, as `curl -k`). One server then
//! dies, goes dark, resets what it is sent, answers `/readyz` 503 or accepts slowly, and the
//! client's failed and slow requests are counted. Shared by `tests/failover_lab.rs` and
//! `benches/failover.rs` (included by path).

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ipi_lab::api::ApiServer;
use ipi_lab::{Daemon, Host, Lab};

/// The frontend's port (OpenShift's).
pub const FRONT: u16 = 9445;
/// The stats page, on the proxy host's loopback (OpenShift's).
pub const STATS: u16 = 29445;
/// The API servers' port.
pub const API: u16 = 6443;
/// How long the client waits for one answer (curl's `-m 3`).
pub const LIMIT: Duration = Duration::from_secs(3);
/// The pause between two requests.
pub const PERIOD: Duration = Duration::from_millis(50);
/// A request slower than this is slow.
pub const SLOW: Duration = Duration::from_secs(1);

/// What happens to the first API server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The process dies: connections refused.
    Refused,
    /// Every packet to and from it is dropped.
    Dark,
    /// It accepts connections, then resets them when the client speaks (mid-stream; the
    /// stand-in closes with a zero linger time, so both ends forget the connection).
    Reset,
    /// `/readyz` answers 503 (the stand-in's not-ready status).
    NotReady,
    /// Four SYNs in five are dropped: connections take a second or three to be accepted.
    SlowAccept,
}

impl Failure {
    /// Every kind, in the order.
    pub const ALL: [Failure; 5] = [
        Failure::Refused,
        Failure::Dark,
        Failure::Reset,
        Failure::NotReady,
        Failure::SlowAccept,
    ];

    /// A few words for the tables.
    pub fn label(self) -> &'static str {
        match self {
            Failure::Refused => "dies (connections refused)",
            Failure::Dark => "goes dark (packets dropped)",
            Failure::Reset => "resets mid-stream",
            Failure::NotReady => "answers /readyz 503",
            Failure::SlowAccept => "accepts slowly (80% of SYNs dropped)",
        }
    }

    /// The nftables ruleset that makes it, for the kinds that are made by the network.
    fn ruleset(self) -> Option<String> {
        let rules = match self {
            Failure::Dark => "  chain in { type filter hook input priority -300; iifname \"eth0\" counter drop; }\n  \
                 chain out { type filter hook output priority -300; oifname \"eth0\" counter drop; }\n"
                .to_string(),
            Failure::SlowAccept => format!(
                "  chain in {{ type filter hook input priority -300; iifname \"eth0\" tcp dport {API} tcp flags & (syn | ack) == syn numgen random mod 100 < 80 counter drop; }}\n"
            ),
            Failure::Refused | Failure::NotReady | Failure::Reset => return None,
        };
        Some(format!("table inet failure {{\n{rules}}}\n"))
    }
}

/// Which proxy runs, and with what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setup {
    /// haproxy on a haproxy.cfg.
    Haproxy(String),
    /// lb-proxy on a haproxy.cfg.
    LbProxy(String),
    /// lb-proxy --cluster (what OpenShift runs, with lb-proxy's defaults).
    Cluster,
}

/// The lab: the proxy's host and three API servers. The servers are dropped first, while
/// their namespaces still exist (stopping one connects to it to wake its acceptor).
pub struct Bed {
    servers: Vec<ApiServer>,
    masters: Vec<Host>,
    lb: Host,
    lab: Lab,
}

/// What the client saw in one run.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Requests after the failure began.
    pub requests: usize,
    /// Of those, the ones without a 200.
    pub failed: usize,
    /// Of those, the ones answered 200 but slower than [`SLOW`].
    pub slow: usize,
    /// The median time of a request before the failure.
    pub usual: Duration,
    /// The slowest answered request after the failure, beyond the usual.
    pub worst_extra: Duration,
    /// When the last failed request began, since the failure.
    pub last_failure: Option<Duration>,
    /// The first few errors.
    pub errors: Vec<String>,
    /// What showed that the failure took effect (`Bed::felt`).
    pub felt: String,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} failed, {} slower than {:?}, worst +{} ms over the usual {} ms",
            self.failed,
            self.requests,
            self.slow,
            SLOW,
            self.worst_extra.as_millis(),
            self.usual.as_millis()
        )?;
        if let Some(t) = self.last_failure {
            write!(f, ", the last failure at {:.1} s", t.as_secs_f64())?;
        }
        Ok(())
    }
}

/// One request: when it began, how long it took, and what went wrong if anything did.
struct Sample {
    start: Instant,
    took: Duration,
    error: Option<String>,
}

impl Bed {
    /// Builds the lab: `lb` and three masters `m0`..`m2` serving on :6443.
    pub fn new() -> Bed {
        let mut lab = Lab::new().unwrap();
        let lb = lab.host("lb").unwrap();
        let masters: Vec<Host> = (0..3)
            .map(|i| lab.host(&format!("m{i}")).unwrap())
            .collect();
        let servers = masters
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let at = SocketAddr::new(IpAddr::V4(m.ipv4()), API);
                ApiServer::start_in(m, at, &format!("m{i}")).unwrap()
            })
            .collect();
        Bed {
            servers,
            masters,
            lb,
            lab,
        }
    }

    /// OpenShift's backend settings as the issue measured them (`retries 3`, `timeout connect
    /// 10s`, `timeout check 10s`, `option httpchk GET /readyz HTTP/1.0`, `check check-ssl inter
    /// 5s fall 3 rise 1`); `tuned` adds the keywords that fix it in haproxy (`option
    /// redispatch 1`, `retry-on conn-failure empty-response response-timeout`, `timeout
    /// connect 1s`, `observe layer4 error-limit 1 on-error mark-down`), `extra` goes into
    /// `defaults` (lb-proxy's own keywords, say).
    pub fn config(&self, tuned: bool, extra: &str) -> String {
        let (defaults, server) = if tuned {
            (
                "  timeout connect 1s\n  option redispatch 1\n  \
                 retry-on conn-failure empty-response response-timeout\n",
                " observe layer4 error-limit 1 on-error mark-down",
            )
        } else {
            ("  timeout connect 10s\n", "")
        };
        let mut cfg = format!(
            "global\n  maxconn 4000\n\
             defaults\n  mode tcp\n  timeout client 30s\n  timeout server 30s\n  \
             timeout check 10s\n  retries 3\n{defaults}{extra}\
             frontend main\n  bind {}:{FRONT}\n  default_backend masters\n\
             listen stats\n  bind 127.0.0.1:{STATS}\n  mode http\n  stats enable\n  stats uri /\n\
             backend masters\n  option httpchk GET /readyz HTTP/1.0\n  balance roundrobin\n",
            self.lb.ipv4()
        );
        for (i, m) in self.masters.iter().enumerate() {
            cfg.push_str(&format!(
                "  server m{i} {}:{API} verify none check check-ssl inter 5s fall 3 rise 1{server}\n",
                m.ipv4()
            ));
        }
        cfg
    }

    /// Starts the proxy of `setup` on the proxy host and waits until it answers.
    fn start(&self, setup: &Setup) -> Daemon {
        let dir = self.lb.dir();
        let cfg = dir.join("haproxy.cfg");
        let lb_proxy = env!("CARGO_BIN_EXE_lb-proxy");
        let mut d = match setup {
            Setup::Haproxy(text) => {
                std::fs::write(&cfg, text).unwrap();
                self.lb
                    .spawn("haproxy", "haproxy", ["-db", "-f", cfg.to_str().unwrap()])
                    .unwrap()
            }
            Setup::LbProxy(text) => {
                std::fs::write(&cfg, text).unwrap();
                let args = ["run", "-f", cfg.to_str().unwrap()];
                self.lb.spawn("lb-proxy", lb_proxy, args).unwrap()
            }
            Setup::Cluster => {
                let ips: Vec<String> = self.masters.iter().map(|m| m.ipv4().to_string()).collect();
                let install = ipi_lab::install_config(
                    dir,
                    &["192.0.2.0/24"],
                    &["192.0.2.200"],
                    &["192.0.2.201"],
                );
                let nodes = dir.join("nodes");
                let lines: String = (ips.iter().enumerate())
                    .map(|(i, ip)| format!("m{i} master {ip}\n"))
                    .collect();
                std::fs::write(&nodes, lines).unwrap();
                let args = [
                    "run",
                    "--cluster",
                    install.to_str().unwrap(),
                    "--nodes",
                    nodes.to_str().unwrap(),
                    "--no-redirect",
                ];
                self.lb.spawn("lb-proxy", lb_proxy, args).unwrap()
            }
        };
        let front = self.front();
        let up = ipi_lab::wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
            self.lb
                .within(|| std::net::TcpStream::connect(front))
                .is_ok()
        });
        assert!(up.is_some(), "{setup:?} did not start: {}", d.log());
        assert!(d.running(), "{setup:?} stopped: {}", d.log());
        d
    }

    fn front(&self) -> SocketAddr {
        SocketAddr::new(IpAddr::V4(self.lb.ipv4()), FRONT)
    }

    /// Makes `failure` happen to m0 (`on`) or undoes it.
    fn set(&mut self, failure: Failure, on: bool) {
        match failure {
            Failure::Refused if on => self.servers[0].stop(),
            Failure::Refused => self.servers[0].restart().unwrap(),
            Failure::NotReady => self.servers[0].set_ready(!on),
            Failure::Reset => self.servers[0].set_reset(on),
            _ => {
                let m0 = &self.masters[0];
                if on {
                    let path = m0.dir().join("failure.nft");
                    std::fs::write(&path, failure.ruleset().unwrap_or_default()).unwrap();
                    let out = m0.run("nft", ["-f", path.to_str().unwrap()]).unwrap();
                    assert_eq!(out.code, Some(0), "nft: {}", out.stderr);
                } else {
                    let _ = m0.run("nft", ["delete", "table", "inet", "failure"]);
                }
            }
        }
    }

    /// What shows that `failure` took effect on m0 while it is on, read before it is undone
    /// (`readyz` and `resets`: m0's counts when it began); an error when nothing does. A fault
    /// that did nothing would leave every judgement of the client green.
    fn felt(&self, failure: Failure, readyz: u64, resets: u64) -> Result<String, String> {
        let m0 = &self.servers[0];
        match failure {
            Failure::Refused => {
                let to = m0.address();
                let tried = self.lb.within(move || {
                    Ok(std::net::TcpStream::connect_timeout(
                        &to,
                        Duration::from_secs(2),
                    ))
                });
                match tried {
                    Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                        Ok(format!("a connection to {to} refused"))
                    }
                    other => Err(format!("a connection to {to} was not refused: {other:?}")),
                }
            }
            Failure::NotReady => match m0.readyz_requests() - readyz {
                0 => Err("no /readyz reached m0 while it answered 503".into()),
                n => Ok(format!("m0 answered {n} /readyz with 503")),
            },
            Failure::Reset => match m0.resets() - resets {
                0 => Err("m0 reset no connection".into()),
                n => Ok(format!("m0 reset {n} connections")),
            },
            Failure::Dark | Failure::SlowAccept => {
                match self.masters[0]
                    .nft_counted("failure")
                    .map_err(|e| e.to_string())?
                {
                    0 => Err("m0's rules dropped nothing".into()),
                    n => Ok(format!("m0's rules dropped {n} packets")),
                }
            }
        }
    }

    /// Runs `setup`, lets the client see `before` of normal service, fails m0 for `after`,
    /// and says what the client saw from the failure on. The proxy's log comes with it.
    pub fn run(
        &mut self,
        setup: &Setup,
        failure: Failure,
        before: Duration,
        after: Duration,
    ) -> (Tally, String) {
        let mut proxy = self.start(setup);
        // Every server checked once (rise 1: fully UP), so that each proxy starts alike.
        let checked = ipi_lab::wait_for(Duration::from_secs(15), Duration::from_millis(20), || {
            self.servers.iter().all(|s| s.readyz_requests() >= 1)
        });
        assert!(checked.is_some(), "{setup:?}: no checks: {}", proxy.log());
        let client = Client::start(&self.lb, self.front());
        std::thread::sleep(before);
        let failed_at = Instant::now();
        let (readyz, resets) = (self.servers[0].readyz_requests(), self.servers[0].resets());
        self.set(failure, true);
        std::thread::sleep(after);
        let samples = client.stop();
        let felt = self.felt(failure, readyz, resets);
        self.set(failure, false);
        let log = proxy.log();
        proxy.stop();
        let felt = felt.unwrap_or_else(|e| panic!("{setup:?}: {failure:?} not felt: {e}\n{log}"));
        let mut tally = tally(&samples, failed_at);
        tally.felt = felt;
        (tally, log)
    }
}

/// The client: sequential requests on the proxy's host.
struct Client {
    stop: Arc<AtomicBool>,
    samples: Arc<Mutex<Vec<Sample>>>,
    thread: std::thread::JoinHandle<()>,
}

impl Client {
    fn start(host: &Host, front: SocketAddr) -> Client {
        let stop = Arc::new(AtomicBool::new(false));
        let samples = Arc::new(Mutex::new(Vec::new()));
        let (host, s, st) = (host.clone(), Arc::clone(&samples), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            host.within(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                let head = lb_proxy::http::head("GET", "/readyz", "HTTP/1.1", Some("api"));
                while !st.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    let asked = async {
                        let request = lb_proxy::http::request(front, Some("api"), &head);
                        tokio::time::timeout(LIMIT, request).await
                    };
                    let error = match rt.block_on(asked) {
                        Ok(Ok(a)) if a.status == 200 => None,
                        Ok(Ok(a)) => Some(format!("HTTP {}", a.status)),
                        Ok(Err(e)) => Some(e.to_string()),
                        Err(_) => Some(format!("no answer within {LIMIT:?}")),
                    };
                    let took = start.elapsed();
                    s.lock().unwrap().push(Sample { start, took, error });
                    std::thread::sleep(PERIOD);
                }
                Ok(())
            })
            .unwrap();
        });
        Client {
            stop,
            samples,
            thread,
        }
    }

    fn stop(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap();
        std::mem::take(&mut *self.samples.lock().unwrap())
    }
}

fn tally(samples: &[Sample], failed_at: Instant) -> Tally {
    let mut before: Vec<Duration> = samples
        .iter()
        .filter(|s| s.start < failed_at && s.error.is_none())
        .map(|s| s.took)
        .collect();
    before.sort();
    let usual = before.get(before.len() / 2).copied().unwrap_or_default();
    let after: Vec<&Sample> = samples.iter().filter(|s| s.start >= failed_at).collect();
    let failures: Vec<&&Sample> = after.iter().filter(|s| s.error.is_some()).collect();
    let answered = after.iter().filter(|s| s.error.is_none());
    Tally {
        requests: after.len(),
        failed: failures.len(),
        slow: answered.clone().filter(|s| s.took > SLOW).count(),
        usual,
        worst_extra: answered
            .map(|s| s.took.saturating_sub(usual))
            .max()
            .unwrap_or_default(),
        last_failure: failures.last().map(|s| s.start - failed_at),
        errors: failures
            .iter()
            .take(3)
            .filter_map(|s| s.error.clone())
            .collect(),
        felt: String::new(),
    }
}
