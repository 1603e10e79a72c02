//! Browsing: one-shot queries (RFC 6762 5.1, from a port other than 5353, so that every
//! responder answers us directly) and what the answers say, as a node inventory.
//!
//! coredns-mdns semantics: only instances whose name contains the filter count, and the etcd
//! SRV targets are withheld until at least `min_srv` of them are seen.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant, SystemTime};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use ipi_core::inventory::Problem;
use ipi_core::{Inventory, Node, Role};

use crate::key::ClusterKey;
use crate::records::{name, NameError, HOST_TTL, OTHER_TTL};

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

/// Records held at most (a warning and a count when full): some 3,000 for 500 nodes.
pub const MAX_RECORDS: usize = 16_384;
/// Nodes in an inventory at most.
pub const MAX_NODES: usize = 2_048;
/// Names a node may not have: DNS gives them to the VIPs (`api`, `api-int`, the Ingress
/// wildcard's `apps`), so a node of that name would shadow or be shadowed by a VIP.
pub const VIP_NAMES: [&str; 3] = ["api", "api-int", "apps"];

/// What the answers said so far, each record with the source that told it.
///
/// A unique name (a host's addresses, an instance's SRV and TXT) belongs to the source that
/// first told it, and to the addresses that source gave the host (a dual-stack node answers
/// from an IPv4 address and from an IPv6 link-local one), until its records run out or one
/// of them says goodbye: another source may confirm what is held but neither add to it,
/// change it nor say goodbye for it.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// By owner and type (hickory's `Name` compares and hashes without case), so that a
    /// response of hundreds of records is taken in, and the open questions are found, without
    /// a scan of everything seen per record.
    records: HashMap<(Name, RecordType), Vec<Held>>,
    /// Who told each unique name.
    owners: HashMap<Name, IpAddr>,
    /// How many records are held.
    count: usize,
    /// What was refused.
    refused: Refusals,
    /// How long a unique record is held at most after it was last heard, whatever its TTL
    /// (`browse --watch` refreshes what it holds within it: a node that died without a goodbye
    /// leaves within it); none: as long as the TTL says.
    hold: Option<Duration>,
    /// When [`Seen::expire`] last looked for orphans (at most every [`ORPHANS_EVERY`]: they
    /// go at twice the hold, so a second late changes nothing, and a look costs a lookup per
    /// pointer).
    orphans_at: Option<Instant>,
}

/// How often [`Seen::expire`] looks for orphaned pointers and TXT.
const ORPHANS_EVERY: Duration = Duration::from_secs(1);

/// What one response changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Instances whose SRV the response gave or confirmed.
    pub srv: Vec<Name>,
    /// Something was added or removed (not only held longer).
    pub changed: bool,
}

/// One record held.
#[derive(Debug, Clone)]
struct Held {
    record: Record,
    /// [`print`] of its data: a browse of hundreds of nodes holds as many pointers under one
    /// name, and finds the one a response confirms without comparing hundreds of names.
    print: u64,
    /// When its TTL (clamped) runs out.
    until: Instant,
    /// When it was first heard: of two nodes that claim one address, the earlier keeps it.
    since: Instant,
}

/// Records not taken in, by why.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Refusals {
    /// From a source other than the one that owns the name, adding, changing or saying
    /// goodbye for what it holds.
    pub not_owner: u64,
    /// Beyond [`MAX_RECORDS`].
    pub full: u64,
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
    /// The nodes left out, and why (a bad name, no address left).
    pub dropped: Vec<String>,
}

/// The record types unique to one owner (RFC 6762 2; what records.rs probes).
const UNIQUE: [RecordType; 4] = [
    RecordType::A,
    RecordType::AAAA,
    RecordType::SRV,
    RecordType::TXT,
];

fn unique(kind: RecordType) -> bool {
    UNIQUE.contains(&kind)
}

/// RFC 6762 10's TTLs as ceilings: what a sender asks beyond them is cut to them.
fn ceiling(kind: RecordType) -> u32 {
    if matches!(kind, RecordType::A | RecordType::AAAA | RecordType::SRV) {
        HOST_TTL
    } else {
        OTHER_TTL
    }
}

impl Seen {
    /// What holds each unique record at most `hold` after it was last heard.
    pub fn holding(hold: Duration) -> Seen {
        Seen {
            hold: Some(hold),
            ..Seen::default()
        }
    }

    /// Takes in the records of a response from `from` heard at `now` (each lasts its TTL,
    /// clamped, from then; a goodbye removes what it names); says what it changed.
    pub fn receive_at(&mut self, message: &Message, from: IpAddr, now: Instant) -> Taken {
        let mut taken = Taken::default();
        if message.message_type() != MessageType::Response {
            return taken;
        }
        for r in message.answers().iter().chain(message.additionals()) {
            let before = self.count;
            let held = self.take(r, from, now);
            taken.changed |= self.count != before || r.ttl() == 0;
            if held && r.record_type() == RecordType::SRV && r.ttl() > 0 {
                taken.srv.push(r.name().clone());
            }
        }
        taken
    }

    /// What was refused so far.
    pub fn refused(&self) -> Refusals {
        self.refused
    }

    /// Takes in one record; true when it is held (given or confirmed).
    fn take(&mut self, r: &Record, from: IpAddr, now: Instant) -> bool {
        let key = (r.name().clone(), r.record_type());
        let owner = if unique(r.record_type()) {
            Some(r.name().clone())
        } else {
            // A shared pointer goes only by the word of whoever owns what it points at.
            ptr_target(r).filter(|t| self.owners.contains_key(t))
        };
        let by_owner = owner.as_ref().is_none_or(|o| self.speaks_for(o, from));
        let mut life = Duration::from_secs(u64::from(r.ttl().min(ceiling(r.record_type()))));
        if let Some(hold) = self.hold.filter(|_| unique(r.record_type())) {
            life = life.min(hold);
        }
        let until = now + life;
        let print = print(r.data());
        let held = (self.records.get_mut(&key)).and_then(|h| {
            h.iter_mut()
                .find(|k| k.print == print && k.record.data() == r.data())
        });
        match (r.ttl(), held) {
            // Another source confirming what is held keeps it, and changes nothing else.
            (1.., Some(h)) => h.until = h.until.max(until),
            (0, _) | (_, None) if !by_owner => {
                self.refused.not_owner += 1;
                return false;
            }
            (0, _) => self.forget(&key, r.data()),
            (_, None) if self.count >= MAX_RECORDS => {
                self.refused.full += 1;
                return false;
            }
            (_, None) => {
                let held = self.records.entry(key).or_default();
                // An instance has one SRV and one TXT: its owner's new one replaces the old
                // (a publisher signing again, a port changed), as a cache flush would.
                if matches!(r.record_type(), RecordType::SRV | RecordType::TXT) {
                    self.count -= held.len();
                    held.clear();
                }
                held.push(Held {
                    record: r.clone(),
                    print,
                    until,
                    since: now,
                });
                self.count += 1;
                if unique(r.record_type()) {
                    self.owners.entry(r.name().clone()).or_insert(from);
                }
            }
        }
        true
    }

    /// Whether `from` may change what is held for `owner`: nobody owns it yet, or `from` is
    /// its owner or one of the addresses held for its host (itself, or its SRV's target).
    fn speaks_for(&self, owner: &Name, from: IpAddr) -> bool {
        let Some(first) = self.owners.get(owner) else {
            return true;
        };
        let host = self.target(owner).unwrap_or_else(|| owner.clone());
        *first == from || self.addresses(&host).contains(&from)
    }

    fn forget(&mut self, key: &(Name, RecordType), data: &RData) {
        if let Some(held) = self.records.get_mut(key) {
            let before = held.len();
            held.retain(|h| h.record.data() != data);
            self.count -= before - held.len();
            if held.is_empty() {
                self.records.remove(key);
            }
        }
        self.release(&key.0);
    }

    /// A name none of whose unique records is held any more has no owner.
    fn release(&mut self, owner: &Name) {
        if !UNIQUE
            .iter()
            .any(|k| self.records.contains_key(&(owner.clone(), *k)))
        {
            self.owners.remove(owner);
        }
    }

    /// Drops what has outlived its TTL at `now`. What a browser heard lasts as long as its
    /// TTL says, as in an mDNS cache (RFC 6762 10), rather than only until a round in which
    /// its owner was silent (a publisher restarting, an answer lost).
    ///
    /// When holding ([`Seen::holding`]), an instance's pointers and TXT go too once it has had
    /// no SRV for twice the hold (it left without a goodbye; its SRV was asked for meanwhile).
    /// True when anything went.
    pub fn expire(&mut self, now: Instant) -> bool {
        let before = self.count;
        if self.records.values().flatten().any(|h| h.until <= now) {
            for held in self.records.values_mut() {
                held.retain(|h| h.until > now);
            }
        }
        let due =
            (self.orphans_at).is_none_or(|t| now.saturating_duration_since(t) >= ORPHANS_EVERY);
        if let Some(hold) = self.hold.filter(|_| due) {
            self.orphans_at = Some(now);
            self.orphans_expire(now, hold * 2);
        }
        self.records.retain(|_, held| !held.is_empty());
        self.count = self.records.values().map(Vec::len).sum();
        if self.count == before {
            return false;
        }
        let owners: Vec<Name> = self.owners.keys().cloned().collect();
        for o in owners {
            self.release(&o);
        }
        true
    }

    /// Drops the pointers to, and the TXT of, instances without an SRV, first heard more than
    /// `after` ago.
    fn orphans_expire(&mut self, now: Instant, after: Duration) {
        let old = |h: &Held| now.saturating_duration_since(h.since) > after;
        let mut orphans: Vec<((Name, RecordType), Name)> = Vec::new();
        for ((owner, kind), held) in &self.records {
            for h in held.iter().filter(|h| old(h)) {
                let instance = match kind {
                    RecordType::PTR => ptr_target(&h.record),
                    RecordType::TXT => Some(owner.clone()),
                    _ => None,
                };
                if let Some(i) = instance {
                    if !self.records.contains_key(&(i.clone(), RecordType::SRV)) {
                        orphans.push(((owner.clone(), *kind), i));
                    }
                }
            }
        }
        for (key, instance) in orphans {
            if let Some(held) = self.records.get_mut(&key) {
                held.retain(|h| match key.1 {
                    RecordType::PTR => ptr_target(&h.record).as_ref() != Some(&instance),
                    _ => false,
                });
            }
        }
    }

    /// Forgets an instance at once (RFC 6762 10.5, passive observation of failures: its SRV
    /// was asked for twice and nobody answered): its SRV, its TXT and the pointers to it.
    pub fn flush(&mut self, instance: &Name) {
        for kind in [RecordType::SRV, RecordType::TXT] {
            self.records.remove(&(instance.clone(), kind));
        }
        for ((_, kind), held) in &mut self.records {
            if *kind == RecordType::PTR {
                held.retain(|h| ptr_target(&h.record).as_ref() != Some(instance));
            }
        }
        self.records.retain(|_, held| !held.is_empty());
        self.count = self.records.values().map(Vec::len).sum();
        self.release(instance);
    }

    /// When the instance's SRV runs out, if one is held.
    pub fn srv_until(&self, instance: &Name) -> Option<Instant> {
        self.held(instance, RecordType::SRV).map(|h| h.until).max()
    }

    /// When the next record runs out.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.records.values().flatten().map(|h| h.until).min()
    }

    /// The pointers to instances of `kind` held with at least half their TTL left at `now`,
    /// with the TTL left: a query's known answers (RFC 6762 7.1).
    pub fn known_pointers(&self, kind: &Name, now: Instant) -> Vec<Record> {
        self.held(kind, RecordType::PTR)
            .filter_map(|h| {
                let left = h.until.saturating_duration_since(now).as_secs();
                let left = u32::try_from(left).ok()?;
                (left > 0 && left >= h.record.ttl() / 2).then(|| {
                    let mut r = h.record.clone();
                    r.set_ttl(left);
                    r
                })
            })
            .collect()
    }

    /// The instances of `kind` whose names contain `filter`, and the addresses of each's host.
    pub fn instances_with_addresses(&self, kind: &Name, filter: &str) -> Vec<(Name, Vec<IpAddr>)> {
        self.instances(kind, filter)
            .into_iter()
            .map(|i| {
                let a = self
                    .target(&i)
                    .map(|t| self.addresses(&t))
                    .unwrap_or_default();
                (i, a)
            })
            .collect()
    }

    fn held(&self, owner: &Name, kind: RecordType) -> impl Iterator<Item = &Held> {
        self.records
            .get(&(owner.clone(), kind))
            .into_iter()
            .flatten()
    }

    fn data(&self, owner: &Name, kind: RecordType) -> impl Iterator<Item = &RData> {
        self.held(owner, kind).map(|h| h.record.data())
    }

    /// The instances of `kind` whose names contain `filter`, by their pointers.
    pub fn instances(&self, kind: &Name, filter: &str) -> Vec<Name> {
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
        self.addresses_since(host)
            .into_iter()
            .map(|(a, _)| a)
            .collect()
    }

    /// The host's addresses, each with when it was first heard.
    fn addresses_since(&self, host: &Name) -> Vec<(IpAddr, Instant)> {
        let mut a: Vec<(IpAddr, Instant)> = (self.held(host, RecordType::A))
            .chain(self.held(host, RecordType::AAAA))
            .filter_map(|h| Some((h.record.data().ip_addr()?, h.since)))
            .collect();
        a.dedup_by_key(|(a, _)| *a);
        a
    }

    /// The strings of an instance's TXT record (the first held).
    fn txt(&self, instance: &Name) -> Vec<String> {
        let txt = self.data(instance, RecordType::TXT).find_map(|d| match d {
            RData::TXT(t) => Some(t.txt_data()),
            _ => None,
        });
        (txt.into_iter().flatten())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
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
    /// targets when at least `min_srv` instances of [`ETCD_TYPE`] are seen. A node that cannot
    /// be in it (a bad name, every address already another node's) is left out alone, with
    /// the reason in [`Found::dropped`]. With a cluster `key`, only nodes whose instance is
    /// signed with it at most [`crate::key::WINDOW`] from `now`, and of each only its signed
    /// addresses.
    pub fn found(
        &self,
        kind: &Name,
        filter: &str,
        min_srv: usize,
        key: Option<&ClusterKey>,
        now: SystemTime,
    ) -> Result<Found, FoundError> {
        let instances = self.instances(kind, filter);
        let mut unsigned = Vec::new();
        let candidates = self.candidates(&instances, key.map(|k| (k, now)), &mut unsigned);
        let (nodes, mut dropped) = checked(candidates);
        dropped.extend(unsigned);
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
        let inventory = Inventory::new(nodes).map_err(FoundError::Inventory)?;
        Ok(Found {
            inventory,
            etcd,
            instances: instances.len(),
            dropped,
        })
    }

    /// The nodes the instances point at, by name: roles, and addresses with when each was
    /// first heard.
    /// With a key, an instance that is not signed is left out (the reason in `unsigned`).
    fn candidates(
        &self,
        instances: &[Name],
        key: Option<(&ClusterKey, SystemTime)>,
        unsigned: &mut Vec<String>,
    ) -> BTreeMap<String, Candidate> {
        let mut nodes: BTreeMap<String, Candidate> = BTreeMap::new();
        for i in instances {
            let Some(target) = self.target(i) else {
                continue;
            };
            let host = host_label(&target);
            let mut addresses = self.addresses_since(&target);
            if let Some((key, now)) = key {
                match key.verify(&host, &self.txt(i), now) {
                    Ok(signed) => addresses.retain(|(a, _)| signed.contains(a)),
                    Err(why) => {
                        unsigned.push(format!("{host}: {why} (cluster key)"));
                        continue;
                    }
                }
            }
            if addresses.is_empty() {
                continue;
            }
            let entry = nodes.entry(host).or_default();
            entry.roles.extend(self.role(i));
            for (a, since) in addresses {
                if !entry.addresses.iter().any(|(b, _)| *b == a) {
                    entry.addresses.push((a, since));
                }
            }
        }
        nodes
    }
}

/// A node as the answers give it, before the inventory's rules.
#[derive(Debug, Default)]
struct Candidate {
    roles: BTreeSet<Role>,
    addresses: Vec<(IpAddr, Instant)>,
}

/// The nodes that may be in an inventory, and a reason for each that may not: a name that is
/// not a DNS label or is one of the [`VIP_NAMES`]; past [`MAX_NODES`]; an address another node
/// was heard with first is not given to a second (and a node left with none is dropped).
fn checked(candidates: BTreeMap<String, Candidate>) -> (Vec<Node>, Vec<String>) {
    let mut dropped = Vec::new();
    let mut first: HashMap<IpAddr, (Instant, &str)> = HashMap::new();
    let mut named: Vec<(&String, &Candidate)> = Vec::new();
    for (n, c) in &candidates {
        match ipi_core::name::check_label(n) {
            Err(e) => dropped.push(format!("{n}: not a node name: {e}")),
            Ok(()) if VIP_NAMES.contains(&n.as_str()) => {
                dropped.push(format!("{n}: a name DNS gives to a VIP"));
            }
            Ok(()) => named.push((n, c)),
        }
    }
    for (n, c) in &named {
        for (a, since) in &c.addresses {
            let e = first.entry(*a).or_insert((*since, n.as_str()));
            if (*since, n.as_str()) < *e {
                *e = (*since, n.as_str());
            }
        }
    }
    let mut nodes = Vec::new();
    for (n, c) in named {
        let (addresses, taken): (Vec<_>, Vec<_>) = (c.addresses.iter().map(|(a, _)| *a))
            .partition(|a| first.get(a).is_some_and(|(_, o)| *o == n.as_str()));
        for a in &taken {
            dropped.push(format!("{n}: {a} is {}'s", first[a].1));
        }
        if addresses.is_empty() {
            dropped.push(format!("{n}: no address of its own"));
        } else if nodes.len() >= MAX_NODES {
            dropped.push(format!("{n}: past {MAX_NODES} nodes"));
        } else {
            nodes.push(Node {
                name: n.clone(),
                roles: c.roles.clone(),
                addresses,
            });
        }
    }
    (nodes, dropped)
}

/// What tells records of one name and type apart at a glance: a hash of a pointer's target
/// (hashed without case, as names compare); 0 for the others (one or a few per name).
fn print(data: &RData) -> u64 {
    use std::hash::{Hash, Hasher};
    match data {
        RData::PTR(p) => {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            p.0.hash(&mut h);
            h.finish()
        }
        _ => 0,
    }
}

/// What a PTR record points at.
fn ptr_target(r: &Record) -> Option<Name> {
    match r.data() {
        RData::PTR(p) => Some(p.0.clone()),
        _ => None,
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
    use hickory_proto::rr::rdata::{PTR, SRV, TXT};

    const NODE: &str = "192.0.2.10";
    const ATTACKER: &str = "192.0.2.66";

    fn ip(a: &str) -> IpAddr {
        a.parse().unwrap()
    }

    fn response(records: Vec<Record>) -> Message {
        let mut m = Message::new();
        m.set_message_type(MessageType::Response);
        for r in records {
            m.add_answer(r);
        }
        m
    }

    fn a(host: &str, address: &str, ttl: u32) -> Record {
        let n = name(&format!("{host}.local.")).unwrap();
        Record::from_rdata(n, ttl, RData::from(ip(address)))
    }

    /// A whole node as its publisher answers: PTR, SRV, TXT and its address.
    fn node(host: &str, address: &str, ttl: u32) -> Vec<Record> {
        let kind = name("_workstation._tcp.local.").unwrap();
        let instance = name(&format!("lab-{host}._workstation._tcp.local.")).unwrap();
        let target = name(&format!("{host}.local.")).unwrap();
        vec![
            Record::from_rdata(kind, ttl, RData::PTR(PTR(instance.clone()))),
            Record::from_rdata(
                instance.clone(),
                ttl,
                RData::SRV(SRV::new(0, 0, 42424, target)),
            ),
            Record::from_rdata(
                instance,
                ttl,
                RData::TXT(TXT::new(vec!["role=master".into()])),
            ),
            a(host, address, ttl),
        ]
    }

    fn inventory(seen: &Seen) -> Found {
        let kind = name("_workstation._tcp.local.").unwrap();
        seen.found(&kind, "lab", 0, None, SystemTime::now())
            .unwrap()
    }

    fn addresses_of(seen: &Seen, host: &str) -> Vec<IpAddr> {
        seen.addresses(&name(&format!("{host}.local.")).unwrap())
    }

    #[test]
    fn what_was_heard_lasts_its_ttl_across_silent_rounds() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(vec![a("master-0", NODE, 10)]), ip(NODE), t0);
        // Rounds in which the publisher is silent (restarting): still there within its TTL.
        seen.expire(t0 + Duration::from_secs(9));
        assert_eq!(addresses_of(&seen, "master-0").len(), 1);
        // An answer renews it.
        let at = t0 + Duration::from_secs(9);
        seen.receive_at(&response(vec![a("master-0", NODE, 10)]), ip(NODE), at);
        seen.expire(t0 + Duration::from_secs(18));
        assert_eq!(addresses_of(&seen, "master-0").len(), 1);
        // Past it, gone.
        seen.expire(t0 + Duration::from_secs(19));
        assert!(addresses_of(&seen, "master-0").is_empty());
    }

    #[test]
    fn ttls_past_rfc_6762s_are_cut_to_them() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(node("master-0", NODE, u32::MAX)), ip(NODE), t0);
        seen.expire(t0 + Duration::from_secs(u64::from(HOST_TTL) + 1));
        assert!(addresses_of(&seen, "master-0").is_empty(), "A past 120 s");
        assert!(inventory(&seen).inventory.nodes().is_empty());
    }

    #[test]
    fn a_goodbye_counts_only_from_the_source_that_told_the_name() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(node("master-0", NODE, 120)), ip(NODE), t0);
        // Another host's goodbye for master-0's address, instance and pointer: nothing goes.
        seen.receive_at(&response(node("master-0", NODE, 0)), ip(ATTACKER), t0);
        assert_eq!(inventory(&seen).inventory.nodes().len(), 1);
        assert_eq!(seen.refused().not_owner, 4);
        // Its own goodbye: gone at once.
        seen.receive_at(&response(node("master-0", NODE, 0)), ip(NODE), t0);
        assert!(inventory(&seen).inventory.nodes().is_empty());
        assert!(addresses_of(&seen, "master-0").is_empty());
    }

    #[test]
    fn another_source_may_confirm_a_name_but_not_add_to_it() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(node("master-0", NODE, 120)), ip(NODE), t0);
        // The attacker's address under master-0's name: refused.
        let forged = response(vec![a("master-0", ATTACKER, 120)]);
        seen.receive_at(&forged, ip(ATTACKER), t0);
        assert_eq!(addresses_of(&seen, "master-0"), [ip(NODE)]);
        // The same node over IPv6 (another source) confirms what it holds: kept longer.
        let later = t0 + Duration::from_secs(100);
        seen.receive_at(
            &response(vec![a("master-0", NODE, 120)]),
            ip("fe80::10"),
            later,
        );
        seen.expire(t0 + Duration::from_secs(150));
        assert_eq!(addresses_of(&seen, "master-0"), [ip(NODE)]);
        // The positive control: the same record from master-0 itself is taken.
        let own = response(vec![a("master-0", ATTACKER, 120)]);
        seen.receive_at(&own, ip(NODE), later);
        assert_eq!(addresses_of(&seen, "master-0").len(), 2);
    }

    #[test]
    fn a_dual_stack_node_speaks_for_itself_from_either_family() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        // First heard over IPv6, from its link-local address, with its IPv4 address.
        seen.receive_at(&response(node("master-0", NODE, 120)), ip("fe80::10"), t0);
        // From that IPv4 address: a new address, then a goodbye, are its own word.
        let more = response(vec![a("master-0", "192.0.2.77", 120)]);
        seen.receive_at(&more, ip(NODE), t0);
        assert_eq!(addresses_of(&seen, "master-0").len(), 2);
        seen.receive_at(&response(node("master-0", NODE, 0)), ip(NODE), t0);
        assert!(inventory(&seen).inventory.nodes().is_empty());
    }

    #[test]
    fn an_instances_owner_replaces_its_srv_and_txt() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(node("master-0", NODE, 120)), ip(NODE), t0);
        let instance = name("lab-master-0._workstation._tcp.local.").unwrap();
        let txt = TXT::new(vec!["role=worker".into()]);
        let again = Record::from_rdata(instance.clone(), 120, RData::TXT(txt));
        seen.receive_at(&response(vec![again]), ip(NODE), t0);
        assert_eq!(seen.txt(&instance), ["role=worker"]);
        assert_eq!(seen.count, 4);
    }

    #[test]
    fn a_bad_node_is_dropped_alone() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(node("master-0", NODE, 120)), ip(NODE), t0);
        let later = t0 + Duration::from_secs(1);
        // A second name for master-0's address, and a node named as the API VIP.
        seen.receive_at(&response(node("master-7", NODE, 120)), ip(ATTACKER), later);
        seen.receive_at(&response(node("api", ATTACKER, 120)), ip(ATTACKER), later);
        let found = inventory(&seen);
        let names: Vec<&str> = (found.inventory.nodes().iter())
            .map(|n| n.name.as_str())
            .collect();
        assert_eq!(names, ["master-0"]);
        assert_eq!(found.dropped.len(), 3, "{:?}", found.dropped);
        assert!(found.dropped.iter().any(|d| d.contains("VIP")));
    }

    /// master-0's records as its publisher sends them, signed with `key` at `at`.
    fn signed_node(key: &ClusterKey, address: &str, at: SystemTime) -> Vec<Record> {
        let mut p =
            crate::config::openshift("lab", "master-0", Role::Master, &[ip(address)]).unwrap();
        key.sign(&mut p, at);
        p.records().unwrap().into_iter().map(|o| o.record).collect()
    }

    #[test]
    fn with_a_cluster_key_only_signed_nodes_and_their_signed_addresses_count() {
        let key = ClusterKey::new(b"0123456789abcdef", std::path::Path::new("k")).unwrap();
        let (t0, now) = (Instant::now(), SystemTime::now());
        let kind = name("_workstation._tcp.local.").unwrap();
        let found =
            |seen: &Seen, k: Option<&ClusterKey>| seen.found(&kind, "lab", 0, k, now).unwrap();
        let mut seen = Seen::default();
        seen.receive_at(&response(signed_node(&key, NODE, now)), ip(NODE), t0);
        // An address master-0's own source gives but did not sign: not taken under the key.
        seen.receive_at(
            &response(vec![a("master-0", "192.0.2.77", 120)]),
            ip(NODE),
            t0,
        );
        // A plausible new master, unsigned, from another host.
        seen.receive_at(&response(node("master-7", ATTACKER, 120)), ip(ATTACKER), t0);
        let with = found(&seen, Some(&key));
        assert_eq!(with.inventory.nodes().len(), 1, "{:?}", with.dropped);
        assert_eq!(with.inventory.nodes()[0].addresses, [ip(NODE)]);
        assert!(
            with.dropped
                .iter()
                .any(|d| d.starts_with("master-7: no signature")),
            "{:?}",
            with.dropped
        );
        // Without the key, both are taken (the control).
        assert_eq!(found(&seen, None).inventory.nodes().len(), 2);
        // Signed long ago: refused.
        let mut old = Seen::default();
        let then = now - crate::key::WINDOW - Duration::from_secs(60);
        old.receive_at(&response(signed_node(&key, NODE, then)), ip(NODE), t0);
        assert!(found(&old, Some(&key)).inventory.nodes().is_empty());
    }

    #[test]
    fn records_past_the_cap_are_refused_and_counted() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        let many: Vec<Record> = (0..MAX_RECORDS + 10)
            .map(|i| a(&format!("h{i}"), NODE, 120))
            .collect();
        seen.receive_at(&response(many), ip(NODE), t0);
        assert_eq!(seen.count, MAX_RECORDS);
        assert_eq!(seen.refused().full, 10);
        // Once they run out, room again.
        seen.expire(t0 + Duration::from_secs(121));
        seen.receive_at(&response(vec![a("master-0", NODE, 120)]), ip(NODE), t0);
        assert_eq!(seen.count, 1);
    }

    #[test]
    fn a_pointer_told_again_in_other_case_renews_the_one_held() {
        let t0 = Instant::now();
        let mut seen = Seen::default();
        seen.receive_at(&response(node("master-0", NODE, 120)), ip(NODE), t0);
        let kind = name("_workstation._tcp.local.").unwrap();
        let shouted = Name::from_ascii("LAB-MASTER-0._workstation._tcp.local.").unwrap();
        assert_ne!(shouted.to_string(), shouted.to_lowercase().to_string());
        let again = Record::from_rdata(kind.clone(), 120, RData::PTR(PTR(shouted)));
        let later = t0 + Duration::from_secs(100);
        seen.receive_at(&response(vec![again]), ip(NODE), later);
        assert_eq!(seen.held(&kind, RecordType::PTR).count(), 1);
        // Renewed, not added: still held past the first one's TTL.
        seen.expire(t0 + Duration::from_secs(130));
        assert_eq!(seen.held(&kind, RecordType::PTR).count(), 1);
    }
}
