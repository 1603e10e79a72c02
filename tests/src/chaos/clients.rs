//! The clients, each on a host of its own beside the cluster and running for the whole
//! schedule, recording every request's time, outcome and latency; and the sampler of who holds
//! the VIPs (`ip addr` in each node's namespace, whichever program put them there).
//!
//! - `api`: a new connection every 20 ms through API-VIP:6443, TLS, `GET /readyz`, 200 wanted;
//! - `stream`: one long-lived connection through API-VIP:6443, a keep-alive request on it
//!   every 100 ms; when it breaks, that request failed and a new connection follows;
//! - `dns@NODE`: every 100 ms, `api-int`, `x.apps` and NODE's own name asked of NODE's dnsmasq;
//! - `ingress`: a new connection every 50 ms to Ingress-VIP:1936, answered by a router.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, RecordType};
use ipi_lab::{router, Host};

use crate::cluster::{Cluster, ClusterError, Role, API_PORT, API_VIP, DOMAIN, INGRESS_VIP};
use crate::probe::get;

/// What became of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Answered as it should be.
    Ok,
    /// No answer, or an error status: why.
    Failed(String),
    /// Answered with something other than the right answer: what.
    Wrong(String),
}

/// One request of a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// When it was sent, from the start of the run.
    pub at: Duration,
    /// Until its answer or failure.
    pub latency: Duration,
    /// What became of it.
    pub outcome: Outcome,
    /// The address a DNS answer gave (to judge it against who held that VIP then).
    pub address: Option<IpAddr>,
}

/// Who held the VIPs at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    /// When, from the start of the run.
    pub at: Duration,
    /// The nodes with the API VIP.
    pub api: Vec<String>,
    /// The nodes with the Ingress VIP.
    pub ingress: Vec<String>,
}

type Recorder = JoinHandle<(String, Vec<Request>)>;

/// The clients and the sampler, running.
#[derive(Debug)]
pub struct Clients {
    stop: Arc<AtomicBool>,
    clients: Vec<Recorder>,
    sampler: Option<JoinHandle<Vec<Sample>>>,
    /// The host of the `api` and `stream` clients (whose ARP entries are judged too).
    pub api_host: Host,
    /// The start of the run.
    pub t0: Instant,
}

/// What the clients and the sampler saw.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    /// Each client's requests, by client.
    pub requests: BTreeMap<String, Vec<Request>>,
    /// The holders, every 100 ms.
    pub samples: Vec<Sample>,
}

impl Clients {
    /// Adds the clients' hosts to the cluster's network and starts them all.
    pub fn start(cluster: &mut Cluster) -> Result<Clients, ClusterError> {
        let t0 = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let api = cluster.add_host("c-api")?;
        let dns = cluster.add_host("c-dns")?;
        let ingress = cluster.add_host("c-ing")?;
        let mut clients = vec![
            spawn(
                "api",
                &api,
                &stop,
                t0,
                Duration::from_millis(20),
                api_request,
            ),
            stream(&api, &stop, t0),
            spawn(
                "ingress",
                &ingress,
                &stop,
                t0,
                Duration::from_millis(50),
                ingress_request,
            ),
        ];
        for n in cluster.nodes().iter().filter(|n| n.role != Role::Bootstrap) {
            if !n.runs("ipi-dnsmasq.service") {
                continue;
            }
            let server = n.host.ipv4();
            let own = (format!("{}.{DOMAIN}", n.name), IpAddr::V4(server));
            let mut names = vec![
                (format!("api-int.{DOMAIN}"), IpAddr::V4(API_VIP)),
                (format!("x.apps.{DOMAIN}"), IpAddr::V4(INGRESS_VIP)),
                own,
            ]
            .into_iter()
            .cycle();
            clients.push(spawn(
                &format!("dns@{}", n.name),
                &dns,
                &stop,
                t0,
                Duration::from_millis(33),
                move || {
                    let (name, want) = names
                        .next()
                        .unwrap_or_else(|| (String::new(), IpAddr::V4(Ipv4Addr::UNSPECIFIED)));
                    dns_request(server, &name, want)
                },
            ));
        }
        let hosts: Vec<(String, Host)> = cluster
            .nodes()
            .iter()
            .map(|n| (n.name.clone(), n.host.clone()))
            .collect();
        let flag = Arc::clone(&stop);
        let sampler = std::thread::spawn(move || sample(&hosts, &flag, t0));
        Ok(Clients {
            stop,
            clients,
            sampler: Some(sampler),
            api_host: api,
            t0,
        })
    }

    /// Stops them; what they saw.
    pub fn stop(mut self) -> Seen {
        self.stop.store(true, Ordering::SeqCst);
        let mut seen = Seen::default();
        for c in self.clients.drain(..) {
            if let Ok((name, requests)) = c.join() {
                seen.requests.insert(name, requests);
            }
        }
        if let Some(s) = self.sampler.take() {
            seen.samples = s.join().unwrap_or_default();
        }
        seen
    }
}

/// A client on `host`: `request` every `every` (or right after the last one, when it took
/// longer) until told to stop.
fn spawn(
    name: &str,
    host: &Host,
    stop: &Arc<AtomicBool>,
    t0: Instant,
    every: Duration,
    mut request: impl FnMut() -> (Outcome, Option<IpAddr>) + Send + 'static,
) -> Recorder {
    let (name, host, stop) = (name.to_string(), host.clone(), Arc::clone(stop));
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = host.within(|| {
            while !stop.load(Ordering::SeqCst) {
                let sent = Instant::now();
                let (outcome, address) = request();
                out.push(Request {
                    at: sent - t0,
                    latency: sent.elapsed(),
                    outcome,
                    address,
                });
                std::thread::sleep(every.saturating_sub(sent.elapsed()));
            }
            Ok(())
        });
        (name, out)
    })
}

/// How long one request may take before it counts as failed.
const LIMIT: Duration = Duration::from_secs(1);

fn runtime() -> Option<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
}

/// `GET /readyz` over TLS on a new connection through the API VIP.
fn api_request() -> (Outcome, Option<IpAddr>) {
    let Some(rt) = runtime() else {
        return (Outcome::Failed("no runtime".into()), None);
    };
    let to = SocketAddr::from((API_VIP, API_PORT));
    let head = lb_proxy::http::head("GET", "/readyz", "HTTP/1.1", Some("api"));
    let answer = rt.block_on(async {
        tokio::time::timeout(LIMIT, lb_proxy::http::request(to, Some("api"), &head)).await
    });
    let outcome = match answer {
        Ok(Ok(a)) if a.status == 200 => Outcome::Ok,
        Ok(Ok(a)) => Outcome::Failed(format!("status {}", a.status)),
        Ok(Err(e)) => Outcome::Failed(e.to_string()),
        Err(_) => Outcome::Failed("timed out".into()),
    };
    (outcome, None)
}

/// A request to the router behind the Ingress VIP, on a new connection.
fn ingress_request() -> (Outcome, Option<IpAddr>) {
    let outcome = match get(
        SocketAddr::from((INGRESS_VIP, router::PORT)),
        Duration::from_millis(330),
    ) {
        Ok(name) if name.starts_with("router on ") => Outcome::Ok,
        Ok(name) => Outcome::Wrong(name),
        Err(e) => Outcome::Failed(e.to_string()),
    };
    (outcome, None)
}

/// The long-lived connection: a keep-alive request every 100 ms on one connection, a new
/// connection after one broke (the request that found it broken failed).
fn stream(host: &Host, stop: &Arc<AtomicBool>, t0: Instant) -> Recorder {
    let (host, stop) = (host.clone(), Arc::clone(stop));
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = host.within(|| {
            let rt = runtime().ok_or_else(|| std::io::Error::other("no runtime"))?;
            rt.block_on(stream_loop(&stop, t0, &mut out));
            Ok(())
        });
        ("stream".to_string(), out)
    })
}

async fn stream_loop(stop: &AtomicBool, t0: Instant, out: &mut Vec<Request>) {
    let to = SocketAddr::from((API_VIP, API_PORT));
    let headers = [
        ("Host".to_string(), "api".to_string()),
        ("Connection".to_string(), "keep-alive".to_string()),
    ];
    let head = lb_proxy::http::head_with("GET", "/", "HTTP/1.1", &headers);
    let mut conn: Option<tokio::net::TcpStream> = None;
    while !stop.load(Ordering::SeqCst) {
        let sent = Instant::now();
        let result = tokio::time::timeout(LIMIT, async {
            if conn.is_none() {
                conn = Some(tokio::net::TcpStream::connect(to).await?);
            }
            match conn.as_mut() {
                Some(c) => lb_proxy::http::exchange_body(c, &head)
                    .await
                    .map_err(std::io::Error::other),
                None => Err(std::io::Error::other("no connection")),
            }
        })
        .await;
        let outcome = match result {
            Ok(Ok(a)) if a.status == 200 => Outcome::Ok,
            Ok(Ok(a)) => Outcome::Failed(format!("status {}", a.status)),
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Err(_) => Outcome::Failed("timed out".into()),
        };
        if outcome != Outcome::Ok {
            conn = None;
        }
        out.push(Request {
            at: sent - t0,
            latency: sent.elapsed(),
            outcome,
            address: None,
        });
        tokio::time::sleep(Duration::from_millis(100).saturating_sub(sent.elapsed())).await;
    }
}

/// One A query for `name` to `server`:53 over UDP, `want` the right answer.
fn dns_request(server: Ipv4Addr, name: &str, want: IpAddr) -> (Outcome, Option<IpAddr>) {
    match dns_query(server, name) {
        Ok(Some(got)) if got == want => (Outcome::Ok, Some(got)),
        Ok(Some(got)) => (
            Outcome::Wrong(format!("{name} {got}, not {want}")),
            Some(got),
        ),
        Ok(None) => (Outcome::Failed(format!("{name}: no address")), None),
        Err(e) => (Outcome::Failed(format!("{name}: {e}")), None),
    }
}

fn dns_query(server: Ipv4Addr, name: &str) -> std::io::Result<Option<IpAddr>> {
    let qname = Name::from_ascii(format!("{name}.")).map_err(std::io::Error::other)?;
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut m = Message::new();
    m.set_id(id)
        .set_message_type(MessageType::Query)
        .set_op_code(OpCode::Query)
        .set_recursion_desired(true)
        .add_query(Query::query(qname, RecordType::A));
    let bytes = m.to_vec().map_err(std::io::Error::other)?;
    let socket = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
    socket.set_read_timeout(Some(LIMIT))?;
    socket.send_to(&bytes, (server, 53))?;
    let mut buf = [0u8; 1500];
    loop {
        let (n, _) = socket.recv_from(&mut buf)?;
        let Ok(answer) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        if answer.id() != id {
            continue;
        }
        return Ok(answer.answers().iter().find_map(|r| match r.data() {
            RData::A(a) => Some(IpAddr::V4(a.0)),
            _ => None,
        }));
    }
}

/// Who holds the VIPs, every 100 ms, until told to stop.
fn sample(hosts: &[(String, Host)], stop: &AtomicBool, t0: Instant) -> Vec<Sample> {
    let mut out = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let at = t0.elapsed();
        let mut s = Sample {
            at,
            api: Vec::new(),
            ingress: Vec::new(),
        };
        for (name, host) in hosts {
            let Ok(addresses) = host.addresses() else {
                continue;
            };
            if addresses.contains(&IpAddr::V4(API_VIP)) {
                s.api.push(name.clone());
            }
            if addresses.contains(&IpAddr::V4(INGRESS_VIP)) {
                s.ingress.push(name.clone());
            }
        }
        out.push(s);
        std::thread::sleep(Duration::from_millis(100).saturating_sub(t0.elapsed() - at));
    }
    out
}
