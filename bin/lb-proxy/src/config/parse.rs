//! haproxy.cfg to the [`Config`] model: sections, keywords, haproxy's time units and defaults
//! inheritance; every problem collected with its file and line.
//!
//! `proxy` reads the keywords only a proxy section takes, `server` the `server` and `default-server` lines.

use std::net::SocketAddr;
use std::time::Duration;

use ipi_core::place::Errors;
use ipi_core::secret::Secret;

use super::model::{
    Config, Kind, Location, Mode, Proxy, Race, Resolvers, RetryOn, Server, Stats, Timeouts,
};
use super::{checks, ignored};

mod proxy;
mod server;

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
            server: Server::defaults(
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
            "tcp-check" => self.with_rules(|r| r.tcp_line(&w[1..], at).map_err(|e| e.to_string())),
            "http-check" => {
                self.with_rules(|r| r.http_line(&w[1..], at).map_err(|e| e.to_string()))
            }
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
                    self.errors.push(at, why.to_string());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::model::{InitState, OnError};

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
