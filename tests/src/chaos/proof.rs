//! What shows that a fault took effect, read while it is held: a lab fault that did not load
//! (an nftables rule refused, a signal to a process already gone, a link left up) must fail
//! the run rather than pass every judgement of its consequences.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

use ipi_lab::{router, Host};

use super::faults::{node, Active, PUBLISH};
use super::schedule::Kind;
use crate::cluster::{Cluster, ClusterError, Node, API_PORT};

/// The proof of a fault that is held, read before it is undone; None for a kill
/// ([`super::faults::undo`] proves those by the unit's end).
pub fn held(c: &Cluster, a: &Active, table: &str) -> Result<Option<String>, ClusterError> {
    held_kind(c, a, table).map(|p| Some(p).filter(|s| !s.is_empty()))
}

/// [`held`]'s proof, empty for a kill.
fn held_kind(c: &Cluster, a: &Active, table: &str) -> Result<String, ClusterError> {
    if a.kind == Kind::ReloadUnchanged {
        return match a.reloaded {
            0 => Err(ClusterError::Step("no unit was reloaded".into())),
            n => Ok(format!("{n} ExecReload= exited 0")),
        };
    }
    let n = node(c, &a.target)?;
    match a.kind {
        Kind::StopVipHolder => stopped(n, c.vip_unit()),
        Kind::PowerOffHolder | Kind::PowerOffBackup | Kind::LinkFlap => no_carrier(n),
        Kind::SplitBrain | Kind::VrrpLoss => {
            let mut said = Vec::new();
            for name in std::iter::once(&a.target).chain(&a.peer) {
                said.push(dropped(node(c, name)?, table)?);
            }
            Ok(said.join(", "))
        }
        Kind::ApiFailing => refused(c, n, API_PORT),
        Kind::RouterDown => refused(c, n, router::PORT),
        Kind::ReloadPeers if n.runs(PUBLISH) => Err(ClusterError::Step(format!(
            "{} still runs on {}",
            PUBLISH, n.name
        ))),
        Kind::ReloadPeers => Ok(format!("{} stopped", PUBLISH)),
        _ => Ok(String::new()),
    }
}

/// Every process of `unit` on `n` in state T (stopped), as /proc/PID/stat says.
fn stopped(n: &Node, unit: &str) -> Result<String, ClusterError> {
    let pids = n.unit_pids(unit);
    let states: Vec<(u32, Option<char>)> = pids.iter().map(|p| (*p, state(*p))).collect();
    if !states.is_empty() && states.iter().all(|(_, s)| *s == Some('T')) {
        return Ok(format!("{} process(es) of {unit} in state T", states.len()));
    }
    Err(ClusterError::Step(format!(
        "{unit} on {} not stopped: (pid, state) {states:?}",
        n.name
    )))
}

/// A process's state letter, from /proc/PID/stat.
fn state(pid: u32) -> Option<char> {
    state_letter(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The state letter of a /proc/PID/stat line: the field after the parenthesised name, which
/// may itself hold parentheses and spaces.
fn state_letter(stat: &str) -> Option<char> {
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// The node's eth0 without carrier: its bridge port is down.
fn no_carrier(n: &Node) -> Result<String, ClusterError> {
    let out = n.host.run_ok("ip", ["-o", "link", "show", "dev", "eth0"])?;
    if out.stdout.contains("NO-CARRIER") {
        Ok("eth0 NO-CARRIER".into())
    } else {
        Err(ClusterError::Step(format!(
            "{}'s eth0 still has its carrier: {}",
            n.name,
            out.stdout.trim()
        )))
    }
}

/// Packets the fault's nftables rule on `n` dropped so far (its `counter`): more than none.
fn dropped(n: &Node, table: &str) -> Result<String, ClusterError> {
    match n.host.nft_counted(table)? {
        0 => Err(ClusterError::Step(format!(
            "the VRRP rule on {} dropped nothing",
            n.name
        ))),
        packets => Ok(format!("{packets} VRRP packets dropped on {}", n.name)),
    }
}

/// A connection from the client to the node's `port` refused (RST): the server is down,
/// not merely slow.
fn refused(c: &Cluster, n: &Node, port: u16) -> Result<String, ClusterError> {
    let to = SocketAddr::from((IpAddr::V4(n.host.ipv4()), port));
    let tried = c
        .client()
        .within(move || Ok(TcpStream::connect_timeout(&to, Duration::from_secs(2))));
    match tried {
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            Ok(format!("a connection to {to} refused"))
        }
        other => Err(ClusterError::Step(format!(
            "a connection to {to} from the client was not refused: {other:?}"
        ))),
    }
}

/// After a split brain's heal: how long until the VIP had one holder and `client`'s ARP entry
/// for it held that holder's MAC (polled every 100 ms; None: not within `limit`). The router
/// that stepped down answers no more for the VIP, so a client still pointing at it is cut
/// off until its entry expires: the winner's re-announce is what moves it.
pub fn client_follows(
    c: &Cluster,
    client: &Host,
    vip: Ipv4Addr,
    limit: Duration,
) -> Option<Duration> {
    // What the client and the nodes did meanwhile, each change once, said when it fails.
    let mut seen: Vec<(Duration, Vec<String>, Option<String>)> = Vec::new();
    let start = std::time::Instant::now();
    let followed = ipi_lab::wait_for(limit, Duration::from_millis(100), || {
        let holders = c.holders().api;
        let entry = client.neighbour(IpAddr::V4(vip)).and_then(|n| n.lladdr);
        if seen
            .last()
            .is_none_or(|(_, h, e)| *h != holders || *e != entry)
        {
            seen.push((start.elapsed(), holders.clone(), entry.clone()));
        }
        let [holder] = holders.as_slice() else {
            return false;
        };
        let mac = c.node(holder).and_then(|n| n.host.mac().ok());
        mac.is_some() && entry == mac
    });
    if followed.is_none() {
        let macs: Vec<(String, Option<String>)> = c
            .nodes()
            .iter()
            .map(|n| (n.name.clone(), n.host.mac().ok()))
            .collect();
        eprintln!("the client did not follow {vip}: (since the heal, holders, its entry) {seen:?}; MACs {macs:?}");
    }
    followed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_state_is_read_past_a_name_with_parentheses() {
        assert_eq!(state_letter("4242 (vrrpd (x) y) T 1 4242 0"), Some('T'));
        assert_eq!(state_letter("4242 (vrrpd) S 1"), Some('S'));
        assert_eq!(state_letter("4242 vrrpd"), None);
    }
}
