//! Browsing: one-shot queries (RFC 6762 5.1, from a port other than 5353, so that every
//! responder answers us directly) and what the answers say, as a node inventory.
//!
//! coredns-mdns semantics: only instances whose name contains the filter count, and the etcd
//! SRV targets are withheld until at least `min_srv` of them are seen.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use ipi_core::inventory::Problem;
use ipi_core::{Inventory, Node, Role};

use crate::records::{name, NameError};

/// The type whose instances point at etcd members.
pub const ETCD_TYPE: &str = "_etcd-server-ssl._tcp";

/// Answers that do not make an inventory.
#[derive(Debug, thiserror::Error)]
pub enum FoundError {
    /// A type name that is not a DNS name.
    #[error(transparent)]
    Name(#[from] NameError),
    /// The nodes found do not make an inventory (one address on two nodes, say).
    #[error("{}", problems(.0))]
    Inventory(Vec<Problem>),
}

fn problems(problems: &[Problem]) -> String {
    problems
        .iter()
        .map(|p| format!("{}: {}", p.place, p.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the answers said so far.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// By owner and type (hickory's `Name` compares and hashes without case), so that a
    /// response of hundreds of records is taken in, and the open questions are found, without
    /// a scan of everything seen per record; each with when its TTL runs out.
    records: HashMap<(Name, RecordType), Vec<(Record, Instant)>>,
    /// The goodbyes (TTL 0) heard: what they name is gone, from what was carried too.
    goodbyes: Vec<Record>,
}

/// What a browse found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The nodes.
    pub inventory: Inventory,
    /// The etcd SRV targets (`etcd-0.local.`), when at least `min_srv` were seen.
    pub etcd: Vec<String>,
    /// Instances of the type that matched the filter.
    pub instances: usize,
}

impl Seen {
    /// Takes in the records of a response (a goodbye removes what it names).
    pub fn receive(&mut self, message: &Message) {
        self.receive_at(message, Instant::now());
    }

    /// As [`Seen::receive`], the response heard at `now` (its records last their TTL from
    /// then).
    pub fn receive_at(&mut self, message: &Message, now: Instant) {
        if message.message_type() != MessageType::Response {
            return;
        }
        for r in message.answers().iter().chain(message.additionals()) {
            if r.ttl() > 0 {
                let until = now + Duration::from_secs(u64::from(r.ttl()));
                self.hold(r.clone(), until);
            } else {
                self.forget(r);
                self.goodbyes.push(r.clone());
            }
        }
    }

    fn hold(&mut self, r: Record, until: Instant) {
        let held = self
            .records
            .entry((r.name().clone(), r.record_type()))
            .or_default();
        held.retain(|(k, _)| k.data() != r.data());
        held.push((r, until));
    }

    fn forget(&mut self, r: &Record) {
        if let Some(held) = self.records.get_mut(&(r.name().clone(), r.record_type())) {
            held.retain(|(k, _)| k.data() != r.data());
        }
    }

    /// Takes in what a later round (`fresh`) heard: its goodbyes remove what they name, its
    /// records are held for their TTL from when they were heard; then what has outlived its
    /// TTL at `now` goes. What a browser heard lasts as long as its TTL says, as in an mDNS
    /// cache (RFC 6762 10), rather than only until a round in which its owner was silent (a
    /// publisher restarting, an answer lost).
    pub fn carry(&mut self, fresh: &Seen, now: Instant) {
        for g in &fresh.goodbyes {
            self.forget(g);
        }
        for (r, until) in fresh.records.values().flatten() {
            self.hold(r.clone(), *until);
        }
        for held in self.records.values_mut() {
            held.retain(|(_, until)| *until > now);
        }
        self.records.retain(|_, held| !held.is_empty());
    }

    fn data(&self, owner: &Name, kind: RecordType) -> impl Iterator<Item = &RData> {
        self.records
            .get(&(owner.clone(), kind))
            .into_iter()
            .flatten()
            .map(|(r, _)| r.data())
    }

    fn instances(&self, kind: &Name, filter: &str) -> Vec<Name> {
        let mut out: Vec<Name> = self
            .data(kind, RecordType::PTR)
            .filter_map(|d| match d {
                RData::PTR(p) => Some(p.0.clone()),
                _ => None,
            })
            .filter(|i| instance_label(i).contains(filter))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn target(&self, instance: &Name) -> Option<Name> {
        self.data(instance, RecordType::SRV).find_map(|d| match d {
            RData::SRV(s) => Some(s.target().clone()),
            _ => None,
        })
    }

    fn addresses(&self, host: &Name) -> Vec<IpAddr> {
        let mut a: Vec<IpAddr> = self
            .data(host, RecordType::A)
            .chain(self.data(host, RecordType::AAAA))
            .filter_map(|d| d.ip_addr())
            .collect();
        a.dedup();
        a
    }

    fn role(&self, instance: &Name) -> Option<Role> {
        self.data(instance, RecordType::TXT).find_map(|d| match d {
            RData::TXT(t) => t.txt_data().iter().find_map(|s| {
                let s = std::str::from_utf8(s).ok()?;
                Role::from_name(s.strip_prefix("role=")?)
            }),
            _ => None,
        })
    }

    /// The questions still open for the instances of `kinds`: PTRs, then the SRV and TXT of
    /// every instance, then the addresses of every target.
    pub fn query(&self, kinds: &[Name]) -> Message {
        let mut m = Message::new();
        m.set_message_type(MessageType::Query)
            .set_op_code(OpCode::Query)
            .set_id(0x1f1f);
        // Many instances share one host (200 services on one node): ask for its addresses once,
        // not once per instance, or the questions alone fill packets.
        let mut hosts = std::collections::BTreeSet::new();
        for k in kinds {
            m.add_query(Query::query(k.clone(), RecordType::PTR));
            for i in self.instances(k, "") {
                match self.target(&i) {
                    None => {
                        m.add_query(Query::query(i.clone(), RecordType::SRV));
                    }
                    Some(t) if self.addresses(&t).is_empty() => {
                        hosts.insert(t);
                    }
                    Some(_) => {}
                }
                if self.data(&i, RecordType::TXT).next().is_none() {
                    m.add_query(Query::query(i, RecordType::TXT));
                }
            }
        }
        for t in hosts {
            m.add_query(Query::query(t.clone(), RecordType::A));
            m.add_query(Query::query(t, RecordType::AAAA));
        }
        m
    }

    /// The inventory of the instances of `kind` whose names contain `filter`, and the etcd
    /// targets when at least `min_srv` instances of [`ETCD_TYPE`] are seen.
    pub fn found(&self, kind: &Name, filter: &str, min_srv: usize) -> Result<Found, FoundError> {
        let mut nodes: BTreeMap<String, (BTreeSet<Role>, Vec<IpAddr>)> = BTreeMap::new();
        let instances = self.instances(kind, filter);
        for i in &instances {
            let Some(target) = self.target(i) else {
                continue;
            };
            let addresses = self.addresses(&target);
            if addresses.is_empty() {
                continue;
            }
            let entry = nodes.entry(host_label(&target)).or_default();
            entry.0.extend(self.role(i));
            for a in addresses {
                if !entry.1.contains(&a) {
                    entry.1.push(a);
                }
            }
        }
        let etcd_kind = name(&format!("{ETCD_TYPE}.local."))?;
        let etcd_instances = self.instances(&etcd_kind, filter);
        let mut etcd: Vec<String> = etcd_instances
            .iter()
            .filter_map(|i| self.target(i))
            .map(|t| t.to_utf8())
            .collect();
        etcd.sort();
        etcd.dedup();
        if etcd.len() < min_srv {
            etcd.clear();
        }
        let nodes = nodes
            .into_iter()
            .map(|(name, (roles, addresses))| Node {
                name,
                roles,
                addresses,
            })
            .collect();
        let inventory = Inventory::new(nodes).map_err(FoundError::Inventory)?;
        Ok(Found {
            inventory,
            etcd,
            instances: instances.len(),
        })
    }
}

/// An instance's own label (`lab master-0` of `lab master-0._workstation._tcp.local.`).
fn instance_label(instance: &Name) -> String {
    instance
        .iter()
        .next()
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .unwrap_or_default()
}

/// A host's short name (`master-0` of `master-0.local.`).
fn host_label(host: &Name) -> String {
    instance_label(host).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::net::Ipv4Addr;

    fn response(ttl: u32) -> Message {
        let mut m = Message::new();
        m.set_message_type(MessageType::Response);
        let a = RData::A(Ipv4Addr::new(192, 0, 2, 2).into());
        m.add_answer(Record::from_rdata(name("master-0.local.").unwrap(), ttl, a));
        m
    }

    /// What a browse round that heard master-0 with `ttl` at `at` carries on.
    fn heard(ttl: u32, at: Instant) -> Seen {
        let mut fresh = Seen::default();
        fresh.receive_at(&response(ttl), at);
        let mut carried = Seen::default();
        carried.carry(&fresh, at);
        carried
    }

    #[test]
    fn what_was_heard_lasts_its_ttl_across_silent_rounds() {
        let host = name("master-0.local.").unwrap();
        let t0 = Instant::now();
        let mut carried = heard(10, t0);
        // Rounds in which the publisher is silent (restarting): still there within its TTL.
        carried.carry(&Seen::default(), t0 + Duration::from_secs(9));
        assert_eq!(carried.addresses(&host).len(), 1);
        // An answer renews it.
        let mut again = Seen::default();
        again.receive_at(&response(10), t0 + Duration::from_secs(9));
        carried.carry(&again, t0 + Duration::from_secs(9));
        carried.carry(&Seen::default(), t0 + Duration::from_secs(18));
        assert_eq!(carried.addresses(&host).len(), 1);
        // Past it, gone.
        carried.carry(&Seen::default(), t0 + Duration::from_secs(19));
        assert!(carried.addresses(&host).is_empty());
    }

    #[test]
    fn a_goodbye_removes_what_was_carried_at_once() {
        let host = name("master-0.local.").unwrap();
        let t0 = Instant::now();
        let mut carried = heard(120, t0);
        let mut bye = Seen::default();
        bye.receive_at(&response(0), t0 + Duration::from_secs(1));
        carried.carry(&bye, t0 + Duration::from_secs(1));
        assert!(carried.addresses(&host).is_empty());
    }
}
