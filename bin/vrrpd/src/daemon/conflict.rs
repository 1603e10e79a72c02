//! VIPs that another host on the link uses: before an instance first runs (and so before it
//! can first become MASTER), and again whenever a foreign router appears on its VRID
//! ([`super::clash`]), each of its VIPs is probed on the wire (`ipi_core::acd`: RFC 5227 ARP
//! probes from 0.0.0.0, RFC 4862 solicitations from ::). An answer from a host that is not one
//! of the group's routers and not this host is a warning naming VIP, MAC and interface, kept
//! in `vrrpd status` and the metrics until a later probe finds the VIP free. The instance runs
//! on: the operator decides.
//!
//! The probe runs beside the state machine, never in its way: it starts with the instance,
//! which then waits Master_Down_Interval (three advert intervals and Skew_Time) as BACKUP
//! before it can take over, longer than the probe lasts (under 0.7 s by default) for any
//! advert interval from 0.3 s up (the listening for the group's adverts, below, goes on
//! beside it and ends, for 1 s adverts, at 2.25 s, before Master_Down_Interval's 3 s and
//! Skew_Time). With a shorter interval the verdict comes just after the
//! first MASTER transition; it is the same verdict, as this host never answers its own probes.
//! So it comes for an address owner (priority 255, MASTER at once: RFC 5798 6.4.1) and for an
//! instance asked while a batch is on the wire (it waits for that batch to end, at most the
//! probe's bound and [`MAX_LISTEN`]). Instances asked together are probed in one batch.
//!
//! Who is of the group: the routers seen advertising the instance's VRID while the probe
//! listens (two advert intervals and a bit, at most [`MAX_LISTEN`], so that a master that holds
//! the VIPs is seen even with one advert late or lost), less those [`super::clash`] knows as foreign. This host's
//! own interfaces' MACs are never strangers.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use ipi_core::acd::{self, Evidence, Mac, Report, Timing};
use serde_json::{json, Value};

use super::clash::Clashes;
use crate::fsm::Instant;

/// The longest a probe listens for the group's adverts.
pub const MAX_LISTEN: Duration = Duration::from_secs(5);

/// A VIP that a stranger answered for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The instance whose VIP it is.
    pub instance: String,
    /// The interface it was probed on.
    pub interface: String,
    /// The VIP.
    pub vip: IpAddr,
    /// Who answered.
    pub mac: Mac,
    /// How.
    pub evidence: Evidence,
    /// When it was first found, in this appearance.
    pub since: Instant,
}

/// What one instance's probe found: per interface, the report or why the link could not be
/// asked there; and this host's MACs.
#[derive(Debug)]
pub struct Probed {
    /// The instance.
    pub instance: String,
    /// The reports by interface.
    pub reports: Reports,
    /// The MACs of this host's interfaces.
    pub own: Vec<Mac>,
}

/// A probe's reports, by interface (an error shared by every instance on the interface).
pub type Reports = Vec<(String, Result<Report, Arc<acd::Error>>)>;

/// What the probes found, by instance.
#[derive(Debug, Default)]
pub struct Conflicts {
    found: BTreeMap<(String, IpAddr), Conflict>,
    appeared: BTreeMap<String, u64>,
    probes: BTreeMap<String, u64>,
    /// Instances waiting for the next batch.
    pending: BTreeSet<String>,
    /// Whether a batch is on the wire.
    running: bool,
}

/// The instance's side of a probe: its VRID and the sources of the foreign routers on it.
#[derive(Debug, Clone, Copy)]
pub struct Group<'a> {
    /// The VRID.
    pub vrid: u8,
    /// Foreign routers' addresses ([`super::clash`]): never of the group.
    pub foreign: &'a [IpAddr],
}

/// Whether `mac`, answering in `report`, is a stranger: not this host (`own`), not a router
/// of `group` seen advertising in the report.
pub fn stranger(mac: Mac, report: &Report, own: &[Mac], group: Group<'_>) -> bool {
    let ours = mac == report.own || own.contains(&mac);
    let member = report
        .routers
        .iter()
        .any(|r| r.vrid == group.vrid && r.mac == mac && !group.foreign.contains(&r.from));
    !ours && !member
}

impl Conflicts {
    /// Asks for a probe of `instance`'s VIPs in the next batch.
    pub fn ask(&mut self, instance: &str) {
        self.pending.insert(instance.to_owned());
    }

    /// The instances of the next batch, when none is on the wire and some wait: one batch
    /// probes them all at once (1,000 instances starting together are one probe per
    /// interface, not 1,000 sockets that each see every frame of the link).
    pub fn next_batch(&mut self) -> Option<Vec<String>> {
        if self.running || self.pending.is_empty() {
            return None;
        }
        self.running = true;
        Some(std::mem::take(&mut self.pending).into_iter().collect())
    }

    /// The batch on the wire has ended; what it found about instances no longer running (a
    /// reload removed them) is forgotten.
    pub fn batch_done(&mut self, running: impl Fn(&str) -> bool) {
        self.running = false;
        self.found.retain(|(instance, _), _| running(instance));
    }

    /// Takes in what a probe of `instance` found at `now`: the VIPs answered by strangers are
    /// its conflicts from now on (each new one logged as a warning); the others are clear.
    pub fn probed(&mut self, now: Instant, found: &Probed, group: Group<'_>) {
        let name = &found.instance;
        *self.probes.entry(name.clone()).or_default() += 1;
        let (mut now_found, mut failed) = (BTreeSet::new(), BTreeSet::new());
        for (interface, report) in &found.reports {
            let report = match report {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!("{name}: the VIPs on {interface} could not be probed: {e}");
                    failed.insert(interface.as_str());
                    continue;
                }
            };
            for (vip, mac, evidence) in report.answered() {
                if !stranger(mac, report, &found.own, group) {
                    continue;
                }
                now_found.insert(vip);
                let key = (name.clone(), vip);
                if self.found.get(&key).is_some_and(|c| c.mac == mac) {
                    continue;
                }
                *self.appeared.entry(name.clone()).or_default() += 1;
                tracing::warn!(
                    "{name}: VIP {vip} is in use on {interface} by {} ({}), a host outside \
                     this VRRP group; the instance runs on",
                    acd::mac_string(mac),
                    match evidence {
                        Evidence::Holds => "it answered the probe",
                        Evidence::Probing => "it probed for it at the same time",
                    }
                );
                let conflict = Conflict {
                    instance: name.clone(),
                    interface: interface.clone(),
                    vip,
                    mac,
                    evidence,
                    since: now,
                };
                self.found.insert(key, conflict);
            }
        }
        // What a failed interface said before stands until it can be asked again.
        self.found.retain(|(instance, vip), c| {
            let keep = instance != name
                || now_found.contains(vip)
                || failed.contains(c.interface.as_str());
            if !keep {
                tracing::info!("{name}: VIP {vip} is no longer answered by another host");
            }
            keep
        });
    }

    /// The conflicts of `instance` now.
    pub fn of<'a>(&'a self, instance: &'a str) -> impl Iterator<Item = &'a Conflict> + 'a {
        self.found.values().filter(move |c| c.instance == instance)
    }

    /// Every conflict now.
    pub fn all(&self) -> impl Iterator<Item = &Conflict> {
        self.found.values()
    }

    /// How many conflicts appeared on `instance` (each one logged).
    pub fn appearances(&self, instance: &str) -> u64 {
        self.appeared.get(instance).copied().unwrap_or(0)
    }

    /// How many probes of `instance` ended.
    pub fn probes(&self, instance: &str) -> u64 {
        self.probes.get(instance).copied().unwrap_or(0)
    }

    /// The conflicts of `instance`, as `vrrpd status --json` shows them.
    pub fn to_json(&self, now: Instant, instance: &str) -> Value {
        let list: Vec<Value> = self
            .of(instance)
            .map(|c| {
                json!({
                    "vip": c.vip,
                    "mac": acd::mac_string(c.mac),
                    "interface": c.interface,
                    "evidence": match c.evidence {
                        Evidence::Holds => "answered",
                        Evidence::Probing => "probing",
                    },
                    "found_ms_ago": now.saturating_duration_since(c.since).as_millis(),
                })
            })
            .collect();
        Value::Array(list)
    }
}

/// One batch: the instances and their VIPs by interface, and what the wire said.
#[derive(Debug)]
pub struct Batch {
    /// Each instance and its VIPs.
    pub instances: Vec<(String, Vec<IpAddr>)>,
    /// The reports by interface.
    pub reports: Reports,
    /// This host's MACs.
    pub own: Vec<Mac>,
}

impl Batch {
    /// What the batch says about `instance`'s `vips` alone.
    fn of(&self, instance: &str, vips: &[IpAddr]) -> Probed {
        let reports = (self.reports.iter())
            .map(|(interface, r)| {
                let mine = r.clone().map(|mut r| {
                    r.verdicts.retain(|(ip, _)| vips.contains(ip));
                    r
                });
                (interface.clone(), mine)
            })
            .collect();
        Probed {
            instance: instance.to_owned(),
            reports,
            own: self.own.clone(),
        }
    }
}

impl Conflicts {
    /// What a batch found, taken in: status and metrics show it from now on. `vrid` gives a
    /// running instance's VRID: those a reload removed meanwhile are left out. The routers
    /// `clashes` knows as foreign on an instance's VRID are not of its group.
    pub fn took(
        &mut self,
        batch: &Batch,
        vrid: impl Fn(&str) -> Option<u8>,
        clashes: &Clashes,
        now: Instant,
    ) {
        for (name, vips) in &batch.instances {
            let Some(vrid) = vrid(name) else {
                continue;
            };
            let foreign: Vec<IpAddr> = (clashes.active(now))
                .filter(|f| f.instance == *name)
                .map(|f| f.source)
                .collect();
            let group = Group {
                vrid,
                foreign: &foreign,
            };
            self.probed(now, &batch.of(name, vips), group);
        }
        self.batch_done(|name| vrid(name).is_some());
    }
}

/// Probes `vips` (by interface, each interface on a thread of its own) on a blocking thread
/// for `instances` (each with its VIPs), and hands what it found to `done`; listens at least
/// two advert intervals (`advert`) and a bit, up to [`MAX_LISTEN`].
pub fn spawn(
    instances: Vec<(String, Vec<IpAddr>)>,
    vips: Vec<(String, Vec<IpAddr>)>,
    timing: Timing,
    advert: Duration,
    done: impl FnOnce(Batch) + Send + 'static,
) {
    let listen = (advert * 2 + Duration::from_millis(250)).min(MAX_LISTEN);
    tokio::task::spawn_blocking(move || {
        let reports = std::thread::scope(|scope| {
            let running: Vec<_> = (vips.iter())
                .map(|(interface, addresses)| {
                    let probe = scope
                        .spawn(move || acd::probe_addresses(interface, addresses, timing, listen));
                    (interface, probe)
                })
                .collect();
            (running.into_iter())
                .map(|(interface, t)| {
                    let r = t.join().unwrap_or_else(|_| Err(panicked(interface)));
                    (interface.clone(), r.map_err(Arc::new))
                })
                .collect()
        });
        let own = own_macs();
        done(Batch {
            instances,
            reports,
            own,
        });
    });
}

fn panicked(interface: &str) -> acd::Error {
    acd::Error::Io {
        interface: interface.to_owned(),
        operation: "probe",
        source: std::io::Error::other("the probing thread panicked"),
    }
}

/// The MACs of this host's interfaces (in the network namespace whose /sys is mounted).
fn own_macs() -> Vec<Mac> {
    let Ok(dir) = std::fs::read_dir("/sys/class/net") else {
        return Vec::new();
    };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("address")).ok())
        .filter_map(|text| parse_mac(text.trim()))
        .collect()
}

fn parse_mac(text: &str) -> Option<Mac> {
    let bytes: Vec<u8> = text
        .split(':')
        .map(|b| u8::from_str_radix(b, 16).ok())
        .collect::<Option<_>>()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipi_core::acd::{Router, Verdict};

    const OWN: Mac = [2, 0, 0, 0, 0, 1];
    const PEER: Mac = [2, 0, 0, 0, 0, 2];
    const STRANGER: Mac = [2, 0, 0, 0, 0, 9];

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn report(answers: &[(&str, Mac)], routers: &[(u8, &str, Mac)]) -> Report {
        Report {
            verdicts: answers
                .iter()
                .map(|(vip, mac)| {
                    let v = Verdict::Answered {
                        mac: *mac,
                        evidence: Evidence::Holds,
                    };
                    (ip(vip), v)
                })
                .collect(),
            routers: routers
                .iter()
                .map(|(vrid, from, mac)| Router {
                    vrid: *vrid,
                    from: ip(from),
                    mac: *mac,
                })
                .collect(),
            own: OWN,
        }
    }

    fn probed(r: Report) -> Probed {
        Probed {
            instance: "VI_1".into(),
            reports: vec![("eth0".into(), Ok(r))],
            own: vec![OWN],
        }
    }

    const GROUP: Group<'static> = Group {
        vrid: 51,
        foreign: &[],
    };

    #[test]
    fn a_stranger_is_a_conflict_until_a_probe_finds_the_vip_free() {
        let mut c = Conflicts::default();
        assert_eq!(c.next_batch(), None);
        c.ask("VI_1");
        c.ask("VI_2");
        c.ask("VI_1");
        assert_eq!(c.next_batch(), Some(vec!["VI_1".into(), "VI_2".into()]));
        c.ask("VI_1");
        assert_eq!(c.next_batch(), None, "one batch at a time");
        c.probed(
            Instant::ZERO,
            &probed(report(&[("192.0.2.100", STRANGER)], &[])),
            GROUP,
        );
        let found: Vec<&Conflict> = c.of("VI_1").collect();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].vip, found[0].mac), (ip("192.0.2.100"), STRANGER));
        let j = c.to_json(Instant::from_millis(1500), "VI_1");
        assert_eq!(j[0]["mac"], "02:00:00:00:00:09");
        assert_eq!(j[0]["interface"], "eth0");
        assert_eq!(j[0]["found_ms_ago"], 1500);
        // An interface that cannot be asked keeps what it said.
        let failed = Probed {
            instance: "VI_1".into(),
            reports: vec![(
                "eth0".into(),
                Err(Arc::new(acd::Error::NoMac("eth0".into()))),
            )],
            own: vec![OWN],
        };
        c.probed(Instant::ZERO, &failed, GROUP);
        assert_eq!(c.of("VI_1").count(), 1);
        // Found again: the same appearance.
        c.probed(
            Instant::ZERO,
            &probed(report(&[("192.0.2.100", STRANGER)], &[])),
            GROUP,
        );
        assert_eq!(c.appearances("VI_1"), 1);
        c.probed(Instant::ZERO, &probed(report(&[], &[])), GROUP);
        assert_eq!(c.of("VI_1").count(), 0);
        assert_eq!(c.probes("VI_1"), 4);
        assert_eq!(c.appearances("VI_1"), 1);
        c.probed(
            Instant::ZERO,
            &probed(report(&[("192.0.2.100", STRANGER)], &[])),
            GROUP,
        );
        c.batch_done(|name| name != "VI_1");
        assert_eq!(c.of("VI_1").count(), 0, "a removed instance is forgotten");
        assert_eq!(c.next_batch(), Some(vec!["VI_1".into()]));
    }

    #[test]
    fn the_group_and_this_host_are_never_strangers() {
        let mut c = Conflicts::default();
        // A group router seen advertising the VRID holds the VIP (the master before us).
        let r = report(&[("192.0.2.100", PEER)], &[(51, "192.0.2.2", PEER)]);
        c.probed(Instant::ZERO, &probed(r), GROUP);
        // This host's own MAC, on another interface.
        let r = report(&[("192.0.2.100", OWN)], &[]);
        c.probed(Instant::ZERO, &probed(r), GROUP);
        assert_eq!(c.of("VI_1").count(), 0);
        // A router on another VRID, or one clash.rs calls foreign, is no member.
        let r = report(&[("192.0.2.100", PEER)], &[(52, "192.0.2.2", PEER)]);
        assert!(stranger(PEER, &r, &[OWN], GROUP));
        let r = report(&[("192.0.2.100", PEER)], &[(51, "192.0.2.2", PEER)]);
        let foreign = [ip("192.0.2.2")];
        let group = Group {
            vrid: 51,
            foreign: &foreign,
        };
        assert!(stranger(PEER, &r, &[OWN], group));
    }

    #[test]
    fn macs_are_read_as_sysfs_writes_them() {
        assert_eq!(parse_mac("02:00:00:00:00:09"), Some(STRANGER));
        assert_eq!(parse_mac("00:00:00:00:00:00:00:00"), None);
        assert_eq!(parse_mac("zz"), None);
    }
}
