//! Each fault of the schedule on the running cluster: applied to the targets it picks at
//! that moment (the VIP holders of the moment), and undone.

use std::net::Ipv4Addr;
use std::time::Duration;

use nix::sys::signal::Signal;

use super::schedule::{Kind, Planned};
use crate::cluster::{Cluster, ClusterError, Node, Role};

/// Which VIP a fault justifies moving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vip {
    /// The API VIP.
    Api,
    /// The Ingress VIP.
    Ingress,
}

/// A fault applied: what, on which nodes, and which VIP it justifies moving.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    /// What.
    pub kind: Kind,
    /// The node it was applied to.
    pub target: String,
    /// The other node of a partition.
    pub peer: Option<String>,
    /// The VIP whose move it justifies (its holder lost what holding it needs).
    pub justifies: Option<Vip>,
    /// For a kill: how many times the unit had ended by itself before it.
    pub ends: usize,
    /// For a reload: how many units' `ExecReload=` ran (and exited 0).
    pub reloaded: usize,
}

const DNSMASQ: &str = "ipi-dnsmasq.service";
pub(super) const PUBLISH: &str = "ipi-mdns-publish.service";
const BROWSE: &str = "ipi-mdns-browse.service";
/// The nftables table of the VRRP faults (a node's own namespace).
pub(super) const TABLE: &str = "ipi_chaos";

/// Applies `p` to the cluster as it is now.
pub fn apply(c: &mut Cluster, p: Planned) -> Result<Active, ClusterError> {
    let holder = one(&c.holders().api, p.pick, "the API VIP")?;
    let backups = up(c, Role::Master, &holder);
    let backup = pick(&backups, p.pick, "a backup master")?;
    let nodes: Vec<String> = [Role::Master, Role::Worker]
        .iter()
        .flat_map(|r| up(c, *r, ""))
        .collect();
    let node = pick(&nodes, p.pick, "a node")?;
    let mut a = Active {
        kind: p.kind,
        target: holder.clone(),
        peer: None,
        justifies: None,
        ends: 0,
        reloaded: 0,
    };
    match p.kind {
        Kind::KillVipHolder | Kind::KillProxyHolder | Kind::StopVipHolder => {
            let (unit, signal) = match p.kind {
                Kind::KillVipHolder => (c.vip_unit(), Signal::SIGKILL),
                Kind::StopVipHolder => (c.vip_unit(), Signal::SIGSTOP),
                _ => (c.proxy_unit(), Signal::SIGKILL),
            };
            a.ends = kill(c, &holder, unit, signal)?;
            a.justifies = Some(Vip::Api);
        }
        Kind::KillVipBackup | Kind::KillProxyBackup => {
            let unit = if p.kind == Kind::KillVipBackup {
                c.vip_unit()
            } else {
                c.proxy_unit()
            };
            a.ends = kill(c, &backup, unit, Signal::SIGKILL)?;
            a.target = backup;
        }
        Kind::KillMdnsPublish | Kind::KillMdnsBrowse | Kind::KillDnsmasq => {
            let unit = match p.kind {
                Kind::KillMdnsPublish => PUBLISH,
                Kind::KillMdnsBrowse => BROWSE,
                _ => DNSMASQ,
            };
            a.ends = kill(c, &node, unit, Signal::SIGKILL)?;
            a.target = node;
        }
        _ => return apply_more(c, p, a, &backup),
    }
    Ok(a)
}

/// The faults that are held and undone.
fn apply_more(
    c: &mut Cluster,
    p: Planned,
    mut a: Active,
    backup: &str,
) -> Result<Active, ClusterError> {
    let holder = a.target.clone();
    match p.kind {
        Kind::PowerOffHolder => {
            c.power_off(&holder)?;
            a.justifies = Some(Vip::Api);
        }
        Kind::PowerOffBackup | Kind::ApiFailing | Kind::ReloadPeers | Kind::VrrpLoss => {
            a.target = backup.to_string();
            match p.kind {
                Kind::PowerOffBackup => c.power_off(backup)?,
                Kind::ApiFailing => api_ready(c, backup, false)?,
                Kind::ReloadPeers => node(c, backup)?.stop_unit(PUBLISH),
                _ => vrrp_filter(c, backup, "numgen random mod 100 < 40 counter drop")?,
            }
        }
        Kind::LinkFlap | Kind::RouterDown => {
            let ingress = one(&c.holders().ingress, p.pick, "the Ingress VIP")?;
            if p.kind == Kind::LinkFlap {
                c.lab().link_down(&node(c, &ingress)?.host)?;
            } else if !c.router_down(&ingress)? {
                return Err(ClusterError::Step(format!("no router on {ingress}")));
            }
            a.target = ingress;
            a.justifies = Some(Vip::Ingress);
        }
        Kind::SplitBrain => {
            let (h, b) = (address(c, &holder)?, address(c, backup)?);
            vrrp_filter(c, &holder, &format!("ip saddr {b} counter drop"))?;
            vrrp_filter(c, backup, &format!("ip saddr {h} counter drop"))?;
            a.peer = Some(backup.to_string());
        }
        Kind::ReloadUnchanged => {
            a.target = "every node".into();
            for n in c.nodes().iter().filter(|n| n.is_up()) {
                for unit in n.unit_names() {
                    if n.runs(&unit) {
                        n.reload(&unit)?;
                        a.reloaded += 1;
                    }
                }
            }
        }
        other => {
            return Err(ClusterError::Step(format!(
                "{other:?} is applied by `apply`"
            )))
        }
    }
    Ok(a)
}

/// Undoes what [`apply`] did (a kill is not undone: its unit's `Restart=` is what is tested;
/// read `super::proof::held` first for the other kinds). For a kill, what shows that it
/// took effect (its unit ended), or an error when it did not; None for the other kinds.
pub fn undo(c: &mut Cluster, a: &Active) -> Result<Option<String>, ClusterError> {
    let unit = match a.kind {
        Kind::KillVipHolder | Kind::KillVipBackup => Some(c.vip_unit()),
        Kind::KillProxyHolder | Kind::KillProxyBackup => Some(c.proxy_unit()),
        Kind::KillMdnsPublish => Some(PUBLISH),
        Kind::KillMdnsBrowse => Some(BROWSE),
        Kind::KillDnsmasq => Some(DNSMASQ),
        _ => None,
    };
    if let Some(unit) = unit {
        return restarted(c, a, unit).map(Some);
    }
    match a.kind {
        Kind::StopVipHolder => {
            let unit = c.vip_unit();
            kill(c, &a.target, unit, Signal::SIGCONT)?;
        }
        Kind::PowerOffHolder | Kind::PowerOffBackup => c.power_on(&a.target)?,
        Kind::LinkFlap => c.lab().link_up(&node(c, &a.target)?.host)?,
        Kind::RouterDown => c.router_up(&a.target)?,
        Kind::ApiFailing => api_ready(c, &a.target, true)?,
        Kind::ReloadPeers => node(c, &a.target)?.start_unit(PUBLISH)?,
        Kind::SplitBrain | Kind::VrrpLoss => {
            for n in std::iter::once(&a.target).chain(&a.peer) {
                node(c, n)?
                    .host
                    .run_ok("nft", ["delete", "table", "inet", TABLE])?;
            }
        }
        _ => {}
    }
    Ok(None)
}

/// How long a killed daemon's unit gets to start it again (`RestartSec=` up to 10 s, then
/// readiness on a loaded machine); the run's end reports a unit still down.
const RESTARTED: Duration = Duration::from_secs(30);

/// Waits (up to [`RESTARTED`]) until the supervisor has seen `unit` on `name` end (its poll
/// runs every 100 ms) and then runs it again: a kill is held until its unit's `Restart=`
/// brought the daemon back, so that what follows is a fault of its own. An error when the
/// unit never ended (the signal reached nothing); one that ended and is not back is the run
/// end's to report.
fn restarted(c: &Cluster, a: &Active, unit: &str) -> Result<String, ClusterError> {
    let n = node(c, &a.target)?;
    let back = ipi_lab::wait_for(RESTARTED, Duration::from_millis(100), || {
        ends(n, unit) > a.ends && n.runs(unit)
    });
    match (ends(n, unit) > a.ends, back) {
        (true, Some(t)) => Ok(format!("{unit} ended, back after {:.1} s", t.as_secs_f64())),
        (true, None) => Ok(format!("{unit} ended, not back after {RESTARTED:?}")),
        (false, _) => Err(ClusterError::Step(format!(
            "{unit} on {} never ended after the signal",
            n.name
        ))),
    }
}

/// How many times `unit` on `n` ended by itself so far.
fn ends(n: &Node, unit: &str) -> usize {
    n.ended().iter().filter(|e| e.unit == unit).count()
}

/// The API server stand-in of `name` failing `/readyz` for half the hold, then refusing
/// connections for the rest (`ready` false); serving again (`ready` true).
fn api_ready(c: &mut Cluster, name: &str, ready: bool) -> Result<(), ClusterError> {
    if ready {
        c.api_running(name, true)?;
        if let Some(api) = node(c, name)?.api() {
            api.set_ready(true);
        }
        return Ok(());
    }
    if let Some(api) = node(c, name)?.api() {
        api.set_ready(false);
    }
    std::thread::sleep(Kind::ApiFailing.hold() / 2);
    c.api_running(name, false)
}

/// Drops the VRRP packets `name` receives that match `rule` (nftables, before everything).
fn vrrp_filter(c: &Cluster, name: &str, rule: &str) -> Result<(), ClusterError> {
    let host = &node(c, name)?.host;
    host.run_ok("nft", ["add", "table", "inet", TABLE])?;
    host.run_ok(
        "nft",
        [&format!(
            "add chain inet {TABLE} input {{ type filter hook input priority -300 ; }}"
        )],
    )?;
    host.run_ok(
        "nft",
        [&format!(
            "add rule inet {TABLE} input ip protocol vrrp {rule}"
        )],
    )?;
    Ok(())
}

/// Sends `signal` to `unit`'s main process on `name`; how many times the unit had ended by
/// itself before.
fn kill(c: &Cluster, name: &str, unit: &str, signal: Signal) -> Result<usize, ClusterError> {
    let n = node(c, name)?;
    let before = ends(n, unit);
    if n.signal(unit, signal)? {
        Ok(before)
    } else {
        Err(ClusterError::Step(format!("{unit} does not run on {name}")))
    }
}

pub(super) fn node<'a>(c: &'a Cluster, name: &str) -> Result<&'a Node, ClusterError> {
    c.node(name)
        .ok_or_else(|| ClusterError::Step(format!("no node {name}")))
}

fn address(c: &Cluster, name: &str) -> Result<Ipv4Addr, ClusterError> {
    Ok(node(c, name)?.host.ipv4())
}

fn up(c: &Cluster, role: Role, except: &str) -> Vec<String> {
    c.nodes()
        .iter()
        .filter(|n| n.role == role && n.is_up() && n.name != except)
        .map(|n| n.name.clone())
        .collect()
}

/// A holder of a VIP: the one, or when a fault left it on several, one of them (the schedule
/// goes on; the report counts the time with two).
fn one(holders: &[String], pick: usize, what: &str) -> Result<String, ClusterError> {
    if holders.is_empty() {
        return Err(ClusterError::Step(format!("{what} on no node")));
    }
    Ok(holders[pick % holders.len()].clone())
}

fn pick(names: &[String], pick: usize, what: &str) -> Result<String, ClusterError> {
    if names.is_empty() {
        return Err(ClusterError::Step(format!("no {what} to pick")));
    }
    Ok(names[pick % names.len()].clone())
}
