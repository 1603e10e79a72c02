//! haproxy.cfg to the [`Config`] model: sections, keywords, haproxy's time units and defaults
//! inheritance; every problem collected with its file and line.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use ipi_core::place::Errors;
use ipi_core::secret::Secret;

use super::model::{
    Balance, Bind, Config, InitAddr, InitState, Kind, Location, Mode, MonitorFail, OnError, Proxy,
    Race, Resolvers, RetryOn, Server, Stats, Timeouts,
};
use super::{checks, ignored, routing};

/// What a `defaults` section passes on.
#[derive(Debug, Clone)]
struct Defaults {
    mode: Mode,
    maxconn: Option<u32>,
    retries: Option<u32>,
    redispatch: Option<i32>,
    retry_on: RetryOn,
    race: Option<Race>,
    replay_unanswered: bool,
    smart_accept: bool,
    smart_connect: bool,
    timeouts: Timeouts,
    /// `option httpchk|tcp-check|ssl-hello-chk` and the check rules.
    checks: checks::Rules,
    /// HTTP-only settings, each with where it was written: warned about in `mode tcp`.
    http_only: Vec<(String, Location)>,
    /// `default-server`: what every server line starts from.
    server: Server,
    /// `stats ...`: what every proxy's stats start from.
    stats: Stats,
}

impl Default for Defaults {
    fn default() -> Defaults {
        Defaults {
            mode: Mode::default(),
            maxconn: None,
            retries: None,
            redispatch: None,
            retry_on: RetryOn::default(),
            race: None,
            replay_unanswered: false,
            smart_accept: false,
            smart_connect: true,
            timeouts: Timeouts::default(),
            checks: checks::Rules::default(),
            http_only: Vec::new(),
            stats: Stats::default(),
            server: server_defaults(
                "",
                SocketAddr::from(([0, 0, 0, 0], 0)),
                &Location::default(),
            ),
        }
    }
}

/// The prefix of a line that holds lb-proxy's own keywords: a comment to haproxy, so that
/// the same file runs under both.
pub const EXTENSION: &str = "#lb-proxy:";

/// Keywords accepted everywhere a proxy setting may stand and deliberately without effect:
/// logging (lb-proxy logs to stderr on its own terms).
const LOGGING: &[&str] = &["log", "log-format"];
const IGNORED_OPTIONS: &[&str] = &["dontlognull", "log-health-checks", "tcplog"];

/// Splits a line into words as haproxy does ([`super::lexer`]).
pub fn words(line: &str) -> Result<Vec<String>, String> {
    super::lexer::words(line)
}

pub use super::lexer::{address, duration};

struct Parser<'a> {
    errors: &'a mut Errors,
    warnings: &'a mut Errors,
    config: Config,
    defaults: Defaults,
    section: Section,
    /// The current proxy's `default-server`.
    server: Server,
    /// Each proxy's HTTP-only settings (its own and its defaults'), by index.
    http_only: Vec<Vec<(String, Location)>>,
    /// Each proxy's check settings, by index.
    rules: Vec<checks::Rules>,
    /// Whether each proxy, by index, has `stats` lines of its own (else they are inherited).
    own_stats: Vec<bool>,
}

enum Section {
    None,
    Global,
    Defaults,
    Proxy,
    Resolvers,
}

/// Reads haproxy.cfg text; `origin` names it in errors and warnings.
pub fn config(text: &str, origin: &str, errors: &mut Errors, warnings: &mut Errors) -> Config {
    let mut p = Parser {
        errors,
        warnings,
        config: Config::default(),
        defaults: Defaults::default(),
        section: Section::None,
        server: Defaults::default().server,
        http_only: Vec::new(),
        rules: Vec::new(),
        own_stats: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let at = Location {
            file: origin.to_string(),
            line: n + 1,
        };
        let (line, extension) = match line.trim_start().strip_prefix(EXTENSION) {
            Some(rest) => (rest, true),
            None => (line, false),
        };
        match words(line) {
            Ok(w) if w.is_empty() => {}
            Ok(w) if extension => p.extension(&w, &at),
            Ok(w) => p.line(&w, &at),
            Err(e) => p.errors.push(&at, e),
        }
    }
    p.finish();
    p.config
}

/// What haproxy's warnings call a section of kind `k`.
fn haproxy_kind(k: Kind) -> &'static str {
    match k {
        Kind::Frontend => "frontend",
        Kind::Backend => "backend",
        Kind::Listen => "proxy",
    }
}

/// One `stats` line.
enum StatsSetting {
    Enable,
    HideVersion,
    Uri(String),
    Refresh(Duration),
    Auth(String, Secret),
}

impl StatsSetting {
    /// Sets it in `s`, enabling the page.
    fn apply(&self, s: &mut Stats) {
        s.enabled = true;
        match self {
            StatsSetting::Enable => {}
            StatsSetting::HideVersion => s.hide_version = true,
            StatsSetting::Uri(u) => s.uri = Some(u.clone()),
            StatsSetting::Refresh(d) => s.refresh = Some(*d),
            StatsSetting::Auth(u, p) => s.auth.push((u.clone(), p.clone())),
        }
    }
}

impl Parser<'_> {
    fn line(&mut self, w: &[String], at: &Location) {
        let kw = w[0].as_str();
        let kind = match kw {
            "global" => {
                self.section = Section::Global;
                return self.no_more(w, 1, at);
            }
            "defaults" => {
                // A new defaults section starts from haproxy's own defaults.
                self.defaults = Defaults::default();
                self.section = Section::Defaults;
                return;
            }
            "frontend" => Kind::Frontend,
            "backend" => Kind::Backend,
            "listen" => Kind::Listen,
            "resolvers" => return self.resolvers_section(w, at),
            _ => return self.setting(w, at),
        };
        let Some(name) = w.get(1) else {
            return self.errors.push(at, format!("`{kw}` needs a name"));
        };
        // haproxy: a frontend may share its name with a backend (`frontend kubernetes` and
        // `backend kubernetes`), never with a listen section or one of its own kind.
        let clash = self.config.proxies.iter().any(|p| {
            p.name == *name && (p.kind == kind || p.kind == Kind::Listen || kind == Kind::Listen)
        });
        if clash {
            self.errors.push(
                at,
                format!("{kw} {name}: a section of that name already exists"),
            );
        }
        let d = &self.defaults;
        self.config.proxies.push(Proxy {
            maxconn: d.maxconn,
            retries: d.retries.unwrap_or(3),
            redispatch: d.redispatch,
            retry_on: d.retry_on,
            race: d.race,
            replay_unanswered: d.replay_unanswered,
            smart_accept: d.smart_accept,
            smart_connect: d.smart_connect,
            timeouts: d.timeouts,
            stats: d.stats.clone(),
            ..Proxy::new(name, kind, d.mode, at.clone())
        });
        self.server = self.defaults.server.clone();
        self.http_only.push(self.defaults.http_only.clone());
        self.rules.push(self.defaults.checks.inherited());
        self.own_stats.push(false);
        self.section = Section::Proxy;
        self.no_more(w, 2, at);
    }

    fn no_more(&mut self, w: &[String], n: usize, at: &Location) {
        if w.len() > n {
            self.errors
                .push(at, format!("`{}`: unexpected `{}`", w[..n].join(" "), w[n]));
        }
    }

    fn number(&mut self, w: &[String], at: &Location) -> Option<u32> {
        match w.get(1).map(|v| v.parse::<u32>()) {
            Some(Ok(n)) if w.len() == 2 => Some(n),
            _ => {
                self.errors
                    .push(at, format!("`{}` takes one whole number", w[0]));
                None
            }
        }
    }

    fn setting(&mut self, w: &[String], at: &Location) {
        match self.section {
            Section::None => self
                .errors
                .push(at, format!("`{}` outside any section", w[0])),
            Section::Global => self.global(w, at),
            Section::Defaults | Section::Proxy => self.proxy_setting(w, at),
            Section::Resolvers => self.resolvers_setting(w, at),
        }
    }

    fn global(&mut self, w: &[String], at: &Location) {
        match w[0].as_str() {
            "stats" if w.len() >= 3 => {
                if w[1] == "socket" {
                    self.config.global.stats_socket = Some(w[2].clone());
                }
                self.warnings.push(at, ignored::STATS_SOCKET);
            }
            "maxconn" => self.config.global.maxconn = self.number(w, at),
            "spread-checks" => match self.number(w, at) {
                Some(n) if n <= 50 => self.config.global.spread_checks = n,
                Some(_) => self
                    .errors
                    .push(at, "`spread-checks` is a percentage from 0 to 50"),
                None => {}
            },
            "log" | "log-send-hostname" | "log-tag" => {}
            kw => match ignored::global(kw) {
                Some(why) => self.warnings.push(at, why),
                None => self
                    .errors
                    .push(at, format!("unknown keyword `{kw}` in global")),
            },
        }
    }

    /// A setting in `defaults` or a proxy: the ones both take go to both.
    fn proxy_setting(&mut self, w: &[String], at: &Location) {
        let in_defaults = matches!(self.section, Section::Defaults);
        let kw = w[0].as_str();
        match kw {
            "mode" => {
                let mode = match w.get(1).map(String::as_str) {
                    Some("tcp") if w.len() == 2 => Mode::Tcp,
                    Some("http") if w.len() == 2 => Mode::Http,
                    _ => return self.errors.push(at, "`mode` is `tcp` or `http`"),
                };
                self.apply(|d| d.mode = mode, |p| p.mode = mode);
            }
            "maxconn" => {
                if let Some(n) = self.number(w, at) {
                    self.apply(|d| d.maxconn = Some(n), |p| p.maxconn = Some(n));
                }
            }
            "retries" => {
                if let Some(n) = self.number(w, at) {
                    self.apply(|d| d.retries = Some(n), |p| p.retries = n);
                }
            }
            "timeout" => self.timeout(w, at),
            "option" => self.option(w, at),
            "no" if w.get(1).is_some_and(|o| o == "option") => self.no_option(w, at),
            "retry-on" => self.retry_on(w, at),
            "default-server" if self.takes_servers() => {
                let mut template = match self.section {
                    Section::Defaults => self.defaults.server.clone(),
                    _ => self.server.clone(),
                };
                self.server_options(&mut template, &w[1..], "default-server", at);
                match self.section {
                    Section::Defaults => self.defaults.server = template,
                    _ => self.server = template,
                }
            }
            _ if LOGGING.contains(&kw) => {}
            "tcp-check" | "http-check" | "errorfile" => self.check_or_http(w, at),
            "stats" => self.stats(w, at),
            _ if in_defaults => {
                self.errors
                    .push(at, format!("unknown keyword `{kw}` in defaults"));
            }
            _ => self.proxy_only(w, at),
        }
    }

    /// `tcp-check` and `http-check` rules; `errorfile`, which only HTTP uses.
    fn check_or_http(&mut self, w: &[String], at: &Location) {
        let done = match w[0].as_str() {
            "tcp-check" => self.with_rules(|r| r.tcp_line(&w[1..], at)),
            "http-check" => self.with_rules(|r| r.http_line(&w[1..], at)),
            _ => match w.len() {
                3 => {
                    self.http_only(&format!("errorfile {}", w[1]), at);
                    Ok(())
                }
                _ => Err("`errorfile` takes a status code and a file".to_string()),
            },
        };
        if let Err(why) = done {
            self.errors.push(at, why);
        }
    }

    /// Runs `f` on the check rules of the current section.
    fn with_rules<T>(&mut self, f: impl FnOnce(&mut checks::Rules) -> T) -> T {
        match self.section {
            Section::Defaults => f(&mut self.defaults.checks),
            _ => match self.rules.last_mut() {
                Some(r) => f(r),
                None => f(&mut checks::Rules::default()),
            },
        }
    }

    /// Records an HTTP-only setting of the current section: warned about in `mode tcp`.
    fn http_only(&mut self, setting: &str, at: &Location) {
        let entry = (setting.to_string(), at.clone());
        match self.section {
            Section::Defaults => self.defaults.http_only.push(entry),
            _ => {
                if let Some(list) = self.http_only.last_mut() {
                    list.push(entry);
                }
            }
        }
    }

    /// What is known once every line is read: each proxy's check, and the warnings for the
    /// HTTP-only settings of TCP sections (as haproxy gives them, per proxy).
    fn finish(&mut self) {
        self.drop_inherited_stats();
        let proxies = self.config.proxies.iter_mut();
        for ((p, rules), http_only) in proxies.zip(&self.rules).zip(&self.http_only) {
            rules.finish(p, self.warnings);
            if p.mode == Mode::Http {
                continue;
            }
            let kind = haproxy_kind(p.kind);
            for (setting, at) in http_only {
                let frontend_only =
                    setting == "option httplog" || setting == "timeout http-request";
                if frontend_only && p.kind == Kind::Backend {
                    continue;
                }
                let why = ignored::http_only_warning(setting, kind, &p.name);
                self.warnings.push(at, why);
            }
        }
    }

    /// The current proxy's first `stats` line: its stats start empty, not from defaults'.
    fn own_stats_start(&mut self, at: &Location) {
        if let Some(own) = self.own_stats.last_mut() {
            *own = true;
        }
        let Some(p) = self.config.proxies.last_mut() else {
            return;
        };
        if !std::mem::take(&mut p.stats).auth.is_empty() {
            let why = format!(
                "{}: the `stats auth` of defaults does not apply here: a section's own `stats` lines replace all of defaults' (as in haproxy); write `stats auth` here too",
                p.name
            );
            self.warnings.push(at, why);
        }
    }

    /// `stats` from `defaults` in a TCP section: ignored with haproxy's warning (its own `stats`
    /// lines there are an error of the configuration check).
    fn drop_inherited_stats(&mut self) {
        for (p, own) in self.config.proxies.iter_mut().zip(&self.own_stats) {
            if p.mode == Mode::Tcp && p.stats.enabled && !own {
                p.stats = Stats::default();
                let kind = haproxy_kind(p.kind);
                self.warnings.push(
                    &p.location,
                    format!(
                        "'stats' statement ignored for {kind} '{}' as it requires HTTP mode",
                        p.name
                    ),
                );
            }
        }
    }

    fn apply(&mut self, d: impl FnOnce(&mut Defaults), p: impl FnOnce(&mut Proxy)) {
        match self.section {
            Section::Defaults => d(&mut self.defaults),
            _ => {
                if let Some(proxy) = self.config.proxies.last_mut() {
                    p(proxy);
                }
            }
        }
    }

    fn timeout(&mut self, w: &[String], at: &Location) {
        let (Some(which), Some(value), 3) = (w.get(1), w.get(2), w.len()) else {
            return self.errors.push(
                at,
                "`timeout` takes a name and a duration (`timeout connect 10s`)",
            );
        };
        let Some(d) = duration(value) else {
            return self.errors.push(at, format!("`timeout {which} {value}`: not a duration (a number with us, ms, s, m, h or d)"));
        };
        if ignored::http_timeout(which) {
            self.http_only(&format!("timeout {which}"), at);
        }
        if which == "http-keep-alive" {
            return;
        }
        let slot: fn(&mut Timeouts) -> &mut Option<Duration> = match which.as_str() {
            "connect" => |t| &mut t.connect,
            "client" => |t| &mut t.client,
            "server" => |t| &mut t.server,
            "tunnel" => |t| &mut t.tunnel,
            "client-fin" => |t| &mut t.client_fin,
            "server-fin" => |t| &mut t.server_fin,
            "queue" => |t| &mut t.queue,
            "check" => |t| &mut t.check,
            "http-request" => |t| &mut t.http_request,
            other => return self.errors.push(at, format!("unknown timeout `{other}`")),
        };
        self.apply(
            |def| *slot(&mut def.timeouts) = Some(d),
            |p| *slot(&mut p.timeouts) = Some(d),
        );
    }

    /// Whether the section may hold `default-server`: defaults, a backend or a listen section.
    fn takes_servers(&self) -> bool {
        match self.section {
            Section::Defaults => true,
            _ => self
                .config
                .proxies
                .last()
                .is_some_and(|p| p.kind != Kind::Frontend),
        }
    }

    /// `no option redispatch`.
    fn no_option(&mut self, w: &[String], at: &Location) {
        match w.get(2).map(String::as_str) {
            Some("redispatch") if w.len() == 3 => {
                self.apply(|d| d.redispatch = None, |p| p.redispatch = None);
            }
            Some(o @ ("tcp-smart-accept" | "tcp-smart-connect")) if w.len() == 3 => {
                self.smart(o, false);
            }
            _ => self.errors.push(
                at,
                format!(
                    "`{}`: lb-proxy reads `no option` with redispatch, tcp-smart-accept and \
                     tcp-smart-connect",
                    w.join(" ")
                ),
            ),
        }
    }

    /// `retry-on KEYWORD...` (haproxy: each keyword adds to the set; `none` alone empties it).
    fn retry_on(&mut self, w: &[String], at: &Location) {
        if w.len() < 2 {
            return self
                .errors
                .push(at, "`retry-on` needs at least one keyword");
        }
        let mut set = RetryOn::NONE;
        for kw in &w[1..] {
            match kw.as_str() {
                "none" if w.len() == 2 => {}
                "conn-failure" => set.conn_failure = true,
                "empty-response" => set.empty_response = true,
                "junk-response" => set.junk_response = true,
                "response-timeout" => set.response_timeout = true,
                "0rtt-rejected" => set.zero_rtt_rejected = true,
                "all-retryable-errors" => set = RetryOn::ALL,
                "none" => return self.errors.push(at, "`retry-on none` takes no other keyword"),
                other => return self.errors.push(at, format!("`retry-on {other}`: lb-proxy reads conn-failure, empty-response, junk-response, response-timeout, 0rtt-rejected, all-retryable-errors or none")),
            }
        }
        self.apply(|d| d.retry_on = set, |p| p.retry_on = set);
    }

    /// `resolvers NAME`: starts a section.
    fn resolvers_section(&mut self, w: &[String], at: &Location) {
        self.section = Section::Resolvers;
        let Some(name) = w.get(1) else {
            return self.errors.push(at, "`resolvers` needs a name");
        };
        if self.config.resolvers(name).is_some() {
            self.errors.push(
                at,
                format!("resolvers {name}: a section of that name already exists"),
            );
        }
        self.config.resolvers.push(Resolvers::new(name, at));
        self.no_more(w, 2, at);
    }

    fn resolvers_setting(&mut self, w: &[String], at: &Location) {
        if let Some(r) = self.config.resolvers.last_mut() {
            if let Err(why) = super::resolvers::setting(r, w) {
                self.errors.push(at, why);
            }
        }
    }

    /// A line after [`EXTENSION`]: lb-proxy's own keywords.
    fn extension(&mut self, w: &[String], at: &Location) {
        if !matches!(self.section, Section::Defaults | Section::Proxy) {
            return self.errors.push(
                at,
                format!("`{EXTENSION} {}` outside defaults, backend or listen", w[0]),
            );
        }
        match w[0].as_str() {
            "race-connect" => match race(&w[1..]) {
                Ok(r) => self.apply(|d| d.race = r, |p| p.race = r),
                Err(why) => self
                    .errors
                    .push(at, format!("`{EXTENSION} {}`: {why}", w.join(" "))),
            },
            "replay-unanswered" => match (w.get(1).map(String::as_str), w.len()) {
                (Some(v @ ("on" | "off")), 2) => {
                    let on = v == "on";
                    self.apply(|d| d.replay_unanswered = on, |p| p.replay_unanswered = on);
                }
                _ => self.errors.push(
                    at,
                    format!("`{EXTENSION} {}`: replay-unanswered is on or off", w.join(" ")),
                ),
            },
            other => self.errors.push(
                at,
                format!("unknown lb-proxy keyword `{other}` (lb-proxy reads race-connect, replay-unanswered)"),
            ),
        }
    }

    fn option(&mut self, w: &[String], at: &Location) {
        match w.get(1).map(String::as_str) {
            Some("redispatch") => {
                let every = match w.get(2).map(|n| n.parse::<i32>()) {
                    None => -1,
                    Some(Ok(n)) if w.len() == 3 => n,
                    _ => {
                        return self.errors.push(
                            at,
                            "`option redispatch` takes at most one whole number (every Nth retry; negative: the Nth before the last; 0: off)",
                        )
                    }
                };
                self.apply(
                    |d| d.redispatch = Some(every),
                    |p| p.redispatch = Some(every),
                );
            }
            Some("httpchk") => {
                if let Err(why) = self.with_rules(|r| r.option_httpchk(&w[2..])) {
                    self.errors.push(at, why);
                }
            }
            Some("tcp-check") => {
                self.no_more(w, 2, at);
                self.with_rules(checks::Rules::option_tcp_check);
            }
            Some("allbackups") => {
                self.no_more(w, 2, at);
                self.apply(|_| {}, |p| p.allbackups = true);
            }
            Some(o @ ("tcp-smart-accept" | "tcp-smart-connect")) => {
                self.no_more(w, 2, at);
                self.smart(o, true);
            }
            Some("ssl-hello-chk") => {
                self.no_more(w, 2, at);
                self.with_rules(checks::Rules::option_ssl_hello);
            }
            Some(o) if ignored::http_option(o) => self.http_only(&format!("option {o}"), at),
            Some(o) if IGNORED_OPTIONS.contains(&o) => {}
            Some(o) => self
                .errors
                .push(at, format!("`option {o}` is not supported by lb-proxy")),
            None => self.errors.push(at, "`option` needs a name"),
        }
    }

    /// `[no] option tcp-smart-accept|tcp-smart-connect`.
    fn smart(&mut self, option: &str, on: bool) {
        if option == "tcp-smart-accept" {
            self.apply(|d| d.smart_accept = on, |p| p.smart_accept = on);
        } else {
            self.apply(|d| d.smart_connect = on, |p| p.smart_connect = on);
        }
    }

    /// Settings only a frontend, backend or listen section takes.
    fn proxy_only(&mut self, w: &[String], at: &Location) {
        let Some(kind) = self.config.proxies.last().map(|p| p.kind) else {
            return;
        };
        let front = kind != Kind::Backend;
        let back = kind != Kind::Frontend;
        let kw = w[0].as_str();
        let where_ = match kind {
            Kind::Frontend => "a frontend",
            Kind::Backend => "a backend",
            Kind::Listen => "a listen section",
        };
        match kw {
            "bind" if front => self.bind(w, at),
            "default_backend" if front => {
                let name = w.get(1).cloned();
                self.no_more(w, 2, at);
                self.apply(|_| {}, |p| p.default_backend = name);
            }
            "monitor-uri" if front => {
                let uri = w.get(1).cloned();
                self.no_more(w, 2, at);
                self.apply(|_| {}, |p| p.monitor_uri = uri);
            }
            "monitor" if front => self.monitor(w, at),
            "balance" if back => self.balance(w, at),
            "hash-type" if back => self.hash_type(w, at),
            // Free text for haproxy's stats page.
            "description" => {}
            "server" if back => self.server(w, at),
            "bind" | "default_backend" | "monitor-uri" | "monitor" | "balance" | "hash-type"
            | "server" => {
                self.errors
                    .push(at, format!("`{kw}` is not allowed in {where_}"));
            }
            "acl" if w.get(2).is_some_and(|f| routing::is_tls_fetch(f)) => self.acl(w, at),
            "use_backend" if front => self.use_backend(w, at),
            "tcp-request" if front && self.tcp_request(w, at) => {}
            _ if ignored::http_routing(kw) => self.errors.push(
                at,
                format!(
                    "`{kw}`: lb-proxy balances TCP only (no HTTP routing, rewriting or stickiness)"
                ),
            ),
            _ => self
                .errors
                .push(at, format!("unknown keyword `{kw}` in {where_}")),
        }
    }

    /// `acl NAME FETCH ...` with a TLS fetch ([`routing::test`]).
    fn acl(&mut self, w: &[String], at: &Location) {
        let words: Vec<&str> = w[2..].iter().map(String::as_str).collect();
        match routing::test(&words) {
            Ok(t) => self.apply(|_| {}, |p| p.routing.acls.push((w[1].clone(), t))),
            Err(why) => self.errors.push(at, format!("`{}`: {why}", w.join(" "))),
        }
    }

    /// `use_backend NAME [if|unless COND]`.
    fn use_backend(&mut self, w: &[String], at: &Location) {
        let words: Vec<&str> = w.iter().skip(2).map(String::as_str).collect();
        let when = (!words.is_empty())
            .then(|| routing::condition(&words))
            .transpose();
        match (w.get(1), when) {
            (Some(b), Ok(when)) => {
                let route = routing::Route {
                    backend: b.clone(),
                    when,
                    location: at.clone(),
                };
                self.apply(|_| {}, |p| p.routing.routes.push(route));
            }
            (_, Err(why)) => self.errors.push(at, format!("`{}`: {why}", w.join(" "))),
            (None, _) => self.errors.push(at, "`use_backend` needs a backend"),
        }
    }

    /// `tcp-request inspect-delay TIME` and `tcp-request content accept|reject [COND]`; false
    /// for any other `tcp-request` rule (refused by the caller).
    fn tcp_request(&mut self, w: &[String], at: &Location) -> bool {
        let words: Vec<&str> = w.iter().map(String::as_str).collect();
        match words.as_slice() {
            [_, "inspect-delay", t] => match duration(t) {
                Some(d) => self.apply(|_| {}, |p| p.routing.inspect_delay = Some(d)),
                None => self.errors.push(
                    at,
                    format!("`tcp-request inspect-delay {t}`: not a duration"),
                ),
            },
            [_, "content", action @ ("accept" | "reject"), cond @ ..] => {
                let when = (!cond.is_empty())
                    .then(|| routing::condition(cond))
                    .transpose();
                match when {
                    Ok(when) => {
                        let rule = routing::ContentRule {
                            accept: *action == "accept",
                            when,
                            location: at.clone(),
                        };
                        self.apply(|_| {}, |p| p.routing.content.push(rule));
                    }
                    Err(why) => self.errors.push(at, format!("`{}`: {why}", w.join(" "))),
                }
            }
            _ => return false,
        }
        true
    }

    fn bind(&mut self, w: &[String], at: &Location) {
        let Some((address, host)) = w.get(1).and_then(|a| address(a)) else {
            return self.errors.push(
                at,
                format!(
                    "`bind {}`: not ADDRESS:PORT",
                    w.get(1).map_or("", String::as_str)
                ),
            );
        };
        let mut bind = Bind {
            address,
            v4v6: false,
            v6only: false,
            host,
        };
        for opt in &w[2..] {
            match opt.as_str() {
                "v4v6" => bind.v4v6 = true,
                "v6only" => bind.v6only = true,
                other => self
                    .errors
                    .push(at, format!("bind option `{other}` is not supported")),
            }
        }
        self.apply(|_| {}, |p| p.binds.push(bind));
    }

    fn monitor(&mut self, w: &[String], at: &Location) {
        // monitor fail if { nbsrv(BACKEND) lt N }   (the braces may touch their neighbours)
        let joined = w[1..].join(" ").replace('{', " { ").replace('}', " } ");
        let parts: Vec<&str> = joined.split_whitespace().collect();
        let parsed = match parts.as_slice() {
            ["fail", "if", "{", call, "lt", n, "}"] => call
                .strip_prefix("nbsrv(")
                .and_then(|c| c.strip_suffix(')'))
                .zip(n.parse::<u32>().ok())
                .map(|(b, n)| MonitorFail {
                    backend: b.to_string(),
                    less_than: n,
                }),
            _ => None,
        };
        match parsed {
            Some(m) => self.apply(|_| {}, |p| p.monitor_fail = Some(m)),
            None => self.errors.push(
                at,
                format!(
                    "`{}`: lb-proxy reads `monitor fail if {{ nbsrv(BACKEND) lt N }}`",
                    w.join(" ")
                ),
            ),
        }
    }

    /// `balance ALGORITHM`: roundrobin (haproxy's default, also for a bare `balance`),
    /// leastconn or source.
    fn balance(&mut self, w: &[String], at: &Location) {
        let balance = match (w.get(1).map(String::as_str), w.len()) {
            (None, 1) | (Some("roundrobin"), 2) => Balance::RoundRobin,
            (Some("leastconn"), 2) => Balance::LeastConn,
            (Some("source"), 2) => Balance::Source,
            _ => {
                return self.errors.push(
                    at,
                    format!(
                        "`{}`: lb-proxy balances roundrobin, leastconn or source",
                        w.join(" ")
                    ),
                )
            }
        };
        self.apply(|_| {}, |p| p.balance = balance);
    }

    /// `hash-type map-based|consistent [FUNCTION [avalanche]]` (haproxy 2.6 wants the
    /// function before `avalanche`): how `balance source` hashes. The function (sdbm, djb2,
    /// wt6, crc32) is haproxy's for hashing strings, which source hashing does not use.
    fn hash_type(&mut self, w: &[String], at: &Location) {
        let functions = ["sdbm", "djb2", "wt6", "crc32"];
        let words: Vec<&str> = w[1..].iter().map(String::as_str).collect();
        let kind = |k: &str| matches!(k, "map-based" | "consistent");
        let avalanche = match words.as_slice() {
            [k] if kind(k) => false,
            [k, f] if kind(k) && functions.contains(f) => false,
            [k, f, "avalanche"] if kind(k) && functions.contains(f) => true,
            _ => {
                return self.errors.push(
                    at,
                    format!(
                        "`{}`: lb-proxy hashes map-based|consistent [sdbm|djb2|wt6|crc32 \
                         [avalanche]]",
                        w.join(" ")
                    ),
                )
            }
        };
        let consistent = words.first() == Some(&"consistent");
        self.apply(
            |_| {},
            |p| (p.avalanche, p.consistent) = (avalanche, consistent),
        );
    }

    /// `stats enable|hide-version|uri PATH|refresh TIME|auth USER:PASS`: each enables the
    /// page (haproxy: "Enable statistics with ..."). Written in `defaults`, they are those of
    /// every following proxy that has no `stats` line of its own; a proxy's first own line
    /// starts its stats afresh, as haproxy's do (warned about when that drops a login of
    /// defaults). A wrong line is named by its first two words only: the rest may hold a
    /// password.
    fn stats(&mut self, w: &[String], at: &Location) {
        if let Some(why) = w.get(1).and_then(|o| ignored::stats_option(o)) {
            return self.warnings.push(at, why);
        }
        let value = w.get(2).map(String::as_str);
        let setting = match (w.get(1).map(String::as_str), w.len()) {
            (Some("enable"), 2) => Some(StatsSetting::Enable),
            (Some("hide-version"), 2) => Some(StatsSetting::HideVersion),
            (Some("uri"), 3) => value.map(|v| StatsSetting::Uri(v.to_string())),
            (Some("refresh"), 3) => value.and_then(duration).map(StatsSetting::Refresh),
            (Some("auth"), 3) => value
                .and_then(|v| v.split_once(':'))
                .map(|(u, pw)| StatsSetting::Auth(u.to_string(), Secret::from(pw))),
            _ => None,
        };
        let Some(setting) = setting else {
            let what = w[..w.len().min(2)].join(" ");
            return self.errors.push(at, format!("`{what} ...`: lb-proxy reads stats enable, uri PATH, auth USER:PASS, hide-version, refresh TIME"));
        };
        if let (Section::Proxy, Some(false)) = (&self.section, self.own_stats.last()) {
            self.own_stats_start(at);
        }
        self.apply(
            |d| setting.apply(&mut d.stats),
            |p| setting.apply(&mut p.stats),
        );
    }

    fn server(&mut self, w: &[String], at: &Location) {
        let (Some(name), Some(addr)) = (w.get(1), w.get(2)) else {
            return self
                .errors
                .push(at, "`server` needs a name and ADDRESS:PORT");
        };
        let Some((address, fqdn)) = server_address(addr) else {
            return self.errors.push(
                at,
                format!("server {name}: `{addr}` is not ADDRESS:PORT or NAME:PORT"),
            );
        };
        let mut s = Server {
            name: name.clone(),
            address,
            fqdn,
            location: at.clone(),
            ..self.server.clone()
        };
        self.server_options(&mut s, &w[3..], &format!("server {name}"), at);
        let duplicate = self
            .config
            .proxies
            .last()
            .is_some_and(|p| p.servers.iter().any(|x| x.name == s.name));
        if duplicate {
            self.errors.push(
                at,
                format!("server {name} is defined twice in this backend"),
            );
        }
        self.apply(|_| {}, |p| p.servers.push(s));
    }

    /// Applies the options `opts` of a server line (or `default-server`, `what` names it).
    fn server_options(&mut self, s: &mut Server, opts: &[String], what: &str, at: &Location) {
        let mut opts = opts.iter();
        while let Some(opt) = opts.next() {
            match opt.as_str() {
                "check" => s.check = true,
                "check-ssl" => s.check_ssl = true,
                "backup" => s.backup = true,
                "maxconn" | "maxqueue" | "resolvers" | "init-addr" | "resolve-prefer" => {
                    let v = opts.next().map_or("", String::as_str);
                    if let Err(why) = self.name_option(s, opt, v, what, at) {
                        self.errors.push(at, format!("{what}: {why}"));
                    }
                }
                other => match ServerOption::parse(other) {
                    None => self
                        .errors
                        .push(at, format!("{what}: unknown option `{other}`")),
                    Some(option) => match opts.next() {
                        Some(v) => self.server_option(s, option, (what, opt), v, at),
                        None => self
                            .errors
                            .push(at, format!("{what}: `{opt}` needs {}", option.needs())),
                    },
                },
            }
        }
    }

    /// The options of run-time resolution (`resolvers`, `init-addr`, `resolve-prefer`) and of
    /// per-server queues (`maxconn`, `maxqueue`: accepted with a warning).
    fn name_option(
        &mut self,
        s: &mut Server,
        opt: &str,
        v: &str,
        what: &str,
        at: &Location,
    ) -> Result<(), String> {
        match opt {
            "maxconn" | "maxqueue" => {
                let n: u32 = v.parse().map_err(|_| format!("`{opt}` needs a number"))?;
                if opt == "maxconn" {
                    s.maxconn = (n > 0).then_some(n);
                }
                if n > 0 {
                    self.warnings.push(at, format!("{what}: `{opt} {n}` accepted without effect (haproxy would send this server at most `maxconn` connections at once and queue the others, up to `maxqueue`): lb-proxy does not queue connections per server"));
                }
            }
            "resolvers" if !v.is_empty() => s.resolvers = Some(v.to_string()),
            "init-addr" => {
                s.init_addr = v
                    .split(',')
                    .map(|m| match m {
                        "last" => Some(InitAddr::Last),
                        "libc" => Some(InitAddr::Libc),
                        "none" => Some(InitAddr::None),
                        ip => ip.parse().ok().map(InitAddr::Ip),
                    })
                    .collect::<Option<Vec<_>>>()
                    .filter(|m| !m.is_empty())
                    .ok_or_else(|| {
                        format!("`init-addr {v}`: a list of last, libc, none or addresses")
                    })?;
            }
            "resolve-prefer" if matches!(v, "ipv4" | "ipv6") => s.prefer_ipv4 = v == "ipv4",
            _ => return Err(format!("`{opt} {v}`: not a valid value")),
        }
        Ok(())
    }

    /// Applies `option` (written `opt` on the line `what`) with its value `v` to `s`, or says
    /// why not.
    fn server_option(
        &mut self,
        s: &mut Server,
        option: ServerOption,
        (what, opt): (&str, &str),
        v: &str,
        at: &Location,
    ) {
        let number = || v.parse::<u32>().ok();
        let time = || duration(v).filter(|d| !d.is_zero());
        let applied = match option {
            ServerOption::Verify => (v == "none").then(|| s.verify_none = true),
            ServerOption::Weight => number().filter(|n| *n <= 256).map(|n| s.weight = n),
            ServerOption::Rise => number().filter(|n| *n >= 1).map(|n| s.rise = n),
            ServerOption::Fall => number().filter(|n| *n >= 1).map(|n| s.fall = n),
            ServerOption::Inter => time().map(|d| s.inter = d),
            ServerOption::FastInter => time().map(|d| s.fastinter = Some(d)),
            ServerOption::DownInter => time().map(|d| s.downinter = Some(d)),
            ServerOption::SlowStart => time().map(|d| s.slowstart = Some(d)),
            ServerOption::OnMarkedDown => {
                (v == "shutdown-sessions").then(|| s.shutdown_sessions_on_down = true)
            }
            ServerOption::InitState => init_state(v).map(|state| s.init_state = state),
            ServerOption::Observe => {
                let layer = matches!(v, "layer4" | "none").then_some(v == "layer4");
                layer.map(|on| s.observe = on)
            }
            ServerOption::ErrorLimit => number().filter(|n| *n >= 1).map(|n| s.error_limit = n),
            ServerOption::OnError => (OnError::ALL.iter())
                .find(|e| e.as_str() == v)
                .map(|e| s.on_error = *e),
        };
        if applied.is_none() {
            let why = match option {
                ServerOption::Verify => {
                    format!("{what}: `verify {v}`: lb-proxy checks with `verify none` only")
                }
                ServerOption::Weight
                | ServerOption::Rise
                | ServerOption::Fall
                | ServerOption::ErrorLimit => {
                    format!("{what}: `{opt} {v}` is out of range")
                }
                ServerOption::Inter
                | ServerOption::FastInter
                | ServerOption::DownInter
                | ServerOption::SlowStart => {
                    format!("{what}: `{opt} {v}` is not a duration")
                }
                ServerOption::Observe => format!(
                    "{what}: `observe {v}`: lb-proxy forwards TCP and observes layer4 (or none) only"
                ),
                ServerOption::OnError => format!(
                    "{what}: `on-error {v}`: one of fastinter, fail-check, sudden-death, mark-down"
                ),
                ServerOption::OnMarkedDown | ServerOption::InitState => {
                    format!("{what}: `{opt} {v}` is not supported")
                }
            };
            self.errors.push(at, why);
        }
    }
}

/// A server line's settings before its options: haproxy's defaults.
pub fn server_defaults(name: &str, address: SocketAddr, at: &Location) -> Server {
    Server {
        name: name.to_string(),
        address,
        weight: 1,
        check: false,
        check_ssl: false,
        verify_none: false,
        inter: Duration::from_secs(2),
        fastinter: None,
        downinter: None,
        rise: 2,
        fall: 3,
        slowstart: None,
        shutdown_sessions_on_down: false,
        init_state: InitState::Up,
        observe: false,
        error_limit: 10,
        on_error: OnError::FailCheck,
        maxconn: None,
        backup: false,
        fqdn: None,
        resolvers: None,
        init_addr: vec![InitAddr::Last, InitAddr::Libc],
        prefer_ipv4: false,
        location: at.clone(),
    }
}

/// A server's address: [`address`], or `NAME:PORT` with a DNS name (RFC 1035 2.3.1 letters,
/// digits, hyphens and dots; underscores as in service names), the address then unspecified
/// until the name is resolved.
fn server_address(text: &str) -> Option<(SocketAddr, Option<String>)> {
    if let Some((a, _)) = address(text) {
        return Some((a, None));
    }
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let name_like = !host.is_empty()
        && host.len() <= 253
        && host.starts_with(|c: char| c.is_ascii_alphanumeric())
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    name_like.then(|| {
        (
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), port),
            Some(host.to_string()),
        )
    })
}

/// `race-connect DELAY [losses N]` or `race-connect off`, after the keyword.
fn race(w: &[String]) -> Result<Option<Race>, &'static str> {
    let usage = "race-connect takes a delay (`150ms`) and optionally `losses N`, or `off`";
    match w {
        [off] if off == "off" => Ok(None),
        [delay, rest @ ..] => {
            let delay = duration(delay).filter(|d| !d.is_zero()).ok_or(usage)?;
            let losses = match rest {
                [] => 3,
                [kw, n] if kw == "losses" => n.parse().map_err(|_| usage)?,
                _ => return Err(usage),
            };
            Ok(Some(Race { delay, losses }))
        }
        [] => Err(usage),
    }
}

/// `init-state` values.
fn init_state(v: &str) -> Option<InitState> {
    Some(match v {
        "fully-up" => InitState::FullyUp,
        "up" => InitState::Up,
        "down" => InitState::Down,
        "fully-down" => InitState::FullyDown,
        _ => return None,
    })
}

/// The server options that take a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerOption {
    Verify,
    Weight,
    Rise,
    Fall,
    Inter,
    FastInter,
    DownInter,
    SlowStart,
    OnMarkedDown,
    InitState,
    Observe,
    ErrorLimit,
    OnError,
}

impl ServerOption {
    fn parse(opt: &str) -> Option<ServerOption> {
        Some(match opt {
            "verify" => ServerOption::Verify,
            "weight" => ServerOption::Weight,
            "rise" => ServerOption::Rise,
            "fall" => ServerOption::Fall,
            "inter" => ServerOption::Inter,
            "fastinter" => ServerOption::FastInter,
            "downinter" => ServerOption::DownInter,
            "slowstart" => ServerOption::SlowStart,
            "on-marked-down" => ServerOption::OnMarkedDown,
            "init-state" => ServerOption::InitState,
            "observe" => ServerOption::Observe,
            "error-limit" => ServerOption::ErrorLimit,
            "on-error" => ServerOption::OnError,
            _ => return None,
        })
    }

    /// What the value is, for the error when it is missing.
    fn needs(self) -> &'static str {
        match self {
            ServerOption::Verify => "none",
            ServerOption::Weight
            | ServerOption::Rise
            | ServerOption::Fall
            | ServerOption::ErrorLimit => "a number",
            ServerOption::Inter
            | ServerOption::FastInter
            | ServerOption::DownInter
            | ServerOption::SlowStart => "a duration",
            ServerOption::OnMarkedDown | ServerOption::OnError => "an action",
            ServerOption::Observe => "a layer",
            ServerOption::InitState => "a state",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_options_and_their_errors() {
        let mut errors = Errors::default();
        let text =
            "backend b\n  server s 192.0.2.1:80 check check-ssl verify none weight 7 rise 4 \
                    fall 5 inter 3s fastinter 1s downinter 5s slowstart 1m \
                    on-marked-down shutdown-sessions init-state fully-down\n";
        let c = config(text, "t", &mut errors, &mut Errors::default());
        assert!(errors.0.is_empty(), "{errors}");
        let s = &c.proxies[0].servers[0];
        assert!(s.check && s.check_ssl && s.verify_none && s.shutdown_sessions_on_down);
        assert_eq!((s.weight, s.rise, s.fall), (7, 4, 5));
        assert_eq!(
            (s.inter, s.fastinter, s.downinter, s.slowstart),
            (
                Duration::from_secs(3),
                Some(Duration::from_secs(1)),
                Some(Duration::from_secs(5)),
                Some(Duration::from_secs(60))
            )
        );
        assert_eq!(s.init_state, InitState::FullyDown);

        let text = "backend b\n  server x 192.0.2.1:80 verify required rise 0 fall x \
                    downinter 0 init-state half half on-marked-down drain weight\n";
        let mut errors = Errors::default();
        config(text, "t", &mut errors, &mut Errors::default());
        let errors = errors.to_string();
        for want in [
            "t:2: server x: `verify required`: lb-proxy checks with `verify none` only",
            "t:2: server x: `rise 0` is out of range",
            "t:2: server x: `fall x` is out of range",
            "t:2: server x: `downinter 0` is not a duration",
            "t:2: server x: `init-state half` is not supported",
            "t:2: server x: unknown option `half`",
            "t:2: server x: `on-marked-down drain` is not supported",
            "t:2: server x: `weight` needs a number",
        ] {
            assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
        }
    }

    #[test]
    fn retries_redispatch_and_passive_health() {
        let text = "defaults\n  option redispatch\n  retry-on conn-failure empty-response\n  \
                    default-server observe layer4 error-limit 2 on-error sudden-death inter 3s\n\
                    #lb-proxy: race-connect 150ms losses 4\n\
                    backend a\n  default-server on-error mark-down\n  \
                    server s 192.0.2.1:80 check error-limit 1\n\
                    backend b\n  option redispatch 2\n  retry-on none\n  \
                    #lb-proxy: race-connect off\n  server s 192.0.2.1:80\n\
                    backend c\n  option redispatch -2\n  retry-on all-retryable-errors\n\
                    backend d\n  option redispatch\n  no option redispatch\n";
        let mut errors = Errors::default();
        let c = config(text, "t", &mut errors, &mut Errors::default());
        assert!(errors.0.is_empty(), "{errors}");
        let a = c.proxy("a").unwrap();
        assert_eq!(a.redispatch, Some(-1));
        assert!(a.retry_on.conn_failure && a.retry_on.empty_response);
        assert!(!a.retry_on.response_timeout);
        assert_eq!(
            a.race,
            Some(Race {
                delay: Duration::from_millis(150),
                losses: 4
            })
        );
        let s = &a.servers[0];
        assert!(s.observe && s.check);
        assert_eq!((s.error_limit, s.on_error), (1, OnError::MarkDown));
        assert_eq!(
            s.inter,
            Duration::from_secs(3),
            "from the defaults' default-server"
        );
        let b = c.proxy("b").unwrap();
        assert_eq!(
            (b.redispatch, b.retry_on, b.race),
            (Some(2), RetryOn::NONE, None)
        );
        assert_eq!(b.servers[0].on_error, OnError::SuddenDeath, "defaults only");
        let cc = c.proxy("c").unwrap();
        assert_eq!((cc.redispatch, cc.retry_on), (Some(-2), RetryOn::ALL));
        assert_eq!(c.proxy("d").unwrap().redispatch, None);
    }

    #[test]
    fn smart_connect_is_on_and_smart_accept_off_unless_the_defaults_or_a_section_say() {
        let text = "defaults\n  mode tcp\n\
                    frontend f\n  bind :80\n  default_backend b\n\
                    backend b\n  no option tcp-smart-connect\n  server s 192.0.2.1:80\n\
                    defaults\n  mode tcp\n  option tcp-smart-accept\n  no option tcp-smart-connect\n\
                    listen both\n  bind :81\n  server s 192.0.2.1:80\n\
                    listen again\n  bind :82\n  no option tcp-smart-accept\n  option tcp-smart-connect\n  \
                    server s 192.0.2.1:80\n";
        let mut errors = Errors::default();
        let c = config(text, "t", &mut errors, &mut Errors::default());
        assert!(errors.is_empty(), "{errors}");
        let smart = |name: &str| {
            let p = c.proxy(name).unwrap();
            (p.smart_accept, p.smart_connect)
        };
        assert_eq!(smart("f"), (false, true), "lb-proxy's default");
        assert_eq!(smart("b"), (false, false));
        assert_eq!(smart("both"), (true, false), "from the defaults");
        assert_eq!(smart("again"), (false, true));
    }

    #[test]
    fn bad_values_of_the_retry_and_passive_keywords() {
        let text = "defaults\n  option redispatch x\n  retry-on conn-failure sometimes\n  \
                    retry-on none conn-failure\n  retry-on\n  no option httplog\n\
                    #lb-proxy: race-connect 0\n#lb-proxy: race-connect 1s losses x\n\
                    #lb-proxy: race-to-the-bottom\n\
                    backend b\n  default-server observe layer7 error-limit 0 on-error explode\n  \
                    server s 192.0.2.1:80 on-error\n\
                    frontend f\n  bind :80\n  default-server check\n";
        let mut errors = Errors::default();
        config(text, "t", &mut errors, &mut Errors::default());
        let errors = errors.to_string();
        for want in [
            "t:2: `option redispatch` takes at most one whole number",
            "t:3: `retry-on sometimes`: lb-proxy reads conn-failure",
            "t:4: `retry-on none` takes no other keyword",
            "t:5: `retry-on` needs at least one keyword",
            "t:6: `no option httplog`: lb-proxy reads `no option` with redispatch, tcp-smart-accept and tcp-smart-connect",
            "t:7: `#lb-proxy: race-connect 0`: race-connect takes a delay",
            "t:8: `#lb-proxy: race-connect 1s losses x`: race-connect takes a delay",
            "t:9: unknown lb-proxy keyword `race-to-the-bottom`",
            "t:11: default-server: `observe layer7`: lb-proxy forwards TCP and observes layer4",
            "t:11: default-server: `error-limit 0` is out of range",
            "t:11: default-server: `on-error explode`: one of fastinter, fail-check, sudden-death, mark-down",
            "t:12: server s: `on-error` needs an action",
            "t:15: unknown keyword `default-server` in a frontend",
        ] {
            assert!(errors.contains(want), "missing {want:?} in:\n{errors}");
        }
    }
}
