//! The model back to haproxy.cfg: what every proxy shares goes into one `defaults` section,
//! the rest into the proxy that has it, so that reading the text gives the same model and
//! haproxy reads it too.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::Duration;

use super::model::{
    Bind, Config, InitState, Kind, Mode, OnError, Proxy, Race, RetryOn, Server, Timeouts,
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

fn server(out: &mut String, s: &Server) {
    let _ = write!(
        out,
        "  server {} {} weight {}",
        s.name,
        address(&s.address, None),
        s.weight
    );
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
    for ((name, t), (_, shared)) in timeouts(&p.timeouts).into_iter().zip(timeouts(&d.timeouts)) {
        if let (Some(t), None) = (t, shared) {
            let _ = writeln!(out, "  timeout {name} {}", duration(t));
        }
    }
    for b in &p.binds {
        bind(out, b);
    }
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
        let _ = writeln!(out, "  stats auth {user}:{pass}");
    }
    if let Some(h) = &p.httpchk {
        let _ = writeln!(out, "  option httpchk {} {} {}", h.method, h.uri, h.version);
    }
    if !p.servers.is_empty() {
        out.push_str("  balance roundrobin\n");
    }
    for srv in &p.servers {
        server(out, srv);
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
    fn durations_in_the_largest_exact_unit() {
        assert_eq!(duration(Duration::from_secs(86_400)), "86400s");
        assert_eq!(duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(duration(Duration::from_micros(5)), "5us");
        assert_eq!(duration(Duration::from_secs(1)), "1s");
    }
}
