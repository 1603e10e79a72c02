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
//! `NOTIFY_SOCKET`, `systemctl` in a command line, `.path` units polled every 100 ms; no
//! `Restart=`: a daemon that dies is reported by the step that needed it). `/usr/bin/PROGRAM`
//! of ours ([`PROGRAMS`]) is the freshly built binary in the options' `bin_dir`.
//!
//! Stand-ins for what the cluster itself runs: an HTTPS API server ([`ApiServer`], `/readyz`
//! on :6443) on the masters and on the bootstrap node (its bootstrap API server, which its
//! chk_ocp track script checks), and a router ([`Router`], `:1936/healthz`) on the workers.
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
use ipi_lab::router::Router;
use ipi_lab::{wait_for, Host, Lab};

pub use crate::error::ClusterError;
use crate::probe::{dig, get};
use crate::supervisor::Units;
pub use crate::supervisor::PROGRAMS;
use crate::units::{self, Unit};

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

/// How often conditions are polled while a move is timed.
const POLL: Duration = Duration::from_millis(10);
/// The interval of the emulated path units.
const PATH_POLL: Duration = Duration::from_millis(100);

/// Where the programs and the units come from.
#[derive(Debug, Clone)]
pub struct Options {
    /// The directory of the freshly built vrrpd, lb-proxy, mdns-publish, dns-render.
    pub bin_dir: PathBuf,
    /// The contrib directory (`systemd/`, `roles/`, `keepalived/`).
    pub contrib: PathBuf,
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
        })
    }
}

/// A VIP that moved: from which node to which, and how long after the fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// The node that held it.
    pub from: String,
    /// The node that holds it now.
    pub to: String,
    /// From the fault to the VIP on `to`.
    pub took: Duration,
}

/// Who holds the VIPs now (nodes still up only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holders {
    /// The nodes with the API VIP on eth0.
    pub api: Vec<String>,
    /// The nodes with the Ingress VIP on eth0.
    pub ingress: Vec<String>,
}

/// One node's DNS server asked from that node: name to addresses (empty: no answer).
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
}

impl Node {
    fn units(&self) -> MutexGuard<'_, Units> {
        lock(&self.units)
    }

    /// Whether the node runs `unit` (`ipi-dnsmasq.service`) now.
    pub fn runs(&self, unit: &str) -> bool {
        self.units().running.contains_key(unit)
    }

    /// Its units' names, in the order they were started.
    pub fn unit_names(&self) -> Vec<String> {
        self.units().order.clone()
    }

    /// Whether the node is up (not removed or killed).
    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Its vrrpd instances as `vrrpd status --json` says: (instance, state, priority).
    pub fn vrrp(&self, vrrpd: &Path) -> Vec<(String, String, u64)> {
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

/// The cluster: the lab, its nodes, the path-unit poller.
#[derive(Debug)]
pub struct Cluster {
    nodes: Vec<Node>,
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
        let mut lab = Lab::new()?;
        let mut nodes = Vec::new();
        for (name, role) in LAYOUT {
            let host = lab.host(name)?;
            nodes.push(prepare(&host, name, role, options)?);
        }
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
        Ok(Cluster {
            nodes,
            stop,
            poller: Some(poller),
            options: options.clone(),
            lab,
        })
    }

    /// The nodes, bootstrap first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.name == name)
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

    /// Every node that runs dnsmasq, asked from itself (`dig @NODE-IP`) for every name of
    /// [`Cluster::expected_dns`].
    pub fn dns(&self) -> Vec<DnsAnswers> {
        let names: Vec<String> = self.expected_dns().into_keys().collect();
        self.nodes
            .iter()
            .filter(|n| n.up && n.runs("ipi-dnsmasq.service"))
            .map(|n| DnsAnswers {
                server: n.name.clone(),
                answers: dig(&n.host, n.host.ipv4(), &names),
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

    /// `n` requests to API-VIP:6443 from `from`, each on a connection of its own (plain
    /// HTTP: the stand-ins answer with their name).
    pub fn requests(&self, from: &str, n: usize) -> Result<Spread, ClusterError> {
        let host = self.host(from)?;
        let names = host
            .within(move || {
                Ok((0..n)
                    .map(|_| get(SocketAddr::from((API_VIP, 6443))).ok())
                    .collect::<Vec<_>>())
            })
            .map_err(ClusterError::io(format!("requests from {from}")))?;
        let mut spread = Spread::default();
        for name in names {
            match name {
                Some(name) => *spread.answered.entry(name).or_default() += 1,
                None => spread.failed += 1,
            }
        }
        Ok(spread)
    }

    /// Waits until a round of `n` requests from `from` is answered in full, by every node of
    /// `over` and nobody else; returns that round.
    pub fn spread_over(
        &self,
        from: &str,
        n: usize,
        over: &[String],
        timeout: Duration,
    ) -> Result<Spread, ClusterError> {
        let mut last = Spread::default();
        let ok = wait_for(timeout, Duration::from_millis(200), || {
            last = self.requests(from, n).unwrap_or_else(|_| Spread {
                failed: n,
                ..Spread::default()
            });
            last.failed == 0 && last.answered.keys().eq(over.iter())
        });
        match ok {
            Some(_) => Ok(last),
            None => Err(self.failed(&format!(
                "requests through the API VIP from {from} spread over {over:?}: last round {last:?}"
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
        // 40 + chk_ocp_lb 20 + chk_ocp_both 5 (vrrpd's OpenShift render).
        let full = |n: &Node| {
            n.vrrp(&vrrpd)
                .iter()
                .any(|(i, _, p)| i.ends_with("_API") && *p == 65)
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
    /// the API VIP's move to a master, timed from the stop.
    pub fn remove_bootstrap(&mut self) -> Result<Move, ClusterError> {
        let masters: Vec<String> = self
            .names(Role::Master)
            .iter()
            .map(|s| s.to_string())
            .collect();
        let i = self.index("bootstrap")?;
        let start = Instant::now();
        {
            let node = &mut self.nodes[i];
            node.units().stop_all();
            if let Some(api) = node.api.as_mut() {
                api.stop();
            }
        }
        let to = self.wait_vip(API_VIP, &masters, start, "the API VIP to move to a master")?;
        let node = &mut self.nodes[i];
        self.lab.link_down(&node.host)?;
        node.up = false;
        Ok(Move {
            from: "bootstrap".into(),
            to: to.0,
            took: to.1,
        })
    }

    /// Kills the master that holds the API VIP as a power cut does: off the network, every
    /// process gone at once (SIGKILL). Returns the API VIP's move to another master, timed
    /// from the cut.
    pub fn kill_api_master(&mut self) -> Result<Move, ClusterError> {
        let from = self.single(&self.holders().api, "the API VIP")?;
        let i = self.index(&from)?;
        let start = Instant::now();
        self.lab.link_down(&self.nodes[i].host)?;
        {
            let node = &mut self.nodes[i];
            node.up = false;
            node.units().kill_all();
            if let Some(api) = node.api.as_mut() {
                api.stop();
            }
        }
        let others: Vec<String> = self
            .of(Role::Master)
            .filter(|n| n.up)
            .map(|n| n.name.clone())
            .collect();
        let (to, took) = self.wait_vip(API_VIP, &others, start, "the API VIP to fail over")?;
        Ok(Move { from, to, took })
    }

    /// Stops the router on the worker that holds the Ingress VIP: its chk_ingress fails, the
    /// VIP moves to the other worker. Returns the move, timed from the stop.
    pub fn stop_ingress_router(&mut self) -> Result<Move, ClusterError> {
        let from = self.single(&self.holders().ingress, "the Ingress VIP")?;
        let i = self.index(&from)?;
        let start = Instant::now();
        if let Some(r) = self.nodes[i].router.as_mut() {
            r.stop();
        }
        let others: Vec<String> = self
            .of(Role::Worker)
            .filter(|n| n.up && n.name != from)
            .map(|n| n.name.clone())
            .collect();
        let (to, took) = self.wait_vip(INGRESS_VIP, &others, start, "the Ingress VIP to move")?;
        Ok(Move { from, to, took })
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
        // A minute: the Master_Down_Interval (3.6 s) and the track scripts' intervals, many
        // times over on a loaded machine.
        let left = Duration::from_secs(60).saturating_sub(start.elapsed());
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

    fn names(&self, role: Role) -> Vec<&str> {
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
    ipi_lab::install_config(
        &etc,
        &["192.0.2.0/24"],
        &[&API_VIP.to_string()],
        &[&INGRESS_VIP.to_string()],
    );
    let env = format!(
        "IPI_ROLE={}\nIPI_HOSTNAME={name}\nIPI_NODE_IP={}\nIPI_INTERFACE=eth0\n",
        role.as_str(),
        host.ipv4()
    );
    write(&etc.join("node.env"), &env)?;
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
    let ns = MountNamespace::new(
        &host,
        "mounts",
        &[
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
        ],
    )?;
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
    };
    let listed = units::role(&options.contrib.join("roles").join(role.as_str()))?;
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
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
