//! Run-time resolution of server names (`server NAME HOST:PORT resolvers DNS`), as haproxy's
//! DNS resolvers do it: each name is asked of the section's nameservers every `hold valid`
//! (at least `timeout resolve`), `resolve_retries` tries `timeout retry` apart; a server keeps
//! its address while the answer still holds it, else takes the first of its preferred family
//! (`resolve-prefer`); when no answer comes for longer than `hold nx|other|refused|timeout`,
//! it loses its address and stays out of the rotation and unchecked until one comes
//! (haproxy's maintenance "resolution" state).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hickory_resolver::config::{NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::name_server::TokioConnectionProvider;
use hickory_resolver::proto::xfer::Protocol;
use hickory_resolver::{Resolver, TokioResolver};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::table::{Server, Table};
use crate::config::model::Resolvers;

/// The address a server takes from an answer: the one it has when the answer still holds it
/// (haproxy does not move a server between the addresses of one name), else the first of
/// the preferred family, else the first. None when the answer is empty.
pub fn choose(current: Option<IpAddr>, answer: &[IpAddr], prefer_ipv4: bool) -> Option<IpAddr> {
    if let Some(c) = current.filter(|c| answer.contains(c)) {
        return Some(c);
    }
    let preferred = answer.iter().find(|ip| ip.is_ipv4() == prefer_ipv4);
    preferred.or(answer.first()).copied()
}

/// The nameservers of `r`: its `nameserver` lines, and with `parse-resolv-conf` those of
/// `resolv_conf` (the text of /etc/resolv.conf; port 53).
pub fn nameservers(r: &Resolvers, resolv_conf: &str) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = r.nameservers.iter().map(|(_, a)| *a).collect();
    if r.resolv_conf {
        for line in resolv_conf.lines() {
            let mut w = line.split_whitespace();
            if w.next() == Some("nameserver") {
                if let Some(ip) = w.next().and_then(|ip| ip.parse::<IpAddr>().ok()) {
                    out.push(SocketAddr::new(ip, 53));
                }
            }
        }
    }
    out
}

fn resolver(r: &Resolvers) -> TokioResolver {
    let conf = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
    let servers: Vec<NameServerConfig> = nameservers(r, &conf)
        .into_iter()
        .map(|a| NameServerConfig::new(a, Protocol::Udp))
        .collect();
    let mut opts = ResolverOpts::default();
    opts.timeout = r.timeout_retry;
    opts.attempts = usize::try_from(r.resolve_retries).unwrap_or(1);
    // haproxy asks again every `hold valid` whatever the TTL: no cache of ours between.
    opts.cache_size = 0;
    opts.edns0 = r.accepted_payload_size > 512;
    let config = ResolverConfig::from_parts(None, Vec::new(), servers);
    Resolver::builder_with_config(config, TokioConnectionProvider::default())
        .with_options(opts)
        .build()
}

/// Starts a resolution task for every server of `table` written with a name and
/// `resolvers`, in `tasks` (replaced on reload, with the check tasks).
pub fn start(table: &Table, tasks: &mut JoinSet<()>) {
    for backend in &table.backends {
        for server in &backend.servers {
            let (Some(name), Some(section)) = (&server.cfg.fqdn, &server.cfg.resolvers) else {
                continue;
            };
            let Some(r) = table.config.resolvers(section).cloned() else {
                continue;
            };
            let (server, name) = (Arc::clone(server), name.clone());
            let label = format!("{}/{}", backend.name, server.cfg.name);
            tasks.spawn(async move { follow(&r, &server, &name, &label).await });
        }
    }
}

/// Keeps `server`'s address as the DNS says, forever.
async fn follow(r: &Resolvers, server: &Server, name: &str, label: &str) {
    let dns = resolver(r);
    // The name is absolute: haproxy appends no search domain.
    let fqdn = format!("{}.", name.trim_end_matches('.'));
    let every = r.hold_valid.max(r.timeout_resolve);
    let mut last_valid = Instant::now();
    loop {
        let answer: Vec<IpAddr> = match dns.lookup_ip(fqdn.as_str()).await {
            Ok(found) => found.iter().collect(),
            Err(e) => {
                tracing::debug!("server {label}: resolving {name}: {e}");
                Vec::new()
            }
        };
        let current = server.address();
        match choose(current.map(|a| a.ip()), &answer, server.cfg.prefer_ipv4) {
            Some(ip) => {
                last_valid = Instant::now();
                let port = server.cfg.address.port();
                if current.map(|a| a.ip()) != Some(ip) {
                    tracing::warn!("server {label} changed its IP to {ip} by DNS ({name})");
                    server.set_address(Some(SocketAddr::new(ip, port)));
                }
            }
            None if current.is_some() && last_valid.elapsed() > r.hold_other => {
                tracing::warn!(
                    "server {label} is going into maintenance: no address for {name} \
                     within {:?}",
                    r.hold_other
                );
                server.set_address(None);
            }
            None => {}
        }
        tokio::time::sleep(every.max(Duration::from_millis(100))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ips(list: &[&str]) -> Vec<IpAddr> {
        list.iter()
            .map(|s| s.parse().unwrap_or(IpAddr::from([0; 4])))
            .collect()
    }

    #[test]
    fn a_server_keeps_its_address_while_the_answer_holds_it() {
        let answer = ips(&["2001:db8::1", "192.0.2.2", "192.0.2.1"]);
        let current = Some(ips(&["192.0.2.1"])[0]);
        assert_eq!(choose(current, &answer, false), current);
        assert_eq!(choose(None, &answer, true), Some(answer[1]), "first IPv4");
        assert_eq!(choose(None, &answer, false), Some(answer[0]), "first IPv6");
        let only_v4 = ips(&["192.0.2.9"]);
        assert_eq!(
            choose(None, &only_v4, false),
            Some(only_v4[0]),
            "the other family"
        );
        assert_eq!(choose(current, &[], true), None);
    }

    #[test]
    fn nameservers_from_the_section_and_resolv_conf() {
        let mut r = Resolvers::new("dns", &Default::default());
        r.nameservers
            .push(("a".into(), SocketAddr::from(([192, 0, 2, 53], 5353))));
        let conf = "search example\nnameserver 198.51.100.53\nnameserver junk\n";
        assert_eq!(nameservers(&r, conf).len(), 1, "parse-resolv-conf off");
        r.resolv_conf = true;
        assert_eq!(
            nameservers(&r, conf),
            [
                SocketAddr::from(([192, 0, 2, 53], 5353)),
                SocketAddr::from(([198, 51, 100, 53], 53))
            ]
        );
    }
}
