//! The keywords only a frontend, backend or listen section takes: ACLs and `use_backend`,
//! `tcp-request`, `bind`, `monitor`, `balance` and `hash-type`, and `stats`.

use ipi_core::secret::Secret;

use super::{address, duration, Parser, Section, StatsSetting};
use crate::config::model::{Balance, Bind, Kind, Location, MonitorFail};
use crate::config::{ignored, routing};

impl Parser<'_> {
    /// Settings only a frontend, backend or listen section takes.
    pub(super) fn proxy_only(&mut self, w: &[String], at: &Location) {
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
    pub(super) fn acl(&mut self, w: &[String], at: &Location) {
        let words: Vec<&str> = w[2..].iter().map(String::as_str).collect();
        match routing::test(&words) {
            Ok(t) => self.apply(|_| {}, |p| p.routing.acls.push((w[1].clone(), t))),
            Err(why) => self.errors.push(at, format!("`{}`: {why}", w.join(" "))),
        }
    }

    /// `use_backend NAME [if|unless COND]`.
    pub(super) fn use_backend(&mut self, w: &[String], at: &Location) {
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
    pub(super) fn tcp_request(&mut self, w: &[String], at: &Location) -> bool {
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

    pub(super) fn bind(&mut self, w: &[String], at: &Location) {
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

    pub(super) fn monitor(&mut self, w: &[String], at: &Location) {
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
    pub(super) fn balance(&mut self, w: &[String], at: &Location) {
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
    pub(super) fn hash_type(&mut self, w: &[String], at: &Location) {
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
    pub(super) fn stats(&mut self, w: &[String], at: &Location) {
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
}
