//! `vrrpd watch`: every VRRP advertisement on an interface or in a capture, decoded, one line
//! each (text or JSON). Rejected datagrams are printed with the reason instead of being hidden:
//! this is the tool for finding out why two routers disagree. Given a keepalived.conf, adverts
//! on its VRIDs from routers outside its groups are marked FOREIGN with the reason. A PASS
//! password is printed as `<redacted>` unless `--show-secrets` asks for it ([`Format`]).

use std::fmt::Write as _;
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ipi_core::capture;
use ipi_core::secret::REDACTED;
use ipi_core::vrrp::{self, Auth, ChecksumMode, Datagram, Version};
use ipi_core::Family;
use serde_json::json;

use crate::config::Config;
use crate::daemon::rx::{self, Expect};
use crate::net::{Netlink, SocketConfig, VrrpSocket};

/// How lines are printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Format {
    /// JSON objects instead of text.
    pub json: bool,
    /// PASS passwords as they are, not redacted.
    pub show_secrets: bool,
}

/// What one line reports.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// When it was captured or received, since the Unix epoch.
    pub at: Duration,
    /// The advert, or why the datagram was rejected (with its source when known).
    pub outcome: Result<Advert, Rejected>,
    /// Set when the advert is on a configured VRID but from a router outside that group.
    pub foreign: Option<Foreign>,
}

/// An advert on one of our VRIDs from a router outside our group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// The configured instance whose VRID it carries.
    pub instance: String,
    /// The receive check it fails (`vrrpd status`'s counter name).
    pub reason: &'static str,
    /// What differs, for people.
    pub why: String,
}

/// The groups of a configuration: what each instance expects of its adverts, and where.
#[derive(Debug, Clone, Default)]
pub struct Groups {
    instances: Vec<(String, String, Expect)>,
}

impl Groups {
    /// The instances of `config`.
    pub fn of(config: &Config) -> Groups {
        let instances = config
            .instances
            .iter()
            .map(|i| (i.name.clone(), i.interface.clone(), Expect::of(config, i)))
            .collect();
        Groups { instances }
    }

    /// Whether `advert`, heard on `interface` (any, for a capture), is foreign to the group
    /// of the instance that runs its VRID in its family there; None when it belongs to it or
    /// no instance runs that VRID.
    pub fn foreign(&self, advert: &Advert, interface: Option<&str>) -> Option<Foreign> {
        let d = &advert.datagram;
        let runs = |on: &String, e: &Expect| {
            e.vrid == d.repr.vrid
                && interface.is_none_or(|i| i == on)
                && e.addresses
                    .first()
                    .is_none_or(|a| a.is_ipv4() == d.src.is_ipv4())
        };
        // Unicast and multicast are separate VRID spaces (as the daemon has it): the instance
        // of the datagram's mode first, any other only when none runs that VRID.
        let mode = |e: &Expect| rx::addressed(d.dst, !e.peers.is_empty());
        let (name, _, expect) = self
            .instances
            .iter()
            .find(|(_, on, e)| runs(on, e) && mode(e))
            .or_else(|| self.instances.iter().find(|(_, on, e)| runs(on, e)))?;
        let raw = vrrp::RawDatagram {
            src: d.src,
            dst: d.dst,
            hop_limit: d.hop_limit,
            payload: &[],
            ah: None,
        };
        match rx::check(&raw, &d.repr, expect) {
            Err(reject) if reject.is_foreign() => Some(Foreign {
                instance: name.clone(),
                reason: reject.name(),
                why: reject.why_foreign(&d.repr, expect),
            }),
            _ => None,
        }
    }
}

/// A decoded advertisement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advert {
    /// The datagram.
    pub datagram: Datagram,
    /// Whether the checksum only verified without the IPv4 pseudo-header (VRRPv3 over IPv4 as
    /// some implementations compute it; keepalived's `vrrp_checksum_compatibility`).
    pub checksum_without_pseudo_header: bool,
}

/// A datagram that did not decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// Its source, when the IP header could be read.
    pub src: Option<IpAddr>,
    /// Why.
    pub reason: String,
}

/// Decodes one VRRP datagram as received (IP facts and payload).
fn decode(raw: vrrp::RawDatagram<'_>) -> Result<Advert, Rejected> {
    let parse = |mode| {
        let packet = vrrp::Packet::new_checked(raw.payload)?;
        vrrp::Repr::parse(&packet, raw.src, raw.dst, mode)
    };
    let (repr, compat) = match parse(ChecksumMode::PseudoHeader) {
        Ok(repr) => (repr, false),
        Err(first) => match parse(ChecksumMode::NoPseudoHeader) {
            Ok(repr) if repr.version == Version::V3 && raw.src.is_ipv4() => (repr, true),
            _ => {
                return Err(Rejected {
                    src: Some(raw.src),
                    reason: first.to_string(),
                })
            }
        },
    };
    Ok(Advert {
        datagram: Datagram {
            src: raw.src,
            dst: raw.dst,
            hop_limit: raw.hop_limit,
            repr,
        },
        checksum_without_pseudo_header: compat,
    })
}

/// Decodes one whole IP datagram (as in a capture).
pub fn decode_ip(ip: &[u8]) -> Result<Advert, Rejected> {
    match vrrp::split_datagram(ip) {
        Ok(raw) => decode(raw),
        Err(e) => Err(Rejected {
            src: None,
            reason: e.to_string(),
        }),
    }
}

/// Every frame of a capture that carries VRRP (or claims to), decoded. Frames of other
/// protocols are skipped; frames whose link layer cannot be read are reported.
pub fn read_capture(path: &Path) -> Result<Vec<Seen>, capture::CaptureError> {
    let frames = capture::read(path)?;
    let mut seen = Vec::new();
    for frame in &frames {
        let outcome = match frame.ip() {
            Ok(ip) if !carries_vrrp(ip) => continue,
            Ok(ip) => decode_ip(ip),
            Err(e) => Err(Rejected {
                src: None,
                reason: e.to_string(),
            }),
        };
        seen.push(Seen {
            at: frame.timestamp,
            outcome,
            foreign: None,
        });
    }
    Ok(seen)
}

/// Whether an IP datagram's protocol (IPv4) or next header (IPv6) is VRRP's 112.
fn carries_vrrp(ip: &[u8]) -> bool {
    match ip.first().map(|b| b >> 4) {
        Some(4) => ip.get(9) == Some(&vrrp::PROTOCOL),
        Some(6) => ip.get(6) == Some(&vrrp::PROTOCOL),
        _ => true,
    }
}

/// One line of text (the password shown with `show_secrets`, else redacted).
pub fn to_text(seen: &Seen, show_secrets: bool) -> String {
    let mut line = utc(seen.at);
    match &seen.outcome {
        Ok(advert) => {
            let d = &advert.datagram;
            let r = &d.repr;
            let _ = write!(
                line,
                " {} > {} VRRPv{} vrid {} prio {} int {} hop {}",
                d.src,
                d.dst,
                r.version.number(),
                r.vrid,
                r.priority,
                interval(r.advert_int),
                d.hop_limit
            );
            match r.auth {
                Auth::Pass(_) => {
                    let _ = write!(line, " auth PASS {}", shown(&r.auth, show_secrets));
                }
                Auth::Ah => line.push_str(" auth AH"),
                Auth::None => {}
            }
            let addresses: Vec<String> = r.addresses.iter().map(IpAddr::to_string).collect();
            let _ = write!(line, " addrs {}", addresses.join(","));
            if advert.checksum_without_pseudo_header {
                line.push_str(" (checksum without pseudo-header)");
            }
            if let Some(f) = &seen.foreign {
                let _ = write!(line, " FOREIGN to {}: {}", f.instance, f.why);
            }
        }
        Err(rejected) => {
            if let Some(src) = rejected.src {
                let _ = write!(line, " {src}");
            }
            let _ = write!(line, " rejected: {}", rejected.reason);
        }
    }
    line
}

/// One line of JSON (the password shown with `show_secrets`, else redacted).
pub fn to_json(seen: &Seen, show_secrets: bool) -> String {
    let at = seen.at.as_secs_f64();
    let value = match &seen.outcome {
        Ok(advert) => {
            let d = &advert.datagram;
            let r = &d.repr;
            json!({
                "time": at,
                "src": d.src,
                "dst": d.dst,
                "hop_limit": d.hop_limit,
                "version": r.version.number(),
                "vrid": r.vrid,
                "priority": r.priority,
                "advert_int_cs": r.advert_int,
                "auth": match r.auth { Auth::None | Auth::Ah => None, Auth::Pass(_) => Some(password(&r.auth, show_secrets)) },
                "auth_type": r.auth.auth_type(),
                "addresses": r.addresses,
                "checksum_without_pseudo_header": advert.checksum_without_pseudo_header,
                "foreign": seen.foreign.as_ref().map(|f| json!({
                    "instance": f.instance, "reason": f.reason, "why": f.why,
                })),
            })
        }
        Err(rejected) => json!({ "time": at, "src": rejected.src, "error": rejected.reason }),
    };
    value.to_string()
}

/// `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` (civil-from-days, proleptic Gregorian calendar).
fn utc(at: Duration) -> String {
    let secs = at.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        at.subsec_micros()
    )
}

fn interval(cs: u16) -> String {
    if cs % 100 == 0 {
        format!("{}s", cs / 100)
    } else {
        format!("{}.{:02}s", cs / 100, cs % 100)
    }
}

/// The PASS password for the text line: quoted, or [`REDACTED`] unquoted.
fn shown(auth: &Auth, show_secrets: bool) -> String {
    if show_secrets {
        format!("{:?}", password(auth, true))
    } else {
        REDACTED.to_string()
    }
}

/// The PASS password as keepalived would have been configured with it (up to the first NUL),
/// or [`REDACTED`] unless `show_secrets`.
fn password(auth: &Auth, show_secrets: bool) -> String {
    match auth {
        Auth::None | Auth::Ah => String::new(),
        Auth::Pass(_) if !show_secrets => REDACTED.to_string(),
        Auth::Pass(data) => {
            let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
            String::from_utf8_lossy(&data[..end]).into_owned()
        }
    }
}

/// Prints `seen` to `out` in the chosen format.
pub fn print(out: &mut impl Write, seen: &Seen, format: Format) -> io::Result<()> {
    let line = if format.json {
        to_json(seen, format.show_secrets)
    } else {
        to_text(seen, format.show_secrets)
    };
    writeln!(out, "{line}")
}

/// Listens on `interface` for both families until an error; prints every datagram, marking
/// those foreign to `groups`.
pub async fn listen(
    interface: &str,
    format: Format,
    groups: &Groups,
) -> Result<(), crate::net::Error> {
    let sockets = open(interface).await?;
    let mut stdout = io::stdout().lock();
    loop {
        let mut seen = next(&sockets).await?;
        if let Ok(advert) = &seen.outcome {
            seen.foreign = groups.foreign(advert, Some(interface));
        }
        if print(&mut stdout, &seen, format).is_err() {
            // The reader went away (`vrrpd watch | head`): done.
            return Ok(());
        }
        let _ = stdout.flush();
    }
}

/// VRRP sockets on `interface`: IPv4 and IPv6 (either alone when the other has no address).
pub async fn open(interface: &str) -> Result<Vec<VrrpSocket>, crate::net::Error> {
    let netlink = Netlink::connect()?;
    let mut sockets = Vec::new();
    for family in [Family::V4, Family::V6] {
        match VrrpSocket::open(&netlink, &SocketConfig::multicast(interface, family)).await {
            Ok(socket) => sockets.push(socket),
            // An interface without IPv4 (or without a link-local IPv6) address is watched on the
            // other family only.
            Err(e) if !sockets.is_empty() || family == Family::V4 => {
                tracing::warn!("{interface}: not watching {family:?}: {e}")
            }
            Err(e) => return Err(e),
        }
    }
    Ok(sockets)
}

/// The next datagram on `sockets` (from [`open`]), decoded; an error only when the sockets
/// fail (a bad datagram is a [`Rejected`]). Never returns without sockets.
pub async fn next(sockets: &[VrrpSocket]) -> Result<Seen, crate::net::Error> {
    let received = match sockets {
        [one] => one.recv().await,
        [a, b, ..] => tokio::select! { r = a.recv() => r, r = b.recv() => r },
        [] => std::future::pending().await,
    };
    let at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let outcome = match received {
        Ok(received) => decode(received.raw()),
        Err(e) if e.is_per_datagram() => Err(Rejected {
            src: None,
            reason: e.to_string(),
        }),
        Err(e) => return Err(e),
    };
    Ok(Seen {
        at,
        outcome,
        foreign: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(Duration::ZERO), "1970-01-01T00:00:00.000000Z");
        // 2000-02-29 (a leap day in a year divisible by 400), 12:34:56.789 UTC.
        assert_eq!(
            utc(Duration::from_millis(951_827_696_789)),
            "2000-02-29T12:34:56.789000Z"
        );
        assert_eq!(
            utc(Duration::from_secs(1_795_345_535)),
            "2026-11-22T11:05:35.000000Z"
        );
    }

    #[test]
    fn intervals_in_seconds() {
        assert_eq!(interval(100), "1s");
        assert_eq!(interval(10), "0.10s");
        assert_eq!(interval(4095), "40.95s");
    }

    #[test]
    fn passwords_stop_at_the_first_nul() {
        assert_eq!(password(&Auth::pass("secret"), true), "secret");
        assert_eq!(password(&Auth::pass("12345678"), true), "12345678");
        assert_eq!(password(&Auth::None, true), "");
        assert_eq!(password(&Auth::pass("secret"), false), REDACTED);
        assert_eq!(shown(&Auth::pass("secret"), true), "\"secret\"");
        assert_eq!(shown(&Auth::pass("secret"), false), REDACTED);
    }

    #[test]
    fn only_vrrp_is_decoded() {
        let mut ip = vec![0x45u8; 20];
        ip[9] = 6; // TCP
        assert!(!carries_vrrp(&ip));
        ip[9] = 112;
        assert!(carries_vrrp(&ip));
        let mut ip6 = vec![0x60u8; 40];
        ip6[6] = 112;
        assert!(carries_vrrp(&ip6));
    }
}
