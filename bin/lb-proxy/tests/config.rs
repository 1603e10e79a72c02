//! haproxy.cfg as OpenShift renders it, read into the model; bad files give every error with
//! its file and line; `check-config` says which.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::time::Duration;

use lb_proxy::config::{self, Kind, Mode};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/seeds/managed-haproxy.cfg")
}

#[test]
fn the_managed_config() {
    let c = config::load(&fixture()).unwrap();
    assert_eq!(
        c.global.stats_socket.as_deref(),
        Some("/var/lib/haproxy/run/haproxy.sock")
    );
    let main = c.proxy("main").unwrap();
    assert_eq!(main.kind, Kind::Frontend);
    assert_eq!(main.mode, Mode::Tcp);
    assert_eq!(main.maxconn, Some(20000));
    assert_eq!(main.retries, 3);
    assert_eq!(main.binds[0].address, "[::]:9445".parse().unwrap());
    assert!(main.binds[0].v4v6);
    assert_eq!(main.default_backend.as_deref(), Some("masters"));
    let t = main.timeouts;
    assert_eq!(t.connect, Some(Duration::from_secs(10)));
    assert_eq!(t.client, Some(Duration::from_secs(86_400)));
    assert_eq!(t.queue, Some(Duration::from_secs(60)));
    assert_eq!(t.http_request, Some(Duration::from_secs(30)));

    let health = c.proxy("health_check_http_url").unwrap();
    assert_eq!((health.kind, health.mode), (Kind::Listen, Mode::Http));
    assert_eq!(health.monitor_uri.as_deref(), Some("/haproxy_ready"));
    assert_eq!(health.binds[0].address.port(), 50936);

    let stats = c.proxy("stats").unwrap();
    assert!(stats.stats.enabled && stats.stats.hide_version);
    assert_eq!(stats.stats.uri.as_deref(), Some("/haproxy_stats"));
    assert_eq!(
        stats.stats.auth,
        [("Username".to_string(), "Password".into())]
    );
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("Password") && shown.contains("<redacted>"),
        "{shown}"
    );
    assert_eq!(stats.stats.refresh, Some(Duration::from_secs(30)));
    assert_eq!(stats.binds[0].host.as_deref(), Some("localhost"));

    let masters = c.proxy("masters").unwrap();
    let check = masters.httpchk.as_ref().unwrap();
    assert_eq!(
        (
            check.method.as_str(),
            check.uri.as_str(),
            check.version.as_str()
        ),
        ("GET", "/readyz", "HTTP/1.0")
    );
    assert_eq!(masters.servers.len(), 3);
    let s = &masters.servers[0];
    assert_eq!(s.name, "managed-mbggk-master-0");
    assert_eq!(s.address, "10.0.3.211:6443".parse().unwrap());
    assert!(s.check && s.check_ssl && s.verify_none);
    assert_eq!(
        (s.weight, s.inter, s.fall, s.rise),
        (1, Duration::from_secs(1), 2, 3)
    );
}

#[test]
fn every_error_is_reported_with_its_place() {
    let text = "\
global
  nbprocs 4
defaults
  mode tcp
  timeout connect 10x
  timeout lunch 1s
frontend f
  bind 192.0.2.1 v4v6
  default_backend nowhere
  server s 192.0.2.2:80
backend b
  bind :80
  balance uri
  server a 192.0.2.3:6443 check-ssl weight 300 inter fast
  server a 192.0.2.4:6443 on-marked-down drain
  option abortonclose
listen m
  bind :1936
  mode http
  monitor fail if { nbsrv(ghost) lt 1 }
  stats auth admin:hunter22 extra
frontend f
";
    let errors = config::parse_str(text, "h.cfg").unwrap_err().to_string();
    for want in [
        "h.cfg:2: unknown keyword `nbprocs` in global",
        "h.cfg:5: `timeout connect 10x`: not a duration",
        "h.cfg:6: unknown timeout `lunch`",
        "h.cfg:8: `bind 192.0.2.1`: not ADDRESS:PORT",
        "h.cfg:10: `server` is not allowed in a frontend",
        "h.cfg:12: `bind` is not allowed in a backend",
        "h.cfg:13: `balance uri`: lb-proxy balances roundrobin, leastconn or source",
        "h.cfg:14: server a: `weight 300` is out of range",
        "h.cfg:14: server a: `inter fast` is not a duration",
        "h.cfg:15: server a: `on-marked-down drain` is not supported",
        "h.cfg:15: server a is defined twice in this backend",
        "h.cfg:16: `option abortonclose` is not supported by lb-proxy",
        "h.cfg:22: frontend f: a section of that name already exists",
        "h.cfg:21: `stats auth ...`: lb-proxy reads stats enable",
        "h.cfg:7: f: default_backend `nowhere` names no backend",
        "h.cfg:17: m: monitor fail counts `ghost`, which names no backend",
        "h.cfg:14: server a: check-ssl needs `verify none`",
    ] {
        assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
    }
    assert!(!errors.contains("hunter22"), "a password in:\n{errors}");
}

#[test]
fn the_check_config_command() {
    let run = |path: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
            .args(["check-config", "-f"])
            .arg(path)
            .output()
            .unwrap()
    };
    assert_eq!(run(&fixture()).status.code(), Some(0));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("haproxy.cfg");
    std::fs::write(&bad, "frontend f\n  bind :80\n  use_backend x\n").unwrap();
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("haproxy.cfg:3: use_backend `x` names no backend"),
        "{err}"
    );
}

/// What haproxy accepts around a TCP load balancer (issue 18): process management in global,
/// HTTP options in a TCP section, a frontend and a backend of one name, `resolvers`: accepted,
/// each with its warning (haproxy's own wording where haproxy gives one); HTTP routing and
/// `mode http` proxies refused, naming the line.
#[test]
fn what_haproxy_accepts_is_accepted_with_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("haproxy.cfg");
    let text = "\
global
  chroot /var/lib/haproxy
  ssl-default-bind-ciphers PROFILE=SYSTEM
  stats socket /run/haproxy.sock mode 660 level admin
  spread-checks 5
defaults
  mode tcp
  option httplog
  option forwardfor except 127.0.0.0/8
  timeout http-keep-alive 10s
  errorfile 503 /etc/haproxy/errors/503.http
resolvers dns
  nameserver ns1 192.0.2.53:53
  hold valid 5s
frontend kubernetes
  bind :6443
  default_backend kubernetes
backend kubernetes
  balance leastconn
  option tcp-check
  tcp-check connect
  tcp-check send PING\\r\\n
  tcp-check expect string +PONG
  default-server inter 10s maxconn 250
  server a 192.0.2.1:6443 check resolvers dns init-addr none
";
    std::fs::write(&cfg, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lb-proxy"))
        .args(["check-config", "-f"])
        .arg(&cfg)
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(0), "{err}");
    for want in [
        // Each says what haproxy would have done, and why lb-proxy does not.
        "haproxy.cfg:2: `chroot` ignored (haproxy would chroot into the directory once started): systemd runs lb-proxy",
        "haproxy.cfg:3: `ssl-default-bind-ciphers` ignored (haproxy would offer these ciphers on its TLS binds): lb-proxy terminates no TLS",
        "haproxy.cfg:4: `stats` in global ignored (haproxy would open its runtime API socket there)",
        "haproxy.cfg:8: 'option httplog' not usable with frontend 'kubernetes' (needs 'mode http'). Falling back to 'option tcplog'.",
        "haproxy.cfg:9: 'option forwardfor' ignored for frontend 'kubernetes' as it requires HTTP mode.",
        "haproxy.cfg:9: 'option forwardfor' ignored for backend 'kubernetes' as it requires HTTP mode.",
        "haproxy.cfg:10: 'timeout http-keep-alive' ignored for backend 'kubernetes'",
        "haproxy.cfg:11: 'errorfile 503' ignored for frontend 'kubernetes'",
        "haproxy.cfg:24: default-server: `maxconn 250` accepted without effect (haproxy would send this server at most `maxconn` connections at once and queue the others",
    ] {
        let line = err.lines().find(|l| l.contains(want));
        assert!(
            line.is_some_and(|l| l.starts_with("warning: ")),
            "missing warning {want:?} in:\n{err}"
        );
    }
    let c = config::load(&cfg).unwrap();
    let b = c.backend("kubernetes").unwrap();
    assert_eq!(b.balance, config::Balance::LeastConn);
    assert_eq!(b.tcp_check.as_ref().unwrap().len(), 3);
    assert_eq!(b.servers[0].maxconn, Some(250));
    assert_eq!(c.global.spread_checks, 5);
    assert_eq!(c.resolvers("dns").unwrap().nameservers.len(), 1);
    assert_eq!(
        c.proxy("kubernetes").unwrap().kind,
        config::Kind::Backend,
        "a name both sections have is the backend's"
    );
}

/// HTTP routing, cookies and `mode http` proxies that forward: refused, naming the line and
/// saying lb-proxy balances TCP only (a `use_backend` on an HTTP ACL too); a server naming a
/// resolvers section that is not there.
#[test]
fn http_routing_is_refused_naming_the_line() {
    let refused = "\
frontend www
  mode http
  bind :80
  acl api path_beg /api
  use_backend api if api
  default_backend api
backend api
  mode http
  cookie SRV insert
  server a 192.0.2.1:80 cookie a
  server b web.invalid.:80 resolvers nowhere
";
    let errors = config::parse_str(refused, "r.cfg").unwrap_err().to_string();
    for want in [
        "r.cfg:4: `acl`: lb-proxy balances TCP only",
        "r.cfg:5: acl `api` is no req_ssl_sni or req_ssl_hello_type ACL of www: lb-proxy \
         balances TCP only",
        "r.cfg:9: `cookie`: lb-proxy balances TCP only",
        "r.cfg:1: www: lb-proxy balances TCP only: `mode http` is for monitor-uri and stats",
        "r.cfg:7: api: lb-proxy balances TCP only",
        "r.cfg:11: server b: `resolvers nowhere` names no resolvers section",
    ] {
        assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
    }
}

/// A frontend routing TLS by name, as the UPI guides write one.
const ROUTED: &str = "\
frontend f
  mode tcp
  bind :443
  tcp-request inspect-delay 5s
  tcp-request content accept if { req_ssl_hello_type 1 }
  acl api req_ssl_sni -i api.example.com
  use_backend b1 if api
  use_backend b2 if { req.ssl_sni -m end .apps.example.com } || !api { req_ssl_sni -m beg x }
  default_backend b3
backend b1
  server s 192.0.2.1:443
backend b2
  server s 192.0.2.2:443
backend b3
  server s 192.0.2.3:443
";

/// The ClientHello rustls sends for server name `name`, as a real TLS client does.
fn client_hello(name: &str) -> Vec<u8> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
    let mut conn = rustls::ClientConnection::new(std::sync::Arc::new(config), name).unwrap();
    let mut bytes = Vec::new();
    conn.write_tls(&mut bytes).unwrap();
    bytes
}

/// TLS routing in mode tcp, as the UPI guides write it: read, judged on a ClientHello
/// (rustls's, as a real client sends it) and written back the same.
#[test]
fn tls_routing_is_read_judged_and_written_back() {
    use lb_proxy::config::routing::{self, Verdict};
    let text = ROUTED;
    let c = config::parse_str(text, "t.cfg").unwrap();
    let r = &c.proxies[0].routing;
    assert_eq!(r.inspect_delay, Some(std::time::Duration::from_secs(5)));
    let api = client_hello("API.example.com");
    assert_eq!(routing::content(r, &api, false), Verdict::Yes);
    assert_eq!(routing::content(r, &api[..3], false), Verdict::NotYet);
    assert_eq!(
        routing::content(r, &api[..3], true),
        Verdict::Yes,
        "the delay is over"
    );
    assert_eq!(routing::route(r, &api), Some("b1"));
    assert_eq!(
        routing::route(r, &client_hello("console.apps.example.com")),
        Some("b2")
    );
    assert_eq!(
        routing::route(r, &client_hello("xyz.example.org")),
        Some("b2"),
        "!api and x..."
    );
    assert_eq!(
        routing::route(r, &client_hello("yz.example.org")),
        None,
        "the default backend"
    );
    assert_eq!(routing::route(r, b"GET / HTTP/1.1\r\n\r\n"), None);
    let written = lb_proxy::config::write::write(&c);
    let again = config::parse_str(&written, "t.cfg").unwrap();
    assert_eq!(again.proxies[0].routing.routes.len(), 2, "{written}");
    for (a, b) in again.proxies[0].routing.routes.iter().zip(&r.routes) {
        assert_eq!((&a.backend, &a.when), (&b.backend, &b.when), "{written}");
    }
    assert_eq!(again.proxies[0].routing.acls, r.acls, "{written}");
}

/// What TLS routing cannot be is refused naming the line: a hello type that is no number, an
/// HTTP fetch, a match method lb-proxy does not have.
#[test]
fn tls_routing_refusals_name_the_line() {
    let refused = ROUTED
        .replace("-m end", "-m reg")
        .replace("{ req_ssl_hello_type 1 }", "{ req_ssl_hello_type x }")
        .replace(
            "use_backend b1 if api",
            "use_backend b1 if { path_beg /api }",
        );
    let errors = config::parse_str(&refused, "t.cfg")
        .unwrap_err()
        .to_string();
    for want in [
        "t.cfg:5: `tcp-request content accept if { req_ssl_hello_type x }`: `req_ssl_hello_type` \
         matches numbers",
        "t.cfg:7: `use_backend b1 if { path_beg /api }`: `path_beg`: lb-proxy routes by \
         req_ssl_sni and req_ssl_hello_type only",
        "t.cfg:8: `use_backend b2 if { req.ssl_sni -m reg .apps.example.com } || !api { \
         req_ssl_sni -m beg x }`: `-m reg`: lb-proxy matches str, beg, end or sub",
    ] {
        assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
    }
}
