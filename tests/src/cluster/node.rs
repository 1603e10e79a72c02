//! One node of the cluster: its files written, its stand-ins and units started, and what it
//! runs and holds asked.

use std::collections::BTreeMap;
use std::net::{Ipv6Addr, SocketAddr};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};

use ipi_core::Role;
use ipi_lab::api::ApiServer;
use ipi_lab::mounts::{Mount, MountNamespace};
use ipi_lab::router::Router;
use ipi_lab::Host;
use nix::sys::signal::Signal;

use super::layout::{Options, Stack, API_VIP, INGRESS_VIP};
use crate::error::ClusterError;
use crate::supervisor::Ended;
use crate::supervisor::Units;
use crate::units::{self, Unit};
use crate::upstream;

/// One node: its host, the units it runs and the stand-ins.
#[derive(Debug)]
pub struct Node {
    /// Its host name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Its lab host.
    pub host: Host,
    pub(super) units: Arc<Mutex<Units>>,
    pub(super) api: Option<ApiServer>,
    pub(super) router: Option<Router>,
    pub(super) up: bool,
    pub(super) stack: Stack,
}

impl Node {
    pub(super) fn units(&self) -> MutexGuard<'_, Units> {
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

/// Writes a node's files and starts its stand-ins.
pub(super) fn prepare(
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
pub(super) struct Prepared {
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
pub(super) fn start_node(p: Prepared, options: &Options) -> Result<Node, ClusterError> {
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

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
