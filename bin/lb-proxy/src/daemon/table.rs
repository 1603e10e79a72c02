//! What a running lb-proxy serves, built from a configuration: frontends that forward to
//! backends, web listeners (monitor URIs and stats), and servers with their live state. A
//! reload builds a new table and keeps the live state of every server that did not change.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{watch, Notify, Semaphore};
use tokio::time::Instant;

use super::admit;
use super::probe::Probe;
use crate::balance::{backups, effective_weight, RoundRobin, SourceMap};
use crate::config::model::{Bind, MonitorFail, Race, Stats};
use crate::config::routing::Routing;
use crate::config::{self, Balance, Config, Kind, Mode, Proxy};
use crate::forward::{Idle, Moved};
use crate::health::{Change, Event, Health, Passive};

/// haproxy's frontend `maxconn` when nothing sets it.
pub const DEFAULT_MAXCONN: u32 = 2000;

/// A server and what is known about it now.
#[derive(Debug)]
pub struct Server {
    /// Its configuration.
    pub cfg: config::Server,
    /// Its health counter.
    pub health: Mutex<Health>,
    /// UP (a copy of the counter's verdict, read on every connection).
    up: AtomicBool,
    /// When it last came UP (for slow start).
    up_since: Mutex<Instant>,
    /// Why the last check failed, or "" when it passed.
    pub last_check: Mutex<String>,
    /// Connections now.
    pub active: AtomicU64,
    /// Connections in all.
    pub sessions: AtomicU64,
    /// Connection attempts that failed.
    pub connect_errors: AtomicU64,
    /// Checks that failed.
    pub failed_checks: AtomicU64,
    /// Times it went DOWN.
    pub downs: AtomicU64,
    /// Bytes moved.
    pub moved: Moved,
    /// Bumped when it goes DOWN, for `on-marked-down shutdown-sessions`.
    pub down_epoch: watch::Sender<u64>,
    /// Passive health: what client connections say (locked after `health`).
    pub passive: Mutex<Passive>,
    /// Told when passive health wants the next check sooner (`fastinter`).
    pub hurry: Notify,
    /// Times passive health acted (`on-error`, races lost).
    pub passive_actions: AtomicU64,
    /// Times passive health marked it DOWN.
    pub passive_downs: AtomicU64,
    /// Why passive health last acted, or "".
    pub last_passive: Mutex<String>,
    /// Connect races it lost (another server connected first).
    pub races_lost: AtomicU64,
    /// Where it is now: its address, or what the DNS last gave for its name (None: a name
    /// not resolved yet, or no longer; the server is then out of the rotation, unchecked).
    address: Mutex<Option<SocketAddr>>,
}

impl Server {
    fn new(cfg: config::Server, race: Option<Race>) -> Server {
        let health = Health::new(cfg.rise, cfg.fall, cfg.init_state);
        // Passive health needs checks: without them nothing would bring the server back.
        let race_losses = race.filter(|_| cfg.check).map_or(0, |r| r.losses);
        let passive = Passive::new(
            cfg.observe && cfg.check,
            cfg.error_limit,
            cfg.on_error,
            race_losses,
        );
        Server {
            passive: Mutex::new(passive),
            hurry: Notify::new(),
            passive_actions: AtomicU64::new(0),
            passive_downs: AtomicU64::new(0),
            last_passive: Mutex::new(String::new()),
            races_lost: AtomicU64::new(0),
            up: AtomicBool::new(health.is_up()),
            health: Mutex::new(health),
            // A server that starts UP is not slow-started.
            up_since: Mutex::new(Instant::now() - cfg.slowstart.unwrap_or_default()),
            last_check: Mutex::new(String::new()),
            active: AtomicU64::new(0),
            sessions: AtomicU64::new(0),
            connect_errors: AtomicU64::new(0),
            failed_checks: AtomicU64::new(0),
            downs: AtomicU64::new(0),
            moved: Moved::default(),
            down_epoch: watch::Sender::new(0),
            address: Mutex::new(
                Some(cfg.address).filter(|a| cfg.fqdn.is_none() || !a.ip().is_unspecified()),
            ),
            cfg,
        }
    }

    /// Where it is now (see the field).
    pub fn address(&self) -> Option<SocketAddr> {
        *lock(&self.address)
    }

    /// Where it is from now on (run-time resolution).
    pub fn set_address(&self, address: Option<SocketAddr>) {
        *lock(&self.address) = address;
    }

    /// UP or not.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    /// Records a change the health counter made.
    pub fn set_up(&self, up: bool) {
        // The ramp's start before UP is visible: a pick in between would otherwise see the
        // server UP since its last time up (full weight, no slow start).
        if up {
            *lock(&self.up_since) = Instant::now();
        }
        self.up.store(up, Ordering::Release);
        if !up {
            self.downs.fetch_add(1, Ordering::Relaxed);
            self.down_epoch.send_modify(|e| *e += 1);
        }
    }

    /// Applies what a client connection told about the server (`backend` names it in logs).
    pub fn observe(&self, event: Event, backend: &str) {
        if event == Event::RaceLost {
            self.races_lost.fetch_add(1, Ordering::Relaxed);
        }
        let verdict = {
            let mut health = lock(&self.health);
            lock(&self.passive).observe(event, &mut health)
        };
        let Some(reason) = verdict.reason else {
            return;
        };
        self.passive_actions.fetch_add(1, Ordering::Relaxed);
        *lock(&self.last_passive) = reason.to_string();
        let name = &self.cfg.name;
        match verdict.change {
            Change::Down => {
                self.set_up(false);
                self.passive_downs.fetch_add(1, Ordering::Relaxed);
                tracing::warn!("server {backend}/{name} is DOWN (passive): {reason}");
            }
            Change::Up | Change::None => {
                tracing::info!("server {backend}/{name}: passive health: {reason}");
            }
        }
        // haproxy forces fastinter after every action.
        self.hurry.notify_one();
    }

    /// The weight round robin uses now.
    pub fn weight(&self) -> u32 {
        if self.address().is_none() {
            return 0;
        }
        let up_for = self.is_up().then(|| lock(&self.up_since).elapsed());
        effective_weight(self.cfg.weight, up_for, self.cfg.slowstart)
    }

    /// Same server, same checks: its state can carry over a reload.
    fn same(&self, cfg: &config::Server, race: Option<Race>) -> bool {
        let mut a = self.cfg.clone();
        a.location = cfg.location.clone();
        let losses = race.filter(|_| cfg.check).map_or(0, |r| r.losses);
        a == *cfg && lock(&self.passive).race_losses == losses
    }
}

/// Locks `m`, taking over the data if a panicking thread poisoned it.
pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A backend: servers in a rotation.
#[derive(Debug)]
pub struct Backend {
    /// Its name.
    pub name: String,
    /// Its servers, in file order.
    pub servers: Vec<Arc<Server>>,
    rotation: Mutex<RoundRobin>,
    /// `balance source`'s map.
    source: Mutex<SourceMap>,
    /// `balance`.
    pub balance: Balance,
    /// `hash-type ... avalanche`.
    pub avalanche: bool,
    /// `hash-type consistent`.
    pub consistent: bool,
    /// `option allbackups`.
    pub allbackups: bool,
    /// `retries`.
    pub retries: u32,
    /// `option redispatch [N]`.
    pub redispatch: Option<i32>,
    /// `retry-on conn-failure` (haproxy's default): a failed connect is retried.
    pub retry_connect: bool,
    /// lb-proxy's connect race.
    pub race: Option<Race>,
    /// lb-proxy's `replay-unanswered`.
    pub replay: bool,
    /// `option tcp-smart-connect`: the client's first bytes, when they are there already, leave
    /// with the handshake's last ACK.
    pub smart_connect: bool,
    /// `timeout connect` (haproxy's default: none; 5 s here rather than forever).
    pub connect: Duration,
    /// The probe every checked server gets.
    pub probe: Probe,
    /// How long a check may wait for the answer after connecting: `timeout check`, else
    /// `inter`.
    pub check_timeout: Option<Duration>,
    /// The server side's inactivity timeouts.
    pub idle: Idle,
}

impl Backend {
    /// The backend of proxy `p`; its servers that did not change keep their state from `old`.
    fn build(p: &Proxy, old: Option<&Table>) -> Backend {
        let old_server = |cfg: &config::Server| {
            old?.backends
                .iter()
                .find(|b| b.name == p.name)?
                .servers
                .iter()
                .find(|s| s.cfg.name == cfg.name && s.same(cfg, p.race))
                .cloned()
        };
        let servers = p
            .servers
            .iter()
            .map(|s| old_server(s).unwrap_or_else(|| Arc::new(Server::new(s.clone(), p.race))))
            .collect();
        let tls = p.servers.iter().any(|s| s.check_ssl);
        Backend {
            name: p.name.clone(),
            servers,
            rotation: Mutex::new(RoundRobin::default()),
            source: Mutex::new(SourceMap::default()),
            balance: p.balance,
            avalanche: p.avalanche,
            consistent: p.consistent,
            allbackups: p.allbackups,
            retries: p.retries,
            redispatch: p.redispatch,
            retry_connect: p.retry_on.conn_failure,
            race: p.race,
            replay: p.replay_unanswered,
            smart_connect: p.smart_connect,
            connect: p.timeouts.connect.unwrap_or(Duration::from_secs(5)),
            probe: Probe::new(p.httpchk.as_ref(), p.tcp_check.as_deref(), tls),
            check_timeout: p.timeouts.check,
            idle: Idle {
                server: p.timeouts.server,
                tunnel: p.timeouts.tunnel,
                server_fin: p.timeouts.server_fin,
                ..Idle::default()
            },
        }
    }

    /// The server for a connection from `client`: the next in the rotation, other than `not`
    /// when another is available; with `balance source`, the client's own (haproxy's map
    /// ignores `not` too: a retry goes to the same server while it is UP).
    pub fn pick(&self, not: Option<&Arc<Server>>, client: IpAddr) -> Option<Arc<Server>> {
        let mut weights: Vec<u32> = self.servers.iter().map(|s| s.weight()).collect();
        let backup: Vec<bool> = self.servers.iter().map(|s| s.cfg.backup).collect();
        backups(&mut weights, &backup, self.allbackups);
        if self.balance == Balance::Source {
            let eligible: Vec<bool> = weights.iter().map(|&w| w > 0).collect();
            let configured: Vec<u32> = self.servers.iter().map(|s| s.cfg.weight).collect();
            let hashing = (self.avalanche, self.consistent);
            let i = lock(&self.source).pick(client, &configured, &eligible, hashing)?;
            return Some(Arc::clone(&self.servers[i]));
        }
        if let Some(not) = not {
            let others =
                (self.servers.iter().zip(&weights)).any(|(s, &w)| w > 0 && !Arc::ptr_eq(s, not));
            if others {
                for (s, w) in self.servers.iter().zip(weights.iter_mut()) {
                    if Arc::ptr_eq(s, not) {
                        *w = 0;
                    }
                }
            }
        }
        let i = if self.balance == Balance::LeastConn {
            let active: Vec<u64> = (self.servers.iter())
                .map(|s| s.active.load(Ordering::Relaxed))
                .collect();
            lock(&self.rotation).least_connections(&weights, &active)?
        } else {
            lock(&self.rotation).pick(&weights)?
        };
        Some(Arc::clone(&self.servers[i]))
    }

    /// Servers UP.
    pub fn up_count(&self) -> usize {
        self.servers.iter().filter(|s| s.is_up()).count()
    }
}

/// A TCP frontend.
#[derive(Debug)]
pub struct Frontend {
    /// Its name.
    pub name: String,
    /// Where it listens.
    pub binds: Vec<Bind>,
    /// Where it forwards (None: it closes what it accepts, as haproxy without a backend).
    pub backend: Option<Arc<Backend>>,
    /// Its TLS routing rules, and the backend each `use_backend` names (by rule).
    pub routing: Routing,
    /// The backends of `routing.routes`, by name.
    pub routes: HashMap<String, Arc<Backend>>,
    /// `maxconn`: connections beyond it wait in the kernel's backlog.
    pub slots: Arc<Semaphore>,
    /// The configured `maxconn`.
    pub maxconn: u32,
    /// The client side's inactivity timeouts.
    pub idle: Idle,
    /// `option tcp-smart-accept`.
    pub smart_accept: bool,
    /// Connections in all.
    pub sessions: AtomicU64,
    /// Connections now: from accept to close.
    pub active: AtomicU64,
}

impl Frontend {
    /// The TCP frontend of proxy `p`, forwarding to one of `backends`. Its `maxconn` slots
    /// carry over from `old` while `maxconn` is the same, so that connections from before a
    /// reload still count.
    fn build(p: &Proxy, backends: &HashMap<String, Arc<Backend>>, old: Option<&Table>) -> Frontend {
        let backend = match p.kind {
            Kind::Listen => backends.get(&p.name),
            Kind::Frontend | Kind::Backend => {
                p.default_backend.as_ref().and_then(|b| backends.get(b))
            }
        };
        let maxconn = p.maxconn.unwrap_or(DEFAULT_MAXCONN);
        let slots = old
            .and_then(|o| o.frontends.get(&p.name))
            .filter(|f| f.maxconn == maxconn)
            .map_or_else(
                || Arc::new(Semaphore::new(maxconn as usize)),
                |f| Arc::clone(&f.slots),
            );
        Frontend {
            name: p.name.clone(),
            binds: p.binds.clone(),
            backend: backend.cloned(),
            routing: p.routing.clone(),
            routes: (p.routing.routes.iter())
                .filter_map(|r| Some((r.backend.clone(), Arc::clone(backends.get(&r.backend)?))))
                .collect(),
            slots,
            maxconn,
            idle: Idle {
                client: p.timeouts.client,
                tunnel: p.timeouts.tunnel,
                client_fin: p.timeouts.client_fin,
                ..Idle::default()
            },
            smart_accept: p.smart_accept,
            sessions: AtomicU64::new(0),
            active: AtomicU64::new(0),
        }
    }
}

/// A `mode http` listener: monitor URI and stats.
#[derive(Debug)]
pub struct Web {
    /// Its name.
    pub name: String,
    /// Where it listens.
    pub binds: Vec<Bind>,
    /// `monitor-uri`.
    pub monitor_uri: Option<String>,
    /// `monitor fail if { nbsrv(B) lt N }`, with B resolved.
    pub monitor_fail: Option<(Arc<Backend>, MonitorFail)>,
    /// The stats page.
    pub stats: Stats,
    /// How long a client may take to send its request.
    pub request_timeout: Duration,
    /// Its connections at once: its `maxconn`, at most [`admit::WEB_MAXCONN`]; beyond, clients
    /// wait in the backlog.
    pub slots: Arc<Semaphore>,
}

impl Web {
    /// The web listener of proxy `p`; `monitor fail` counts a backend of `backends`.
    fn build(p: &Proxy, backends: &HashMap<String, Arc<Backend>>) -> Web {
        Web {
            name: p.name.clone(),
            binds: p.binds.clone(),
            monitor_uri: p.monitor_uri.clone(),
            monitor_fail: p
                .monitor_fail
                .as_ref()
                .and_then(|m| Some((Arc::clone(backends.get(&m.backend)?), m.clone()))),
            stats: p.stats.clone(),
            request_timeout: p
                .timeouts
                .http_request
                .or(p.timeouts.client)
                .unwrap_or(Duration::from_secs(5)),
            slots: Arc::new(Semaphore::new(Web::cap(p) as usize)),
        }
    }

    /// Its connections at once (see `slots`).
    fn cap(p: &Proxy) -> u32 {
        p.maxconn
            .map_or(admit::WEB_MAXCONN, |m| m.clamp(1, admit::WEB_MAXCONN))
    }

    /// The monitor's verdict: false when `monitor fail` holds.
    pub fn monitor_ok(&self) -> bool {
        self.monitor_fail
            .as_ref()
            .is_none_or(|(b, m)| b.up_count() as u64 >= u64::from(m.less_than))
    }
}

/// Everything being served.
#[derive(Debug)]
pub struct Table {
    /// TCP frontends by name.
    pub frontends: HashMap<String, Arc<Frontend>>,
    /// Web listeners by name.
    pub webs: HashMap<String, Arc<Web>>,
    /// Backends, in file order.
    pub backends: Vec<Arc<Backend>>,
    /// The configuration it came from.
    pub config: Config,
}

/// A listening socket's identity: the proxy it serves and its bind.
pub type ListenerKey = (String, Bind);

impl Table {
    /// Builds a table from `config`, keeping the live state of the servers of `old` that
    /// did not change.
    pub fn build(config: Config, old: Option<&Table>) -> Table {
        let mut backends: HashMap<String, Arc<Backend>> = HashMap::new();
        let mut order = Vec::new();
        for p in config
            .proxies
            .iter()
            .filter(|p| p.kind != Kind::Frontend && p.mode == Mode::Tcp)
        {
            let b = Arc::new(Backend::build(p, old));
            order.push(Arc::clone(&b));
            backends.insert(p.name.clone(), b);
        }
        let mut frontends = HashMap::new();
        let mut webs = HashMap::new();
        for p in config.proxies.iter().filter(|p| p.kind != Kind::Backend) {
            if p.mode == Mode::Http {
                webs.insert(p.name.clone(), Arc::new(Web::build(p, &backends)));
            } else {
                let f = Frontend::build(p, &backends, old);
                frontends.insert(p.name.clone(), Arc::new(f));
            }
        }
        Table {
            frontends,
            webs,
            backends: order,
            config,
        }
    }

    /// Every listening socket the table needs.
    pub fn listeners(&self) -> Vec<ListenerKey> {
        let f = self
            .frontends
            .values()
            .flat_map(|f| f.binds.iter().map(|b| (f.name.clone(), b.clone())));
        let w = self
            .webs
            .values()
            .flat_map(|w| w.binds.iter().map(|b| (w.name.clone(), b.clone())));
        let mut all: Vec<_> = f.chain(w).collect();
        all.sort_by_key(|(n, b)| (n.clone(), b.address));
        all
    }

    /// The first TCP frontend's first port and its backend: what the VIP redirect serves.
    pub fn redirect_target(&self) -> Option<(u16, Arc<Backend>)> {
        let f = self
            .config
            .proxies
            .iter()
            .filter(|p| p.kind != Kind::Backend && p.mode == Mode::Tcp)
            .find_map(|p| self.frontends.get(&p.name))?;
        Some((
            f.binds.first()?.address.port(),
            Arc::clone(f.backend.as_ref()?),
        ))
    }
}
