//! Garbage collection of a CNI network's reservations: which of them a node's runtime no
//! longer holds, and why every other one is kept. The runtime's GC (CNI 1.1) frees what this
//! finds leaked; `ipam gc` shows it first, and frees it when asked.
//!
//! A runtime lists only its own node's attachments, and an ADD may be in flight while it lists
//! them. So a reservation is leaked only when it is this node's (its record names this node;
//! one that names no node, written by an older ipam, counts as this node's only in a store no
//! other machine shares), is older than the network's `gc_grace`, and its attachment is not in
//! the list. Every free holds only if the record is still the one read: an address claimed
//! again meanwhile is not freed.

use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;

use ipi_store::range::Space;
use ipi_store::store::{Record, Store, StoreError};

use super::config::NetConf;
use crate::alloc::{Order, Pool};

/// What a GC makes of one reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// This node's, old enough, and its attachment is gone: freed by a GC.
    Leaked,
    /// Its attachment is in the runtime's list.
    Attached,
    /// Younger than the grace period (seconds old): maybe an ADD in flight.
    Young(u64),
    /// Another node's: that node's runtime holds the list it is judged by.
    OtherNode(String),
    /// No node recorded (an older ipam) in a store other machines share: whose it is is unknown.
    NoNode,
    /// The network's pools are shared with others (`network_name`): their attachments are not
    /// in this list.
    SharedPools,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Leaked => write!(f, "leaked: this node's, and not attached"),
            Self::Attached => write!(f, "kept: attached"),
            Self::Young(age) => write!(f, "kept: {age}s old, within gc_grace"),
            Self::OtherNode(n) => write!(f, "kept: node {n}'s"),
            Self::NoNode => write!(f, "kept: no node recorded, in a shared store"),
            Self::SharedPools => write!(f, "kept: pools shared with other networks"),
        }
    }
}

/// One reservation of the network and what a GC makes of it.
#[derive(Debug, Clone)]
pub struct Judged {
    /// Its pool.
    pub pool: String,
    /// The address.
    pub ip: IpAddr,
    /// Its record.
    pub record: Record,
    /// Leaked or kept, and why.
    pub verdict: Verdict,
}

/// The pools of this network in the store, those of range sets no longer in the config too.
pub fn network_pools(store: &mut dyn Store, conf: &NetConf) -> Result<Vec<Pool>, StoreError> {
    let mut pools = conf.ipam.pools();
    let prefix = conf.ipam.pool_prefix();
    for name in store.pools()? {
        if name.starts_with(&prefix) && !pools.iter().any(|p| p.name == name) {
            pools.push(Pool {
                name,
                space: Space::new(Vec::new()),
                order: Order::RoundRobin,
            });
        }
    }
    Ok(pools)
}

/// Every reservation of the network, judged for `node`'s runtime holding `keep`
/// (`CONTAINERID/IFNAME`), at `now` (seconds since the epoch).
pub fn judge(
    store: &mut dyn Store,
    conf: &NetConf,
    keep: &HashSet<String>,
    node: &str,
    now: u64,
) -> Result<Vec<Judged>, StoreError> {
    let shared = store.shared();
    let grace = conf.ipam.gc_grace.as_secs();
    let mut out = Vec::new();
    for pool in network_pools(store, conf)? {
        for (ip, record) in store.list(&pool.name)? {
            let age = record.since.map(|t| now.saturating_sub(t));
            let verdict = if conf.ipam.network != conf.name {
                Verdict::SharedPools
            } else if keep.contains(&record.owner) {
                Verdict::Attached
            } else {
                match (&record.node, age) {
                    (Some(n), _) if n != node => Verdict::OtherNode(n.clone()),
                    (None, _) if shared => Verdict::NoNode,
                    (_, Some(age)) if age < grace => Verdict::Young(age),
                    _ => Verdict::Leaked,
                }
            };
            out.push(Judged {
                pool: pool.name.clone(),
                ip,
                record,
                verdict,
            });
        }
    }
    Ok(out)
}

/// Frees every leaked one of `judged`; returns those it freed (one changed since it was read
/// is someone else's now, and stays).
pub fn free_leaked(store: &mut dyn Store, judged: &[Judged]) -> Result<Vec<Judged>, StoreError> {
    let mut freed = Vec::new();
    for j in judged.iter().filter(|j| j.verdict == Verdict::Leaked) {
        if store.free(&j.pool, j.ip, &j.record)? {
            freed.push(j.clone());
        }
    }
    Ok(freed)
}

/// The attachments a runtime holds, `CONTAINERID/IFNAME` a line (blank lines and `#` comments
/// skipped), as `ipam gc --keep` reads them; the line number (from 1) and what is wrong with
/// the first line that is not one.
pub fn parse_keep(text: &str) -> Result<HashSet<String>, (usize, String)> {
    let mut keep = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        match line.split_once('/') {
            Some((id, ifname)) if !id.is_empty() && !ifname.is_empty() && !ifname.contains('/') => {
                keep.insert(line.to_owned());
            }
            _ => return Err((n + 1, format!("{line:?} is not CONTAINERID/IFNAME"))),
        }
    }
    Ok(keep)
}

/// This node's name: `given` (`IPAM_NODE_NAME`) when set, else the host name.
pub fn this_node(given: Option<String>) -> String {
    given
        .filter(|n| !n.is_empty())
        .or_else(|| {
            let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
            Some(name.trim().to_owned())
        })
        .unwrap_or_default()
}

/// Seconds since the epoch: when a reservation is made, and a GC's now.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
