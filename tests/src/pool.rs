//! vrrpd's pool mode in the lab (issue #21): nodes in namespaces running `vrrpd run --pool`,
//! a MetalLB pool whose addresses are reserved in ipam's store (a directory every namespace
//! sees, or a real etcd), and a look at who holds what. Shared by the lab test and the
//! benchmark.
//!
//! etcd listens on the host's loopback, which no namespace reaches: each node gets a relay, a
//! listener on its own 127.0.0.1 (opened inside its namespace) whose connections are carried
//! to etcd by threads of this process.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ipi_lab::etcd::Etcd;
use ipi_lab::{Daemon, Host, Lab};

use crate::error::ClusterError;

/// Where the reservations live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// ipam's file store, a directory of the lab every namespace sees.
    File,
    /// A real etcd, reached through a relay in each namespace.
    Etcd,
}

impl StoreKind {
    /// Its name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            StoreKind::File => "file store",
            StoreKind::Etcd => "etcd",
        }
    }
}

/// The pool's name (metadata.name).
pub const POOL: &str = "lab";

/// The first IPv4 address of the pool: the lab's hosts are .1, .2, ... below it.
pub const FIRST_V4: [u8; 4] = [192, 0, 2, 100];

/// A lab of nodes holding a pool's reserved addresses, and a client.
#[derive(Debug)]
pub struct PoolLab {
    /// The lab (dropped last: it removes the namespaces).
    pub lab: Lab,
    /// The nodes, named n1, n2, ...
    pub nodes: Vec<Host>,
    /// A host that is no node.
    pub client: Host,
    /// The vrrpd of each node (None once killed).
    pub vrrpds: Vec<Option<Daemon>>,
    pool_file: PathBuf,
    /// The store as this process reaches it.
    store: String,
    etcd: Option<Etcd>,
    /// Per node: the store as its vrrpd reaches it.
    node_stores: Vec<String>,
}

fn write(path: &Path, text: &str) -> Result<(), ClusterError> {
    std::fs::write(path, text).map_err(ClusterError::io(format!("write {}", path.display())))
}

/// The pool: `v4` IPv4 addresses from [`FIRST_V4`], then `v6` IPv6 addresses from
/// 2001:db8::1:0.
fn pool_yaml(v4: u32, v6: u32) -> String {
    let first = u32::from_be_bytes(FIRST_V4);
    let mut addresses = Vec::new();
    if v4 > 0 {
        let last = std::net::Ipv4Addr::from(first + v4 - 1);
        addresses.push(format!("{}-{last}", std::net::Ipv4Addr::from(first)));
    }
    if v6 > 0 {
        addresses.push(format!("2001:db8::1:0-2001:db8::1:{:x}", v6 - 1));
    }
    format!(
        "apiVersion: metallb.io/v1beta1\nkind: IPAddressPool\nmetadata:\n  name: {POOL}\n  \
         namespace: metallb-system\nspec:\n  addresses: [{}]\n",
        addresses.join(", ")
    )
}

const L2ADVERTISEMENT: &str = "apiVersion: metallb.io/v1beta1
kind: L2Advertisement
metadata:
  name: lab
  namespace: metallb-system
spec:
  ipAddressPools: [lab]
  interfaces: [eth0]
";

/// Carries each connection to `listener` to `to`, on threads of this process.
fn relay(listener: TcpListener, to: SocketAddr) {
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = TcpStream::connect(to) else {
                continue;
            };
            for (mut from, mut into) in [
                (client.try_clone(), server.try_clone()),
                (server.try_clone(), client.try_clone()),
            ]
            .into_iter()
            .filter_map(|(a, b)| Some((a.ok()?, b.ok()?)))
            {
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16384];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || into.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = into.shutdown(Shutdown::Write);
                });
            }
        }
    });
}

impl PoolLab {
    /// `nodes` nodes and a client; a pool of `v4` IPv4 and `v6` IPv6 addresses, none reserved
    /// yet; the store of `kind`. vrrpd is not started.
    pub fn new(kind: StoreKind, nodes: usize, v4: u32, v6: u32) -> Result<PoolLab, ClusterError> {
        let mut lab = Lab::new()?;
        let hosts: Vec<Host> = (1..=nodes)
            .map(|n| lab.host(&format!("n{n}")))
            .collect::<Result<_, _>>()?;
        let client = lab.host("client")?;
        let dir = lab.dir().to_path_buf();
        let pool_file = dir.join("pool.yaml");
        write(&pool_file, &pool_yaml(v4, v6))?;
        write(&dir.join("l2advertisement.yaml"), L2ADVERTISEMENT)?;
        let inventory: String = (hosts.iter())
            .map(|h| format!("{} master {} {}\n", h.name(), h.ipv4(), h.ipv6()))
            .collect();
        write(&dir.join("nodes"), &inventory)?;
        let (store, etcd, node_stores) = match kind {
            StoreKind::File => {
                let url = dir.join("store").display().to_string();
                (url.clone(), None, vec![url; nodes])
            }
            StoreKind::Etcd => {
                let etcd = Etcd::start()?;
                let mut urls = Vec::new();
                for h in &hosts {
                    let listener = h
                        .within(|| TcpListener::bind("127.0.0.1:0"))
                        .map_err(ClusterError::io("listen in a namespace"))?;
                    let port = listener
                        .local_addr()
                        .map_err(ClusterError::io("a relay's port"))?
                        .port();
                    relay(listener, etcd.endpoint());
                    urls.push(format!("etcd://127.0.0.1:{port}"));
                }
                (etcd.url(), Some(etcd), urls)
            }
        };
        Ok(PoolLab {
            lab,
            vrrpds: hosts.iter().map(|_| None).collect(),
            nodes: hosts,
            client,
            pool_file,
            store,
            etcd,
            node_stores,
        })
    }

    /// Starts vrrpd in pool mode on node `n` (from 0), `extra` arguments after the others.
    pub fn start(&mut self, n: usize, vrrpd: &Path, extra: &[&str]) -> Result<(), ClusterError> {
        let dir = self.lab.dir().to_path_buf();
        let host = &self.nodes[n];
        let state = host.dir().join("state");
        let path = |p: PathBuf| p.display().to_string();
        let mut args = vec![
            "run".to_owned(),
            "--pool".into(),
            path(self.pool_file.clone()),
            "--l2advertisement".into(),
            path(dir.join("l2advertisement.yaml")),
            "--nodes".into(),
            path(dir.join("nodes")),
            "--node".into(),
            host.name().to_owned(),
            "--store".into(),
            self.node_stores[n].clone(),
            "--state-dir".into(),
            path(state),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        self.vrrpds[n] = Some(host.spawn("vrrpd", &vrrpd.display().to_string(), args)?);
        Ok(())
    }

    /// The pool as ipam reads it.
    fn pool(&self) -> ipi_store::pool::AddressPool {
        ipi_store::pool::AddressPool::load(&self.pool_file)
            .unwrap_or_else(|p| panic!("the lab's pool: {p}"))
    }

    /// Reserves an address for `name` (with a sharing key if given), as `ipam pool reserve`
    /// does.
    pub fn reserve(&self, name: &str, key: Option<&str>) -> IpAddr {
        let pool = self.pool();
        let mut store = ipi_store::store::open(&self.store).unwrap_or_else(|e| panic!("{e}"));
        let held = match key {
            Some(key) => ipam::alloc::share(store.as_mut(), &pool.pool, key, name),
            None => ipam::alloc::reserve(store.as_mut(), &pool.pool, name, None),
        };
        held.unwrap_or_else(|e| panic!("reserving for {name}: {e}"))
            .ip
    }

    /// Releases what `name` holds, as `ipam release` does.
    pub fn release(&self, name: &str) -> Vec<IpAddr> {
        let mut store = ipi_store::store::open(&self.store).unwrap_or_else(|e| panic!("{e}"));
        ipam::alloc::release_name(store.as_mut(), name)
            .unwrap_or_else(|e| panic!("releasing {name}: {e}"))
            .into_iter()
            .map(|(_, ip)| ip)
            .collect()
    }

    /// Who holds each of `addresses` now: the names of the nodes (alive or not) whose `eth0`
    /// has it.
    pub fn holders(&self, addresses: &[IpAddr], among: &[usize]) -> BTreeMap<IpAddr, Vec<String>> {
        let mut out: BTreeMap<IpAddr, Vec<String>> =
            addresses.iter().map(|a| (*a, Vec::new())).collect();
        for n in among {
            let host = &self.nodes[*n];
            let have = host
                .addresses()
                .unwrap_or_else(|e| panic!("ip addr in {}: {e}", host.name()));
            for a in have {
                if let Some(h) = out.get_mut(&a) {
                    h.push(host.name().to_owned());
                }
            }
        }
        out
    }

    /// Kills node `n` as a node dies: its vrrpd SIGKILLed (no priority 0) and its cable pulled
    /// at once. Returns when both are done.
    pub fn kill(&mut self, n: usize) -> Result<Instant, ClusterError> {
        let at = Instant::now();
        if let Some(d) = &self.vrrpds[n] {
            d.signal(nix::sys::signal::Signal::SIGKILL)?;
        }
        self.lab.link_down(&self.nodes[n])?;
        if let Some(mut d) = self.vrrpds[n].take() {
            let _ = d.wait(Duration::from_secs(5));
        }
        Ok(at)
    }

    /// Freezes the etcd (SIGSTOP: the store stops answering) or thaws it; nothing for the
    /// file store.
    pub fn freeze_etcd(&mut self, frozen: bool) -> Result<(), ClusterError> {
        if let Some(e) = &self.etcd {
            if frozen {
                e.pause()?;
            } else {
                e.resume()?;
            }
        }
        Ok(())
    }

    /// The pool file every node reads.
    pub fn pool_file(&self) -> &Path {
        &self.pool_file
    }

    /// Every vrrpd's log, for a failing test's message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        for (h, d) in self.nodes.iter().zip(&self.vrrpds) {
            if let Some(d) = d {
                out.push_str(&format!("--- {} ---\n{}\n", h.name(), d.log()));
            }
        }
        if let Some(e) = &self.etcd {
            out.push_str(&e.log());
        }
        out
    }
}
