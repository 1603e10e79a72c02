//! The RFC 6762 responder as plain data, driven by the caller's clock: probing (three probes
//! 250 ms apart after a random wait of up to 250 ms, simultaneous-probe tie-breaking),
//! announcing (twice, a second apart), answering (QM, QU and legacy unicast, known-answer
//! suppression, at most one multicast of a record per second, the cache-flush bit on unique
//! records), conflicts, and the goodbye.
//!
//! It never renames: a lost name is a [`Responder::conflict`] for the caller to act on. A
//! conflict counts only in a multicast response (RFC 6762 9: every host on the link hears the
//! same); once the name is established, it first probes again, and the name is lost only to a
//! host that answers that probe. Unicast answers to one querier are rate-limited.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, Record, RecordType};
use hickory_proto::serialize::binary::BinEncodable;

use crate::link::{Arrival, PORT};
use crate::records::{answers, unique_names, Owned};

/// Time between probes, and the longest random wait before the first.
const PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// Probes sent before a name is ours.
const PROBES: u8 = 3;
/// Announcements, and the time between them.
const ANNOUNCEMENTS: u8 = 2;
const ANNOUNCE_INTERVAL: Duration = Duration::from_secs(1);
/// How long a loser of a simultaneous probe waits before probing again (RFC 6762 8.2).
const LOST_TIEBREAK_WAIT: Duration = Duration::from_secs(1);
/// The TTL of answers to legacy unicast queries.
const LEGACY_TTL: u32 = 10;
/// Unicast answers (QU and legacy) to one querier in a second, at most: a browser asking
/// about 200 instances of one node sends some 50 queries at once; a host that forges queries
/// to make us a reflector gets no more than this.
const UNICAST_PER_SECOND: u32 = 100;
/// Queriers whose unicast answers are counted at once, at most (more are not answered until
/// the second of the others is over).
const QUERIERS: usize = 4096;

/// How long a query whose known answers go on in more packets (TC) waits for them, at most
/// (RFC 6762 7.2: 400-500 ms).
const GATHER_WAIT: Duration = Duration::from_millis(400);
/// Queriers whose known answers are gathered at once, at most (past it a truncated query is
/// answered at once, as if whole).
const GATHERING: usize = 256;
/// Known answers gathered from one querier at most.
const GATHERED_RECORDS: usize = 4096;

/// An established name is probed again after a claim at most this often.
pub const REPROBE_GAP: Duration = Duration::from_secs(10);

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum To {
    /// The mDNS groups of the interface (224.0.0.251 and ff02::fb, port 5353).
    Multicast,
    /// The mDNS group of one family (`v6`): an answer goes to the family its query came in on,
    /// as avahi answers.
    Group {
        /// IPv6 (ff02::fb) rather than IPv4 (224.0.0.251).
        v6: bool,
    },
    /// One querier.
    Unicast(SocketAddr),
}

/// A message to send.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// Where.
    pub to: To,
    /// What.
    pub message: Message,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Probing { sent: u8, next: Instant },
    Announcing { sent: u8, next: Instant },
    Running,
    Conflict(String),
}

/// One node's responder.
#[derive(Debug)]
pub struct Responder {
    records: Vec<Owned>,
    /// The records by owner name (hashing and comparing without regard to case).
    index: HashMap<Name, Vec<usize>>,
    /// The unique names, in order.
    unique: Vec<Name>,
    phase: Phase,
    last_multicast: Vec<Option<Instant>>,
    delayed: Vec<(Instant, Outgoing)>,
    random: u64,
    /// Unicast answers per querier in the current second: (the second's start, answers).
    unicast: HashMap<IpAddr, (Instant, u32)>,
    /// Truncated queries whose known answers are still coming, by querier: when to answer at
    /// the latest, and the query so far.
    gathering: HashMap<SocketAddr, (Instant, Message)>,
    /// When an established name was last probed again after a claim.
    reprobed: Option<Instant>,
    /// Conflicts that sent an established name back to probing, and unicast answers not
    /// sent over the rate limit.
    counts: Counts,
}

/// What the responder refused or did against another host, for the log and the tests.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// A multicast response claimed an established name: probed again.
    pub reprobes: u64,
    /// A unicast response claimed one of our names: ignored (not heard by the link).
    pub unicast_claims: u64,
    /// Unicast answers not sent (the querier's rate limit).
    pub rate_limited: u64,
    /// Claims on an established name within [`REPROBE_GAP`] of the last probe again: not
    /// probed again for.
    pub reprobes_held: u64,
}

impl Responder {
    /// Starts probing for `records` after a random wait of up to 250 ms; `seed` feeds the
    /// random waits (the process id and the time will do).
    pub fn new(records: Vec<Owned>, now: Instant, seed: u64) -> Responder {
        let mut r = Responder {
            last_multicast: vec![None; records.len()],
            index: HashMap::new(),
            unique: Vec::new(),
            records,
            phase: Phase::Running,
            delayed: Vec::new(),
            random: seed | 1,
            unicast: HashMap::new(),
            gathering: HashMap::new(),
            reprobed: None,
            counts: Counts::default(),
        };
        r.reindex();
        let wait = r.random_duration(PROBE_INTERVAL);
        r.phase = Phase::Probing {
            sent: 0,
            next: now + wait,
        };
        r
    }

    /// What is published.
    pub fn records(&self) -> &[Owned] {
        &self.records
    }

    /// The conflict that lost us a name, if any.
    pub fn conflict(&self) -> Option<&str> {
        match &self.phase {
            Phase::Conflict(why) => Some(why),
            _ => None,
        }
    }

    /// What was refused or done against other hosts so far.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Probing and announcing are done.
    pub fn established(&self) -> bool {
        self.phase == Phase::Running
    }

    /// Publishes `records` instead (an address changed, the link came back): goodbyes for
    /// the records that went, then probing and announcing again.
    pub fn replace(&mut self, records: Vec<Owned>, now: Instant) -> Vec<Outgoing> {
        let gone: Vec<Owned> = self
            .records
            .iter()
            .filter(|o| !records.contains(o))
            .cloned()
            .collect();
        self.records = records;
        self.reindex();
        self.last_multicast = vec![None; self.records.len()];
        self.delayed.clear();
        self.phase = Phase::Probing { sent: 0, next: now };
        if gone.is_empty() {
            Vec::new()
        } else {
            vec![goodbye_of(&gone)]
        }
    }

    /// Probes again after a lost conflict, when the caller chose to wait it out.
    pub fn retry(&mut self, now: Instant) {
        self.phase = Phase::Probing { sent: 0, next: now };
    }

    /// When [`poll`](Self::poll) next has something to do.
    pub fn next_timeout(&self) -> Option<Instant> {
        let phase = match &self.phase {
            Phase::Probing { next, .. } | Phase::Announcing { next, .. } => Some(*next),
            _ => None,
        };
        let delayed = (self.delayed.iter().map(|(t, _)| *t))
            .chain(self.gathering.values().map(|(t, _)| *t))
            .min();
        match (phase, delayed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What is due at `now`: probes, announcements, delayed answers.
    pub fn poll(&mut self, now: Instant) -> Vec<Outgoing> {
        let mut out = Vec::new();
        match self.phase.clone() {
            Phase::Probing { sent, next } if now >= next => {
                if sent < PROBES {
                    out.push(self.probe(sent == 0));
                    self.phase = Phase::Probing {
                        sent: sent + 1,
                        next: now + PROBE_INTERVAL,
                    };
                } else {
                    self.phase = Phase::Announcing { sent: 0, next: now };
                    return self.poll(now);
                }
            }
            Phase::Announcing { sent, next } if now >= next => {
                out.push(self.announcement(now));
                self.phase = if sent + 1 < ANNOUNCEMENTS {
                    Phase::Announcing {
                        sent: sent + 1,
                        next: now + ANNOUNCE_INTERVAL,
                    }
                } else {
                    Phase::Running
                };
            }
            _ => {}
        }
        let (due, later): (Vec<_>, Vec<_>) = self.delayed.drain(..).partition(|(t, _)| *t <= now);
        self.delayed = later;
        out.extend(due.into_iter().map(|(_, o)| o));
        let gathered: Vec<SocketAddr> = (self.gathering.iter())
            .filter(|(_, (t, _))| *t <= now)
            .map(|(from, _)| *from)
            .collect();
        for from in gathered {
            if let Some((_, m)) = self.gathering.remove(&from) {
                out.extend(self.answer(&m, from, now));
            }
        }
        out
    }

    /// All records with TTL 0, to send on shutdown.
    pub fn goodbye(&self) -> Outgoing {
        goodbye_of(&self.records)
    }

    /// Handles a message that arrived as `arrival` says; returns what to send. The caller
    /// has checked that it came from the link ([`crate::link::Link`]).
    pub fn receive(&mut self, message: &Message, arrival: &Arrival, now: Instant) -> Vec<Outgoing> {
        if matches!(self.phase, Phase::Conflict(_)) {
            return Vec::new();
        }
        match message.message_type() {
            MessageType::Response => {
                // RFC 6762 6: responses from another port are not mDNS.
                if arrival.from.port() == PORT {
                    self.on_response(message, arrival, now);
                }
                Vec::new()
            }
            MessageType::Query => {
                if let Phase::Probing { .. } = self.phase {
                    self.tiebreak(message, now);
                    return Vec::new();
                }
                match self.gather(message, arrival.from, now) {
                    Gathered::Whole => self.answer(message, arrival.from, now),
                    Gathered::Waiting => Vec::new(),
                    Gathered::Done(m) => self.answer(&m, arrival.from, now),
                }
            }
        }
    }

    /// RFC 6762 7.2: a query with the TC bit has more known answers in the packets that follow
    /// from the same querier (without questions); it is answered once the last (without TC)
    /// is in, or [`GATHER_WAIT`] after it began.
    fn gather(&mut self, message: &Message, from: SocketAddr, now: Instant) -> Gathered {
        let continues = message.queries().is_empty() && self.gathering.contains_key(&from);
        if !continues && !message.truncated() {
            return Gathered::Whole;
        }
        if !continues {
            if self.gathering.len() >= GATHERING {
                return Gathered::Whole;
            }
            // A new query from a querier replaces what it had not finished.
            let wait = GATHER_WAIT + self.random_duration(Duration::from_millis(100));
            self.gathering.insert(from, (now + wait, message.clone()));
        } else if let Some((_, m)) = self.gathering.get_mut(&from) {
            for r in message.answers() {
                if m.answers().len() < GATHERED_RECORDS {
                    m.add_answer(r.clone());
                }
            }
        }
        if message.truncated() {
            return Gathered::Waiting;
        }
        match self.gathering.remove(&from) {
            Some((_, m)) => Gathered::Done(m),
            None => Gathered::Whole,
        }
    }

    /// A response that claims one of our names: lost while probing; once established, a
    /// reason to probe again (RFC 6762 9); not a claim at all when unicast to us alone, which
    /// no other host on the link heard.
    fn on_response(&mut self, message: &Message, arrival: &Arrival, now: Instant) {
        let probing = matches!(self.phase, Phase::Probing { .. });
        let Some(why) = self.claim(message, probing) else {
            return;
        };
        let from = arrival.from;
        if !arrival.multicast() {
            self.counts.unicast_claims += 1;
            tracing::warn!(
                "{from}: a unicast response {why}: ignored (only a multicast one is a conflict)"
            );
        } else if probing {
            self.phase = Phase::Conflict(why);
        } else if self
            .reprobed
            .is_some_and(|t| now.duration_since(t) < REPROBE_GAP)
        {
            // A host that claims our name over and over would keep us probing, and so silent:
            // the browsers' refreshes go unanswered and the node leaves every inventory.
            self.counts.reprobes_held += 1;
            tracing::debug!("{from}: {why}: probed again less than {REPROBE_GAP:?} ago");
        } else {
            self.counts.reprobes += 1;
            self.reprobed = Some(now);
            tracing::warn!("{from}: {why}: probing again before giving the name up");
            self.delayed.clear();
            self.phase = Phase::Probing { sent: 0, next: now };
        }
    }

    fn reindex(&mut self) {
        self.index.clear();
        for (i, o) in self.records.iter().enumerate() {
            self.index
                .entry(o.record.name().clone())
                .or_default()
                .push(i);
        }
        self.unique = unique_names(&self.records);
    }

    /// The indices of the records owned by `name`.
    fn named(&self, name: &Name) -> impl Iterator<Item = usize> + '_ {
        self.index.get(name).into_iter().flatten().copied()
    }

    fn random_duration(&mut self, max: Duration) -> Duration {
        // xorshift64: enough to spread waits, no more.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        max.mul_f64((self.random % 1000) as f64 / 1000.0)
    }

    fn unique_records<'a>(&'a self, name: &'a Name) -> impl Iterator<Item = &'a Record> + 'a {
        self.named(name)
            .map(|i| &self.records[i])
            .filter(|o| o.unique)
            .map(|o| &o.record)
    }

    fn probe(&self, unicast: bool) -> Outgoing {
        let mut m = Message::new();
        m.set_message_type(MessageType::Query)
            .set_op_code(OpCode::Query);
        for n in self.unique.clone() {
            let mut q = Query::query(n, RecordType::ANY);
            q.set_mdns_unicast_response(unicast);
            m.add_query(q);
        }
        for o in self.records.iter().filter(|o| o.unique) {
            m.add_name_server(o.record.clone());
        }
        Outgoing {
            to: To::Multicast,
            message: m,
        }
    }

    fn announcement(&mut self, now: Instant) -> Outgoing {
        let mut m = response();
        for (i, o) in self.records.iter().enumerate() {
            m.add_answer(flagged(o));
            self.last_multicast[i] = Some(now);
        }
        Outgoing {
            to: To::Multicast,
            message: m,
        }
    }

    /// What a response that claims one of our unique names with other data claims (during
    /// probing: any record with the name at all, RFC 6762 8.1 and 9).
    fn claim(&self, message: &Message, probing: bool) -> Option<String> {
        // Goodbyes (TTL 0) claim nothing, ours from before an address change included.
        for r in message
            .answers()
            .iter()
            .chain(message.additionals())
            .filter(|r| r.ttl() > 0)
        {
            let ours: Vec<&Record> = self.unique_records(r.name()).collect();
            if ours.is_empty() {
                continue;
            }
            let same_type: Vec<&&Record> = ours
                .iter()
                .filter(|o| o.record_type() == r.record_type())
                .collect();
            let consistent = if probing {
                same_type.iter().any(|o| o.data() == r.data())
            } else {
                same_type.is_empty() || same_type.iter().any(|o| o.data() == r.data())
            };
            if !consistent {
                return Some(format!(
                    "another host answers for {} ({} {})",
                    r.name(),
                    r.record_type(),
                    r.data()
                ));
            }
        }
        None
    }

    /// Whether one more unicast answer may go to `to` at `now` (and counts it).
    fn unicast_allowed(&mut self, to: IpAddr, now: Instant) -> bool {
        let second = Duration::from_secs(1);
        if self.unicast.len() >= QUERIERS && !self.unicast.contains_key(&to) {
            self.unicast
                .retain(|_, (start, _)| now.duration_since(*start) < second);
        }
        if self.unicast.len() >= QUERIERS && !self.unicast.contains_key(&to) {
            return false;
        }
        let (start, sent) = self.unicast.entry(to).or_insert((now, 0));
        if now.duration_since(*start) >= second {
            (*start, *sent) = (now, 0);
        }
        *sent += 1;
        *sent <= UNICAST_PER_SECOND
    }

    /// Simultaneous probes (RFC 6762 8.2): the lexicographically later authority data wins;
    /// the loser waits a second and probes again. Data we hold ourselves is our own probe.
    fn tiebreak(&mut self, message: &Message, now: Instant) {
        for n in &self.unique {
            let mut theirs: Vec<Vec<u8>> = message
                .name_servers()
                .iter()
                .filter(|r| r.name() == n)
                .map(sort_key)
                .collect();
            if theirs.is_empty() {
                continue;
            }
            let mut ours: Vec<Vec<u8>> = self.unique_records(n).map(sort_key).collect();
            // Records we hold ourselves are our own probe coming back (a big probe is split
            // over packets, so a part may carry only some of them): no contest.
            if theirs.iter().all(|t| ours.contains(t)) {
                continue;
            }
            theirs.sort();
            ours.sort();
            if ours.cmp(&theirs) == Ordering::Less {
                tracing::warn!("another host probes for {n} with other data and wins the tie-break: probing again in a second");
                self.phase = Phase::Probing {
                    sent: 0,
                    next: now + LOST_TIEBREAK_WAIT,
                };
                return;
            }
        }
    }

    fn answer(&mut self, message: &Message, from: SocketAddr, now: Instant) -> Vec<Outgoing> {
        let legacy = from.port() != PORT;
        let mut chosen: Vec<usize> = Vec::new();
        let mut taken = vec![false; self.records.len()];
        let mut unicast = legacy;
        let mut defending = false;
        for q in message.queries() {
            let mut matched = false;
            for i in self.named(q.name()) {
                let o = &self.records[i];
                if answers(&o.record, q.name(), q.query_type())
                    && !taken[i]
                    && !known(message, &o.record)
                {
                    taken[i] = true;
                    chosen.push(i);
                    matched = true;
                }
            }
            if matched {
                unicast |= q.mdns_unicast_response();
                defending |= !message.name_servers().is_empty();
            }
        }
        if chosen.is_empty() {
            return Vec::new();
        }
        // At most one multicast of a record per second (a quarter of that when defending a
        // name against a probe).
        let gap = if defending {
            PROBE_INTERVAL
        } else {
            Duration::from_secs(1)
        };
        if !unicast {
            chosen.retain(|&i| self.last_multicast[i].is_none_or(|t| now.duration_since(t) >= gap));
            if chosen.is_empty() {
                return Vec::new();
            }
        }
        // Refused before the answer is built: a flood of forged queries costs a lookup each.
        if unicast && !self.unicast_allowed(from.ip(), now) {
            self.counts.rate_limited += 1;
            return Vec::new();
        }
        let mut m = response();
        if legacy {
            // Legacy unicast: the querier's id and question, short TTLs, no mDNS bits.
            m.set_id(message.id());
            for q in message.queries() {
                m.add_query(q.clone());
            }
        }
        let shared_only = chosen.iter().all(|&i| !self.records[i].unique);
        for &i in &chosen {
            m.add_answer(self.on_wire(i, legacy));
            if !unicast {
                self.last_multicast[i] = Some(now);
            }
        }
        for i in self.additionals(&chosen) {
            m.add_additional(self.on_wire(i, legacy));
        }
        let to = if unicast {
            To::Unicast(from)
        } else {
            To::Group { v6: from.is_ipv6() }
        };
        let out = Outgoing { to, message: m };
        if shared_only && !legacy && !unicast {
            // Shared answers wait 20-120 ms, so that answers from many hosts spread out.
            let wait = Duration::from_millis(20) + self.random_duration(Duration::from_millis(100));
            self.delayed.push((now + wait, out));
            return Vec::new();
        }
        vec![out]
    }

    fn on_wire(&self, i: usize, legacy: bool) -> Record {
        let o = &self.records[i];
        if legacy {
            let mut r = o.record.clone();
            r.set_ttl(r.ttl().min(LEGACY_TTL));
            r
        } else {
            flagged(o)
        }
    }

    /// RFC 6763 12: with a PTR, the instance's SRV and TXT and the target's addresses; with an
    /// SRV, the target's addresses, and the pointers to its instance (a browser that missed
    /// our announcements learns the instance from the refresh another browser asked for).
    fn additionals(&self, chosen: &[usize]) -> Vec<usize> {
        use hickory_proto::rr::RData;
        let mut taken = vec![false; self.records.len()];
        let mut names: Vec<Name> = Vec::new();
        let mut out: Vec<usize> = Vec::new();
        for &i in chosen {
            taken[i] = true;
        }
        for &i in chosen {
            match self.records[i].record.data() {
                RData::PTR(p) => names.push(p.0.clone()),
                RData::SRV(s) => {
                    names.push(s.target().clone());
                    let instance = self.records[i].record.name();
                    let pointers = (self.records.iter().enumerate()).filter(|(k, o)| {
                        !taken[*k] && matches!(o.record.data(), RData::PTR(p) if p.0 == *instance)
                    });
                    out.extend(pointers.map(|(k, _)| k).collect::<Vec<_>>());
                }
                _ => {}
            }
            for &k in &out {
                taken[k] = true;
            }
        }
        let mut k = 0;
        while k < names.len() {
            let found: Vec<usize> = self.named(&names[k]).filter(|&i| !taken[i]).collect();
            for i in found {
                taken[i] = true;
                out.push(i);
                if let RData::SRV(s) = self.records[i].record.data() {
                    names.push(s.target().clone());
                }
            }
            k += 1;
        }
        out
    }
}

/// What [`Responder::gather`] made of a query packet.
enum Gathered {
    /// Not part of a truncated query: answer it as it is.
    Whole,
    /// More known answers are coming.
    Waiting,
    /// The last packet came: the query with every known answer.
    Done(Message),
}

/// Known-answer suppression (RFC 6762 7.1): the querier already has it with at least half
/// our TTL left.
fn known(message: &Message, ours: &Record) -> bool {
    message
        .answers()
        .iter()
        .any(|k| k.name() == ours.name() && k.data() == ours.data() && k.ttl() >= ours.ttl() / 2)
}

fn response() -> Message {
    let mut m = Message::new();
    m.set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_authoritative(true);
    m
}

fn flagged(o: &Owned) -> Record {
    let mut r = o.record.clone();
    r.set_mdns_cache_flush(o.unique);
    r
}

fn goodbye_of(records: &[Owned]) -> Outgoing {
    let mut m = response();
    for o in records {
        let mut r = flagged(o);
        r.set_ttl(0);
        m.add_answer(r);
    }
    Outgoing {
        to: To::Multicast,
        message: m,
    }
}

/// The largest datagram sent: what fits in a 1500-byte Ethernet frame under IPv6 and UDP.
pub const MAX_PACKET: usize = 1400;

/// `message` (already encoded as `encoded`) as datagrams of at most [`MAX_PACKET`] bytes: the
/// answers (and a probe's authority records) spread over as many as it takes, each with the
/// header and questions; additional records go where there is room, and are left out where
/// there is not (they are optional).
pub fn packets(message: &Message, encoded: &[u8]) -> Vec<Vec<u8>> {
    if encoded.len() <= MAX_PACKET {
        return vec![encoded.to_vec()];
    }
    // A response repeats its questions (a legacy answer echoes one) in every packet; a probe,
    // which may ask for hundreds of names, spreads them like its records.
    let spread_questions = message.message_type() == MessageType::Query;
    let fresh = || {
        let mut m = Message::new();
        m.set_id(message.id())
            .set_message_type(message.message_type())
            .set_op_code(message.op_code())
            .set_authoritative(message.authoritative());
        if !spread_questions {
            for q in message.queries() {
                m.add_query(q.clone());
            }
        }
        m
    };
    // Sizes are counted without name compression: each item is encoded once, and a packet
    // only shrinks when compressed.
    let len = |b: Result<Vec<u8>, _>| b.map_or(MAX_PACKET, |b: Vec<u8>| b.len());
    let header = 12
        + if spread_questions {
            0
        } else {
            message.queries().iter().map(|q| len(q.to_bytes())).sum()
        };
    enum Item<'a> {
        Question(&'a Query),
        Answer(&'a Record),
        Authority(&'a Record),
    }
    let questions = message
        .queries()
        .iter()
        .filter(|_| spread_questions)
        .map(Item::Question);
    let records = message.answers().iter().map(Item::Answer);
    let authority = message.name_servers().iter().map(Item::Authority);
    let mut out: Vec<Message> = Vec::new();
    let (mut current, mut used, mut held) = (fresh(), header, 0);
    for item in questions.chain(records).chain(authority) {
        let size = match &item {
            Item::Question(q) => len(q.to_bytes()),
            Item::Answer(r) | Item::Authority(r) => len(r.to_bytes()),
        };
        if used + size > MAX_PACKET && held > 0 {
            out.push(std::mem::replace(&mut current, fresh()));
            (used, held) = (header, 0);
        }
        match item {
            Item::Question(q) => current.add_query(q.clone()),
            Item::Answer(r) => current.add_answer(r.clone()),
            Item::Authority(r) => current.add_name_server(r.clone()),
        };
        used += size;
        held += 1;
    }
    for r in message.additionals() {
        let size = len(r.to_bytes());
        if used + size <= MAX_PACKET {
            current.add_additional(r.clone());
            used += size;
        }
    }
    out.push(current);
    out.iter().filter_map(|m| m.to_vec().ok()).collect()
}

/// How RFC 6762 8.2 orders records: class, type, then rdata bytes.
fn sort_key(r: &Record) -> Vec<u8> {
    let mut key = u16::from(r.dns_class()).to_be_bytes().to_vec();
    key.extend(u16::from(r.record_type()).to_be_bytes());
    key.extend(r.data().to_bytes().unwrap_or_default());
    key
}
