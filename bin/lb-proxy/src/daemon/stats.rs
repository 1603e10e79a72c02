//! The stats page: one typed [`Snapshot`] of the table, shown as JSON (its serde form), as
//! text, and as Prometheus metrics named like haproxy's exporter.

use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;
use std::time::Instant;

use serde::Serialize;

use super::table::{self, lock, Table};

/// When the process started (for the uptime).
pub fn started() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

// The JSON page used to be built as a `serde_json::Value`, whose keys come out sorted: the
// fields below are in alphabetical order so that the page stays byte for byte the same.

/// Everything the stats show, at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    /// Backends, in file order.
    pub backends: Vec<BackendStats>,
    /// TCP frontends, by name.
    pub frontends: Vec<FrontendStats>,
    /// Seconds since the process started.
    pub uptime_seconds: u64,
    /// lb-proxy's version, unless `stats hide-version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<&'static str>,
}

/// A TCP frontend's counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrontendStats {
    /// Connections now.
    pub current_sessions: u64,
    /// Its `maxconn`.
    pub maxconn: u32,
    /// Its name.
    pub name: String,
    /// Connections accepted.
    pub sessions_total: u64,
}

/// A backend and its servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BackendStats {
    /// Servers UP.
    pub active_servers: usize,
    /// Its name.
    pub name: String,
    /// Its servers, in file order.
    pub servers: Vec<ServerStats>,
}

/// UP or DOWN, as haproxy writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Taking connections.
    Up,
    /// Not taking connections.
    Down,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Up => "UP",
            Status::Down => "DOWN",
        }
    }
}

/// A server's state and counters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerStats {
    /// Where it is.
    pub address: SocketAddr,
    /// Bytes from clients.
    pub bytes_in_total: u64,
    /// Bytes to clients.
    pub bytes_out_total: u64,
    /// Failed health checks.
    pub check_failures_total: u64,
    /// Times it went DOWN.
    pub check_up_down_total: u64,
    /// Health-checked or not.
    pub checked: bool,
    /// Failed connection attempts.
    pub connection_errors_total: u64,
    /// Connections now.
    pub current_sessions: u64,
    /// The weight round robin uses now (scaled by 16).
    pub effective_weight: u32,
    /// Its health counter.
    pub health: u32,
    /// The counter's top: `rise + fall - 1`.
    pub health_max: u32,
    /// Why the last check failed, or "" when it passed.
    pub last_check: String,
    /// Why passive health last acted (`observe layer4`, connect races), or "".
    pub last_passive: String,
    /// Its name.
    pub name: String,
    /// Times passive health acted (haproxy's `hanafail`).
    pub passive_actions_total: u64,
    /// Times passive health marked it DOWN.
    pub passive_downs_total: u64,
    /// Connect races it lost.
    pub races_lost_total: u64,
    /// Connections in all.
    pub sessions_total: u64,
    /// UP or DOWN.
    pub status: Status,
    /// Its configured weight.
    pub weight: u32,
}

impl Snapshot {
    /// The stats of `table` now; without the version when `hide_version`.
    pub fn of(table: &Table, hide_version: bool) -> Snapshot {
        let mut frontends: Vec<_> = table
            .frontends
            .values()
            .map(|f| FrontendStats::of(f))
            .collect();
        frontends.sort_by(|a, b| a.name.cmp(&b.name));
        Snapshot {
            backends: table.backends.iter().map(|b| BackendStats::of(b)).collect(),
            frontends,
            uptime_seconds: started().elapsed().as_secs(),
            version: (!hide_version).then_some(env!("CARGO_PKG_VERSION")),
        }
    }
}

impl FrontendStats {
    fn of(f: &table::Frontend) -> FrontendStats {
        FrontendStats {
            current_sessions: f.active.load(Ordering::Relaxed),
            maxconn: f.maxconn,
            name: f.name.clone(),
            sessions_total: f.sessions.load(Ordering::Relaxed),
        }
    }
}

impl BackendStats {
    fn of(b: &table::Backend) -> BackendStats {
        BackendStats {
            active_servers: b.up_count(),
            name: b.name.clone(),
            servers: b.servers.iter().map(|s| ServerStats::of(s)).collect(),
        }
    }
}

impl ServerStats {
    fn of(s: &table::Server) -> ServerStats {
        ServerStats {
            address: s.address().unwrap_or(s.cfg.address),
            bytes_in_total: s.moved.up.load(Ordering::Relaxed),
            bytes_out_total: s.moved.down.load(Ordering::Relaxed),
            check_failures_total: s.failed_checks.load(Ordering::Relaxed),
            check_up_down_total: s.downs.load(Ordering::Relaxed),
            checked: s.cfg.check,
            connection_errors_total: s.connect_errors.load(Ordering::Relaxed),
            current_sessions: s.active.load(Ordering::Relaxed),
            effective_weight: s.weight(),
            health: lock(&s.health).value(),
            health_max: s.cfg.rise.max(1) + s.cfg.fall.max(1) - 1,
            last_check: lock(&s.last_check).clone(),
            last_passive: lock(&s.last_passive).clone(),
            name: s.cfg.name.clone(),
            passive_actions_total: s.passive_actions.load(Ordering::Relaxed),
            passive_downs_total: s.passive_downs.load(Ordering::Relaxed),
            races_lost_total: s.races_lost.load(Ordering::Relaxed),
            sessions_total: s.sessions.load(Ordering::Relaxed),
            status: if s.is_up() { Status::Up } else { Status::Down },
            weight: s.cfg.weight,
        }
    }
}

/// The stats as JSON text.
pub fn json(table: &Table, hide_version: bool) -> String {
    let mut s =
        serde_json::to_string_pretty(&Snapshot::of(table, hide_version)).unwrap_or_default();
    s.push('\n');
    s
}

/// The stats as a plain-text table.
pub fn text(table: &Table, hide_version: bool) -> String {
    let v = Snapshot::of(table, hide_version);
    let mut out = String::new();
    if let Some(version) = v.version {
        let _ = writeln!(out, "lb-proxy {version}");
    }
    let _ = writeln!(out, "uptime {} s", v.uptime_seconds);
    for f in &v.frontends {
        let _ = writeln!(
            out,
            "frontend {}: {} sessions now (maxconn {}), {} in all",
            f.name, f.current_sessions, f.maxconn, f.sessions_total
        );
    }
    for b in &v.backends {
        let _ = writeln!(out, "backend {}: {} server(s) UP", b.name, b.active_servers);
        for s in &b.servers {
            let _ = writeln!(
                out,
                "  {} {} {} health {}/{} weight {} sessions {} now {} connect errors {} failed checks {} {}",
                s.name,
                s.address,
                s.status.as_str(),
                s.health,
                s.health_max,
                s.effective_weight,
                s.current_sessions,
                s.sessions_total,
                s.connection_errors_total,
                s.check_failures_total,
                s.last_check
            );
            if s.passive_actions_total > 0 || s.races_lost_total > 0 {
                let _ = writeln!(
                    out,
                    "    passive: {} action(s), {} DOWN, {} race(s) lost; last: {}",
                    s.passive_actions_total,
                    s.passive_downs_total,
                    s.races_lost_total,
                    s.last_passive
                );
            }
        }
    }
    out
}

/// One Prometheus metric family over rows of type `R`.
struct Metric<R> {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    value: fn(&R) -> u64,
}

impl<R> Metric<R> {
    /// The family's HELP and TYPE lines, then one sample per labelled row.
    fn write(&self, out: &mut String, rows: &[(String, &R)]) {
        let name = self.name;
        let _ = writeln!(
            out,
            "# HELP {name} {}\n# TYPE {name} {}",
            self.help, self.kind
        );
        for (labels, row) in rows {
            let _ = writeln!(out, "{name}{{{labels}}} {}", (self.value)(row));
        }
    }
}

/// A value that goes up and down.
const fn gauge<R>(name: &'static str, help: &'static str, value: fn(&R) -> u64) -> Metric<R> {
    Metric {
        name,
        kind: "gauge",
        help,
        value,
    }
}

/// A value that only goes up.
const fn counter<R>(name: &'static str, help: &'static str, value: fn(&R) -> u64) -> Metric<R> {
    Metric {
        name,
        kind: "counter",
        help,
        value,
    }
}

const FRONTEND_METRICS: [Metric<FrontendStats>; 3] = [
    gauge(
        "haproxy_frontend_current_sessions",
        "Connections now.",
        |f| f.current_sessions,
    ),
    counter(
        "haproxy_frontend_sessions_total",
        "Connections accepted.",
        |f| f.sessions_total,
    ),
    gauge(
        "haproxy_frontend_limit_sessions",
        "The maxconn of the frontend.",
        |f| u64::from(f.maxconn),
    ),
];

const BACKEND_METRICS: [Metric<BackendStats>; 1] = [gauge(
    "haproxy_backend_active_servers",
    "Servers UP.",
    |b| b.active_servers as u64,
)];

const SERVER_METRICS: [Metric<ServerStats>; 12] = [
    gauge(
        "haproxy_server_status",
        "1 when the server is UP, 0 when DOWN.",
        |s| u64::from(s.status == Status::Up),
    ),
    gauge("haproxy_server_current_sessions", "Connections now.", |s| {
        s.current_sessions
    }),
    counter(
        "haproxy_server_sessions_total",
        "Connections in all.",
        |s| s.sessions_total,
    ),
    counter(
        "haproxy_server_connection_errors_total",
        "Failed connection attempts.",
        |s| s.connection_errors_total,
    ),
    counter(
        "haproxy_server_check_failures_total",
        "Failed health checks.",
        |s| s.check_failures_total,
    ),
    counter(
        "haproxy_server_check_up_down_total",
        "Times the server went DOWN.",
        |s| s.check_up_down_total,
    ),
    gauge(
        "haproxy_server_weight",
        "Effective weight (scaled by 16).",
        |s| u64::from(s.effective_weight),
    ),
    counter(
        "haproxy_server_bytes_in_total",
        "Bytes from clients.",
        |s| s.bytes_in_total,
    ),
    counter("haproxy_server_bytes_out_total", "Bytes to clients.", |s| {
        s.bytes_out_total
    }),
    counter(
        "lb_proxy_server_passive_actions_total",
        "Times passive health acted (observe + on-error, connect races; haproxy's hanafail).",
        |s| s.passive_actions_total,
    ),
    counter(
        "lb_proxy_server_passive_down_total",
        "Times passive health marked the server DOWN.",
        |s| s.passive_downs_total,
    ),
    counter(
        "lb_proxy_server_connect_races_lost_total",
        "Connect races the server lost (lb-proxy's race-connect).",
        |s| s.races_lost_total,
    ),
];

const UPTIME: Metric<Snapshot> = gauge(
    "haproxy_process_uptime_seconds",
    "Seconds since the process started.",
    |s| s.uptime_seconds,
);

/// The stats as Prometheus text exposition, with haproxy exporter's metric names.
pub fn prometheus(table: &Table) -> String {
    let v = Snapshot::of(table, false);
    let proxy = |name: &str| format!("proxy=\"{name}\"");
    let frontends: Vec<_> = v.frontends.iter().map(|f| (proxy(&f.name), f)).collect();
    let backends: Vec<_> = v.backends.iter().map(|b| (proxy(&b.name), b)).collect();
    let servers: Vec<_> = v
        .backends
        .iter()
        .flat_map(|b| {
            b.servers
                .iter()
                .map(move |s| (format!("proxy=\"{}\",server=\"{}\"", b.name, s.name), s))
        })
        .collect();
    let mut out = String::new();
    FRONTEND_METRICS
        .iter()
        .for_each(|m| m.write(&mut out, &frontends));
    BACKEND_METRICS
        .iter()
        .for_each(|m| m.write(&mut out, &backends));
    SERVER_METRICS
        .iter()
        .for_each(|m| m.write(&mut out, &servers));
    UPTIME.write(&mut out, &[(String::new(), &v)]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table with a frontend, a server DOWN with counters, one UP, and an empty backend.
    fn table() -> Table {
        let cfg = crate::config::parse_str(
            "frontend main\n  bind 127.0.0.1:9445\n  default_backend masters\n  maxconn 7\n\
             backend masters\n  server m0 192.0.2.1:6443 check\n  \
             server m1 [2001:db8::1]:6443 weight 3 rise 4 fall 5\n\
             backend other\n",
            "t",
        )
        .unwrap();
        let t = Table::build(cfg, None);
        t.frontends["main"].sessions.store(4, Ordering::Relaxed);
        t.frontends["main"].active.store(2, Ordering::Relaxed);
        let s = &t.backends[0].servers[0];
        s.set_up(false);
        s.connect_errors.store(3, Ordering::Relaxed);
        s.moved.down.store(99_999, Ordering::Relaxed);
        *lock(&s.last_check) = "connect: refused".into();
        t
    }

    #[test]
    fn json_keys_are_sorted_as_they_always_were() {
        let t = table();
        let snapshot = Snapshot::of(&t, false);
        let sorted = serde_json::to_value(&snapshot).unwrap();
        assert_eq!(
            json(&t, false),
            serde_json::to_string_pretty(&sorted).unwrap() + "\n"
        );
        assert!(json(&t, false).contains("\"status\": \"DOWN\""));
        assert!(!json(&t, true).contains("version"));
    }

    #[test]
    fn text_and_prometheus_show_the_same_numbers() {
        let t = table();
        let text = text(&t, true);
        assert!(text.starts_with("uptime "), "{text}");
        assert!(text.contains("frontend main: 2 sessions now (maxconn 7), 4 in all\n"));
        assert!(text.contains("\n  m0 192.0.2.1:6443 DOWN health 2/4 weight 0 sessions 0 now 0 connect errors 3 failed checks 0 connect: refused\n"), "{text}");
        let metrics = prometheus(&t);
        for line in [
            "haproxy_frontend_sessions_total{proxy=\"main\"} 4\n",
            "haproxy_frontend_limit_sessions{proxy=\"main\"} 7\n",
            "# HELP haproxy_backend_active_servers Servers UP.\n# TYPE haproxy_backend_active_servers gauge\n\
             haproxy_backend_active_servers{proxy=\"masters\"} 1\nhaproxy_backend_active_servers{proxy=\"other\"} 0\n",
            "haproxy_server_status{proxy=\"masters\",server=\"m0\"} 0\n",
            "haproxy_server_status{proxy=\"masters\",server=\"m1\"} 1\n",
            "haproxy_server_weight{proxy=\"masters\",server=\"m1\"} 48\n",
            "haproxy_server_bytes_out_total{proxy=\"masters\",server=\"m0\"} 99999\n",
            "# TYPE haproxy_process_uptime_seconds gauge\nhaproxy_process_uptime_seconds{} ",
        ] {
            assert!(metrics.contains(line), "{line} in {metrics}");
        }
    }
}
