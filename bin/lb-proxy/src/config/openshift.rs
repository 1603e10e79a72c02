//! What OpenShift's on-prem template configures for the API load balancer on a control-plane
//! node: every master's API server on :6443 behind :::9445, checked with `GET /readyz` over TLS;
//! `/haproxy_ready` on 9444 (200 while the balancer runs), `/haproxy_monitor` on 9454 (503
//! when no API server is UP); stats on localhost:29445.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use ipi_core::{Cluster, Family, Inventory, Role};

use super::model::{
    Bind, Config, Global, HttpCheck, Kind, Location, Mode, MonitorFail, OnError, Proxy, Race,
    RetryOn, Server, Stats, Timeouts,
};

/// The API servers' port.
pub const API_PORT: u16 = 6443;
/// The balancer's frontend port.
pub const LB_PORT: u16 = 9445;
/// `/haproxy_ready`: 200 while lb-proxy runs.
pub const READY_PORT: u16 = 9444;
/// `/haproxy_monitor`: 503 when no API server is UP.
pub const MONITOR_PORT: u16 = 9454;
/// The stats page, on localhost.
pub const STATS_PORT: u16 = 29445;
/// The file that exists while the API VIP redirect is on: what keepalived's chk_ocp_lb looks
/// for.
pub const FLAG_FILE: &str = "/var/run/keepalived/iptables-rule-exists";

/// What `--cluster` adds to OpenShift's template so that a dead or dark API server costs the
/// clients nothing: a failed connection is retried at once on another master (`option
/// redispatch 1`), a connection with no answer after this long races the next master...
pub const RACE_DELAY: Duration = Duration::from_millis(150);
/// ...and a master that loses this many races in a row, or has one connection refused
/// (`observe layer4 error-limit 1 on-error mark-down`), is DOWN until `rise` checks pass.
pub const RACE_LOSSES: u32 = 3;
/// A master that comes back takes a full share only after this long (`slowstart`; MCO
/// #6400: an API server answers `/readyz` before it serves well).
pub const SLOWSTART: Duration = Duration::from_secs(10);
/// A master whose check has failed once is checked again this soon (`fastinter`), so one that
/// says 503 to `/readyz` is DOWN (`fall 2`) within `inter` + this, not two `inter`s.
pub const FASTINTER: Duration = Duration::from_millis(200);
/// `timeout connect`: OpenShift's 10 s let a dark master hold a client for 10 s per try.
pub const CONNECT: Duration = Duration::from_secs(2);

fn proxy(name: &str, kind: Kind, mode: Mode) -> Proxy {
    Proxy {
        maxconn: Some(20_000),
        redispatch: Some(1),
        retry_on: RetryOn {
            empty_response: true,
            response_timeout: true,
            ..RetryOn::default()
        },
        race: Some(Race {
            delay: RACE_DELAY,
            losses: RACE_LOSSES,
        }),
        replay_unanswered: true,
        timeouts: Timeouts {
            connect: Some(CONNECT),
            client: Some(Duration::from_secs(86_400)),
            server: Some(Duration::from_secs(86_400)),
            tunnel: Some(Duration::from_secs(86_400)),
            queue: Some(Duration::from_secs(60)),
            http_request: Some(Duration::from_secs(30)),
            ..Timeouts::default()
        },
        ..Proxy::new(name, kind, mode, Location::default())
    }
}

fn any(port: u16) -> Bind {
    Bind {
        address: SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), port),
        v4v6: true,
        v6only: false,
        host: None,
    }
}

/// The configuration for `cluster`, whose masters are in `nodes`: each master's first address
/// of the cluster's primary family (or its first address) is an API server.
pub fn from_cluster(cluster: &Cluster, nodes: &Inventory) -> Config {
    let family = cluster.primary_family();
    let mut masters: Vec<(String, IpAddr)> = nodes
        .with_role(Role::Master)
        .filter_map(|n| {
            let address = n
                .addresses
                .iter()
                .copied()
                .find(|a| Family::of(*a) == family)
                .or_else(|| n.addresses.first().copied())?;
            Some((n.name.clone(), address))
        })
        .collect();
    masters.sort();
    let mut main = proxy("main", Kind::Frontend, Mode::Tcp);
    main.binds.push(any(LB_PORT));
    main.default_backend = Some("masters".to_string());

    let mut ready = proxy("health_check_http_url", Kind::Listen, Mode::Http);
    ready.binds.push(any(READY_PORT));
    ready.monitor_uri = Some("/haproxy_ready".to_string());

    let mut monitor = proxy("health_check_http_monitor", Kind::Listen, Mode::Http);
    monitor.binds.push(any(MONITOR_PORT));
    monitor.monitor_uri = Some("/haproxy_monitor".to_string());
    monitor.monitor_fail = Some(MonitorFail {
        backend: "masters".to_string(),
        less_than: 1,
    });

    let mut stats = proxy("stats", Kind::Listen, Mode::Http);
    stats.binds.push(Bind {
        address: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), STATS_PORT),
        v4v6: false,
        v6only: false,
        host: Some("localhost".to_string()),
    });
    stats.stats = Stats {
        enabled: true,
        uri: Some("/haproxy_stats".to_string()),
        auth: Vec::new(),
        hide_version: true,
        refresh: Some(Duration::from_secs(30)),
    };

    let mut backend = proxy("masters", Kind::Backend, Mode::Tcp);
    backend.httpchk = Some(HttpCheck::new("GET", "/readyz", "HTTP/1.0"));
    backend.servers = masters
        .into_iter()
        .map(|(name, address)| master(name, address))
        .collect();
    Config {
        global: Global {
            maxconn: None,
            stats_socket: Some("/var/lib/haproxy/run/haproxy.sock".to_string()),
            spread_checks: 0,
        },
        proxies: vec![main, ready, monitor, stats, backend],
        resolvers: Vec::new(),
    }
}

/// A master's server line, as OpenShift writes it (with `--cluster`'s failover settings).
fn master(name: String, address: IpAddr) -> Server {
    let address = SocketAddr::new(address, API_PORT);
    Server {
        check: true,
        check_ssl: true,
        verify_none: true,
        inter: Duration::from_secs(1),
        fastinter: Some(FASTINTER),
        rise: 3,
        fall: 2,
        slowstart: Some(SLOWSTART),
        observe: true,
        error_limit: 1,
        on_error: OnError::MarkDown,
        ..Server::defaults(&name, address, &Location::default())
    }
}
