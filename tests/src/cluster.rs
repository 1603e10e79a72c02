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
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use ipi_core::Role;
use ipi_lab::router::Router;
use ipi_lab::{wait_for, Host, Lab};

pub use crate::error::ClusterError;
use crate::probe::{self, dig, get};
pub use crate::supervisor::Ended;
use crate::supervisor::Units;
pub use crate::supervisor::PROGRAMS;
use crate::upstream;

mod layout;
mod moves;
mod node;
mod observed;

use layout::PATH_POLL;
pub use layout::{
    build_programs, Options, Stack, ADVERT_CS, API_PORT, API_VIP, CHK_INGRESS_CS, CLIENT, DOMAIN,
    INGRESS_VIP, LAYOUT, MASTER_API, WORKER_INGRESS,
};
pub(crate) use node::node_files;
pub use node::Node;
use node::{lock, prepare, start_node};
pub use observed::{DnsAnswers, Holders, Move, Spread};

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
