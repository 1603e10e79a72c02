//! `server` and `default-server` lines: the address (an IP or a DNS name) and the options,
//! each checked with the line it is on.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{address, duration, Parser};
use crate::config::model::{InitAddr, InitState, Location, OnError, Server};

impl Parser<'_> {
    pub(super) fn server(&mut self, w: &[String], at: &Location) {
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
    pub(super) fn server_options(
        &mut self,
        s: &mut Server,
        opts: &[String],
        what: &str,
        at: &Location,
    ) {
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
