//! A cluster of N nodes on one link, one network namespace each, discovering each other over
//! mDNS, and what it costs: for the scale lab test (`tests/lab_scale.rs`) and benchmark
//! (`benches/scale.rs`). Each node runs either mdns-publish as the units run it
//! (`run --cluster` and `browse --watch`), or avahi (avahi-daemon, with its own D-Bus, an
//! `avahi-publish -s` of the node's instance and an `avahi-browse -pr` following the others).
//!
//! Up to 252 nodes are on IPv4 (192.0.2.0/24, its last two addresses the VIPs), as the units
//! run on most clusters; beyond that a /24 is too small and every node is on IPv6 only
//! (2001:db8::/64).

use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ipi_lab::avahi::Avahi;
use ipi_lab::{Daemon, Host, Lab, Traffic};
use nix::sys::signal::Signal;

const BIN: &str = env!("CARGO_BIN_EXE_mdns-publish");

/// The service type the nodes' instances are published under (mdns-publish's default).
const SERVICE: &str = "_workstation._tcp";

/// The most nodes on IPv4: the /24's hosts but the two VIPs.
const MOST_ON_IPV4: usize = 252;

/// Who runs discovery on the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stack {
    /// mdns-publish, as the units run it.
    Ours,
    /// avahi-daemon with avahi-publish and avahi-browse.
    Avahi,
}

/// One node: its host, its processes and where its inventory is read.
struct Node {
    name: String,
    daemons: Vec<Daemon>,
    /// The avahi-daemon, kept for its namespaces (avahi-publish and avahi-browse run in them).
    avahi: Option<Avahi>,
    /// mdns-publish's inventory file; for avahi, avahi-browse's output is read instead.
    inventory: Option<PathBuf>,
}

impl Node {
    /// The node names in this node's inventory now.
    fn known(&self) -> HashSet<String> {
        match &self.inventory {
            Some(file) => std::fs::read_to_string(file)
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect(),
            None => self
                .daemons
                .last()
                .map(|browse| avahi_known(&browse.stdout()))
                .unwrap_or_default(),
        }
    }

    /// Everything the node runs.
    fn daemons(&self) -> impl Iterator<Item = &Daemon> {
        (self.daemons.iter()).chain(self.avahi.iter().map(Avahi::daemon))
    }

    /// The datagrams the node's namespace dropped so far for full receive buffers.
    fn drops(&self) -> u64 {
        let avahi = self.avahi.as_ref().map(Avahi::daemon);
        avahi.or(self.daemons.first()).map_or(0, Daemon::udp_drops)
    }

    /// SIGKILL for everything the node runs: it dies without a goodbye.
    fn kill(&mut self) {
        for d in self.daemons() {
            for pid in d.pids() {
                let pid = nix::unistd::Pid::from_raw(pid as i32);
                let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
            }
        }
    }
}

/// The names avahi-browse's parsable output (`-p -r`) holds at its end: resolved (`=`)
/// instances `lab-NAME`, less those removed (`-`) since.
fn avahi_known(out: &str) -> HashSet<String> {
    let mut known = HashSet::new();
    for line in out.lines() {
        let fields: Vec<&str> = line.split(';').collect();
        let Some(name) = fields.get(3).and_then(|f| f.strip_prefix("lab-")) else {
            continue;
        };
        match fields[0] {
            "=" => known.insert(name.to_string()),
            "-" => known.remove(name),
            _ => false,
        };
    }
    known
}

/// N nodes started at once.
pub struct Cluster {
    lab: Lab,
    nodes: Vec<Node>,
    started: Instant,
    /// Whether the nodes are on IPv6 (more than 252 of them).
    pub ipv6: bool,
}

impl Cluster {
    /// Makes `n` hosts, then starts `stack` on every one of them, as fast as processes start.
    pub fn start(n: usize, stack: Stack) -> Cluster {
        let ipv6 = n > MOST_ON_IPV4;
        let mut lab = Lab::new().unwrap();
        if ipv6 {
            lab = lab.ipv6_only();
        }
        let hosts: Vec<Host> = (0..n)
            .map(|i| lab.host(&format!("n{i}")).unwrap())
            .collect();
        let (network, api, ingress) = if ipv6 {
            ("2001:db8::/64", "2001:db8::fffe", "2001:db8::ffff")
        } else {
            ("192.0.2.0/24", "192.0.2.253", "192.0.2.254")
        };
        let cluster = ipi_lab::install_config(lab.dir(), &[network], &[api], &[ingress]);
        let started = Instant::now();
        let nodes = hosts
            .into_iter()
            .enumerate()
            .map(|(i, host)| {
                let name = format!("node-{i}");
                match stack {
                    Stack::Ours => ours(host, name, &cluster, ipv6),
                    Stack::Avahi => avahi(host, name),
                }
            })
            .collect();
        Cluster {
            lab,
            nodes,
            started,
            ipv6,
        }
    }

    /// How many nodes the cluster has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// How many inventories hold every node (of those still running, which are all until
    /// [`Cluster::kill`]).
    pub fn complete(&self) -> usize {
        let all: HashSet<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        self.nodes
            .iter()
            .filter(|n| all.is_subset(&n.known()))
            .count()
    }

    /// Waits until every inventory holds every node, or `timeout` since the start; the time
    /// from the start, or None with how many were complete at the end.
    pub fn until_complete(&self, timeout: Duration) -> Result<Duration, usize> {
        let mut last = 0;
        while self.started.elapsed() < timeout {
            last = self.complete();
            if last == self.nodes.len() {
                return Ok(self.started.elapsed());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Err(last)
    }

    /// What the link carried and the nodes used over `window`.
    pub fn steady(&self, window: Duration) -> Steady {
        // Each node's CPU and RSS, all its processes added up, from one reading of /proc.
        let usage = |nodes: &[Node]| {
            let mut all = Daemon::usage_of(nodes.iter().flat_map(Node::daemons)).into_iter();
            (nodes.iter())
                .map(|n| {
                    let mine: Vec<_> = all.by_ref().take(n.daemons().count()).collect();
                    (
                        mine.iter().map(|u| u.cpu).sum(),
                        mine.iter().map(|u| u.rss_kib).sum(),
                    )
                })
                .collect::<Vec<(Duration, u64)>>()
        };
        let drops = |nodes: &[Node]| nodes.iter().map(Node::drops).sum::<u64>();
        let (t0, u0, d0, c0) = (
            self.lab.sent().unwrap(),
            usage(&self.nodes),
            drops(&self.nodes),
            machine_cpu(),
        );
        let at = Instant::now();
        std::thread::sleep(window);
        let (t1, u1, d1, c1) = (
            self.lab.sent().unwrap(),
            usage(&self.nodes),
            drops(&self.nodes),
            machine_cpu(),
        );
        let secs = at.elapsed().as_secs_f64();
        let n = self.nodes.len() as f64;
        let cpu: Duration = u0
            .iter()
            .zip(&u1)
            .map(|(a, b)| b.0.saturating_sub(a.0))
            .sum();
        let rate = |f: fn(&Traffic) -> u64| f(&t1).saturating_sub(f(&t0)) as f64 / secs;
        Steady {
            packets_per_s: rate(|t| t.packets),
            bytes_per_s: rate(|t| t.bytes),
            cpu_ms_per_s_per_node: cpu.as_secs_f64() * 1000.0 / secs / n,
            rss_kib_per_node: u1.iter().map(|u| u.1).sum::<u64>() as f64 / n,
            drops_per_s: d1.saturating_sub(d0) as f64 / secs,
            machine_busy: (c1.0 - c0.0) as f64 / ((c1.1 - c0.1) as f64).max(1.0),
            nodes: self.nodes.len(),
        }
    }

    /// Kills node `i` (SIGKILL, no goodbye) and waits until no other inventory holds it, or
    /// `timeout`: how long that took.
    pub fn kill(&mut self, i: usize, timeout: Duration) -> Option<Duration> {
        self.nodes[i].kill();
        let killed = Instant::now();
        let name = self.nodes[i].name.clone();
        let others: Vec<&Node> = (self.nodes.iter().enumerate())
            .filter(|&(j, _)| j != i)
            .map(|(_, n)| n)
            .collect();
        ipi_lab::wait_for(timeout, Duration::from_millis(100), || {
            others.iter().all(|n| !n.known().contains(&name))
        })
        .map(|_| killed.elapsed())
    }

    /// The logs of a node whose inventory is not complete, for a failure's message.
    pub fn incomplete_log(&self) -> String {
        let all: HashSet<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let Some(n) = self.nodes.iter().find(|n| !all.is_subset(&n.known())) else {
            return String::new();
        };
        let known = n.known();
        let missing: Vec<&String> = all.difference(&known).collect();
        let logs: Vec<String> = n.daemons.iter().map(Daemon::log).collect();
        format!(
            "{} misses {} nodes ({:?}...):\n{}",
            n.name,
            missing.len(),
            &missing[..missing.len().min(5)],
            logs.join("\n")
        )
    }
}

/// The link's traffic and the nodes' usage at steady state.
#[derive(Debug, Clone, Copy)]
pub struct Steady {
    /// Packets the nodes sent onto the link, a second.
    pub packets_per_s: f64,
    /// Their bytes, a second.
    pub bytes_per_s: f64,
    /// CPU of a node's discovery processes, ms a second, on average.
    pub cpu_ms_per_s_per_node: f64,
    /// Their RSS, on average.
    pub rss_kib_per_node: f64,
    /// Datagrams the nodes' namespaces dropped a second, in all, for full receive buffers: a
    /// reader that did not keep up.
    pub drops_per_s: f64,
    /// How busy the machine's cores were (0 to 1; interrupts and the kernel's packet work
    /// included): near 1, the machine, not the protocol, is what a failure says.
    pub machine_busy: f64,
    /// How many nodes were measured.
    pub nodes: usize,
}

impl Steady {
    /// Packets a node sends a second, on average.
    pub fn packets_per_node(&self) -> f64 {
        self.packets_per_s / self.nodes as f64
    }
}

/// The machine's CPU time so far, busy and in all, in clock ticks (the `cpu` line of
/// /proc/stat: idle and iowait are not busy).
fn machine_cpu() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let ticks: Vec<u64> = (stat.lines().next().unwrap_or_default().split_whitespace())
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    let total = ticks.iter().take(8).sum::<u64>();
    let idle = ticks.get(3).copied().unwrap_or(0) + ticks.get(4).copied().unwrap_or(0);
    (total - idle, total)
}

fn ours(host: Host, name: String, cluster: &std::path::Path, ipv6: bool) -> Node {
    let bind = if ipv6 {
        host.ipv6().to_string()
    } else {
        host.ipv4().to_string()
    };
    let cluster = cluster.display().to_string();
    let publisher = host
        .spawn(
            "mdns-publish",
            BIN,
            [
                "run",
                "-q",
                "--cluster",
                &cluster,
                "--hostname",
                &name,
                "--role",
                "master",
                "--bind",
                &bind,
            ],
        )
        .unwrap();
    let inventory = host.dir().join("nodes");
    let file = inventory.display().to_string();
    let browser = host
        .spawn(
            "browse",
            BIN,
            [
                "browse", "--filter", "lab", "--watch", "-o", &file, "--bind", &bind,
            ],
        )
        .unwrap();
    Node {
        name,
        daemons: vec![publisher, browser],
        avahi: None,
        inventory: Some(inventory),
    }
}

fn avahi(host: Host, name: String) -> Node {
    let avahi = Avahi::launch(&host, &name).unwrap();
    let instance = format!("lab-{name}");
    let publish = avahi
        .spawn(
            "avahi-publish",
            "sh",
            [
                "-c",
                &format!("until avahi-publish -s {instance} {SERVICE} 42424; do sleep 0.2; done"),
            ],
        )
        .unwrap();
    let browse = avahi
        .spawn(
            "avahi-browse",
            "sh",
            [
                "-c",
                &format!("until avahi-browse -prk {SERVICE}; do sleep 0.2; done"),
            ],
        )
        .unwrap();
    Node {
        name,
        daemons: vec![publish, browse],
        avahi: Some(avahi),
        inventory: None,
    }
}

#[test]
fn avahi_browse_output_to_names() {
    let out = "+;eth0;IPv4;lab-node-1;_workstation._tcp;local\n\
               =;eth0;IPv4;lab-node-1;_workstation._tcp;local;node-1.local;192.0.2.2;42424;\n\
               =;eth0;IPv4;lab-node-2;_workstation._tcp;local;node-2.local;192.0.2.3;42424;\n\
               -;eth0;IPv4;lab-node-2;_workstation._tcp;local\n\
               =;eth0;IPv4;other;_workstation._tcp;local;x.local;192.0.2.9;1;\n";
    let known = avahi_known(out);
    assert_eq!(known, HashSet::from(["node-1".to_string()]));
}
