//! The lab and its hosts: namespaces, the bridge, veth pairs, addresses, teardown.

use std::ffi::OsStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::cmd::{self, ip, LabError, Output};
use crate::daemon::{Capture, Daemon};
use crate::wait_for;

/// Every namespace of every lab starts with this.
const PREFIX: &str = "ipilab-";

static LABS: AtomicU32 = AtomicU32::new(0);

/// A private bridge and the hosts on it. Dropping it tears everything down.
#[derive(Debug)]
pub struct Lab {
    /// `ipilab-PID-N`: the prefix of every namespace of this lab.
    id: String,
    bridge_ns: String,
    v4_base: Ipv4Addr,
    v6_base: Ipv6Addr,
    /// Whether hosts get an IPv4 address (not after [`Lab::ipv6_only`]).
    v4: bool,
    hosts: Vec<Host>,
    /// The namespaces of [`Lab::container`], not on the bridge.
    containers: Vec<String>,
    dir: tempfile::TempDir,
}

/// One host: a network namespace with `eth0` on the lab's bridge.
#[derive(Debug, Clone)]
pub struct Host {
    name: String,
    netns: String,
    port: String,
    ipv4: Ipv4Addr,
    ipv6: Ipv6Addr,
    link_local: Ipv6Addr,
    dir: PathBuf,
}

impl Lab {
    /// A lab on 192.0.2.0/24 and 2001:db8::/64.
    pub fn new() -> Result<Lab, LabError> {
        Lab::with_subnets(
            Ipv4Addr::new(192, 0, 2, 0),
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        )
    }

    /// A lab whose host N gets `v4_base + N` (a /24) and `v6_base + N` (a /64). Use
    /// documentation prefixes only (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24,
    /// 2001:db8::/32).
    pub fn with_subnets(v4_base: Ipv4Addr, v6_base: Ipv6Addr) -> Result<Lab, LabError> {
        sweep_stale();
        let id = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            LABS.fetch_add(1, Ordering::Relaxed)
        );
        let dir = tempfile::Builder::new()
            .prefix(&format!("{id}-"))
            .tempdir()
            .map_err(LabError::io("create the lab directory"))?;
        let bridge_ns = format!("{id}-br");
        let lab = Lab {
            id,
            bridge_ns,
            v4_base,
            v6_base,
            v4: true,
            hosts: Vec::new(),
            containers: Vec::new(),
            dir,
        };
        ip(["netns", "add", &lab.bridge_ns])?;
        let br = lab.bridge_ns.as_str();
        sysctl(br, "net.ipv6.conf.all.disable_ipv6", "1")?;
        // No multicast snooping: VRRP and mDNS multicast must reach every port at once, not
        // after the bridge has learnt group membership.
        ip([
            "-n",
            br,
            "link",
            "add",
            "br0",
            "type",
            "bridge",
            "stp_state",
            "0",
            "forward_delay",
            "0",
            "mcast_snooping",
            "0",
        ])?;
        ip(["-n", br, "link", "set", "br0", "up"])?;
        ip(["-n", br, "link", "set", "lo", "up"])?;
        Ok(lab)
    }

    /// The lab with hosts added from now on given an IPv6 address only ([`Host::ipv4`]
    /// 0.0.0.0): for more than a /24's 254 hosts, or a link without IPv4.
    pub fn ipv6_only(mut self) -> Lab {
        self.v4 = false;
        self
    }

    /// The lab's scratch directory (configs, logs, captures), removed with the lab.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The hosts, in the order they were added.
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// Adds a host called `name` (a short word: it goes into namespace names) with the next
    /// addresses, and waits until its IPv6 link-local address is usable. A /24 holds 254
    /// hosts: host 255 and those after it have IPv6 only (and [`Host::ipv4`] 0.0.0.0), as
    /// every host of a lab made [`Lab::ipv6_only`].
    pub fn host(&mut self, name: &str) -> Result<Host, LabError> {
        let n = u16::try_from(self.hosts.len() + 1).unwrap_or(u16::MAX);
        let netns = format!("{}-{name}", self.id);
        let port = format!("p{n}");
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).map_err(LabError::io(format!("create {}", dir.display())))?;
        ip(["netns", "add", &netns])?;
        let o = self.v4_base.octets();
        let ipv4 = u8::try_from(n)
            .ok()
            .filter(|&n| n < u8::MAX && self.v4)
            .map_or(Ipv4Addr::UNSPECIFIED, |n| {
                Ipv4Addr::new(o[0], o[1], o[2], n)
            });
        let ipv6 = Ipv6Addr::from(u128::from(self.v6_base) + u128::from(n));
        let mut host = Host {
            name: name.to_string(),
            netns,
            port,
            ipv4,
            ipv6,
            link_local: Ipv6Addr::UNSPECIFIED,
            dir,
        };
        // Registered before configuring, so that a failure below still tears it down.
        self.hosts.push(host.clone());
        let ns = host.netns.as_str();
        // Before eth0 exists, so that it inherits them: no DAD, addresses usable at once.
        sysctl(ns, "net.ipv6.conf.default.accept_dad", "0")?;
        sysctl(ns, "net.ipv6.conf.all.accept_dad", "0")?;
        let br = self.bridge_ns.as_str();
        ip([
            "-n", br, "link", "add", &host.port, "type", "veth", "peer", "name", "eth0", "netns",
            ns,
        ])?;
        ip(["-n", br, "link", "set", &host.port, "master", "br0", "up"])?;
        ip(["-n", ns, "link", "set", "lo", "up"])?;
        if !ipv4.is_unspecified() {
            ip([
                "-n",
                ns,
                "addr",
                "add",
                &format!("{ipv4}/24"),
                "dev",
                "eth0",
            ])?;
        }
        ip([
            "-n",
            ns,
            "addr",
            "add",
            &format!("{ipv6}/64"),
            "dev",
            "eth0",
            "nodad",
        ])?;
        ip(["-n", ns, "link", "set", "eth0", "up"])?;
        if !ipv4.is_unspecified() {
            ip(["-n", ns, "route", "add", "224.0.0.0/4", "dev", "eth0"])?;
        }
        host.link_local = wait_link_local(ns)?;
        if let Some(last) = self.hosts.last_mut() {
            *last = host.clone();
        }
        Ok(host)
    }

    /// Adds a network namespace called `name` (a short word, not a host's) with nothing in it but `lo`,
    /// up: a container as a runtime makes one, for a CNI plugin to give an interface
    /// ([`Host::netns_path`] is its CNI_NETNS). It is not on the bridge and has the kernel's
    /// defaults (IPv6 duplicate address detection on); [`Host::ipv4`] and [`Host::ipv6`] are
    /// unspecified, [`Host::addresses`] reads the `eth0` a plugin makes. Torn down with the
    /// lab, or before by [`Lab::remove_container`].
    pub fn container(&mut self, name: &str) -> Result<Host, LabError> {
        let netns = format!("{}-{name}", self.id);
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).map_err(LabError::io(format!("create {}", dir.display())))?;
        ip(["netns", "add", &netns])?;
        self.containers.push(netns.clone());
        ip(["-n", &netns, "link", "set", "lo", "up"])?;
        Ok(Host {
            name: name.to_string(),
            netns,
            port: String::new(),
            ipv4: Ipv4Addr::UNSPECIFIED,
            ipv6: Ipv6Addr::UNSPECIFIED,
            link_local: Ipv6Addr::UNSPECIFIED,
            dir,
        })
    }

    /// Deletes a namespace of [`Lab::container`] with its interfaces, killing what runs in
    /// it, as when its machine is powered off: nobody is told.
    pub fn remove_container(&mut self, container: &Host) -> Result<(), LabError> {
        let Some(at) = self.containers.iter().position(|c| *c == container.netns) else {
            return Err(LabError::Io {
                what: format!("remove {}", container.netns),
                source: std::io::Error::other("not a container of this lab"),
            });
        };
        kill_all_in(&container.netns);
        ip(["netns", "delete", &container.netns])?;
        self.containers.remove(at);
        Ok(())
    }

    /// What the hosts have sent onto the bridge so far, added up over its ports (the
    /// ports' receive counters): a rate is the difference of two readings.
    pub fn sent(&self) -> Result<Traffic, LabError> {
        let out = ip([
            "-n",
            &self.bridge_ns,
            "-s",
            "-j",
            "link",
            "show",
            "type",
            "veth",
        ])?;
        Ok(parse_traffic(&out.stdout))
    }

    /// Takes `host` off the bridge with its carrier up: it hears nobody and nobody hears it,
    /// while it believes its link is fine (a partition, the recipe for a split brain).
    pub fn partition(&self, host: &Host) -> Result<(), LabError> {
        ip(["-n", &self.bridge_ns, "link", "set", &host.port, "nomaster"]).map(drop)
    }

    /// Puts a partitioned host back on the bridge.
    pub fn heal(&self, host: &Host) -> Result<(), LabError> {
        ip([
            "-n",
            &self.bridge_ns,
            "link",
            "set",
            &host.port,
            "master",
            "br0",
        ])
        .map(drop)
    }

    /// Drops `host`'s carrier: its `eth0` goes NO-CARRIER, as when a cable is pulled.
    pub fn link_down(&self, host: &Host) -> Result<(), LabError> {
        ip(["-n", &self.bridge_ns, "link", "set", &host.port, "down"]).map(drop)
    }

    /// Brings a host's carrier back.
    pub fn link_up(&self, host: &Host) -> Result<(), LabError> {
        ip(["-n", &self.bridge_ns, "link", "set", &host.port, "up"]).map(drop)
    }

    /// Records the broadcast and multicast frames on the bridge (what every host hears: VRRP,
    /// mDNS, ARP) that match the capture `filter` (pcap-filter syntax) into `name`.pcap in the
    /// lab directory. Unicast between two hosts does not reach the bridge's own interface:
    /// capture on a host for that ([`Host::capture`]).
    pub fn capture(&self, name: &str, filter: &str) -> Result<Capture, LabError> {
        let file = self.dir.path().join(format!("{name}.pcap"));
        Capture::start(&self.bridge_ns, "br0", filter, file)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for container in &self.containers {
            delete_netns(container);
        }
        for host in &self.hosts {
            delete_netns(&host.netns);
        }
        delete_netns(&self.bridge_ns);
    }
}

impl Host {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Runs `f` on a thread that has entered this host's network namespace: sockets it opens
    /// belong to the host, wherever they are used afterwards.
    pub fn within<T: Send>(
        &self,
        f: impl FnOnce() -> std::io::Result<T> + Send,
    ) -> std::io::Result<T> {
        in_netns(&self.netns, f)
    }

    /// Its network namespace (for `ip netns exec`).
    pub fn netns(&self) -> &str {
        &self.netns
    }

    /// The path of its network namespace (a CNI runtime's CNI_NETNS).
    pub fn netns_path(&self) -> PathBuf {
        Path::new("/run/netns").join(&self.netns)
    }

    /// Its IPv4 address on `eth0` (0.0.0.0 past the 254th host and in an IPv6-only lab).
    pub fn ipv4(&self) -> Ipv4Addr {
        self.ipv4
    }

    /// Its global IPv6 address on `eth0`.
    pub fn ipv6(&self) -> Ipv6Addr {
        self.ipv6
    }

    /// Its IPv6 link-local address on `eth0`.
    pub fn link_local(&self) -> Ipv6Addr {
        self.link_local
    }

    /// Its scratch directory inside the lab's.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `ip netns exec NETNS PROGRAM ARGS...`, prepared but not started.
    pub fn command<I, S>(&self, program: &str, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.netns, program]).args(args);
        c
    }

    /// Runs a program in the host to completion; a non-zero exit is not an error here.
    pub fn run<I, S>(&self, program: &str, args: I) -> Result<Output, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        cmd::output(&mut self.command(program, args))
    }

    /// Runs a program in the host to completion; a non-zero exit is an error naming the
    /// command and what it said on stderr (a lab fault that did not load must not pass as
    /// applied).
    pub fn run_ok<I, S>(&self, program: &str, args: I) -> Result<Output, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        cmd::check(&mut self.command(program, args))
    }

    /// The packets counted so far by the `counter` statements of nftables table `table`
    /// (`inet`) in the host, summed: how much a fault made of rules dropped.
    pub fn nft_counted(&self, table: &str) -> Result<u64, LabError> {
        let out = self.run_ok("nft", ["list", "table", "inet", table])?;
        Ok(counted(&out.stdout))
    }

    /// Starts a long-running program in the host; its stdout and stderr go to
    /// `NAME.out` / `NAME.err` in the host's directory. It is stopped when the [`Daemon`] is
    /// dropped.
    pub fn spawn<I, S>(&self, name: &str, program: &str, args: I) -> Result<Daemon, LabError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Daemon::start(name, self.command(program, args), &self.dir)
    }

    /// The addresses on `eth0` now.
    pub fn addresses(&self) -> Result<Vec<IpAddr>, LabError> {
        let out = ip(["-n", &self.netns, "-j", "addr", "show", "dev", "eth0"])?;
        Ok(parse_addresses(&out.stdout))
    }

    /// Whether `eth0` holds `address` now.
    pub fn has_address(&self, address: IpAddr) -> bool {
        self.addresses().is_ok_and(|a| a.contains(&address))
    }

    /// The MAC address of `eth0`, as `ip` writes it (lower-case hex, colon-separated).
    pub fn mac(&self) -> Result<String, LabError> {
        let out = ip(["-n", &self.netns, "-j", "link", "show", "dev", "eth0"])?;
        let links: serde_json::Value = serde_json::from_str(&out.stdout).unwrap_or_default();
        links[0]["address"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| LabError::Io {
                what: format!("read the MAC address of eth0 in {}", self.netns),
                source: std::io::Error::other(format!("ip said {}", out.stdout)),
            })
    }

    /// The host's neighbour (ARP or NDP) entry for `address` on `eth0` now: what it would send
    /// a packet for `address` to. None when it has no entry.
    pub fn neighbour(&self, address: IpAddr) -> Option<Neighbour> {
        let to = address.to_string();
        let out = ip([
            "-n",
            &self.netns,
            "-j",
            "neigh",
            "show",
            "to",
            &to,
            "dev",
            "eth0",
        ])
        .ok()?;
        parse_neighbour(&out.stdout)
    }

    /// Records the packets on the host's `eth0` matching `filter` into `name`.pcap in the host's
    /// directory.
    pub fn capture(&self, name: &str, filter: &str) -> Result<Capture, LabError> {
        self.capture_on(name, "eth0", filter)
    }

    /// Records the packets on the host's interface `dev` (one the test made in the host, such
    /// as a veth whose peer stands for a link) matching `filter` into `name`.pcap.
    pub fn capture_on(&self, name: &str, dev: &str, filter: &str) -> Result<Capture, LabError> {
        let file = self.dir.join(format!("{name}.pcap"));
        Capture::start(&self.netns, dev, filter, file)
    }
}

/// A neighbour cache entry (`ip neigh`): the link-layer address, if resolved, and the NUD
/// states (`REACHABLE`, `STALE`, `DELAY`, `PROBE`, `FAILED`, `INCOMPLETE`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The MAC packets go to; None while unresolved.
    pub lladdr: Option<String>,
    /// Its states.
    pub state: Vec<String>,
}

/// Packets and bytes, as a link's counters count them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Packets.
    pub packets: u64,
    /// Bytes (Ethernet frames without their checksum).
    pub bytes: u64,
}

/// `ip -s -j link` output to the sum of what its links received.
fn parse_traffic(json: &str) -> Traffic {
    let Ok(serde_json::Value::Array(links)) = serde_json::from_str(json) else {
        return Traffic::default();
    };
    let count = |link: &serde_json::Value, what: &str| link["stats64"]["rx"][what].as_u64();
    links.iter().fold(Traffic::default(), |t, link| Traffic {
        packets: t.packets + count(link, "packets").unwrap_or(0),
        bytes: t.bytes + count(link, "bytes").unwrap_or(0),
    })
}

/// `ip -j neigh show to ADDRESS` output to its one entry.
fn parse_neighbour(json: &str) -> Option<Neighbour> {
    let entries: serde_json::Value = serde_json::from_str(json).ok()?;
    let e = entries.as_array()?.first()?;
    Some(Neighbour {
        lladdr: e["lladdr"].as_str().map(str::to_string),
        state: e["state"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
    })
}

fn sysctl(netns: &str, key: &str, value: &str) -> Result<(), LabError> {
    cmd::check(
        Command::new("ip")
            .args(["netns", "exec", netns, "sysctl", "-q", "-w"])
            .arg(format!("{key}={value}")),
    )
    .map(drop)
}

/// `ip -j addr` output to addresses.
fn parse_addresses(json: &str) -> Vec<IpAddr> {
    let Ok(serde_json::Value::Array(links)) = serde_json::from_str(json) else {
        return Vec::new();
    };
    links
        .iter()
        .filter_map(|link| link.get("addr_info")?.as_array())
        .flatten()
        .filter_map(|info| info.get("local")?.as_str()?.parse().ok())
        .collect()
}

/// Waits until `eth0` has a link-local IPv6 address that is no longer tentative.
fn wait_link_local(netns: &str) -> Result<Ipv6Addr, LabError> {
    let mut found = None;
    let ready = wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
        let Ok(out) = ip([
            "-n", netns, "-6", "-j", "addr", "show", "dev", "eth0", "scope", "link",
        ]) else {
            return false;
        };
        if out.stdout.contains("tentative") {
            return false;
        }
        found = parse_addresses(&out.stdout)
            .into_iter()
            .find_map(|a| match a {
                IpAddr::V6(v6) => Some(v6),
                IpAddr::V4(_) => None,
            });
        found.is_some()
    });
    match (ready, found) {
        (Some(_), Some(address)) => Ok(address),
        _ => Err(LabError::Timeout {
            what: format!("a link-local IPv6 address on eth0 in {netns}"),
            seconds: 10.0,
        }),
    }
}

/// Kills whatever still runs in a namespace and deletes it. Best effort: teardown never panics.
fn delete_netns(netns: &str) {
    kill_all_in(netns);
    let _ = ip(["netns", "delete", netns]);
}

/// Kills whatever runs in a namespace (SIGKILL). Best effort.
fn kill_all_in(netns: &str) {
    if let Ok(out) = ip(["netns", "pids", netns]) {
        for pid in out
            .stdout
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Deletes the namespaces of labs whose process is gone (a test killed with SIGKILL).
fn sweep_stale() {
    sweep(|pid| !Path::new(&format!("/proc/{pid}")).exists());
}

/// Tears down every lab of this process, killing what runs in them: for a signal handler
/// (Ctrl-C in a demo), where the labs' destructors will not run.
pub fn teardown_all() {
    let me = std::process::id();
    sweep(|pid| pid == me);
}

fn sweep(doomed: impl Fn(u32) -> bool) {
    let Ok(out) = ip(["netns", "list"]) else {
        return;
    };
    for name in out
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
    {
        if stale_owner(name).is_some_and(&doomed) {
            delete_netns(name);
        }
    }
}

/// The process id in a lab namespace name (`ipilab-PID-N-...`).
fn stale_owner(netns: &str) -> Option<u32> {
    netns.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Runs `f` on a thread inside the network namespace `ns` (a name under /run/netns).
pub(crate) fn in_netns<T: Send>(
    ns: &str,
    f: impl FnOnce() -> std::io::Result<T> + Send,
) -> std::io::Result<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let file = std::fs::File::open(&path)?;
                nix::sched::setns(file, nix::sched::CloneFlags::CLONE_NEWNET)
                    .map_err(std::io::Error::from)?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("the namespace thread panicked")))
    })
}

/// The sum of the `counter packets N` of an `nft list` output.
fn counted(listing: &str) -> u64 {
    let words: Vec<&str> = listing.split_whitespace().collect();
    words
        .windows(3)
        .filter(|w| w[0] == "counter" && w[1] == "packets")
        .filter_map(|w| w[2].parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_summed_over_the_rules_of_a_listing() {
        let listing = "table inet ipi_chaos {\n\tchain input {\n\t\ttype filter hook input \
                       priority -300; policy accept;\n\t\tip protocol vrrp ip saddr 192.0.2.11 \
                       counter packets 7 bytes 280 drop\n\t\tip protocol vrrp counter packets \
                       5 bytes 200 drop\n\t}\n}\n";
        assert_eq!(counted(listing), 12);
        assert_eq!(counted("table inet ipi_chaos {\n}\n"), 0);
    }

    #[test]
    fn traffic_adds_up_what_the_ports_received() {
        let json = r#"[{"ifname":"p1","stats64":{"rx":{"bytes":100,"packets":2},"tx":{"bytes":9,"packets":9}}},
            {"ifname":"p2","stats64":{"rx":{"bytes":50,"packets":1},"tx":{"bytes":9,"packets":9}}},{"ifname":"p3"}]"#;
        assert_eq!(
            parse_traffic(json),
            Traffic {
                packets: 3,
                bytes: 150
            }
        );
        assert_eq!(parse_traffic("not json"), Traffic::default());
    }

    #[test]
    fn neighbour_from_ip_json() {
        let json = r#"[{"dst":"192.0.2.100","dev":"eth0","lladdr":"02:fc:00:00:00:05","state":["REACHABLE"]}]"#;
        let n = parse_neighbour(json).unwrap();
        assert_eq!(n.lladdr.as_deref(), Some("02:fc:00:00:00:05"));
        assert_eq!(n.state, ["REACHABLE"]);
        let failed = parse_neighbour(r#"[{"dst":"192.0.2.100","dev":"eth0","state":["FAILED"]}]"#);
        assert_eq!(failed.unwrap().lladdr, None);
        assert_eq!(parse_neighbour("[]"), None);
    }

    #[test]
    fn addresses_from_ip_json() {
        let json = r#"[{"ifindex":2,"ifname":"eth0","addr_info":[
            {"family":"inet","local":"192.0.2.1","prefixlen":24},
            {"family":"inet6","local":"2001:db8::1","prefixlen":64},
            {"family":"inet6","local":"fe80::1","prefixlen":64}]}]"#;
        let want: Vec<IpAddr> = ["192.0.2.1", "2001:db8::1", "fe80::1"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        assert_eq!(parse_addresses(json), want);
        assert!(parse_addresses("not json").is_empty());
    }

    #[test]
    fn owners_of_lab_namespaces() {
        assert_eq!(stale_owner("ipilab-1234-0-br"), Some(1234));
        assert_eq!(stale_owner("ipilab-1234-7-master0"), Some(1234));
        assert_eq!(stale_owner("someone-else"), None);
        assert_eq!(stale_owner("ipilab-x-0"), None);
    }
}
