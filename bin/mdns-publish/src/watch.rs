//! `browse --watch` as plain data, driven by the caller's clock: continuous multicast querying
//! (RFC 6762 5.2) from port 5353, so that every answer is multicast and serves every browser on
//! the link at once (no unicast answers, no ARP for them, traffic that grows with the nodes and
//! not with their square).
//!
//! - The pointers of the node types are asked for at 1 s, then at intervals doubling to
//!   [`PTR_INTERVAL_MAX`], with the pointers held as known answers (7.1) spread over as many
//!   packets as they take with the TC bit (7.2); a query of another browser whose known answers
//!   hold none that this one lacks counts as this one's own (7.3).
//! - What a node's instances say is held at most [`HOLD`] after it was last heard, and
//!   refreshed within it: one browser, the node before it in address order, asks at half the
//!   hold; every other asks only when that answer did not come, at a random point later.
//!   Every browser hears the question and the multicast answer, so a node costs about one
//!   question and one answer per [`HOLD`]/2 however many browse.
//! - A node that died without a goodbye: its instance is forgotten once two questions for it
//!   went unanswered for a second (10.5, passive observation of failures), and at the latest
//!   when the hold runs out.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use hickory_proto::op::{Message, MessageType, OpCode, Query};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use hickory_proto::serialize::binary::BinEncodable;

use crate::browse::Seen;
use crate::link::{Arrival, PORT};
use crate::responder::MAX_PACKET;

/// How long an instance and its host's addresses are held after they were last heard: what
/// bounds how long a node that died without a goodbye stays in the inventory.
pub const HOLD: Duration = Duration::from_secs(8);
/// The longest interval between two queries for the pointers.
pub const PTR_INTERVAL_MAX: Duration = Duration::from_secs(60);
/// An unanswered question is given up on after this (a responder multicasts a record at most
/// once a second, RFC 6762 6).
const ANSWER_WAIT: Duration = Duration::from_secs(1);
/// Questions a second that all the link's browsers together ask beyond the designated
/// refreshes: open questions (an instance known only by its pointer, a host only by an SRV)
/// and fallback refreshes (the designated refresher's answer did not come). Each browser takes
/// its share, this over the nodes it knows (every node runs a browser). Answers are multicast,
/// so one question serves every browser that lacks its answer; with a budget per browser only
/// (16 a second each), 200 nodes that lost answers to an overloaded link asked 3,200 questions
/// a second, whose answers overloaded it more, and none of them ever completed.
const LINK_QUESTIONS: f64 = 128.0;
/// The most questions one browser saves up beyond its designated refreshes: at the start of a
/// small cluster, or when answers are being lost, many are open at once.
const BURST: f64 = 16.0;
/// Questions heard from others remembered at once, at most.
const HEARD: usize = 4096;
/// Other queriers whose truncated queries are followed at once, at most.
const OVERHEARD: usize = 256;
/// The first query goes out this long after the start: the socket is listening by then.
const FIRST_QUERY: Duration = Duration::from_millis(20);

/// One instance's refresh.
#[derive(Debug, Clone)]
struct Refresh {
    /// When its SRV was last heard.
    answered: Instant,
    /// When the SRV held runs out ([`Seen::srv_until`] when it was last heard: only an answer
    /// moves it, and what drops it drops this refresh too).
    until: Instant,
    /// Whether this browser is its designated refresher (worked out with [`Derived`]).
    designated: bool,
    /// Questions for it heard since, that its responder would have answered (two at most).
    asked: Vec<Instant>,
    /// When this browser last asked.
    sent: Option<Instant>,
    /// Where in the hold this browser asks when the designated one did not get an answer:
    /// the fraction of the hold still left, drawn anew for each answer.
    fallback: f64,
}

/// A truncated query of another querier, followed until its last packet.
#[derive(Debug)]
struct Overheard {
    began: Instant,
    /// Its known answers' pointers: (type, instance).
    known: HashSet<(Name, Name)>,
}

/// The browse's state.
#[derive(Debug)]
pub struct Watcher {
    seen: Seen,
    kinds: Vec<Name>,
    filter: String,
    /// The address browsed from: who this browser is in the ring of refreshers.
    me: IpAddr,
    ptr_next: Instant,
    ptr_interval: Duration,
    open_next: Instant,
    /// This browser's share of [`LINK_QUESTIONS`].
    budget: Budget,
    refresh: HashMap<Name, Refresh>,
    overheard: HashMap<SocketAddr, Overheard>,
    /// When each question was last heard on the link (anyone's, ours included): an open
    /// question somebody asked within a second is not asked again.
    heard: HashMap<(Name, RecordType), Instant>,
    random: u64,
    /// Something in the inventory may have changed since [`Watcher::take_changed`].
    changed: bool,
    /// What follows from what is held, kept until it changes: the instances this browser
    /// refreshes first, and whether questions are open.
    derived: Option<Derived>,
}

#[derive(Debug)]
struct Derived {
    open: Vec<Query>,
    /// The nodes whose instances are known by their pointers: how many browsers share the
    /// link's questions.
    browsers: usize,
}

/// A browser's share of the link's questions, as a token bucket.
#[derive(Debug)]
struct Budget {
    tokens: f64,
    at: Instant,
}

impl Budget {
    /// Adds this browser's share of [`LINK_QUESTIONS`] since the last fill, up to [`BURST`].
    fn fill(&mut self, now: Instant, browsers: usize) {
        let rate = LINK_QUESTIONS / browsers.max(1) as f64;
        let secs = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + rate * secs).min(BURST);
        self.at = now;
    }

    /// How many questions may be asked now.
    fn left(&self) -> usize {
        self.tokens.max(0.0) as usize
    }

    fn spend(&mut self, questions: usize) {
        self.tokens -= questions as f64;
    }
}

impl Watcher {
    /// A browse from `me` for the instances of `kinds` whose names contain `filter`.
    pub fn new(kinds: Vec<Name>, filter: &str, me: IpAddr, now: Instant, seed: u64) -> Watcher {
        Watcher {
            seen: Seen::holding(HOLD),
            kinds,
            filter: filter.to_string(),
            me,
            ptr_next: now + FIRST_QUERY,
            ptr_interval: Duration::from_secs(1),
            open_next: now,
            budget: Budget {
                tokens: BURST,
                at: now,
            },
            refresh: HashMap::new(),
            overheard: HashMap::new(),
            heard: HashMap::new(),
            random: seed | 1,
            changed: true,
            derived: None,
        }
    }

    /// What was heard.
    pub fn seen(&self) -> &Seen {
        &self.seen
    }

    /// Whether the inventory may have changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// Takes in a message the link admitted.
    pub fn receive(&mut self, m: &Message, arrival: &Arrival, now: Instant) {
        match m.message_type() {
            MessageType::Response => {
                let taken = self.seen.receive_at(m, arrival.from.ip(), now);
                self.note(taken.changed);
                for i in taken.srv {
                    let Some(until) = self.seen.srv_until(&i) else {
                        continue;
                    };
                    let fallback = self.fallback();
                    let r = self.refresh.entry(i).or_insert_with(|| Refresh {
                        answered: now,
                        until,
                        designated: false,
                        asked: Vec::new(),
                        sent: None,
                        fallback,
                    });
                    (r.answered, r.until, r.fallback) = (now, until, fallback);
                    r.asked.clear();
                }
            }
            MessageType::Query => self.overhear(m, arrival.from, now),
        }
    }

    /// A query on the link: a question for an instance its responder would answer by
    /// multicast, and a pointer query that makes ours needless.
    fn overhear(&mut self, m: &Message, from: SocketAddr, now: Instant) {
        // Probes, and legacy queriers (answered by unicast), say nothing of what all hear.
        if !m.name_servers().is_empty() || from.port() != PORT {
            return;
        }
        if self.heard.len() >= HEARD {
            self.heard
                .retain(|_, t| now.duration_since(*t) < ANSWER_WAIT);
        }
        for q in m.queries().iter().filter(|q| !q.mdns_unicast_response()) {
            if self.heard.len() < HEARD {
                self.heard.insert((q.name().clone(), q.query_type()), now);
            }
        }
        for q in m.queries() {
            let srv = matches!(q.query_type(), RecordType::SRV | RecordType::ANY);
            if q.mdns_unicast_response() || !srv {
                continue;
            }
            let Some(r) = self.refresh.get_mut(q.name()) else {
                continue;
            };
            let known = m
                .answers()
                .iter()
                .any(|k| k.name() == q.name() && k.record_type() == RecordType::SRV && k.ttl() > 0);
            if !known && now >= r.answered + ANSWER_WAIT && r.asked.len() < 2 {
                r.asked.push(now);
            }
        }
        if from.ip() != self.me {
            self.follow(m, from, now);
        }
    }

    /// Follows another querier's pointer query over its packets; once its last is in, and its
    /// known answers hold none that ours would not, ours is as good as sent (RFC 6762 7.3).
    fn follow(&mut self, m: &Message, from: SocketAddr, now: Instant) {
        let pointers = m
            .queries()
            .iter()
            .any(|q| q.query_type() == RecordType::PTR && self.kinds.contains(q.name()));
        if !m.queries().is_empty() {
            self.overheard.remove(&from);
            if !pointers {
                return;
            }
            self.overheard
                .retain(|_, o| now.duration_since(o.began) < ANSWER_WAIT);
            if self.overheard.len() >= OVERHEARD {
                return;
            }
            let o = Overheard {
                began: now,
                known: HashSet::new(),
            };
            self.overheard.insert(from, o);
        }
        let Some(o) = self.overheard.get_mut(&from) else {
            return;
        };
        o.known.extend(m.answers().iter().filter_map(pointer));
        if m.truncated() {
            return;
        }
        let Some(o) = self.overheard.remove(&from) else {
            return;
        };
        let ours: HashSet<(Name, Name)> = (self.kinds.iter())
            .flat_map(|k| self.seen.known_pointers(k, now))
            .filter_map(|r| pointer(&r))
            .collect();
        // Beyond the first query, any other browser's will do: what its known answers keep
        // from us comes with the refreshes (an SRV's answer brings its pointer along).
        let first = self.ptr_interval <= Duration::from_secs(1);
        if !first || o.known.is_subset(&ours) {
            self.pointers_asked(now);
        }
    }

    fn pointers_asked(&mut self, now: Instant) {
        // Up to a fifth later, so that browsers started together drift apart.
        let spread = self.ptr_interval.mul_f64((self.fallback() - 0.15) * 1.0);
        self.ptr_next = now + self.ptr_interval + spread;
        self.ptr_interval = (self.ptr_interval * 2).min(PTR_INTERVAL_MAX);
    }

    fn fallback(&mut self) -> f64 {
        // xorshift64: enough to spread the browsers over the window, no more.
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        0.15 + 0.2 * ((self.random % 1000) as f64 / 1000.0)
    }

    /// What is due at `now`: forgetting what ran out or went unanswered, and the queries to
    /// send, as datagrams.
    pub fn poll(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let expired = self.seen.expire(now);
        self.note(expired);
        self.forget_unanswered(now);
        self.derive();
        let browsers = self.derived.as_ref().map_or(1, |d| d.browsers);
        self.budget.fill(now, browsers);
        let mut out = self.refreshes(now);
        if now >= self.ptr_next {
            self.pointers_asked(now);
            out.extend(self.pointer_query(now));
        }
        if now >= self.open_next {
            self.open_next = now + ANSWER_WAIT;
            out.extend(self.open_questions(now));
        }
        out
    }

    /// Instances asked for twice without an answer for a second are forgotten.
    fn forget_unanswered(&mut self, now: Instant) {
        let gone: Vec<Name> = (self.refresh.iter())
            .filter(|(_, r)| r.asked.get(1).is_some_and(|t| now >= *t + ANSWER_WAIT))
            .map(|(i, _)| i.clone())
            .collect();
        for i in &gone {
            tracing::debug!("{i}: asked for twice, no answer: forgotten");
            self.seen.flush(i);
            self.note(true);
        }
    }

    /// The instances to refresh now, as query datagrams (their SRV and TXT: the answer brings
    /// the host's addresses along).
    fn refreshes(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut questions = Vec::new();
        let mut fallbacks = self.budget.left();
        for (i, r) in &mut self.refresh {
            let first = r.designated && r.asked.is_empty();
            if !first && fallbacks == 0 {
                continue;
            }
            if due(r).is_some_and(|t| now >= t) {
                if !first {
                    fallbacks -= 1;
                    self.budget.spend(1);
                }
                r.sent = Some(now);
                questions.push(Query::query(i.clone(), RecordType::SRV));
                questions.push(Query::query(i.clone(), RecordType::TXT));
            }
        }
        query_packets(questions, Vec::new())
    }

    /// The instances this browser refreshes first: those whose host's address comes next
    /// after ours in address order (the last's go to the first), among the hosts of every
    /// instance held. Each host so has one designated refresher, whichever node it is.
    fn designated(&self) -> HashSet<Name> {
        let held: Vec<(Name, Vec<IpAddr>)> = (self.kinds.iter())
            .flat_map(|k| self.seen.instances_with_addresses(k, &self.filter))
            .collect();
        let family = |a: &IpAddr| a.is_ipv4() == self.me.is_ipv4();
        let first = |a: &[IpAddr]| a.iter().copied().find(family);
        let ring: BTreeSet<IpAddr> = (held.iter().filter_map(|(_, a)| first(a)))
            .chain([self.me])
            .collect();
        let next = ring
            .range((
                std::ops::Bound::Excluded(self.me),
                std::ops::Bound::Unbounded,
            ))
            .next()
            .or_else(|| ring.iter().next())
            .copied();
        held.into_iter()
            .filter(|(_, a)| next.is_some() && first(a) == next && next != Some(self.me))
            .map(|(i, _)| i)
            .collect()
    }

    /// The pointer query, with what is held as known answers.
    fn pointer_query(&self, now: Instant) -> Vec<Vec<u8>> {
        let questions = self
            .kinds
            .iter()
            .map(|k| Query::query(k.clone(), RecordType::PTR))
            .collect();
        let known = (self.kinds.iter())
            .flat_map(|k| self.seen.known_pointers(k, now))
            .collect();
        query_packets(questions, known)
    }

    /// Questions for what is still missing: the SRV and TXT of instances known only by their
    /// pointer, the addresses of hosts known only by an SRV.
    ///
    /// As many as this browser's share of [`LINK_QUESTIONS`] allows, from a random point of the
    /// list on, and none that another browser asked within a second (its answer is multicast:
    /// it serves us too).
    fn open_questions(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let Some(open) = self.derived.as_ref().map(|d| d.open.clone()) else {
            return Vec::new();
        };
        let from = self.random_below(open.len().max(1));
        let heard = &self.heard;
        let asked: Vec<Query> = (open.iter().cycle().skip(from).take(open.len()))
            .filter(|q| {
                let key = (q.name().clone(), q.query_type());
                heard
                    .get(&key)
                    .is_none_or(|t| now.duration_since(*t) >= ANSWER_WAIT)
            })
            .take(self.budget.left())
            .cloned()
            .collect();
        self.budget.spend(asked.len());
        query_packets(asked, Vec::new())
    }

    fn random_below(&mut self, n: usize) -> usize {
        let f = (self.fallback() - 0.15) / 0.2;
        ((n as f64) * f) as usize % n.max(1)
    }

    /// Something held changed (or not): what follows from it is worked out again at the next
    /// poll.
    fn note(&mut self, changed: bool) {
        if changed {
            self.changed = true;
            self.derived = None;
        }
    }

    /// What follows from what is held, once it changed: the open questions, the designated
    /// refreshes, and no refresh of an instance whose SRV went.
    fn derive(&mut self) {
        if self.derived.is_some() {
            return;
        }
        let all = self.seen.query(&self.kinds);
        let open = (all.queries().iter())
            .filter(|q| q.query_type() != RecordType::PTR)
            .cloned()
            .collect();
        let designated = self.designated();
        let browsers = (self.kinds.iter())
            .map(|k| self.seen.instances(k, &self.filter).len())
            .max()
            .unwrap_or(0);
        let seen = &self.seen;
        self.refresh.retain(|i, r| {
            r.designated = designated.contains(i);
            seen.srv_until(i).is_some()
        });
        self.derived = Some(Derived { open, browsers });
    }

    /// When [`Watcher::poll`] next has something to do.
    pub fn next_timeout(&self) -> Instant {
        let refresh = self.refresh.values().filter_map(|r| {
            let due = due(r);
            let forget = r.asked.get(1).map(|t| *t + ANSWER_WAIT);
            match (due, forget) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            }
        });
        let open = (self.derived.as_ref())
            .is_some_and(|d| !d.open.is_empty())
            .then_some(self.open_next);
        refresh
            .chain(self.seen.next_expiry())
            .chain(open)
            .fold(self.ptr_next, Instant::min)
    }
}

/// A pointer record as (its name, what it points at).
fn pointer(r: &Record) -> Option<(Name, Name)> {
    match r.data() {
        RData::PTR(p) => Some((r.name().clone(), p.0.clone())),
        _ => None,
    }
}

/// When this browser asks for an instance (whose SRV runs out at `r.until`): the designated
/// refresher at half the hold, every other at its fallback point, and nobody within a second of
/// a question (its own or another's) that has not been answered yet.
fn due(r: &Refresh) -> Option<Instant> {
    let quiet = (r.sent.into_iter())
        .chain(r.asked.last().copied())
        .max()
        .filter(|t| *t >= r.answered)
        .map(|t| t + ANSWER_WAIT);
    let at = if r.designated && r.asked.is_empty() {
        r.until.checked_sub(HOLD / 2)?
    } else {
        r.until.checked_sub(HOLD.mul_f64(r.fallback))?
    };
    Some(quiet.map_or(at, |q| at.max(q)))
}

/// A query as datagrams of at most [`MAX_PACKET`] bytes: the questions, then the known answers
/// where there is room and in the packets after, each but the last with the TC bit (RFC 6762
/// 7.2). None when there is nothing to ask.
pub fn query_packets(questions: Vec<Query>, known: Vec<Record>) -> Vec<Vec<u8>> {
    if questions.is_empty() {
        return Vec::new();
    }
    let fresh = || {
        let mut m = Message::new();
        m.set_message_type(MessageType::Query)
            .set_op_code(OpCode::Query);
        m
    };
    // Questions by their plain size: a packet only shrinks when compressed.
    let len = |b: Result<Vec<u8>, _>| b.map_or(MAX_PACKET, |b: Vec<u8>| b.len());
    let mut packets = vec![fresh()];
    let mut used = 12;
    for q in questions {
        let size = len(q.to_bytes());
        if used + size > MAX_PACKET && !packets[packets.len() - 1].queries().is_empty() {
            packets.push(fresh());
            used = 12;
        }
        if let Some(m) = packets.last_mut() {
            m.add_query(q);
        }
        used += size;
    }
    // The known answers, measured as they encode (name compression makes a pointer record a
    // third of its plain size): a packet takes records until the next would not fit.
    let mut fitted = 0;
    for r in known {
        if let Some(m) = packets.last_mut() {
            m.add_answer(r);
            fitted += 1;
            if fitted > 1 && m.to_vec().map_or(usize::MAX, |b| b.len()) > MAX_PACKET {
                let mut answers = m.take_answers();
                let last = answers.pop();
                m.insert_answers(answers);
                m.set_truncated(true);
                let mut next = fresh();
                next.add_answers(last);
                packets.push(next);
                fitted = 1;
            }
        }
    }
    packets.iter().filter_map(|m| m.to_vec().ok()).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::records::name;
    use hickory_proto::rr::rdata::{PTR, SRV, TXT};

    const KIND: &str = "_workstation._tcp.local.";

    fn ip(a: &str) -> IpAddr {
        a.parse().unwrap()
    }

    fn instance(n: u8) -> Name {
        name(&format!("lab-node-{n}.{KIND}")).unwrap()
    }

    /// Node `n` (192.0.2.n) answering as its publisher does: pointer, SRV, TXT, address.
    fn answer(n: u8) -> (Message, Arrival) {
        let host = name(&format!("node-{n}.local.")).unwrap();
        let mut m = Message::new();
        m.set_message_type(MessageType::Response);
        let kind = name(KIND).unwrap();
        let records = [
            Record::from_rdata(kind, 4500, RData::PTR(PTR(instance(n)))),
            Record::from_rdata(
                instance(n),
                120,
                RData::SRV(SRV::new(0, 0, 42424, host.clone())),
            ),
            Record::from_rdata(instance(n), 4500, RData::TXT(TXT::new(vec![]))),
            Record::from_rdata(host, 120, RData::from(ip(&format!("192.0.2.{n}")))),
        ];
        for r in records {
            m.add_answer(r);
        }
        (m, from(n))
    }

    fn from(n: u8) -> Arrival {
        Arrival {
            from: SocketAddr::new(ip(&format!("192.0.2.{n}")), PORT),
            to: Some(ip("224.0.0.251")),
            ttl: Some(255),
        }
    }

    fn refresh_query(n: u8) -> Message {
        let mut m = Message::new();
        m.set_message_type(MessageType::Query);
        m.add_query(Query::query(instance(n), RecordType::SRV));
        m
    }

    fn watcher(me: u8, t0: Instant) -> Watcher {
        let kinds = vec![name(KIND).unwrap()];
        Watcher::new(kinds, "lab", ip(&format!("192.0.2.{me}")), t0, 7)
    }

    fn asked(packets: &[Vec<u8>]) -> Vec<Name> {
        (packets.iter())
            .flat_map(|p| Message::from_vec(p).unwrap().queries().to_vec())
            .filter(|q| q.query_type() == RecordType::SRV)
            .map(|q| q.name().clone())
            .collect()
    }

    fn nodes(w: &Watcher) -> usize {
        let kind = name(KIND).unwrap();
        (w.seen()
            .found(&kind, "lab", 0, None, std::time::SystemTime::now()))
        .unwrap()
        .inventory
        .nodes()
        .len()
    }

    /// Polls every 100 ms from `from` to `to`; what was asked for, and when.
    fn run(w: &mut Watcher, from: Instant, to: Instant) -> Vec<(Instant, Name)> {
        let mut out = Vec::new();
        let mut t = from;
        while t < to {
            out.extend(asked(&w.poll(t)).into_iter().map(|n| (t, n)));
            t += Duration::from_millis(100);
        }
        out
    }

    /// A response of pointers only, to nodes 1..=n: their SRV, TXT and addresses are open.
    fn pointers_only(n: u8) -> Message {
        let mut m = Message::new();
        m.set_message_type(MessageType::Response);
        for i in 1..=n {
            let ptr = RData::PTR(PTR(instance(i)));
            m.add_answer(Record::from_rdata(name(KIND).unwrap(), 4500, ptr));
        }
        m
    }

    /// The questions asked but for the pointers, polling every 100 ms from `from` for `secs`.
    fn questions(w: &mut Watcher, from: Instant, secs: u64) -> usize {
        let polls = (0..secs * 10).map(|k| w.poll(from + Duration::from_millis(100 * k)));
        let all: Vec<Query> = (polls.flatten())
            .flat_map(|p| Message::from_vec(&p).unwrap().queries().to_vec())
            .collect();
        all.iter()
            .filter(|q| q.query_type() != RecordType::PTR)
            .count()
    }

    #[test]
    fn open_questions_are_a_share_of_the_links_so_that_more_browsers_ask_no_more_in_all() {
        let t0 = Instant::now();
        // Four nodes: each of their SRV and TXT is asked for at once.
        let mut w = watcher(200, t0);
        w.receive(&pointers_only(4), &from(1), t0);
        assert_eq!(questions(&mut w, t0, 1), 8);
        // 150 nodes whose answers were lost: this browser asks its share of the link's
        // questions and no more, however many are open (it once asked 16 a second, each).
        let mut w = watcher(200, t0);
        w.receive(&pointers_only(150), &from(1), t0);
        // 16 at once, then 128 a second among 150: 42 in 30 s (16 a second would be 480).
        let asked = questions(&mut w, t0, 30);
        assert!(asked <= 42, "{asked} questions in 30 s, its share 42");
        assert!(asked >= 16, "{asked} questions in 30 s");
    }

    #[test]
    fn the_node_after_us_is_ours_to_refresh_at_half_the_hold_and_others_only_when_it_fails() {
        let t0 = Instant::now();
        let mut w = watcher(2, t0);
        for n in [1, 2, 3, 9] {
            let (m, a) = answer(n);
            w.receive(&m, &a, t0);
        }
        assert_eq!(nodes(&w), 4);
        // 192.0.2.3 follows us: asked for at half the hold, and nothing else before.
        let asks = run(&mut w, t0, t0 + HOLD / 2 + Duration::from_millis(150));
        assert_eq!(asks.len(), 1, "{asks:?}");
        assert_eq!(asks[0].1, instance(3));
        assert!(asks[0].0 >= t0 + HOLD / 2);
        // Its answer comes: nothing more for a while; node-1 and node-9 are refreshed by
        // others, whose questions and answers we hear.
        let (m, a) = answer(3);
        let t1 = t0 + HOLD / 2 + Duration::from_millis(200);
        w.receive(&m, &a, t1);
        for n in [1, 2, 9] {
            w.receive(&refresh_query(n), &from(n - 1), t1);
            let (m, a) = answer(n);
            w.receive(&m, &a, t1);
        }
        let asks = run(&mut w, t1, t1 + HOLD / 2 - Duration::from_millis(100));
        assert!(asks.is_empty(), "{asks:?}");
        // With nobody refreshing node-9 any more (its refresher is gone), we ask in its last
        // third, before it runs out.
        let (m, a) = answer(3);
        w.receive(&m, &a, t1 + HOLD / 2);
        let asks = run(&mut w, t1 + HOLD / 2, t1 + HOLD);
        let nine: Vec<_> = asks.iter().filter(|(_, n)| *n == instance(9)).collect();
        assert!(!nine.is_empty(), "{asks:?}");
        assert!(nine[0].0 >= t1 + HOLD.mul_f64(0.6), "{asks:?}");
        // Unanswered, asked again a second later, not sooner.
        assert!(
            nine.windows(2).all(|w| w[1].0 - w[0].0 >= ANSWER_WAIT),
            "{asks:?}"
        );
    }

    #[test]
    fn two_unanswered_questions_forget_a_node_within_a_second() {
        let t0 = Instant::now();
        let mut w = watcher(2, t0);
        for n in [1, 2, 5] {
            let (m, a) = answer(n);
            w.receive(&m, &a, t0);
        }
        assert_eq!(nodes(&w), 3);
        let t1 = t0 + Duration::from_secs(3);
        w.receive(&refresh_query(5), &from(4), t1);
        w.poll(t1 + Duration::from_millis(1500));
        assert_eq!(nodes(&w), 3, "one unanswered question is not enough");
        let t2 = t1 + Duration::from_secs(2);
        w.receive(&refresh_query(5), &from(1), t2);
        w.poll(t2 + Duration::from_millis(900));
        assert_eq!(nodes(&w), 3, "not before a second");
        w.poll(t2 + Duration::from_millis(1000));
        assert_eq!(nodes(&w), 2);
        assert!(w.take_changed());
    }

    #[test]
    fn questions_its_responder_would_not_answer_forget_nothing() {
        let t0 = Instant::now();
        let mut w = watcher(2, t0);
        for n in [1, 2, 5] {
            let (m, a) = answer(n);
            w.receive(&m, &a, t0);
        }
        let t1 = t0 + Duration::from_millis(300);
        // Within a second of its answer (the responder's rate limit), as QU, with the SRV as a
        // known answer, from a legacy port: none counts.
        w.receive(&refresh_query(5), &from(4), t1);
        let mut qu = refresh_query(5);
        qu.queries_mut()[0].set_mdns_unicast_response(true);
        let mut known = refresh_query(5);
        known.add_answer(answer(5).0.answers()[1].clone());
        let mut legacy = from(4);
        legacy.from.set_port(40000);
        let t2 = t0 + Duration::from_secs(2);
        w.receive(&qu, &from(4), t2);
        w.receive(&known, &from(4), t2);
        w.receive(&known, &from(1), t2);
        w.receive(&refresh_query(5), &legacy, t2);
        w.receive(&refresh_query(5), &legacy, t2);
        w.poll(t2 + Duration::from_secs(2));
        assert_eq!(nodes(&w), 3);
        for n in [1, 2] {
            let (m, a) = answer(n);
            w.receive(&m, &a, t0 + Duration::from_secs(5));
        }
        // Past the hold with no answer at all: gone (the control).
        w.poll(t0 + HOLD + Duration::from_millis(1));
        assert_eq!(nodes(&w), 2);
    }

    #[test]
    fn known_answers_go_on_in_packets_with_the_tc_bit() {
        let kind = name(KIND).unwrap();
        let known: Vec<Record> = (0..200)
            .map(|n| Record::from_rdata(kind.clone(), 4500, RData::PTR(PTR(instance(n)))))
            .collect();
        let packets = query_packets(vec![Query::query(kind.clone(), RecordType::PTR)], known);
        assert!(packets.len() >= 3, "{}", packets.len());
        let messages: Vec<Message> = (packets.iter())
            .map(|p| Message::from_vec(p).unwrap())
            .collect();
        let last = messages.len() - 1;
        for (i, m) in messages.iter().enumerate() {
            assert!(packets[i].len() <= MAX_PACKET);
            assert_eq!(m.truncated(), i < last, "packet {i}");
            assert_eq!(m.queries().len(), usize::from(i == 0));
        }
        let total: usize = messages.iter().map(|m| m.answers().len()).sum();
        assert_eq!(total, 200);
        // Compressed: far fewer packets than the records' plain size would take.
        assert!(packets.len() <= 6, "{}", packets.len());
    }

    #[test]
    fn another_browsers_pointer_query_that_knows_no_more_stands_for_ours() {
        let t0 = Instant::now();
        let mut w = watcher(2, t0);
        let (m, a) = answer(1);
        w.receive(&m, &a, t0);
        let kind = name(KIND).unwrap();
        let theirs = |known: Vec<Record>| {
            let packets = query_packets(vec![Query::query(kind.clone(), RecordType::PTR)], known);
            (packets.iter())
                .map(|p| Message::from_vec(p).unwrap())
                .collect::<Vec<_>>()
        };
        let t1 = t0 + Duration::from_millis(10);
        let pointers = |w: &mut Watcher, t: Instant| {
            (w.poll(t).iter().map(|p| Message::from_vec(p).unwrap()))
                .filter(|m| {
                    m.queries()
                        .iter()
                        .any(|q| q.query_type() == RecordType::PTR)
                })
                .count()
        };
        // One that knows node-7, which we do not: ours still goes.
        let unknown = Record::from_rdata(kind.clone(), 4500, RData::PTR(PTR(instance(7))));
        for m in theirs(vec![unknown]) {
            w.receive(&m, &from(3), t1);
        }
        assert_eq!(pointers(&mut w, t0 + FIRST_QUERY), 1);
        // One that knows only what we know: ours, due next, is not sent.
        let next = t0 + FIRST_QUERY + Duration::from_millis(900);
        for m in theirs(w.seen().known_pointers(&kind, next)) {
            w.receive(&m, &from(3), next);
        }
        assert_eq!(
            pointers(&mut w, t0 + FIRST_QUERY + Duration::from_millis(1300)),
            0
        );
    }
}
