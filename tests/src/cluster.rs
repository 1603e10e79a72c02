//! The cluster in a box: a bootstrap node, three masters and two workers in the lab, each
//! running what OpenShift runs there, started through the contrib systemd units.
//!
//! Every host gets the files a real node has: `/etc/ipi-net/node.env` (IPI_ROLE, IPI_HOSTNAME,
//! IPI_NODE_IP, IPI_INTERFACE), `/etc/ipi-net/install-config.yaml`, the track scripts of
//! `contrib/keepalived` in `/etc/ipi-net/keepalived`, and NetworkManager's
//! `/run/NetworkManager/resolv.conf`. They live in the host's lab directory, which a
//! [`MountNamespace`] of the host shows at those paths, over a `/run` of its own (so
//! `/run/keepalived` and every other runtime path is the host's alone); `/run/ipi-net` is the
//! host's `run` directory, where the tests read the node inventory and vrrpd's state.
//!
//! The units a role runs are read from `contrib/roles/ROLE` and started in the order systemd
//! would start them together (that order, but each after the units its `After=` names), each
//! as systemd would: the crate's `supervisor` module is that part of systemd (conditions,
//! environment, `ExecStartPre=`/`ExecStart=`/`ExecStartPost=`, `Type=notify` and
//! `NOTIFY_SOCKET`, `systemctl` in a command line, `.path` units polled every 100 ms, and
//! `Restart=` with its start limit in the same poll). `/usr/bin/PROGRAM`
//! of ours ([`PROGRAMS`]) is the freshly built binary in the options' `bin_dir`.
//!
//! The options' [`Stack`] says which daemons hold the VIPs and balance the API: ours, or
//! upstream's ([`crate::upstream`]: keepalived.service and haproxy.service, with a stand-in for
//! OpenShift's haproxy-monitor, in place of ipi-vrrpd.service and ipi-lb-proxy.service, their
//! configurations rendered by `vrrpd render` and `lb-proxy render` from the same inputs).
//! Everything else, the steps and the observations are the same on both.
//!
//! Stand-ins for what the cluster itself runs: an HTTPS API server ([`ApiServer`], `/readyz`
//! on :6443) on the masters and on the bootstrap node (its bootstrap API server, which its
//! chk_ocp track script checks), and a router ([`Router`], `:1936/healthz`) on the workers.
//!
//! Beside the nodes, a client: a host on the same network that is no node of the cluster
//! ([`CLIENT`]). Everything a user of the cluster sees is asked from it: DNS (`dig @NODE-IP`),
//! requests through the API VIP, the router behind the Ingress VIP. A VIP's move is timed
//! twice: when the address appears on the new holder, and when the client is first served
//! through the VIP again. The client talks to the VIP just before each fault, so its ARP cache
//! holds the old holder's MAC; only the new holder's gratuitous ARP makes it send elsewhere
//! before that entry times out (tens of seconds: [`Cluster::client_arp_floor`]).
//!
//! The steps ([`Cluster::up`], [`Cluster::settle`], [`Cluster::remove_bootstrap`],
//! [`Cluster::kill_api_master`], [`Cluster::stop_ingress_router`]) and the observations
//! ([`Cluster::holders`], [`Cluster::dns`], [`Cluster::requests`]) are shared by the
//! `cluster-demo` binary, which prints them, and the `cluster_lab` smoke test, which asserts
//! them.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use ipi_core::Role;
use ipi_lab::api::ApiServer;
use ipi_lab::mounts::{Mount, MountNamespace};
use ipi_lab::router::{self, Router};
use ipi_lab::{wait_for, Host, Lab, Neighbour};
use nix::sys::signal::Signal;

pub use crate::error::ClusterError;
use crate::probe::{self, dig, first_answer, get, Served};
pub use crate::supervisor::Ended;
use crate::supervisor::Units;
pub use crate::supervisor::PROGRAMS;
use crate::units::{self, Unit};
use crate::upstream;

/// The API VIP of the lab cluster.
pub const API_VIP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 100);
/// The Ingress VIP of the lab cluster.
pub const INGRESS_VIP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 101);
/// The cluster's domain: `metadata.name` and `baseDomain` of [`ipi_lab::install_config`].
pub const DOMAIN: &str = "lab.example.com";
/// The hosts, in the order the lab numbers them (192.0.2.1 is the bootstrap node).
pub const LAYOUT: [(&str, Role); 6] = [
    ("bootstrap", Role::Bootstrap),
    ("master-0", Role::Master),
    ("master-1", Role::Master),
    ("master-2", Role::Master),
    ("worker-0", Role::Worker),
    ("worker-1", Role::Worker),
];

/// OpenShift's advert_int (1 s), in centiseconds.
pub const ADVERT_CS: u16 = 100;
/// A master's API priority with every track script passing (vrrpd's OpenShift render: 40 +
/// chk_ocp_lb 20 + chk_ocp_both 5).
pub const MASTER_API: u8 = 65;
/// A worker's Ingress priority with its router up (20 + chk_ingress 50).
pub const WORKER_INGRESS: u8 = 70;
/// chk_ingress's interval (1 s) and fall (1), in centiseconds: a stopped router is seen within
/// one interval.
pub const CHK_INGRESS_CS: u16 = 100;

/// The client's host name: the host after the nodes (192.0.2.7), running nothing of ours.
pub const CLIENT: &str = "client";
/// The API port, through the API VIP.
pub const API_PORT: u16 = 6443;

/// How long a step waits at most for a VIP to move, or for the client to be served through it
/// again: the Master_Down_Interval (3.7 s) and the track scripts' intervals many times over on
/// a loaded machine, so that a slow move is measured and reported rather than cut short (the
/// smoke test judges the times against the VRRP timers).
const MOVE_LIMIT: Duration = Duration::from_secs(60);
/// How often conditions are polled while a move is timed.
const POLL: Duration = Duration::from_millis(10);
/// The interval of the emulated path units.
const PATH_POLL: Duration = Duration::from_millis(100);

/// Which daemons hold the VIPs and balance the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stack {
    /// Ours: ipi-vrrpd.service and ipi-lb-proxy.service (contrib/systemd).
    #[default]
    Ours,
    /// keepalived.service and haproxy.service (with haproxy-monitor.service, which redirects
    /// VIP:6443 to haproxy) in their place, from [`upstream::dir`], their configurations
    /// rendered by `vrrpd render` and `lb-proxy render` from the same inputs.
    Upstream,
}

/// Where the programs and the units come from.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directory of the freshly built vrrpd, lb-proxy, mdns-publish, dns-render.
    pub bin_dir: PathBuf,
    /// The contrib directory (`systemd/`, `roles/`, `keepalived/`).
    pub contrib: PathBuf,
    /// Which daemons hold the VIPs and balance the API.
    pub stack: Stack,
}

impl Options {
    /// The programs beside this executable (`target/PROFILE/`, also from `deps/` for a test),
    /// and this source tree's contrib.
    pub fn beside_current_exe() -> Result<Options, ClusterError> {
        let exe = std::env::current_exe().map_err(ClusterError::io("find this executable"))?;
        let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
        if dir.ends_with("deps") {
            dir.pop();
        }
        Ok(Options {
            bin_dir: dir,
            contrib: Path::new(env!("CARGO_MANIFEST_DIR")).join("../contrib"),
            stack: Stack::Ours,
        })
    }
}

/// Builds the programs the units run in the profile of `options.bin_dir` (a no-op when they
/// are fresh, as after a workspace build).
pub fn build_programs(options: &Options) -> Result<(), ClusterError> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--bins"])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"));
    for p in ["vrrpd", "lb-proxy", "mdns-publish", "dns-render"] {
        c.args(["-p", p]);
    }
    if options.bin_dir.ends_with("release") {
        c.arg("--release");
    }
    let status = c.status().map_err(ClusterError::io("run cargo build"))?;
    if status.success() {
        Ok(())
    } else {
        Err(ClusterError::Step(format!(
            "building the programs failed: {status}"
        )))
    }
}

/// A VIP that moved: from which node to which, how long after the fault the address was on
/// the new holder and the client was served through it again, and what the client's ARP
/// cache said before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The node that held it.
    pub from: String,
    /// The node that holds it now.
    pub to: String,
    /// From the fault to the VIP on `to`'s eth0 (`ip addr` in its namespace).
    pub took: Duration,
    /// From the fault to the first request from the client through the VIP that a new holder
    /// served.
    pub served: Duration,
    /// From the fault to the first request answered with the client's ARP entry for the VIP
    /// on `to`'s MAC. Later than `served` when two nodes were master for a moment and the
    /// client heard the other's gratuitous ARPs last: until `to`'s next ones.
    pub settled: Duration,
    /// Who answered that request (an API server's name, `router on NODE`).
    pub answer: String,
    /// The node whose MAC the client's ARP entry for the VIP held right after that answer:
    /// where the request went.
    pub via: String,
    /// The client's ARP entry for the VIP just before the fault (the old holder's MAC).
    pub before: Neighbour,
}

/// Who holds the VIPs now (nodes still up only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holders {
    /// The nodes with the API VIP on eth0.
    pub api: Vec<String>,
    /// The nodes with the Ingress VIP on eth0.
    pub ingress: Vec<String>,
}

/// One node's DNS server asked from the client: name to addresses (empty: no answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DnsAnswers {
    /// The node whose dnsmasq answered.
    pub server: String,
    /// The answers, by name.
    pub answers: BTreeMap<String, Vec<String>>,
}

/// Requests through the API VIP: which server answered how many; how many got no answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spread {
    /// Answers by the name of the API server that gave them.
    pub answered: BTreeMap<String, usize>,
    /// Requests without an answer.
    pub failed: usize,
}

/// A fault watched from the client: what it talked to before, and its requests since.
#[derive(Debug)]
struct Watch {
    /// The node that held the VIP.
    from: String,
    /// The VIP and port the client asks.
    to: SocketAddr,
    /// The answers that count: servers behind the new holders.
    accept: Vec<String>,
    /// The client's ARP entry for the VIP just before the fault.
    before: Neighbour,
    /// The fault.
    start: Instant,
    /// The client's first answer since.
    first: std::thread::JoinHandle<Option<Served>>,
}

/// One node: its host, the units it runs and the stand-ins.
#[derive(Debug)]
pub struct Node {
    /// Its host name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Its lab host.
    pub host: Host,
    units: Arc<Mutex<Units>>,
    api: Option<ApiServer>,
    router: Option<Router>,
    up: bool,
    stack: Stack,
}

impl Node {
    fn units(&self) -> MutexGuard<'_, Units> {
        lock(&self.units)
    }

    /// Whether the node runs `unit` (`ipi-dnsmasq.service`) now.
    pub fn runs(&self, unit: &str) -> bool {
        self.units().running.contains_key(unit)
    }

    /// The processes of `unit` (empty when it does not run): its main process, then what that
    /// forked, as the unit's control group holds them. On the upstream stack the VRRP adverts
    /// come from keepalived's VRRP child, not its main process: a signal meant for the daemon
    /// as `systemctl kill` sends it (every process of the unit) goes to all of these.
    pub fn unit_pids(&self, unit: &str) -> Vec<u32> {
        self.units()
            .running
            .get(unit)
            .map(ipi_lab::Daemon::pids)
            .unwrap_or_default()
    }

    /// Its units' names, in the order they were started.
    pub fn unit_names(&self) -> Vec<String> {
        self.units().order.clone()
    }

    /// Whether the node is up (not removed or killed).
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Its VRRP instances as `vrrpd status --json` says: (instance, state, priority). On the
    /// upstream stack, keepalived's as its JSON dump says (`vrrpd` is not asked).
    pub fn vrrp(&self, vrrpd: &Path) -> Vec<(String, String, u64)> {
        if self.stack == Stack::Upstream {
            let pid = self
                .units()
                .running
                .get("keepalived.service")
                .map(|d| d.pid());
            return pid.map(upstream::keepalived_status).unwrap_or_default();
        }
        let state = self.host.dir().join("run/vrrpd");
        let Ok(out) = Command::new(vrrpd)
            .arg("status")
            .arg("--json")
            .arg("--state-dir")
            .arg(&state)
            .output()
        else {
            return Vec::new();
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&out.stdout) else {
            return Vec::new();
        };
        v["instances"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                (
                    i["name"].as_str().unwrap_or("?").to_string(),
                    i["state"].as_str().unwrap_or("?").to_string(),
                    i["priority"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    }

    /// Sends `signal` to every process of `unit` ([`Node::unit_pids`]), as `systemctl kill
    /// --signal=` does; false when the unit does not run.
    pub fn signal(&self, unit: &str, signal: Signal) -> Result<bool, ClusterError> {
        let pids = self.unit_pids(unit);
        for p in &pids {
            let pid = nix::unistd::Pid::from_raw(i32::try_from(*p).unwrap_or(i32::MAX));
            // One that ended meanwhile (a track script) is no error.
            let _ = nix::sys::signal::kill(pid, signal);
        }
        Ok(!pids.is_empty())
    }

    /// Reloads `unit` as `systemctl reload` does (its `ExecReload=`).
    pub fn reload(&self, unit: &str) -> Result<(), ClusterError> {
        self.units().reload(unit)
    }

    /// Stops `unit` as `systemctl stop` does (no `Restart=` after it).
    pub fn stop_unit(&self, unit: &str) {
        self.units().stop(unit);
    }

    /// Starts `unit` as `systemctl start` does.
    pub fn start_unit(&self, unit: &str) -> Result<(), ClusterError> {
        self.units().start(unit)
    }

    /// The units of its role that run a daemon (not `Type=oneshot`, not `.path`) and are not
    /// running now, with why (a restart pending, failed for good, or neither).
    pub fn dead_units(&self) -> Vec<(String, String)> {
        let mut u = self.units();
        let mut dead = Vec::new();
        for name in u.order.clone() {
            let daemon = name.ends_with(".service")
                && u.unit(&name).is_ok_and(|unit| unit.kind != "oneshot");
            if daemon && !u.running.contains_key(&name) {
                let why = match (u.pending.get(&name), u.failed.get(&name)) {
                    (Some(_), _) => "restart pending".to_string(),
                    (None, Some(why)) => why.clone(),
                    (None, None) => "not running".to_string(),
                };
                dead.push((name, why));
            }
        }
        dead
    }

    /// The main processes that ended by themselves so far, and whether each was restarted.
    pub fn ended(&self) -> Vec<Ended> {
        self.units().ended.clone()
    }

    /// The API server stand-in (masters and the bootstrap node).
    pub fn api(&self) -> Option<&ApiServer> {
        self.api.as_ref()
    }

    /// What its daemons said so far, for a failing step's message.
    pub fn logs(&self) -> String {
        let u = self.units();
        let mut out = format!("=== {} ({})\n", self.name, self.role.as_str());
        for d in u.running.values() {
            out.push_str(&d.log());
        }
        out.push_str(&u.oneshots);
        out
    }
}

/// The cluster: the lab, its nodes, the client, the path-unit poller.
#[derive(Debug)]
pub struct Cluster {
    nodes: Vec<Node>,
    client: Host,
    stop: Arc<AtomicBool>,
    poller: Option<std::thread::JoinHandle<()>>,
    options: Options,
    lab: Lab,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(p) = self.poller.take() {
            let _ = p.join();
        }
        // Every daemon gets its SIGTERM at once, rather than one after the other as each is
        // dropped and waited for; then the lab's namespaces go.
        for n in &self.nodes {
            for d in n.units().running.values() {
                let _ = d.signal(nix::sys::signal::Signal::SIGTERM);
            }
        }
    }
}

impl Cluster {
    /// Builds the lab, writes every node's files, starts the stand-ins and then every node's
    /// units (the nodes side by side, each node's units in its role's order). `say` gets a
    /// line per node as it comes up.
    pub fn up(options: &Options, say: &mut dyn FnMut(&str)) -> Result<Cluster, ClusterError> {
        for p in ["systemd", "roles", "keepalived"] {
            let dir = options.contrib.join(p);
            if !dir.is_dir() {
                return Err(ClusterError::Step(format!(
                    "{} is missing: the units come from contrib",
                    dir.display()
                )));
            }
        }
        if options.stack == Stack::Upstream && !upstream::dir().is_dir() {
            return Err(ClusterError::Step(format!(
                "{} is missing: the upstream stack's units come from there",
                upstream::dir().display()
            )));
        }
        let mut lab = Lab::new()?;
        let mut nodes = Vec::new();
        for (name, role) in LAYOUT {
            let host = lab.host(name)?;
            nodes.push(prepare(&host, name, role, options)?);
        }
        let client = lab.host(CLIENT)?;
        let started: Vec<Result<Node, ClusterError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = nodes
                .into_iter()
                .map(|p| scope.spawn(move || start_node(p, options)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(ClusterError::Step("a node's start panicked".into()))
                    })
                })
                .collect()
        });
        let mut nodes = Vec::new();
        for n in started {
            let n = n?;
            say(&format!(
                "{:<9} {} {:<7} {}",
                n.name,
                n.host.ipv4(),
                n.role.as_str(),
                n.unit_names().join(" ")
            ));
            nodes.push(n);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let all: Vec<Arc<Mutex<Units>>> = nodes.iter().map(|n| Arc::clone(&n.units)).collect();
        let flag = Arc::clone(&stop);
        let poller = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                for u in &all {
                    lock(u).poll();
                }
                std::thread::sleep(PATH_POLL);
            }
        });
        say(&format!(
            "{CLIENT:<9} {} (no node: asks DNS, uses the VIPs)",
            client.ipv4()
        ));
        Ok(Cluster {
            nodes,
            client,
            stop,
            poller: Some(poller),
            options: options.clone(),
            lab,
        })
    }

    /// The unit that holds the VIPs on this stack: "ipi-vrrpd.service" or "keepalived.service".
    pub fn vip_unit(&self) -> &'static str {
        match self.options.stack {
            Stack::Ours => "ipi-vrrpd.service",
            Stack::Upstream => "keepalived.service",
        }
    }

    /// The unit that balances the API: "ipi-lb-proxy.service" or "haproxy.service".
    pub fn proxy_unit(&self) -> &'static str {
        match self.options.stack {
            Stack::Ours => "ipi-lb-proxy.service",
            Stack::Upstream => "haproxy.service",
        }
    }

    /// A new host on the cluster's network, no node of it (a client of its own).
    pub fn add_host(&mut self, name: &str) -> Result<Host, ClusterError> {
        Ok(self.lab.host(name)?)
    }

    /// The lab: partitions, carrier, captures.
    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// Cuts a node's power: off the network, every process gone at once (SIGKILL), the stand-ins
    /// stopped, and what lived in its memory gone (the addresses its VIP daemon added, the
    /// nftables rules).
    pub fn power_off(&mut self, name: &str) -> Result<(), ClusterError> {
        let i = self.index(name)?;
        self.cut(i)?;
        let node = &mut self.nodes[i];
        if let Some(r) = node.router.as_mut() {
            r.stop();
        }
        for vip in [API_VIP, INGRESS_VIP] {
            let _ = node
                .host
                .run("ip", ["addr", "del", &vip.to_string(), "dev", "eth0"]);
        }
        node.host.run("nft", ["flush", "ruleset"])?;
        Ok(())
    }

    /// Powers a node on again: its stand-ins, then its role's units in order, then its link.
    pub fn power_on(&mut self, name: &str) -> Result<(), ClusterError> {
        let i = self.index(name)?;
        let node = &mut self.nodes[i];
        if let Some(api) = node.api.as_mut() {
            api.restart().map_err(ClusterError::io(format!(
                "start the API stand-in on {name}"
            )))?;
        }
        if let Some(r) = node.router.as_mut() {
            r.start()
                .map_err(ClusterError::io(format!("start the router on {name}")))?;
        }
        self.lab.link_up(&node.host)?;
        node.up = true;
        let started = node.units().start_all();
        started
    }

    /// Stops the router stand-in on a worker (false: no router there).
    pub fn router_down(&mut self, name: &str) -> Result<bool, ClusterError> {
        let i = self.index(name)?;
        Ok(self.nodes[i].router.as_mut().map(Router::stop).is_some())
    }

    /// Starts a worker's router stand-in again.
    pub fn router_up(&mut self, name: &str) -> Result<(), ClusterError> {
        let i = self.index(name)?;
        if let Some(r) = self.nodes[i].router.as_mut() {
            r.start()
                .map_err(ClusterError::io(format!("start the router on {name}")))?;
        }
        Ok(())
    }

    /// Stops (refusing connections) or restarts a master's API server stand-in.
    pub fn api_running(&mut self, name: &str, running: bool) -> Result<(), ClusterError> {
        let i = self.index(name)?;
        if let Some(api) = self.nodes[i].api.as_mut() {
            if running {
                api.restart().map_err(ClusterError::io(format!(
                    "start the API stand-in on {name}"
                )))?;
            } else {
                api.stop();
            }
        }
        Ok(())
    }

    /// The nodes, bootstrap first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
    }

    /// The client host: on the cluster's network, no node of it.
    pub fn client(&self) -> &Host {
        &self.client
    }

    /// How long the client's ARP cache keeps sending to a VIP's old holder after the last
    /// answer from it, unless a gratuitous ARP says otherwise (with Linux's defaults: 15 s
    /// REACHABLE at least, 5 s DELAY, 3 unicast probes a second apart).
    pub fn client_arp_floor(&self) -> Option<Duration> {
        probe::stale_arp_floor(&self.client)
    }

    /// The options it was started with.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Who holds the VIPs now, among the nodes that are up.
    pub fn holders(&self) -> Holders {
        let mut h = Holders::default();
        for n in self.nodes.iter().filter(|n| n.up) {
            let Ok(addresses) = n.host.addresses() else {
                continue;
            };
            if addresses.contains(&IpAddr::V4(API_VIP)) {
                h.api.push(n.name.clone());
            }
            if addresses.contains(&IpAddr::V4(INGRESS_VIP)) {
                h.ingress.push(n.name.clone());
            }
        }
        h
    }

    /// The names asked of every DNS server, and the answers they should give: api and
    /// api-int (the API VIP), a name under apps (the Ingress VIP), and every node that
    /// publishes itself over mDNS and is up (its address; a node that is gone leaves the mDNS
    /// inventory, and DNS, with its records' TTL).
    pub fn expected_dns(&self) -> BTreeMap<String, Vec<String>> {
        let mut want = BTreeMap::new();
        let api = vec![API_VIP.to_string()];
        want.insert(format!("api.{DOMAIN}"), api.clone());
        want.insert(format!("api-int.{DOMAIN}"), api);
        want.insert(format!("x.apps.{DOMAIN}"), vec![INGRESS_VIP.to_string()]);
        for n in self.nodes.iter().filter(|n| n.up) {
            if n.unit_names()
                .iter()
                .any(|u| u == "ipi-mdns-publish.service")
            {
                want.insert(
                    format!("{}.{DOMAIN}", n.name),
                    vec![n.host.ipv4().to_string()],
                );
            }
        }
        want
    }

    /// Every node that runs dnsmasq, asked from the client as a resolver would ask it
    /// (`dig @NODE-IP`, over the network) for every name of [`Cluster::expected_dns`].
    pub fn dns(&self) -> Vec<DnsAnswers> {
        let names: Vec<String> = self.expected_dns().into_keys().collect();
        self.nodes
            .iter()
            .filter(|n| n.up && n.runs("ipi-dnsmasq.service"))
            .map(|n| DnsAnswers {
                server: n.name.clone(),
                answers: dig(&self.client, n.host.ipv4(), &names),
            })
            .collect()
    }

    /// Whether every DNS server gives every expected answer.
    pub fn dns_complete(&self) -> bool {
        let want = self.expected_dns();
        let got = self.dns();
        !got.is_empty() && got.iter().all(|d| d.answers == want)
    }

    /// Waits until every DNS server gives every expected answer (a dnsmasq restarted by the
    /// dns-render path unit misses a query or two); returns those answers.
    pub fn wait_dns(&self, timeout: Duration) -> Result<Vec<DnsAnswers>, ClusterError> {
        let want = self.expected_dns();
        let mut got = Vec::new();
        let ok = wait_for(timeout, Duration::from_millis(250), || {
            got = self.dns();
            !got.is_empty() && got.iter().all(|d| d.answers == want)
        });
        match ok {
            Some(_) => Ok(got),
            None => Err(self.failed(&format!("every DNS server to answer {want:?}: {got:?}"))),
        }
    }

    /// `n` requests to API-VIP:6443 from the client, each on a connection of its own (plain
    /// HTTP: the stand-ins answer with their name).
    pub fn requests(&self, n: usize) -> Result<Spread, ClusterError> {
        let names = self
            .client
            .within(move || {
                Ok((0..n)
                    .map(|_| {
                        get(
                            SocketAddr::from((API_VIP, API_PORT)),
                            Duration::from_secs(2),
                        )
                        .ok()
                    })
                    .collect::<Vec<_>>())
            })
            .map_err(ClusterError::io("requests from the client"))?;
        let mut spread = Spread::default();
        for name in names {
            match name {
                Some(name) => *spread.answered.entry(name).or_default() += 1,
                None => spread.failed += 1,
            }
        }
        Ok(spread)
    }

    /// `GET https://API-VIP:6443/readyz` from the client with curl, as a Kubernetes client
    /// asks the API (over TLS; the stand-ins' certificates are self-signed, so not verified):
    /// the HTTP status and the body (`200 ok`), through whatever holds the VIP.
    pub fn readyz(&self) -> Result<String, ClusterError> {
        let url = format!("https://{API_VIP}:{API_PORT}/readyz");
        let out = self.client.run(
            "curl",
            [
                "-ks",
                "--max-time",
                "5",
                "-w",
                "%{http_code}",
                "-o",
                "-",
                &url,
            ],
        )?;
        if !out.success {
            return Err(ClusterError::Step(format!(
                "curl {url} from the client failed ({:?}): {}",
                out.code, out.stderr
            )));
        }
        // curl writes the body, then the -w status: "ok200" -> "200 ok".
        let (body, code) = out.stdout.split_at(out.stdout.len().saturating_sub(3));
        Ok(format!("{code} {body}"))
    }

    /// Waits until a round of `n` requests from the client is answered in full, by every
    /// node of `over` and nobody else (the load balancers' health checks have caught up with
    /// the API servers that are gone); returns that round.
    pub fn spread_over(
        &self,
        n: usize,
        over: &[String],
        timeout: Duration,
    ) -> Result<Spread, ClusterError> {
        let mut last = Spread::default();
        let ok = wait_for(timeout, Duration::from_millis(200), || {
            last = self.requests(n).unwrap_or_else(|_| Spread {
                failed: n,
                ..Spread::default()
            });
            last.failed == 0 && last.answered.keys().eq(over.iter())
        });
        match ok {
            Some(_) => Ok(last),
            None => Err(self.failed(&format!(
                "requests through the API VIP from the client spread over {over:?}: last round \
                 {last:?}"
            ))),
        }
    }

    /// Waits until the cluster is at rest as it should be after start: the bootstrap node
    /// holds the API VIP and a worker the Ingress VIP (nobody else either), every master's
    /// API instance runs at its full priority (its load balancer checks pass) and every DNS
    /// server answers every name. Returns how long that took.
    pub fn settle(&self, timeout: Duration) -> Result<Duration, ClusterError> {
        let vrrpd = self.options.bin_dir.join("vrrpd");
        let workers: Vec<&str> = self.names(Role::Worker);
        let masters: Vec<&Node> = self.of(Role::Master).collect();
        let full = |n: &Node| {
            n.vrrp(&vrrpd)
                .iter()
                .any(|(i, _, p)| i.ends_with("_API") && *p == u64::from(MASTER_API))
        };
        let took = wait_for(timeout, Duration::from_millis(250), || {
            let h = self.holders();
            h.api == ["bootstrap"]
                && h.ingress.len() == 1
                && workers.contains(&h.ingress[0].as_str())
                && masters.iter().all(|n| full(n))
                && self.dns_complete()
        });
        took.ok_or_else(|| {
            self.failed(&format!(
                "the cluster to settle (API VIP on the bootstrap node, Ingress VIP on a worker, \
                 masters at API priority 65, every DNS answer): holders {:?}, DNS {:?}",
                self.holders(),
                self.dns()
            ))
        })
    }

    /// Removes the bootstrap node as the installer does once the masters run the API: its
    /// units are stopped (vrrpd resigns with priority 0), then it leaves the network. Returns
    /// the API VIP's move to a master, timed from the stop; the client, which talked to the
    /// bootstrap node's API server through the VIP just before, must be served by the masters.
    pub fn remove_bootstrap(&mut self) -> Result<Move, ClusterError> {
        let masters = self.up_names(Role::Master, "");
        let i = self.index("bootstrap")?;
        let before = self.talked_to("bootstrap", API_VIP, API_PORT)?;
        let start = Instant::now();
        {
            let node = &mut self.nodes[i];
            node.units().stop_all();
            if let Some(api) = node.api.as_mut() {
                api.stop();
            }
        }
        let watch = self.watch(
            "bootstrap",
            (API_VIP, API_PORT),
            masters.clone(),
            before,
            start,
        );
        let to = self.wait_vip(API_VIP, &masters, start, "the API VIP to move to a master")?;
        let m = self.moved(watch, to)?;
        let node = &mut self.nodes[i];
        self.lab.link_down(&node.host)?;
        node.up = false;
        Ok(m)
    }

    /// Kills the master that holds the API VIP as a power cut does: off the network, every
    /// process gone at once (SIGKILL). Returns the API VIP's move to another master, timed
    /// from the cut; the client, which talked through the VIP just before, must be served by
    /// the API servers left.
    pub fn kill_api_master(&mut self) -> Result<Move, ClusterError> {
        let from = self.single(&self.holders().api, "the API VIP")?;
        let i = self.index(&from)?;
        let before = self.talked_to(&from, API_VIP, API_PORT)?;
        let start = Instant::now();
        self.cut(i)?;
        let others = self.up_names(Role::Master, &from);
        let watch = self.watch(&from, (API_VIP, API_PORT), others.clone(), before, start);
        let to = self.wait_vip(API_VIP, &others, start, "the API VIP to fail over")?;
        self.moved(watch, to)
    }

    /// Stops the router on the worker that holds the Ingress VIP: its chk_ingress fails, the
    /// VIP moves to the other worker. Returns the move, timed from the stop; the client, which
    /// asked the router through the VIP just before, must be answered by the other's router.
    pub fn stop_ingress_router(&mut self) -> Result<Move, ClusterError> {
        let from = self.single(&self.holders().ingress, "the Ingress VIP")?;
        let i = self.index(&from)?;
        let before = self.talked_to(&from, INGRESS_VIP, router::PORT)?;
        let start = Instant::now();
        if let Some(r) = self.nodes[i].router.as_mut() {
            r.stop();
        }
        let others = self.up_names(Role::Worker, &from);
        let routers = others.iter().map(|w| format!("router on {w}")).collect();
        let watch = self.watch(&from, (INGRESS_VIP, router::PORT), routers, before, start);
        let to = self.wait_vip(INGRESS_VIP, &others, start, "the Ingress VIP to move")?;
        self.moved(watch, to)
    }

    /// Node `i` off the network, every process of its units killed at once (SIGKILL), its API
    /// server stand-in stopped: a power cut, as far as the network and the units see it.
    fn cut(&mut self, i: usize) -> Result<(), ClusterError> {
        self.lab.link_down(&self.nodes[i].host)?;
        let node = &mut self.nodes[i];
        node.up = false;
        node.units().kill_all();
        if let Some(api) = node.api.as_mut() {
            api.stop();
        }
        Ok(())
    }

    /// Makes the client talk to `vip`:`port` (a request answered, within a few seconds) and
    /// checks that its ARP entry for the VIP now holds `holder`'s MAC: the entry a missing
    /// gratuitous ARP would leave in place after the move. Returns that entry.
    fn talked_to(&self, holder: &str, vip: Ipv4Addr, port: u16) -> Result<Neighbour, ClusterError> {
        let to = SocketAddr::from((vip, port));
        let answered = self.client.within(|| {
            Ok(wait_for(
                Duration::from_secs(10),
                Duration::from_millis(100),
                || get(to, Duration::from_secs(1)).is_ok(),
            ))
        });
        if !matches!(answered, Ok(Some(_))) {
            return Err(self.failed(&format!(
                "the client to be answered through {to} ({holder})"
            )));
        }
        let mac = self.host(holder)?.mac()?;
        match self.client.neighbour(IpAddr::V4(vip)) {
            Some(n) if n.lladdr.as_deref() == Some(mac.as_str()) => Ok(n),
            other => Err(ClusterError::Step(format!(
                "the client's ARP entry for {vip} after talking to it is {other:?}, not {holder}'s \
                 MAC {mac}"
            ))),
        }
    }

    /// From `start` (the fault), the client's requests to `service` until one is answered by
    /// a server in `accept`, on a thread of its own while the step watches the nodes.
    fn watch(
        &self,
        from: &str,
        service: (Ipv4Addr, u16),
        accept: Vec<String>,
        before: Neighbour,
        start: Instant,
    ) -> Watch {
        let client = self.client.clone();
        let to = SocketAddr::from(service);
        let names = accept.clone();
        Watch {
            from: from.to_string(),
            to,
            accept,
            before,
            start,
            first: std::thread::spawn(move || first_answer(&client, to, &names, start, MOVE_LIMIT)),
        }
    }

    /// The move from the watch's old holder to `to` (the holder and the time
    /// [`Cluster::wait_vip`] found): once the client has been served through the VIP, and
    /// then served with its ARP entry on `to`'s MAC.
    fn moved(&self, watch: Watch, (to, took): (String, Duration)) -> Result<Move, ClusterError> {
        let Watch {
            from,
            to: service,
            accept,
            before,
            start,
            first,
        } = watch;
        let vip = service.ip();
        let served = first.join().ok().flatten().ok_or_else(|| {
            self.failed(&format!(
                "the client to be served through {vip} again within {} s of the fault (its ARP \
                 entry: {:?})",
                MOVE_LIMIT.as_secs(),
                self.client.neighbour(vip)
            ))
        })?;
        let mac = served.neighbour.as_ref().and_then(|n| n.lladdr.clone());
        let via = self
            .nodes
            .iter()
            .find(|n| n.host.mac().ok() == mac)
            .map_or_else(|| format!("{mac:?} (no node's MAC)"), |n| n.name.clone());
        let settled = self.served_by(&to, service, &accept, start)?;
        Ok(Move {
            from,
            to,
            took,
            served: served.after,
            settled,
            answer: served.answer,
            via,
            before,
        })
    }

    /// Waits until the client's ARP entry for the VIP of `to` holds `holder`'s MAC and a
    /// request to `to` is answered by a server in `accept`: the time since `start`, the fault.
    fn served_by(
        &self,
        holder: &str,
        to: SocketAddr,
        accept: &[String],
        start: Instant,
    ) -> Result<Duration, ClusterError> {
        let mac = self.host(holder)?.mac()?;
        let left = MOVE_LIMIT.saturating_sub(start.elapsed());
        let served = wait_for(left, POLL, || {
            let on_holder = self
                .client
                .neighbour(to.ip())
                .is_some_and(|n| n.lladdr.as_deref() == Some(mac.as_str()));
            on_holder
                && self
                    .client
                    .within(|| get(to, Duration::from_millis(300)))
                    .is_ok_and(|name| accept.contains(&name))
        });
        served.map(|_| start.elapsed()).ok_or_else(|| {
            self.failed(&format!(
                "the client to be served through {to} by {holder} (its ARP entry: {:?})",
                self.client.neighbour(to.ip())
            ))
        })
    }

    /// Waits until one of `candidates` holds `vip` (the time since `start`), then until it
    /// is on one node only (candidates that became master together settle on the highest
    /// priority, then address): that node's name and the time.
    fn wait_vip(
        &self,
        vip: Ipv4Addr,
        candidates: &[String],
        start: Instant,
        what: &str,
    ) -> Result<(String, Duration), ClusterError> {
        let hosts: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|n| candidates.contains(&n.name))
            .collect();
        let left = MOVE_LIMIT.saturating_sub(start.elapsed());
        wait_for(left, POLL, || {
            hosts.iter().any(|n| n.host.has_address(IpAddr::V4(vip)))
        })
        .ok_or_else(|| self.failed(&format!("{what} (to one of {candidates:?})")))?;
        let took = start.elapsed();
        let mut holder = Vec::new();
        let single = wait_for(Duration::from_secs(30), Duration::from_millis(100), || {
            let h = self.holders();
            holder = if vip == API_VIP { h.api } else { h.ingress };
            holder.len() == 1 && candidates.contains(&holder[0])
        });
        match (single, holder.pop()) {
            (Some(_), Some(name)) => Ok((name, took)),
            _ => Err(self.failed(&format!("{what}: {vip} on one of {candidates:?} only"))),
        }
    }

    /// The nodes of `role` that are up, but `except`.
    fn up_names(&self, role: Role, except: &str) -> Vec<String> {
        self.of(role)
            .filter(|n| n.up && n.name != except)
            .map(|n| n.name.clone())
            .collect()
    }

    fn single(&self, holders: &[String], what: &str) -> Result<String, ClusterError> {
        match holders {
            [one] => Ok(one.clone()),
            _ => Err(self.failed(&format!("{what} on one node, not {holders:?}"))),
        }
    }

    fn host(&self, name: &str) -> Result<&Host, ClusterError> {
        self.node(name)
            .map(|n| &n.host)
            .ok_or_else(|| ClusterError::Step(format!("no node {name}")))
    }

    fn index(&self, name: &str) -> Result<usize, ClusterError> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| ClusterError::Step(format!("no node {name}")))
    }

    fn of(&self, role: Role) -> impl Iterator<Item = &Node> {
        self.nodes.iter().filter(move |n| n.role == role)
    }

    /// The names of the nodes in `role`, in the lab's order.
    pub fn names(&self, role: Role) -> Vec<&str> {
        self.of(role).map(|n| n.name.as_str()).collect()
    }

    /// A step's failure with every node's logs.
    fn failed(&self, what: &str) -> ClusterError {
        let logs: String = self.nodes.iter().map(Node::logs).collect();
        ClusterError::Step(format!("timed out waiting for {what}\n{logs}"))
    }
}

/// Writes a node's files and starts its stand-ins.
fn prepare(
    host: &Host,
    name: &str,
    role: Role,
    options: &Options,
) -> Result<Prepared, ClusterError> {
    let dir = host.dir();
    let etc = dir.join("etc");
    let scripts = etc.join("keepalived");
    for d in [&etc, &scripts, &dir.join("run"), &dir.join("nm")] {
        std::fs::create_dir_all(d).map_err(ClusterError::io(format!("create {}", d.display())))?;
    }
    node_files(&etc, host, name, role)?;
    // No upstream in the lab: a documentation address that nobody answers.
    write(&dir.join("nm/resolv.conf"), "nameserver 198.51.100.53\n")?;
    let contrib = options.contrib.join("keepalived");
    let entries = std::fs::read_dir(&contrib)
        .map_err(ClusterError::io(format!("read {}", contrib.display())))?;
    for e in entries.flatten() {
        let to = scripts.join(e.file_name());
        std::fs::copy(e.path(), &to)
            .map_err(ClusterError::io(format!("copy {}", e.path().display())))?;
    }
    if options.stack == Stack::Upstream {
        upstream::install_scripts(&etc.join("upstream"))?;
    }
    let listen = SocketAddr::from((Ipv6Addr::UNSPECIFIED, 6443));
    let api = match role {
        Role::Bootstrap | Role::Master => Some(ApiServer::start_in(host, listen, name).map_err(
            ClusterError::io(format!("start the API stand-in on {name}")),
        )?),
        Role::Worker => None,
    };
    let router = match role {
        Role::Worker => Some(Router::start_in(host).map_err(ClusterError::io(format!(
            "start the router stand-in on {name}"
        )))?),
        _ => None,
    };
    Ok(Prepared {
        host: host.clone(),
        name: name.to_string(),
        role,
        api,
        router,
    })
}

/// Writes a node's `install-config.yaml` (the lab cluster: its VIPs) and `node.env` into `etc`
/// (what is `/etc/ipi-net` on the node).
pub(crate) fn node_files(
    etc: &Path,
    host: &Host,
    name: &str,
    role: Role,
) -> Result<(), ClusterError> {
    ipi_lab::install_config(
        etc,
        &["192.0.2.0/24"],
        &[&API_VIP.to_string()],
        &[&INGRESS_VIP.to_string()],
    );
    let env = format!(
        "IPI_ROLE={}\nIPI_HOSTNAME={name}\nIPI_NODE_IP={}\nIPI_INTERFACE=eth0\n",
        role.as_str(),
        host.ipv4()
    );
    write(&etc.join("node.env"), &env)
}

/// A node whose files are written and whose stand-ins run, before its units start.
struct Prepared {
    host: Host,
    name: String,
    role: Role,
    api: Option<ApiServer>,
    router: Option<Router>,
}

fn write(path: &Path, text: &str) -> Result<(), ClusterError> {
    std::fs::write(path, text).map_err(ClusterError::io(format!("write {}", path.display())))
}

/// The node's mount namespace, then its role's units in order.
fn start_node(p: Prepared, options: &Options) -> Result<Node, ClusterError> {
    let Prepared {
        host,
        name,
        role,
        api,
        router,
    } = p;
    let dir = host.dir().to_path_buf();
    let mut mounts = vec![
        Mount::Tmpfs("/run".into()),
        Mount::Bind {
            from: dir.join("run"),
            to: "/run/ipi-net".into(),
        },
        Mount::Bind {
            from: dir.join("nm"),
            to: "/run/NetworkManager".into(),
        },
        // /etc/ipi-net is made in an overlay of /etc, not on the machine's /etc.
        Mount::Overlay {
            dir: "/etc".into(),
            upper: dir.join("etc-overlay"),
        },
        Mount::Bind {
            from: dir.join("etc"),
            to: "/etc/ipi-net".into(),
        },
    ];
    if options.stack == Stack::Upstream {
        // haproxy's directory (the stats socket of the rendered haproxy.cfg), the node's own.
        mounts.push(Mount::Tmpfs("/var/lib/haproxy".into()));
    }
    let ns = MountNamespace::new(&host, "mounts", &mounts)?;
    let mut units = Units {
        ns,
        dir,
        bin_dir: options.bin_dir.clone(),
        systemd: options.contrib.join("systemd"),
        units: BTreeMap::new(),
        running: BTreeMap::new(),
        notify: BTreeMap::new(),
        order: Vec::new(),
        watches: Vec::new(),
        oneshots: String::new(),
        pending: BTreeMap::new(),
        limits: BTreeMap::new(),
        failed: BTreeMap::new(),
        ended: Vec::new(),
        leftovers: BTreeMap::new(),
    };
    let mut listed = units::role(&options.contrib.join("roles").join(role.as_str()))?;
    if options.stack == Stack::Upstream {
        listed = upstream::units(&listed);
        for name in listed.iter().filter(|u| upstream::is_upstream(u)) {
            let unit = Unit::read(&upstream::dir().join(name))?;
            units.units.insert(name.clone(), unit);
        }
    }
    let loaded = listed
        .iter()
        .map(|name| units.unit(name))
        .collect::<Result<Vec<Unit>, ClusterError>>()?;
    for i in units::start_order(&loaded)? {
        units.start(&listed[i])?;
        units.order.push(listed[i].clone());
    }
    Ok(Node {
        name,
        role,
        host,
        units: Arc::new(Mutex::new(units)),
        api,
        router,
        up: true,
        stack: options.stack,
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
