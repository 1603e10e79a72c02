//! Foreign routers: adverts on one of our VRIDs from a router outside our group (another
//! address list, authentication or version, or in unicast mode not a listed peer). Usually a
//! second cluster whose VRIDs collide with ours (OpenShift derives them from the cluster name).
//! Each one is named once in the log when it appears, shown in `vrrpd status` and counted in
//! the metrics; the adverts themselves are still counted by reason ([`super::rx`]).

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipi_core::vrrp::Repr;
use serde_json::{json, Value};

use super::rx::{Expect, Reject};
use crate::fsm::{Duration, Instant};

/// A foreign router not heard for this long is gone: heard again later, it is a new
/// appearance, logged again. Long enough that a router advertising every 40.95 s (the v2
/// maximum is 255 s, but nobody runs that) stays one appearance.
pub const GONE: Duration = Duration::from_secs(60);

/// At most this many foreign routers are remembered (spoofed sources must not grow memory);
/// those heard beyond it are only counted.
pub const CAPACITY: usize = 256;

/// One foreign router as last heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// Our instance whose VRID it uses.
    pub instance: String,
    /// The interface it was heard on.
    pub interface: String,
    /// The VRID.
    pub vrid: u8,
    /// Its address (the IP source).
    pub source: IpAddr,
    /// Why it is not of our group (the reject's counter name).
    pub reason: &'static str,
    /// The same, for people.
    pub why: String,
    /// Its protocol version, priority and addresses, from its last advert.
    pub version: u8,
    /// Its priority.
    pub priority: u8,
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
    /// When this appearance began and when it was last heard.
    pub first_heard: Instant,
    /// When it was last heard.
    pub last_heard: Instant,
    /// Adverts heard in this appearance.
    pub adverts: u64,
}

/// Every foreign router heard, by instance and source.
#[derive(Debug, Default)]
pub struct Clashes {
    routers: BTreeMap<(String, IpAddr), Foreign>,
    /// Per instance: appearances (each one logged).
    appeared: BTreeMap<String, u64>,
    /// Adverts from foreign routers that could not be remembered ([`CAPACITY`]).
    unremembered: u64,
}

/// Where an advert was heard and what it said.
#[derive(Debug, Clone, Copy)]
pub struct Heard<'a> {
    /// Our instance (name) whose VRID it carries.
    pub instance: &'a str,
    /// The interface.
    pub interface: &'a str,
    /// The sender.
    pub source: IpAddr,
    /// The advert.
    pub repr: &'a Repr,
    /// What our instance expects.
    pub expect: &'a Expect,
}

impl Clashes {
    /// An advert rejected with `reject` for one of our instances. A foreign router heard for
    /// the first time (or again after [`GONE`]) is logged as a warning and returned.
    pub fn heard(&mut self, now: Instant, h: Heard<'_>, reject: Reject) -> Option<&Foreign> {
        if !reject.is_foreign() {
            return None;
        }
        let key = (h.instance.to_string(), h.source);
        let fresh = self
            .routers
            .get(&key)
            .is_none_or(|f| now.saturating_duration_since(f.last_heard) >= GONE);
        if fresh && !self.routers.contains_key(&key) && self.routers.len() >= CAPACITY {
            self.forget_gone(now);
            if self.routers.len() >= CAPACITY {
                self.unremembered += 1;
                return None;
            }
        }
        let why = reject.why_foreign(h.repr, h.expect);
        let entry = self.routers.entry(key).or_insert_with(|| Foreign {
            instance: h.instance.to_string(),
            interface: h.interface.to_string(),
            vrid: h.repr.vrid,
            source: h.source,
            reason: reject.name(),
            why: String::new(),
            version: 0,
            priority: 0,
            addresses: Vec::new(),
            first_heard: now,
            last_heard: now,
            adverts: 0,
        });
        if fresh {
            entry.first_heard = now;
            entry.adverts = 0;
        }
        entry.reason = reject.name();
        entry.why = why;
        entry.version = h.repr.version.number();
        entry.priority = h.repr.priority;
        entry.addresses.clone_from(&h.repr.addresses);
        entry.interface = h.interface.to_string();
        entry.last_heard = now;
        entry.adverts += 1;
        if !fresh {
            return None;
        }
        *self.appeared.entry(h.instance.to_string()).or_default() += 1;
        tracing::warn!(
            "{}: VRID {} on {}: router {} is outside this group (VRRPv{}, priority {}, \
             addresses {}): {}; a second cluster on the same VRID? Its adverts are ignored",
            entry.instance,
            entry.vrid,
            entry.interface,
            entry.source,
            entry.version,
            entry.priority,
            join(&entry.addresses),
            entry.why
        );
        Some(entry)
    }

    fn forget_gone(&mut self, now: Instant) {
        self.routers
            .retain(|_, f| now.saturating_duration_since(f.last_heard) < GONE);
    }

    /// The foreign routers heard within [`GONE`] of `now`, by instance and source.
    pub fn active(&self, now: Instant) -> impl Iterator<Item = &Foreign> {
        self.routers
            .values()
            .filter(move |f| now.saturating_duration_since(f.last_heard) < GONE)
    }

    /// How many times foreign routers appeared on `instance`'s VRID.
    pub fn appearances(&self, instance: &str) -> u64 {
        self.appeared.get(instance).copied().unwrap_or(0)
    }

    /// Adverts of foreign routers beyond [`CAPACITY`].
    pub fn unremembered(&self) -> u64 {
        self.unremembered
    }

    /// The active foreign routers of `instance`, as `vrrpd status --json` shows them.
    pub fn to_json(&self, now: Instant, instance: &str) -> Value {
        let list: Vec<Value> = self
            .active(now)
            .filter(|f| f.instance == instance)
            .map(|f| {
                json!({
                    "source": f.source,
                    "vrid": f.vrid,
                    "interface": f.interface,
                    "reason": f.reason,
                    "why": f.why,
                    "version": f.version,
                    "priority": f.priority,
                    "addresses": f.addresses,
                    "adverts": f.adverts,
                    "heard_for_ms": f.last_heard.saturating_duration_since(f.first_heard).as_millis(),
                    "last_heard_ms_ago": now.saturating_duration_since(f.last_heard).as_millis(),
                })
            })
            .collect();
        Value::Array(list)
    }
}

fn join(addresses: &[IpAddr]) -> String {
    let words: Vec<String> = addresses.iter().map(IpAddr::to_string).collect();
    words.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipi_core::vrrp::{Auth, Version};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn expect() -> Expect {
        Expect {
            vrid: 51,
            version: Version::V3,
            auth: Auth::None,
            addresses: vec![ip("192.0.2.100")],
            peers: Vec::new(),
            peer_ttl: Default::default(),
            ah_key: None,
        }
    }

    fn repr(address: &str) -> Repr {
        Repr {
            version: Version::V3,
            vrid: 51,
            priority: 100,
            advert_int: 100,
            auth: Auth::None,
            addresses: vec![ip(address)],
        }
    }

    fn hear(c: &mut Clashes, at_ms: u64, source: &str, r: &Repr, reject: Reject) -> bool {
        let e = expect();
        let h = Heard {
            instance: "VI_1",
            interface: "eth0",
            source: ip(source),
            repr: r,
            expect: &e,
        };
        c.heard(Instant::from_millis(at_ms), h, reject).is_some()
    }

    #[test]
    fn one_warning_per_router_until_it_goes_away() {
        let mut c = Clashes::default();
        let r = repr("192.0.2.99");
        assert!(hear(&mut c, 0, "192.0.2.9", &r, Reject::Addresses));
        for t in 1..100 {
            assert!(!hear(
                &mut c,
                t * 1000 / 2,
                "192.0.2.9",
                &r,
                Reject::Addresses
            ));
        }
        // A second router is its own appearance.
        assert!(hear(&mut c, 50_000, "192.0.2.8", &r, Reject::Addresses));
        assert_eq!(c.appearances("VI_1"), 2);
        let now = Instant::from_millis(50_000);
        let active: Vec<&Foreign> = c.active(now).collect();
        assert_eq!(active.len(), 2);
        let nine = active.iter().find(|f| f.source == ip("192.0.2.9")).unwrap();
        assert_eq!(nine.adverts, 100);
        assert!(nine.why.contains("192.0.2.99") && nine.why.contains("192.0.2.100"));
        // Silent for GONE: gone; heard again, a new appearance.
        let later = 49_500 + GONE.as_millis();
        assert_eq!(c.active(Instant::from_millis(later)).count(), 1);
        assert!(hear(&mut c, later, "192.0.2.9", &r, Reject::Addresses));
        assert_eq!(c.appearances("VI_1"), 3);
    }

    #[test]
    fn only_foreign_reasons_count() {
        let mut c = Clashes::default();
        let r = repr("192.0.2.100");
        for reject in [
            Reject::Checksum,
            Reject::HopLimit,
            Reject::Length,
            Reject::Vrid,
        ] {
            assert!(!hear(&mut c, 0, "192.0.2.9", &r, reject));
        }
        assert_eq!(c.active(Instant::ZERO).count(), 0);
        assert!(hear(&mut c, 0, "192.0.2.9", &r, Reject::Password));
        assert!(hear(&mut c, 0, "192.0.2.7", &r, Reject::UnknownPeer));
        let j = c.to_json(Instant::ZERO, "VI_1");
        assert_eq!(j.as_array().unwrap().len(), 2);
        assert_eq!(j[0]["reason"], "unknown_peer");
        assert_eq!(c.to_json(Instant::ZERO, "VI_2"), json!([]));
    }

    #[test]
    fn memory_is_bounded() {
        let mut c = Clashes::default();
        let r = repr("192.0.2.99");
        for n in 0..(CAPACITY as u32 + 10) {
            let source = std::net::Ipv4Addr::from(0xc633_6400 + n).to_string();
            hear(&mut c, 0, &source, &r, Reject::Addresses);
        }
        assert_eq!(c.active(Instant::ZERO).count(), CAPACITY);
        assert_eq!(c.unremembered(), 10);
        // Once the old ones are gone, new ones are remembered again.
        assert!(hear(
            &mut c,
            GONE.as_millis(),
            "203.0.113.1",
            &r,
            Reject::Addresses
        ));
    }
}
