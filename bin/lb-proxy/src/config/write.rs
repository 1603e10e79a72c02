//! The model back to haproxy.cfg: what every proxy shares goes into one `defaults` section,
//! the rest into the proxy that has it, so that reading the text gives the same model and
//! haproxy reads it too.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use super::model::{
    Balance, Bind, Config, HttpCheck, HttpMatch, InitAddr, InitState, Kind, Mode, OnError, Pattern,
    Proxy, Race, Resolvers, RetryOn, Server, TcpRule, Timeouts,
};
use super::parse::EXTENSION;

/// The settings every proxy has in common.
#[derive(Debug, Default)]
struct Shared {
    mode: Option<Mode>,
    maxconn: Option<u32>,
    retries: Option<u32>,
    redispatch: Option<Option<i32>>,
    retry_on: Option<RetryOn>,
    race: Option<Option<Race>>,
    replay: Option<bool>,
    timeouts: Timeouts,
}

fn same<T: PartialEq + Copy>(proxies: &[Proxy], f: impl Fn(&Proxy) -> T) -> Option<T> {
    let first = f(proxies.first()?);
    proxies.iter().all(|p| f(p) == first).then_some(first)
}

fn shared(proxies: &[Proxy]) -> Shared {
    let t = |f: fn(&Timeouts) -> Option<Duration>| same(proxies, |p| f(&p.timeouts)).flatten();
    Shared {
        mode: same(proxies, |p| p.mode),
        maxconn: same(proxies, |p| p.maxconn).flatten(),
        retries: same(proxies, |p| p.retries),
        redispatch: same(proxies, |p| p.redispatch),
        retry_on: same(proxies, |p| p.retry_on),
        race: same(proxies, |p| p.race),
        replay: same(proxies, |p| p.replay_unanswered),
        timeouts: Timeouts {
            connect: t(|t| t.connect),
            client: t(|t| t.client),
            server: t(|t| t.server),
            tunnel: t(|t| t.tunnel),
            client_fin: t(|t| t.client_fin),
            server_fin: t(|t| t.server_fin),
            queue: t(|t| t.queue),
            check: t(|t| t.check),
            http_request: t(|t| t.http_request),
        },
    }
}

fn timeouts(t: &Timeouts) -> [(&'static str, Option<Duration>); 9] {
    [
        ("connect", t.connect),
        ("client", t.client),
        ("server", t.server),
        ("tunnel", t.tunnel),
        ("client-fin", t.client_fin),
        ("server-fin", t.server_fin),
        ("queue", t.queue),
        ("check", t.check),
        ("http-request", t.http_request),
    ]
}

fn mode(m: Mode) -> &'static str {
    match m {
        Mode::Tcp => "tcp",
        Mode::Http => "http",
    }
}

/// haproxy.cfg text for `c`.
pub fn write(c: &Config) -> String {
    let mut out = String::from("global\n");
    if let Some(socket) = &c.global.stats_socket {
        let _ = writeln!(
            out,
            "  stats socket {socket} mode 600 level admin expose-fd listeners"
        );
    }
    if let Some(n) = c.global.maxconn {
        let _ = writeln!(out, "  maxconn {n}");
    }
    if c.global.spread_checks > 0 {
        let _ = writeln!(out, "  spread-checks {}", c.global.spread_checks);
    }
    for r in &c.resolvers {
        resolvers(&mut out, r);
    }
    let d = shared(&c.proxies);
    out.push_str("defaults\n");
    if let Some(m) = d.mode {
        let _ = writeln!(out, "  mode {}", mode(m));
    }
    if let Some(n) = d.maxconn {
        let _ = writeln!(out, "  maxconn {n}");
    }
    if let Some(n) = d.retries {
        let _ = writeln!(out, "  retries {n}");
    }
    if let Some(r) = d.redispatch {
        redispatch(&mut out, r);
    }
    if let Some(r) = d.retry_on {
        retry_on(&mut out, r);
    }
    if let Some(r) = d.race {
        race(&mut out, r);
    }
    if let Some(r) = d.replay {
        replay(&mut out, r);
    }
    for (name, t) in timeouts(&d.timeouts) {
        if let Some(t) = t {
            let _ = writeln!(out, "  timeout {name} {}", duration(t));
        }
    }
    for p in &c.proxies {
        proxy(&mut out, p, &d);
    }
    out
}

/// `option redispatch [N]` (nothing when off: haproxy's default).
fn redispatch(out: &mut String, r: Option<i32>) {
    match r {
        None => {}
        Some(-1) => out.push_str("  option redispatch\n"),
        Some(n) => {
            let _ = writeln!(out, "  option redispatch {n}");
        }
    }
}

/// `retry-on` when it is not haproxy's default.
fn retry_on(out: &mut String, r: RetryOn) {
    if r != RetryOn::default() {
        let _ = writeln!(out, "  retry-on {}", r.words().join(" "));
    }
}

/// lb-proxy's `race-connect`, in a comment to haproxy.
fn race(out: &mut String, r: Option<Race>) {
    if let Some(r) = r {
        let _ = writeln!(
            out,
            "  {EXTENSION} race-connect {} losses {}",
            duration(r.delay),
            r.losses
        );
    }
}

/// lb-proxy's `replay-unanswered`, when on, in a comment to haproxy.
fn replay(out: &mut String, on: bool) {
    if on {
        let _ = writeln!(out, "  {EXTENSION} replay-unanswered on");
    }
}

/// haproxy's time format, in the largest unit that is exact.
pub fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if d.subsec_nanos() % 1_000_000 != 0 {
        format!("{}us", d.as_micros())
    } else if ms % 1000 != 0 {
        format!("{ms}ms")
    } else {
        format!("{}s", ms / 1000)
    }
}

fn address(a: &SocketAddr, host: Option<&str>) -> String {
    match (host, a) {
        (Some(h), _) => format!("{h}:{}", a.port()),
        (None, SocketAddr::V6(v6)) if v6.ip().is_unspecified() => format!(":::{}", a.port()),
        (None, SocketAddr::V4(v4)) if v4.ip().is_unspecified() => format!("*:{}", a.port()),
        (None, _) => a.to_string(),
    }
}

fn bind(out: &mut String, b: &Bind) {
    let _ = write!(out, "  bind {}", address(&b.address, b.host.as_deref()));
    if b.v4v6 {
        out.push_str(" v4v6");
    }
    if b.v6only {
        out.push_str(" v6only");
    }
    out.push('\n');
}

/// A `resolvers` section.
fn resolvers(out: &mut String, r: &Resolvers) {
    let _ = writeln!(out, "resolvers {}", r.name);
    for (name, a) in &r.nameservers {
        let _ = writeln!(out, "  nameserver {name} {a}");
    }
    if r.resolv_conf {
        out.push_str("  parse-resolv-conf\n");
    }
    let _ = writeln!(out, "  hold valid {}", duration(r.hold_valid));
    for status in ["nx", "other", "refused", "timeout"] {
        let _ = writeln!(out, "  hold {status} {}", duration(r.hold_other));
    }
    let _ = writeln!(out, "  resolve_retries {}", r.resolve_retries);
    let _ = writeln!(out, "  timeout resolve {}", duration(r.timeout_resolve));
    let _ = writeln!(out, "  timeout retry {}", duration(r.timeout_retry));
    let _ = writeln!(out, "  accepted_payload_size {}", r.accepted_payload_size);
}

/// A word haproxy reads back as `bytes`: printable ASCII as it is, the rest escaped.
fn quoted(bytes: &[u8]) -> String {
    let mut out = String::new();
    for &b in bytes {
        match b {
            b'\\' | b' ' | b'#' | b'"' | b'\'' => {
                out.push('\\');
                out.push(char::from(b));
            }
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            0x21..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `option httpchk` and its `http-check` rules.
fn http_check(out: &mut String, h: &HttpCheck) {
    let _ = writeln!(out, "  option httpchk {} {} {}", h.method, h.uri, h.version);
    if h.ssl || h.port.is_some() {
        out.push_str("  http-check connect");
        if let Some(port) = h.port {
            let _ = write!(out, " port {port}");
        }
        out.push_str(if h.ssl { " ssl\n" } else { "\n" });
    }
    if !h.headers.is_empty() {
        let _ = write!(
            out,
            "  http-check send meth {} uri {} ver {}",
            h.method, h.uri, h.version
        );
        for (name, value) in &h.headers {
            let _ = write!(
                out,
                " hdr {} {}",
                quoted(name.as_bytes()),
                quoted(value.as_bytes())
            );
        }
        out.push('\n');
    }
    if let Some(e) = &h.expect {
        let not = if e.negate { "! " } else { "" };
        let what = match &e.what {
            HttpMatch::Status(ranges) => {
                let list: Vec<String> = (ranges.iter())
                    .map(|(lo, hi)| {
                        if lo == hi {
                            lo.to_string()
                        } else {
                            format!("{lo}-{hi}")
                        }
                    })
                    .collect();
                format!("status {}", list.join(","))
            }
            HttpMatch::Rstatus(r) => format!("rstatus {}", quoted(r.as_bytes())),
            HttpMatch::String(t) => format!("string {}", quoted(t.as_bytes())),
            HttpMatch::Rstring(r) => format!("rstring {}", quoted(r.as_bytes())),
        };
        let _ = writeln!(out, "  http-check expect {not}{what}");
    }
}

/// `option tcp-check` and its rules.
fn tcp_check(out: &mut String, rules: &[TcpRule]) {
    out.push_str("  option tcp-check\n");
    for rule in rules {
        match rule {
            TcpRule::Connect { port, ssl } => {
                out.push_str("  tcp-check connect");
                if let Some(port) = port {
                    let _ = write!(out, " port {port}");
                }
                out.push_str(if *ssl { " ssl\n" } else { "\n" });
            }
            TcpRule::Send(data) => {
                let _ = writeln!(out, "  tcp-check send-binary {}", hex(data));
            }
            TcpRule::Expect(e) => {
                out.push_str("  tcp-check expect");
                if let Some(n) = e.min_recv {
                    let _ = write!(out, " min-recv {n}");
                }
                if e.negate {
                    out.push_str(" !");
                }
                let _ = match &e.pattern {
                    Pattern::String(b) => writeln!(out, " string {}", quoted(b)),
                    Pattern::Binary(b) => writeln!(out, " binary {}", hex(b)),
                    Pattern::Rstring(r) => writeln!(out, " rstring {}", quoted(r.as_bytes())),
                    Pattern::Rbinary(r) => writeln!(out, " rbinary {}", quoted(r.as_bytes())),
                };
            }
        }
    }
}

/// A server's run-time resolution and queue options.
fn server_names(out: &mut String, s: &Server) {
    if s.backup {
        out.push_str(" backup");
    }
    if let Some(n) = s.maxconn {
        let _ = write!(out, " maxconn {n}");
    }
    if let Some(r) = &s.resolvers {
        let _ = write!(out, " resolvers {r}");
    }
    if s.init_addr != [InitAddr::Last, InitAddr::Libc] {
        let methods: Vec<String> = (s.init_addr.iter())
            .map(|m| match m {
                InitAddr::Last => "last".to_string(),
                InitAddr::Libc => "libc".to_string(),
                InitAddr::None => "none".to_string(),
                InitAddr::Ip(ip) => ip.to_string(),
            })
            .collect();
        let _ = write!(out, " init-addr {}", methods.join(","));
    }
    if s.prefer_ipv4 {
        out.push_str(" resolve-prefer ipv4");
    }
}

fn server(out: &mut String, s: &Server) {
    let _ = write!(
        out,
        "  server {} {} weight {}",
        s.name,
        address(&s.address, s.fqdn.as_deref()),
        s.weight
    );
    server_names(out, s);
    if s.verify_none {
        out.push_str(" verify none");
    }
    if s.check {
        out.push_str(" check");
    }
    if s.check_ssl {
        out.push_str(" check-ssl");
    }
    let _ = write!(
        out,
        " inter {} fall {} rise {}",
        duration(s.inter),
        s.fall,
        s.rise
    );
    for (kw, d) in [
        ("fastinter", s.fastinter),
        ("downinter", s.downinter),
        ("slowstart", s.slowstart),
    ] {
        if let Some(d) = d {
            let _ = write!(out, " {kw} {}", duration(d));
        }
    }
    if s.shutdown_sessions_on_down {
        out.push_str(" on-marked-down shutdown-sessions");
    }
    if s.init_state != InitState::Up {
        let _ = write!(out, " init-state {}", s.init_state.as_str());
    }
    if s.observe {
        out.push_str(" observe layer4");
    }
    if s.error_limit != 10 {
        let _ = write!(out, " error-limit {}", s.error_limit);
    }
    if s.on_error != OnError::FailCheck {
        let _ = write!(out, " on-error {}", s.on_error.as_str());
    }
    out.push('\n');
}

fn proxy(out: &mut String, p: &Proxy, d: &Shared) {
    let kind = match p.kind {
        Kind::Frontend => "frontend",
        Kind::Backend => "backend",
        Kind::Listen => "listen",
    };
    let _ = writeln!(out, "{kind} {}", p.name);
    if d.mode != Some(p.mode) {
        let _ = writeln!(out, "  mode {}", mode(p.mode));
    }
    if let (Some(n), None) = (p.maxconn, d.maxconn) {
        let _ = writeln!(out, "  maxconn {n}");
    }
    if d.retries != Some(p.retries) {
        let _ = writeln!(out, "  retries {}", p.retries);
    }
    if d.redispatch.is_none() {
        redispatch(out, p.redispatch);
    }
    if d.retry_on.is_none() {
        retry_on(out, p.retry_on);
    }
    if d.race.is_none() {
        race(out, p.race);
    }
    if d.replay.is_none() {
        replay(out, p.replay_unanswered);
    }
    if p.smart_accept {
        out.push_str("  option tcp-smart-accept\n");
    }
    if !p.smart_connect {
        out.push_str("  no option tcp-smart-connect\n");
    }
    for ((name, t), (_, shared)) in timeouts(&p.timeouts).into_iter().zip(timeouts(&d.timeouts)) {
        if let (Some(t), None) = (t, shared) {
            let _ = writeln!(out, "  timeout {name} {}", duration(t));
        }
    }
    for b in &p.binds {
        bind(out, b);
    }
    routing(out, &p.routing);
    if let Some(b) = &p.default_backend {
        let _ = writeln!(out, "  default_backend {b}");
    }
    if let Some(u) = &p.monitor_uri {
        let _ = writeln!(out, "  monitor-uri {u}");
    }
    if let Some(m) = &p.monitor_fail {
        let _ = writeln!(
            out,
            "  monitor fail if {{ nbsrv({}) lt {} }}",
            m.backend, m.less_than
        );
    }
    let s = &p.stats;
    if s.enabled {
        out.push_str("  stats enable\n");
    }
    if s.hide_version {
        out.push_str("  stats hide-version\n");
    }
    if let Some(u) = &s.uri {
        let _ = writeln!(out, "  stats uri {u}");
    }
    if let Some(r) = s.refresh {
        let _ = writeln!(out, "  stats refresh {}", duration(r));
    }
    for (user, pass) in &s.auth {
        let _ = writeln!(out, "  stats auth {user}:{}", pass.expose());
    }
    servers(out, p);
}

/// A backend's check, balance and servers.
fn servers(out: &mut String, p: &Proxy) {
    if let Some(h) = &p.httpchk {
        http_check(out, h);
    }
    if let Some(rules) = &p.tcp_check {
        tcp_check(out, rules);
    }
    if p.allbackups {
        out.push_str("  option allbackups\n");
    }
    if !p.servers.is_empty() {
        let algorithm = match p.balance {
            Balance::RoundRobin => "roundrobin",
            Balance::LeastConn => "leastconn",
            Balance::Source => "source",
        };
        let _ = writeln!(out, "  balance {algorithm}");
        let kind = if p.consistent {
            "consistent"
        } else {
            "map-based"
        };
        match (p.consistent, p.avalanche) {
            (_, true) => writeln!(out, "  hash-type {kind} sdbm avalanche").unwrap_or_default(),
            (true, false) => writeln!(out, "  hash-type {kind}").unwrap_or_default(),
            (false, false) => {}
        }
    }
    for srv in &p.servers {
        server(out, srv);
    }
}

/// A frontend's TLS routing: `tcp-request`, `acl` and `use_backend` lines.
fn routing(out: &mut String, r: &super::routing::Routing) {
    if let Some(d) = r.inspect_delay {
        let _ = writeln!(out, "  tcp-request inspect-delay {}", duration(d));
    }
    for (name, t) in &r.acls {
        let _ = writeln!(out, "  acl {name} {t}");
    }
    for rule in &r.content {
        let action = if rule.accept { "accept" } else { "reject" };
        match &rule.when {
            Some(c) => writeln!(out, "  tcp-request content {action} {c}"),
            None => writeln!(out, "  tcp-request content {action}"),
        }
        .unwrap_or_default();
    }
    for route in &r.routes {
        match &route.when {
            Some(c) => writeln!(out, "  use_backend {} {c}", route.backend),
            None => writeln!(out, "  use_backend {}", route.backend),
        }
        .unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without the places, which writing does not keep.
    fn placeless(mut c: Config) -> Config {
        for p in &mut c.proxies {
            p.location = Default::default();
            p.servers
                .iter_mut()
                .for_each(|s| s.location = Default::default());
        }
        c
    }

    #[test]
    fn retries_redispatch_races_and_passive_health_read_back_the_same() {
        let text = "defaults\n  retry-on conn-failure response-timeout\n\
                    backend a\n  option redispatch 1\n  #lb-proxy: race-connect 150ms losses 2\n  \
                    #lb-proxy: replay-unanswered on\n  \
                    server s 192.0.2.1:80 check observe layer4 error-limit 1 on-error mark-down\n\
                    backend b\n  option redispatch\n  server s 192.0.2.1:80 check observe layer4\n\
                    backend c\n  server s 192.0.2.1:80 on-error fastinter\n";
        let c = crate::config::parse_str(text, "t").unwrap();
        let written = write(&c);
        for line in [
            "  retry-on conn-failure response-timeout\n",
            "  option redispatch 1\n",
            "  #lb-proxy: race-connect 150ms losses 2\n",
            "  #lb-proxy: replay-unanswered on\n",
            " observe layer4 error-limit 1 on-error mark-down\n",
            "backend b\n  option redispatch\n",
            " on-error fastinter\n",
        ] {
            assert!(written.contains(line), "{line:?} in:\n{written}");
        }
        let again = crate::config::parse_str(&written, "w").unwrap();
        assert_eq!(placeless(again), placeless(c));
    }

    #[test]
    fn checks_resolvers_and_names_read_back_the_same() {
        let text = "global\n  spread-checks 5\n\
                    resolvers dns\n  nameserver a 192.0.2.53:53\n  parse-resolv-conf\n  \
                    hold valid 5s\n  hold nx 40s\n  resolve_retries 4\n  timeout retry 500ms\n\
                    backend t\n  balance leastconn\n  option tcp-check\n  \
                    tcp-check connect port 6443 ssl\n  tcp-check send \"PING a#b\\r\\n\"\n  \
                    tcp-check send-binary 00ff\n  tcp-check expect min-recv 3 ! rstring ^-ERR\\ x\n  \
                    tcp-check expect binary 0d0a\n  \
                    server s api.example.test:6443 resolvers dns init-addr none resolve-prefer ipv4 maxconn 9 check verify none\n\
                    backend h\n  option httpchk GET /healthz HTTP/1.1\n  http-check connect ssl\n  \
                    http-check send hdr Host \"api server\"\n  http-check expect ! rstring \"not ok\"\n  \
                    server s 192.0.2.2:6443 check verify none\n\
                    backend s\n  option ssl-hello-chk\n  option allbackups\n  server s 192.0.2.3:6443 check\n  \
                    server b 192.0.2.4:6443 check backup\n";
        let c = crate::config::parse_str(text, "t").unwrap();
        let written = write(&c);
        let again =
            crate::config::parse_str(&written, "w").unwrap_or_else(|e| panic!("{e}\n{written}"));
        let mut again = placeless(again);
        for r in &mut again.resolvers {
            r.location = Default::default();
        }
        let mut c = placeless(c);
        for r in &mut c.resolvers {
            r.location = Default::default();
        }
        assert_eq!(again, c, "{written}");
    }

    #[test]
    fn durations_in_the_largest_exact_unit() {
        assert_eq!(duration(Duration::from_secs(86_400)), "86400s");
        assert_eq!(duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(duration(Duration::from_micros(5)), "5us");
        assert_eq!(duration(Duration::from_secs(1)), "1s");
    }
}
