//! The fault schedule: every kind of fault of [`Kind::ALL`] once a round, in an order and on
//! targets drawn from a seed (SplitMix64: the same seed gives the same schedule), each held
//! for its kind's time and followed by quiet time.

use std::time::Duration;

/// SplitMix64 (Steele, Lea, Flood 2014): a small, fixed generator, so that a seed printed
/// with a run reproduces it on any machine.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        let n64 = u64::try_from(n).unwrap_or(u64::MAX);
        usize::try_from(self.next_u64() % n64).unwrap_or(0)
    }
}

/// A kind of fault (its class in the report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// SIGKILL of the VIP daemon on the API VIP's holder.
    KillVipHolder,
    /// SIGKILL of the VIP daemon on a master that does not hold the API VIP.
    KillVipBackup,
    /// SIGKILL of the API load balancer on the API VIP's holder.
    KillProxyHolder,
    /// SIGKILL of the API load balancer on a master that does not hold the API VIP.
    KillProxyBackup,
    /// SIGKILL of mdns-publish on a node.
    KillMdnsPublish,
    /// SIGKILL of mdns-publish browse on a node.
    KillMdnsBrowse,
    /// SIGKILL of dnsmasq on a node.
    KillDnsmasq,
    /// SIGSTOP of the API holder's VIP daemon for 5 s, then SIGCONT.
    StopVipHolder,
    /// The API holder powered off (every process killed, link down), then on.
    PowerOffHolder,
    /// A master that does not hold the API VIP powered off, then on.
    PowerOffBackup,
    /// The Ingress holder's link down for 2 s.
    LinkFlap,
    /// VRRP dropped between the API holder and another master (split brain), then healed.
    SplitBrain,
    /// 40% of the VRRP packets a backup master receives dropped.
    VrrpLoss,
    /// A master's API server failing /readyz, then refusing connections, then back.
    ApiFailing,
    /// The router on the Ingress holder stopped, then started.
    RouterDown,
    /// Every daemon of every node reloaded with its configuration unchanged.
    ReloadUnchanged,
    /// A master's mdns-publish stopped (the master leaves every inventory: every node's
    /// peers change, reloads follow), then started again.
    ReloadPeers,
}

impl Kind {
    /// Every kind, in the report's order.
    pub const ALL: [Kind; 17] = [
        Kind::KillVipHolder,
        Kind::KillVipBackup,
        Kind::KillProxyHolder,
        Kind::KillProxyBackup,
        Kind::KillMdnsPublish,
        Kind::KillMdnsBrowse,
        Kind::KillDnsmasq,
        Kind::StopVipHolder,
        Kind::PowerOffHolder,
        Kind::PowerOffBackup,
        Kind::LinkFlap,
        Kind::SplitBrain,
        Kind::VrrpLoss,
        Kind::ApiFailing,
        Kind::RouterDown,
        Kind::ReloadUnchanged,
        Kind::ReloadPeers,
    ];

    /// Its row in the table.
    pub fn label(self) -> &'static str {
        match self {
            Kind::KillVipHolder => "SIGKILL VIP daemon, API holder",
            Kind::KillVipBackup => "SIGKILL VIP daemon, backup master",
            Kind::KillProxyHolder => "SIGKILL API proxy, API holder",
            Kind::KillProxyBackup => "SIGKILL API proxy, backup master",
            Kind::KillMdnsPublish => "SIGKILL mdns-publish",
            Kind::KillMdnsBrowse => "SIGKILL mdns-publish browse",
            Kind::KillDnsmasq => "SIGKILL dnsmasq",
            Kind::StopVipHolder => "SIGSTOP VIP daemon 5 s, API holder",
            Kind::PowerOffHolder => "power off API holder",
            Kind::PowerOffBackup => "power off backup master",
            Kind::LinkFlap => "link flap 2 s, Ingress holder",
            Kind::SplitBrain => "VRRP partition of 2 masters",
            Kind::VrrpLoss => "40% VRRP loss, backup master",
            Kind::ApiFailing => "API server 503 then refusing",
            Kind::RouterDown => "router down, Ingress holder",
            Kind::ReloadUnchanged => "reload all, unchanged",
            Kind::ReloadPeers => "master removed/added (peers)",
        }
    }

    /// Whether a client may see an outage: false for the faults that need none (reloads, a
    /// backup's faults, a killed mdns daemon).
    pub fn needs_outage(self) -> bool {
        !matches!(
            self,
            Kind::KillVipBackup
                | Kind::KillProxyBackup
                | Kind::KillMdnsPublish
                | Kind::KillMdnsBrowse
                | Kind::PowerOffBackup
                | Kind::ReloadUnchanged
                | Kind::ReloadPeers
        )
    }

    /// How long the fault is held before it is undone.
    pub fn hold(self) -> Duration {
        Duration::from_secs(match self {
            Kind::StopVipHolder => 5,
            Kind::LinkFlap => 2,
            Kind::PowerOffHolder | Kind::PowerOffBackup | Kind::SplitBrain | Kind::VrrpLoss => 8,
            Kind::ApiFailing => 8,
            Kind::RouterDown | Kind::ReloadPeers => 6,
            // A kill is not undone: its unit's Restart= brings the daemon back.
            _ => 0,
        })
    }
}

/// One fault of the schedule: its kind and the seeded choice among its possible targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planned {
    /// What.
    pub kind: Kind,
    /// Which of the possible targets (taken modulo their number when applied).
    pub pick: usize,
    /// Quiet time after it is undone, before the next.
    pub quiet: Duration,
}

/// The schedule: rounds of every kind, each round in an order of its own.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The seed.
    pub seed: u64,
    rng: SplitMix64,
    round: Vec<Planned>,
    /// Quiet time after each fault: at least this, up to twice it.
    pub quiet: Duration,
}

impl Schedule {
    /// The schedule of `seed`, with at least `quiet` between faults.
    pub fn new(seed: u64, quiet: Duration) -> Schedule {
        Schedule {
            seed,
            rng: SplitMix64::new(seed),
            round: Vec::new(),
            quiet,
        }
    }
}

impl Iterator for Schedule {
    type Item = Planned;

    /// The next fault: rounds without end (the caller stops when its time is up).
    fn next(&mut self) -> Option<Planned> {
        if self.round.is_empty() {
            let mut kinds = Kind::ALL.to_vec();
            // Fisher-Yates, backwards so that `pop` takes them in the drawn order.
            for i in (1..kinds.len()).rev() {
                kinds.swap(i, self.rng.below(i + 1));
            }
            let quiet_ms = u64::try_from(self.quiet.as_millis()).unwrap_or(u64::MAX);
            self.round = kinds
                .into_iter()
                .map(|kind| Planned {
                    kind,
                    pick: self.rng.below(1 << 16),
                    quiet: Duration::from_millis(quiet_ms + self.rng.next_u64() % quiet_ms.max(1)),
                })
                .collect();
        }
        self.round.pop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let a: Vec<Planned> = Schedule::new(7, Duration::from_secs(3)).take(40).collect();
        let b: Vec<Planned> = Schedule::new(7, Duration::from_secs(3)).take(40).collect();
        let c: Vec<Planned> = Schedule::new(8, Duration::from_secs(3)).take(40).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn every_round_has_every_kind_once() {
        let mut s = Schedule::new(1, Duration::from_secs(3));
        for _ in 0..3 {
            let mut round: Vec<Kind> = (&mut s).take(Kind::ALL.len()).map(|p| p.kind).collect();
            round.sort();
            assert_eq!(round, Kind::ALL);
        }
    }

    #[test]
    fn splitmix64_is_the_published_sequence() {
        // The reference implementation's first outputs for seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }
}
