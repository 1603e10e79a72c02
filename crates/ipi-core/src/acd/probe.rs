//! The decision of address conflict detection, without IO: one [`Probe`] per address, fed the
//! current time and what the link says ([`Seen`]), telling its caller when to send a probe and,
//! at the end, whether anything answered ([`Verdict`]).
//!
//! IPv4 follows RFC 5227 2.1.1: wait a random time up to PROBE_WAIT, send PROBE_NUM probes
//! spaced randomly between PROBE_MIN and PROBE_MAX, and wait ANNOUNCE_WAIT after the last;
//! any ARP from another host whose sender address is the target, or another host's probe for
//! the same target, means the address is in use. IPv6 is RFC 4862 5.4 on the same clock (the
//! random delay of 5.4.2, DupAddrDetectTransmits solicitations RetransTimer apart): an
//! advertisement for the target, or another node's solicitation for it from the unspecified
//! address (5.4.3), means a duplicate. One [`Timing`] drives both.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use super::frame::{Mac, Seen};

/// The probe's clock (RFC 5227 2.1.1, section 1.1's constants), in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// PROBE_NUM: how many probes (RFC 4862's DupAddrDetectTransmits).
    pub probes: u32,
    /// PROBE_WAIT: the first probe goes after a random delay up to this.
    pub wait_ms: u32,
    /// PROBE_MIN: the least time between two probes.
    pub min_ms: u32,
    /// PROBE_MAX: the most time between two probes.
    pub max_ms: u32,
    /// ANNOUNCE_WAIT: how long an answer to the last probe is waited for.
    pub answer_ms: u32,
}

impl Timing {
    /// RFC 5227's constants: 3 probes, PROBE_WAIT 1 s, 1-2 s apart, ANNOUNCE_WAIT 2 s (up to
    /// 7 s in all).
    pub const RFC5227: Timing = Timing {
        probes: 3,
        wait_ms: 1000,
        min_ms: 1000,
        max_ms: 2000,
        answer_ms: 2000,
    };

    /// The default: RFC 5227's three probes at a tenth of its pace, under a second in all
    /// (0.7 s at most). A host on the link answers an ARP request or a solicitation in
    /// microseconds; the long RFC waits are for links that lose frames.
    pub const FAST: Timing = Timing {
        probes: 3,
        wait_ms: 100,
        min_ms: 100,
        max_ms: 200,
        answer_ms: 200,
    };

    /// The longest a probe can take, in milliseconds.
    pub fn bound_ms(&self) -> u64 {
        u64::from(self.wait_ms)
            + u64::from(self.probes.saturating_sub(1)) * u64::from(self.max_ms)
            + u64::from(self.answer_ms)
    }
}

impl Default for Timing {
    fn default() -> Self {
        Timing::FAST
    }
}

/// A [`Timing`] that cannot be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("probe timing {text:?}: {why} (want `fast`, `rfc5227` or PROBES,WAIT_MS,MIN_MS,MAX_MS,ANSWER_MS such as 3,100,100,200,200)")]
pub struct TimingError {
    /// What was given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

impl FromStr for Timing {
    type Err = TimingError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = |why: &str| TimingError {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        match text {
            "fast" => return Ok(Timing::FAST),
            "rfc5227" => return Ok(Timing::RFC5227),
            _ => {}
        }
        let numbers = text
            .split(',')
            .map(|n| n.trim().parse::<u32>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| err("each field must be a whole number"))?;
        let [probes, wait_ms, min_ms, max_ms, answer_ms] = numbers[..] else {
            return Err(err("five fields are needed"));
        };
        if probes == 0 {
            return Err(err("PROBES must be at least 1"));
        }
        if min_ms > max_ms {
            return Err(err("MIN_MS must not exceed MAX_MS"));
        }
        Ok(Timing {
            probes,
            wait_ms,
            min_ms,
            max_ms,
            answer_ms,
        })
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{},{},{},{},{}",
            self.probes, self.wait_ms, self.min_ms, self.max_ms, self.answer_ms
        )
    }
}

/// How another host showed that it uses the address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// It answered, or sent ARP or an advertisement from the address: it holds it.
    Holds,
    /// It probed for the same address at the same time (RFC 5227 2.1.1, RFC 4862 5.4.3).
    Probing,
}

/// The end of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing answered: no other host on the link uses the address.
    Free,
    /// Another host uses (or is claiming) the address.
    Answered {
        /// Its hardware address.
        mac: Mac,
        /// How it showed it.
        evidence: Evidence,
    },
}

/// A MAC address written as `02:00:5e:10:20:30`.
pub fn mac_string(mac: Mac) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Free => f.write_str("free"),
            Verdict::Answered {
                mac,
                evidence: Evidence::Holds,
            } => write!(f, "answered by {}", mac_string(*mac)),
            Verdict::Answered {
                mac,
                evidence: Evidence::Probing,
            } => write!(f, "probed for at the same time by {}", mac_string(*mac)),
        }
    }
}

/// What the caller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Send one probe for the address now, then poll again.
    Send,
    /// Nothing until this time (milliseconds on the caller's clock), unless a frame comes.
    WaitUntil(u64),
    /// The probe is over.
    Done(Verdict),
}

/// Conflict detection for one address (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Probe {
    target: IpAddr,
    own: Mac,
    timing: Timing,
    random: u64,
    sent: u32,
    next_ms: Option<u64>,
    verdict: Option<Verdict>,
}

impl Probe {
    /// A probe for `target` by the interface whose MAC is `own` (its own frames are never an
    /// answer); `seed` drives the random delays (any value; 0 is taken as 1).
    pub fn new(target: IpAddr, own: Mac, timing: Timing, seed: u64) -> Self {
        Probe {
            target,
            own,
            timing,
            random: seed.max(1),
            sent: 0,
            next_ms: None,
            verdict: None,
        }
    }

    /// The address probed.
    pub fn target(&self) -> IpAddr {
        self.target
    }

    /// What to do at `now_ms`. The first call starts the probe.
    pub fn poll(&mut self, now_ms: u64) -> Step {
        if let Some(verdict) = self.verdict {
            return Step::Done(verdict);
        }
        let next = match self.next_ms {
            Some(next) => next,
            None => {
                // RFC 5227 2.1.1: "wait for a random time interval selected uniformly in the
                // range zero to PROBE_WAIT seconds"; RFC 4862 5.4.2 likewise.
                let first = now_ms + self.between(0, self.timing.wait_ms);
                self.next_ms = Some(first);
                first
            }
        };
        if now_ms < next {
            return Step::WaitUntil(next);
        }
        if self.sent < self.timing.probes {
            self.sent += 1;
            let pause = if self.sent < self.timing.probes {
                self.between(self.timing.min_ms, self.timing.max_ms)
            } else {
                u64::from(self.timing.answer_ms)
            };
            self.next_ms = Some(now_ms + pause);
            return Step::Send;
        }
        self.verdict = Some(Verdict::Free);
        Step::Done(Verdict::Free)
    }

    /// Takes in a frame seen on the link; decides the probe at once when it is an answer.
    pub fn on_seen(&mut self, seen: &Seen) {
        if self.verdict.is_none() {
            self.verdict = self.conflict(seen);
        }
    }

    fn conflict(&self, seen: &Seen) -> Option<Verdict> {
        let (mac, evidence) = match (*seen, self.target) {
            // RFC 5227 2.1.1: "any ARP packet (Request *or* Reply) ... where the packet's
            // 'sender IP address' is the address being probed for".
            (
                Seen::Arp {
                    sender, sender_mac, ..
                },
                IpAddr::V4(t),
            ) if sender == t => (sender_mac, Evidence::Holds),
            // ... "or any ARP Probe where the packet's 'target IP address' is the address
            // being probed for, and the packet's 'sender hardware address' is not the hardware
            // address of any of the host's interfaces".
            (
                Seen::Arp {
                    sender,
                    sender_mac,
                    target,
                    reply: false,
                    ..
                },
                IpAddr::V4(t),
            ) if sender.is_unspecified() && target == t => (sender_mac, Evidence::Probing),
            // RFC 4862 5.4.4: an advertisement for the tentative address.
            (
                Seen::Advert {
                    source,
                    target_mac,
                    target,
                    ..
                },
                IpAddr::V6(t),
            ) if target == t => (target_mac.unwrap_or(source), Evidence::Holds),
            // RFC 4862 5.4.3: another node's DAD solicitation for the same address.
            (
                Seen::Solicit {
                    source,
                    from,
                    target,
                },
                IpAddr::V6(t),
            ) if target == t && from.is_unspecified() => (source, Evidence::Probing),
            _ => return None,
        };
        (mac != self.own && seen.source() != self.own)
            .then_some(Verdict::Answered { mac, evidence })
    }

    /// A random number of milliseconds in `lo..=hi` (xorshift64*: no cryptography needed, only
    /// hosts that do not probe in step).
    fn between(&mut self, lo: u32, hi: u32) -> u64 {
        let mut x = self.random;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.random = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        let span = u64::from(hi.saturating_sub(lo)) + 1;
        u64::from(lo) + r % span
    }
}
