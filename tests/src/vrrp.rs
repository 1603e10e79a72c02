//! VRRP routers in the lab: one keepalived.conf for a group, started under the real keepalived
//! or under our vrrpd (both read the same file).

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

use ipi_core::vrrp::Version;
use ipi_lab::{Daemon, Host, LabError};

use crate::rfc;

/// Which program speaks VRRP on a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaker {
    /// The Debian package's keepalived.
    Keepalived,
    /// Our vrrpd, from this build (the path comes from the caller).
    Vrrpd,
}

impl Speaker {
    /// Its name, for timelines.
    pub fn name(self) -> &'static str {
        match self {
            Speaker::Keepalived => "keepalived",
            Speaker::Vrrpd => "vrrpd",
        }
    }
}

/// One VRRP group: the instances every router of the lab runs (an IPv4 one, an IPv6 one, or
/// both), with their shared settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The protocol version of the IPv4 instance (IPv6 is always v3).
    pub version: Version,
    /// The virtual router id of both instances.
    pub vrid: u8,
    /// The advertisement interval in centiseconds (whole seconds for v2).
    pub advert_int_cs: u16,
    /// PASS authentication for v2 (the password).
    pub auth_pass: Option<String>,
    /// keepalived's AH instead of PASS, keyed with [`Group::auth_pass`].
    pub auth_ah: bool,
    /// The IPv4 VIP, if the group has an IPv4 instance.
    pub vip4: Option<Ipv4Addr>,
    /// The IPv6 VIP, if the group has an IPv6 instance.
    pub vip6: Option<Ipv6Addr>,
    /// Unicast instead of multicast: every router's addresses (each router leaves its own out
    /// and sends from it).
    pub unicast: Vec<IpAddr>,
}

impl Group {
    /// VRRPv2 over IPv4 with PASS authentication, 1 s adverts: what OpenShift runs.
    pub fn v2_pass() -> Group {
        Group {
            version: Version::V2,
            vrid: 51,
            advert_int_cs: 100,
            auth_pass: Some("ipi_vip".to_string()),
            auth_ah: false,
            vip4: Some(Ipv4Addr::new(192, 0, 2, 100)),
            vip6: None,
            unicast: Vec::new(),
        }
    }

    /// [`Group::v2_pass`] over unicast between the lab's first two hosts (192.0.2.1, .2).
    pub fn v2_pass_unicast() -> Group {
        Group {
            vrid: 53,
            unicast: vec![
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)),
            ],
            ..Group::v2_pass()
        }
    }

    /// [`Group::v2_pass`] with keepalived's IPsec-AH (`auth_type AH`) keyed with the password.
    pub fn v2_ah() -> Group {
        Group {
            vrid: 54,
            auth_ah: true,
            ..Group::v2_pass()
        }
    }

    /// VRRPv3 with an IPv4 and an IPv6 instance.
    pub fn v3_dual(advert_int_cs: u16) -> Group {
        Group {
            version: Version::V3,
            vrid: 52,
            advert_int_cs,
            auth_pass: None,
            auth_ah: false,
            vip4: Some(Ipv4Addr::new(192, 0, 2, 101)),
            vip6: Some(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x101)),
            unicast: Vec::new(),
        }
    }

    /// The VIPs, IPv4 first.
    pub fn vips(&self) -> Vec<IpAddr> {
        let v4 = self.vip4.map(IpAddr::V4);
        let v6 = self.vip6.map(IpAddr::V6);
        v4.into_iter().chain(v6).collect()
    }

    /// RFC 5798 6.1 / RFC 3768 6.1: how long a backup of `priority` waits without adverts
    /// before it takes over.
    pub fn master_down_interval(&self, priority: u8) -> Duration {
        rfc::master_down_interval(self.version, priority, rfc::centis(self.advert_int_cs))
    }

    /// keepalived.conf for `host` at `priority`.
    pub fn config_on(&self, host: &Host, priority: u8) -> String {
        self.config_for(host.name(), priority, Some(IpAddr::V4(host.ipv4())))
    }

    /// keepalived.conf for a router called `name` at `priority` (multicast groups only).
    pub fn config(&self, name: &str, priority: u8) -> String {
        self.config_for(name, priority, None)
    }

    fn config_for(&self, name: &str, priority: u8, me: Option<IpAddr>) -> String {
        let mut c = String::new();
        let _ = writeln!(c, "global_defs {{\n    router_id {name}");
        if self.version == Version::V3 {
            let _ = writeln!(c, "    vrrp_version 3");
        }
        c.push_str("}\n");
        let int = if self.advert_int_cs % 100 == 0 {
            (self.advert_int_cs / 100).to_string()
        } else {
            format!(
                "{}.{:02}",
                self.advert_int_cs / 100,
                self.advert_int_cs % 100
            )
        };
        for (suffix, vip, len) in [
            ("4", self.vip4.map(IpAddr::V4), 32),
            ("6", self.vip6.map(IpAddr::V6), 128),
        ] {
            let Some(vip) = vip else { continue };
            let _ = writeln!(c, "\nvrrp_instance VI_{suffix} {{");
            let _ = writeln!(c, "    state BACKUP\n    interface eth0");
            let _ = writeln!(c, "    virtual_router_id {}", self.vrid);
            let _ = writeln!(c, "    priority {priority}\n    advert_int {int}");
            if let (Some(pass), true) = (&self.auth_pass, vip.is_ipv4()) {
                let _ = writeln!(
                    c,
                    "    authentication {{\n        auth_type {}\n        auth_pass {pass}\n    }}",
                    if self.auth_ah { "AH" } else { "PASS" }
                );
            }
            let peers: Vec<&IpAddr> = self.unicast.iter().filter(|p| Some(**p) != me).collect();
            if let (Some(me), false) = (me, peers.is_empty()) {
                let _ = writeln!(c, "    unicast_src_ip {me}\n    unicast_peer {{");
                for p in peers {
                    let _ = writeln!(c, "        {p}");
                }
                c.push_str("    }\n");
            }
            let _ = writeln!(
                c,
                "    virtual_ipaddress {{\n        {vip}/{len}\n    }}\n}}"
            );
        }
        c
    }
}

/// A VRRP router running on a lab host.
#[derive(Debug)]
pub struct Router {
    /// The host it runs on.
    pub host: Host,
    /// What runs there.
    pub speaker: Speaker,
    /// Its priority.
    pub priority: u8,
    /// The process.
    pub daemon: Daemon,
}

impl Router {
    /// Writes the group's config for this host and starts `speaker` on it. `vrrpd` is the path
    /// of our binary (needed for [`Speaker::Vrrpd`]).
    pub fn start(
        host: &Host,
        speaker: Speaker,
        group: &Group,
        priority: u8,
        vrrpd: Option<&PathBuf>,
    ) -> Result<Router, LabError> {
        let text = group.config_on(host, priority);
        Router::start_with(host, speaker, &text, priority, vrrpd)
    }

    /// Starts `speaker` on `host` with the configuration `text` (whose priority is `priority`).
    pub fn start_with(
        host: &Host,
        speaker: Speaker,
        text: &str,
        priority: u8,
        vrrpd: Option<&PathBuf>,
    ) -> Result<Router, LabError> {
        let dir = host.dir();
        let conf = dir.join("keepalived.conf");
        std::fs::write(&conf, text).map_err(|e| LabError::Io {
            what: format!("write {}", conf.display()),
            source: e,
        })?;
        let conf = conf.display().to_string();
        let daemon = match speaker {
            Speaker::Keepalived => {
                let pid = |n: &str| dir.join(n).display().to_string();
                let (p, r, c) = (pid("keepalived.pid"), pid("vrrp.pid"), pid("checkers.pid"));
                host.spawn(
                    "keepalived",
                    "keepalived",
                    [
                        "--dont-fork",
                        "--log-console",
                        "--log-detail",
                        "--vrrp",
                        "-f",
                        &conf,
                        "-p",
                        &p,
                        "-r",
                        &r,
                        "-c",
                        &c,
                    ],
                )?
            }
            Speaker::Vrrpd => {
                let program =
                    vrrpd
                        .map(|p| p.display().to_string())
                        .ok_or_else(|| LabError::Io {
                            what: "start vrrpd".to_string(),
                            source: std::io::Error::new(
                                std::io::ErrorKind::NotFound,
                                "the path of the vrrpd binary was not given",
                            ),
                        })?;
                let state = dir.join("state").display().to_string();
                host.spawn(
                    "vrrpd",
                    &program,
                    ["run", "-f", &conf, "--state-dir", &state],
                )?
            }
        };
        Ok(Router {
            host: host.clone(),
            speaker,
            priority,
            daemon,
        })
    }

    /// Whether the host holds every VIP of the group now.
    pub fn holds(&self, group: &Group) -> bool {
        match self.host.addresses() {
            Ok(addresses) => group.vips().iter().all(|v| addresses.contains(v)),
            Err(_) => false,
        }
    }

    /// Whether the host holds any VIP of the group now.
    pub fn holds_any(&self, group: &Group) -> bool {
        match self.host.addresses() {
            Ok(addresses) => group.vips().iter().any(|v| addresses.contains(v)),
            Err(_) => false,
        }
    }
}

/// One frame as tshark dissects it: the requested fields in order, each with every occurrence
/// joined by `,` (empty when the frame has none).
pub type Dissected = Vec<String>;

/// Dissects the pcap `file` with tshark: the frames matching the display filter `filter`, each
/// as the values of `fields`. The decoding is Wireshark's, independent of ipi-core's codec.
/// Callers check `ipi_lab::tool("tshark", "tshark")` first.
pub fn dissect(
    file: &std::path::Path,
    filter: &str,
    fields: &[&str],
) -> Result<Vec<Dissected>, LabError> {
    let mut command = std::process::Command::new("tshark");
    command
        .arg("-r")
        .arg(file)
        .args(["-n", "-Y", filter, "-T", "fields"]);
    command.args([
        "-E",
        "separator=\t",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in fields {
        command.args(["-e", f]);
    }
    let out = command.output().map_err(|e| LabError::Io {
        what: format!("run tshark on {}", file.display()),
        source: e,
    })?;
    if !out.status.success() {
        return Err(LabError::Io {
            what: format!("tshark -r {} -Y {filter}", file.display()),
            source: std::io::Error::other(String::from_utf8_lossy(&out.stderr).into_owned()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v2_config_carries_the_password_and_whole_seconds() {
        let c = Group::v2_pass().config("a", 150);
        assert!(c.contains("router_id a"));
        assert!(!c.contains("vrrp_version"));
        assert!(c.contains("priority 150\n    advert_int 1\n"));
        assert!(c.contains("auth_type PASS\n        auth_pass ipi_vip"));
        assert!(c.contains("192.0.2.100/32"));
        assert!(!c.contains("VI_6"));
    }

    #[test]
    fn a_v3_config_has_both_families_and_centiseconds() {
        let c = Group::v3_dual(10).config("b", 100);
        assert!(c.contains("vrrp_version 3"));
        assert!(c.contains("advert_int 0.10"));
        assert!(c.contains("VI_4") && c.contains("VI_6"));
        assert!(c.contains("2001:db8::101/128"));
        assert!(!c.contains("auth_type"));
    }

    #[test]
    fn master_down_interval_follows_the_rfc() {
        // 3 * 1 s + (256 - 100) / 256 s = 3.609 s, in whole centiseconds 3.60 s.
        assert_eq!(
            Group::v2_pass().master_down_interval(100),
            Duration::from_millis(3600)
        );
        // v3, 50 cs: 3 * 50 + (256 - 100) * 50 / 256 = 150 + 30.47 cs, so 1.80 s.
        assert_eq!(
            Group::v3_dual(50).master_down_interval(100),
            Duration::from_millis(1800)
        );
    }
}

/// Many instances on one interface, one VIP each, VRRPv3: the scale scenario of issue #15.
///
/// VRIDs are 1-255 per interface, family and mode (RFC 5798 5.2.3; keepalived keeps unicast
/// and multicast apart), so instance `k` lies in one of four quarters of 250: IPv4 multicast
/// (VIP 198.51.100.V), IPv6 multicast (2001:db8:1::V), IPv4 unicast (203.0.113.V), IPv6
/// unicast (2001:db8:2::V), each with VRID V = k % 250 + 1. Up to 250 instances are IPv4
/// multicast only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Many {
    /// How many instances.
    pub count: usize,
    /// The advertisement interval in centiseconds.
    pub advert_int_cs: u16,
}

/// Instances per quarter of [`Many`].
const QUARTER: usize = 250;

impl Many {
    /// `count` instances with 1 s adverts.
    pub fn new(count: usize) -> Many {
        Many {
            count,
            advert_int_cs: 100,
        }
    }

    /// Instance `k`'s quarter (0-3), VRID and VIP.
    pub fn instance(&self, k: usize) -> (usize, u8, IpAddr) {
        let (quarter, n) = (k / QUARTER, k % QUARTER + 1);
        let vrid = u8::try_from(n).unwrap_or(u8::MAX);
        let low = u16::from(vrid);
        let vip = match quarter {
            0 => IpAddr::V4(Ipv4Addr::new(198, 51, 100, vrid)),
            1 => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, low)),
            2 => IpAddr::V4(Ipv4Addr::new(203, 0, 113, vrid)),
            _ => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, low)),
        };
        (quarter, vrid, vip)
    }

    /// Every VIP, in instance order.
    pub fn vips(&self) -> Vec<IpAddr> {
        (0..self.count).map(|k| self.instance(k).2).collect()
    }

    /// The routes a client on the lab's link needs to reach the VIPs (they lie outside the
    /// lab's own subnets): on-link prefixes of `eth0`.
    pub const ROUTES: [&'static str; 4] = [
        "198.51.100.0/24",
        "203.0.113.0/24",
        "2001:db8:1::/64",
        "2001:db8:2::/64",
    ];

    /// RFC 5798 6.1: the Master_Down_Interval of a backup at `priority`.
    pub fn master_down_interval(&self, priority: u8) -> Duration {
        rfc::master_down_interval(Version::V3, priority, rfc::centis(self.advert_int_cs))
    }

    /// keepalived.conf for `me` at `priority`; `routers` are every router of the group (the
    /// unicast quarters send to the others).
    pub fn config(&self, me: &Host, priority: u8, routers: &[&Host]) -> String {
        let mut c = format!(
            "global_defs {{\n    router_id {}\n    vrrp_version 3\n}}\n",
            me.name()
        );
        let int = format!(
            "{}.{:02}",
            self.advert_int_cs / 100,
            self.advert_int_cs % 100
        );
        for k in 0..self.count {
            let (quarter, vrid, vip) = self.instance(k);
            let len = if vip.is_ipv4() { 32 } else { 128 };
            let _ = write!(
                c,
                "\nvrrp_instance VI_{k} {{\n    state BACKUP\n    interface eth0\n    \
                 virtual_router_id {vrid}\n    priority {priority}\n    advert_int {int}\n"
            );
            if quarter >= 2 {
                let addr = |h: &Host| -> IpAddr {
                    if vip.is_ipv4() {
                        IpAddr::V4(h.ipv4())
                    } else {
                        IpAddr::V6(h.ipv6())
                    }
                };
                let _ = writeln!(c, "    unicast_src_ip {}\n    unicast_peer {{", addr(me));
                for r in routers.iter().filter(|r| r.name() != me.name()) {
                    let _ = writeln!(c, "        {}", addr(r));
                }
                c.push_str("    }\n");
            }
            let _ = writeln!(
                c,
                "    virtual_ipaddress {{\n        {vip}/{len}\n    }}\n}}"
            );
        }
        c
    }
}
