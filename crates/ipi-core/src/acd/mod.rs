//! Address conflict detection: asking the link whether an address is already used, before it
//! is (RFC 5227 ARP probes for IPv4, RFC 4862 duplicate address detection for IPv6).
//!
//! - [`probe`]: the decision, sans IO ([`Probe`], [`Timing`], [`Verdict`]).
//! - [`frame`]: the Ethernet frames, built and parsed (the probes, and the gratuitous ARP and
//!   unsolicited neighbour advertisement that vrrpd announces with).
//! - [`socket`]: `AF_PACKET` sockets on one interface.
//! - [`probe_addresses`]: the three together, blocking, for every address at once.
//!
//! A probe never sends from an address: ARP probes carry sender 0.0.0.0 (RFC 5227 2.1.1),
//! solicitations come from :: (RFC 4862 5.4.2).

pub mod frame;
pub mod probe;
pub mod socket;

use std::net::IpAddr;
use std::time::{Duration, Instant};

pub use frame::{Mac, Seen};
pub use probe::{mac_string, Evidence, Probe, Step, Timing, TimingError, Verdict};

/// Why the link could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No interface has this name in the caller's network namespace.
    #[error("no interface named {0:?} in this network namespace (see `ip link`)")]
    NoSuchInterface(String),
    /// The interface has no Ethernet address, so it speaks neither ARP nor neighbour discovery.
    #[error("{0}: has no Ethernet MAC address; probing needs one")]
    NoMac(String),
    /// A socket call failed.
    #[error("{interface}: {operation}: {source}")]
    Io {
        /// The interface.
        interface: String,
        /// What was being done.
        operation: &'static str,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },
}

/// A VRRP router seen on the link while probing: the programs that hold addresses with VRRP
/// tell their own group's routers from strangers by this.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Router {
    /// Its virtual router id.
    pub vrid: u8,
    /// Its IP source.
    pub from: IpAddr,
    /// Its Ethernet source.
    pub mac: Mac,
}

/// What the link said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Each address asked for and its verdict, in the order asked.
    pub verdicts: Vec<(IpAddr, Verdict)>,
    /// The VRRP routers seen meanwhile, each (VRID, MAC) once.
    pub routers: Vec<Router>,
    /// The interface's own MAC.
    pub own: Mac,
}

impl Report {
    /// The addresses something answered for, with the answer.
    pub fn answered(&self) -> impl Iterator<Item = (IpAddr, Mac, Evidence)> + '_ {
        self.verdicts.iter().filter_map(|(ip, v)| match v {
            Verdict::Answered { mac, evidence } => Some((*ip, *mac, *evidence)),
            Verdict::Free => None,
        })
    }
}

/// Probes every address in `targets` on `interface` at once and waits for the verdicts, and at
/// least `listen` in all (to see VRRP routers that advertise less often than a probe lasts).
/// Takes at most `timing.bound_ms()` (or `listen`) plus scheduling; needs `CAP_NET_RAW`.
pub fn probe_addresses(
    interface: &str,
    targets: &[IpAddr],
    timing: Timing,
    listen: Duration,
) -> Result<Report, Error> {
    let io = |operation| {
        move |source| Error::Io {
            interface: interface.to_owned(),
            operation,
            source,
        }
    };
    let index =
        socket::index_of(interface).ok_or_else(|| Error::NoSuchInterface(interface.to_owned()))?;
    let fd =
        socket::open_listener(index).map_err(io("open AF_PACKET socket (needs CAP_NET_RAW)"))?;
    let own = socket::bound_mac(&fd)
        .map_err(io("read the interface's MAC"))?
        .ok_or_else(|| Error::NoMac(interface.to_owned()))?;
    let seed = seed();
    let mut probes: Vec<Probe> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| Probe::new(*t, own, timing, seed.wrapping_add(i as u64 * 0x9e37)))
        .collect();
    let mut report = Report {
        own,
        ..Report::default()
    };
    let start = Instant::now();
    let mut buffer = vec![0u8; 2048];
    loop {
        let now = elapsed_ms(start);
        let next = step_all(&mut probes, now, &fd, index, own).map_err(io("send a probe"))?;
        let listening = elapsed_ms(start) < duration_ms(listen);
        let wake = match next {
            Some(at) => at,
            None if listening => duration_ms(listen),
            None => break,
        };
        let wait = Duration::from_millis(wake.saturating_sub(elapsed_ms(start)));
        if let Some(n) = socket::receive(&fd, &mut buffer, wait).map_err(io("receive"))? {
            if let Some(seen) = buffer.get(..n).and_then(frame::parse) {
                take_in(&mut probes, &mut report, &seen);
            }
        }
    }
    report.verdicts = probes
        .iter_mut()
        .map(|p| match p.poll(u64::MAX) {
            Step::Done(v) => (p.target(), v),
            Step::Send | Step::WaitUntil(_) => (p.target(), Verdict::Free),
        })
        .collect();
    Ok(report)
}

/// Runs every probe up to `now`, sending what they ask; the earliest time one waits for, or
/// `None` when all are done.
fn step_all(
    probes: &mut [Probe],
    now: u64,
    fd: &std::os::fd::OwnedFd,
    index: u32,
    own: Mac,
) -> std::io::Result<Option<u64>> {
    let mut next: Option<u64> = None;
    for p in probes {
        loop {
            match p.poll(now) {
                Step::Send => {
                    let frame = match p.target() {
                        IpAddr::V4(v4) => frame::arp_probe_frame(own, v4),
                        IpAddr::V6(v6) => frame::dad_ns_frame(own, v6),
                    };
                    socket::send_frame(fd, index, &frame)?;
                }
                Step::WaitUntil(at) => {
                    next = Some(next.map_or(at, |n| n.min(at)));
                    break;
                }
                Step::Done(_) => break,
            }
        }
    }
    Ok(next)
}

fn take_in(probes: &mut [Probe], report: &mut Report, seen: &Seen) {
    if let Seen::Vrrp { source, from, vrid } = *seen {
        let known = report
            .routers
            .iter()
            .any(|r| r.vrid == vrid && r.mac == source);
        if !known {
            report.routers.push(Router {
                vrid,
                from,
                mac: source,
            });
        }
        return;
    }
    for p in probes {
        p.on_seen(seen);
    }
}

fn elapsed_ms(start: Instant) -> u64 {
    duration_ms(start.elapsed())
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A seed for the random delays: the clock and the process, so that two hosts (or two runs)
/// do not probe in step.
fn seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    (nanos as u64) ^ (u64::from(std::process::id()) << 32)
}
