//! The cluster in a box under a real systemd: each node a Debian system booted by
//! `systemd-nspawn` in its lab host's network namespace, with ipi-net's `.deb` packages
//! installed and its role's units enabled, so that systemd itself (PID 1 of the container) runs
//! the units with their hardening, capabilities, readiness, reload and restart.
//!
//! - [`base_root`]: a minbase Debian root made by `mmdebstrap` (systemd, iproute2, nftables,
//!   dnsmasq-base, procps), built once and cached in the target directory.
//! - [`Installed`]: that root with our packages installed (`dpkg -i` in a chroot, on an overlay
//!   of the base), shared by every node.
//! - [`Container`]: one node: an overlay of the installed root, booted with `systemd-nspawn
//!   --boot --register=no --keep-unit --network-namespace-path=` the lab host's namespace, so
//!   that the node's `eth0` is the lab's (on the bridge, documentation addresses) and the
//!   stand-ins the test runs in that namespace ([`ApiServer`], [`Router`]) are the node's.
//!   [`Container::systemctl`] and [`Container::run`] enter it with `nsenter`;
//!   [`Container::path`] reads its files (also its `/run`) through `/proc/PID/root`.
//! - [`SystemdCluster`]: the nodes of [`crate::cluster::LAYOUT`] and a client host.
//!
//! Everything is undone when dropped: containers powered off (SIGTERM to systemd-nspawn, then
//! SIGKILL), overlays unmounted, the per-run directory removed; the lab's namespaces go last.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ipi_lab::api::ApiServer;
use ipi_lab::router::Router;
use ipi_lab::{wait_for, Daemon, Host, Lab, Output};

use crate::cluster::{Role, CLIENT, LAYOUT};
use crate::error::ClusterError;

/// What the base root holds beyond minbase: systemd as init, what the units and programs run
/// (`ip` for the lab's checks, `nft` for lb-proxy, dnsmasq, `kill` for `ExecReload=`).
pub const BASE_PACKAGES: &[&str] = &[
    "systemd",
    "systemd-sysv",
    "dbus",
    "iproute2",
    "nftables",
    "dnsmasq-base",
    "procps",
];
/// The Debian release of the base root (the one these machines run).
pub const SUITE: &str = "bookworm";
/// The packages [`Installed`] installs, as `scripts/package` names their files.
pub const DEBS: &[&str] = &[
    "ipi-vrrpd",
    "ipi-lb-proxy",
    "ipi-mdns-publish",
    "ipi-dns-render",
    "ipi-ipam",
    "ipi-net",
];

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
    ClusterError::io(what)
}

fn output_of(out: std::process::Output) -> Output {
    Output {
        success: out.status.success(),
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `command`; a failure is an error naming it with its stderr.
fn check(command: &mut Command) -> Result<Output, ClusterError> {
    let line = format!("{command:?}");
    let output = output_of(command.output().map_err(io(format!("start {line}")))?);
    if output.success {
        Ok(output)
    } else {
        Err(ClusterError::Step(format!(
            "{line} failed ({:?}): {}",
            output.code,
            output.stderr.trim()
        )))
    }
}

/// The minbase root in `cache` (`base-SUITE`), made with mmdebstrap unless it is there already
/// (complete: a marker file is written last); returns its directory.
/// Tests in one process (or several) may ask at once: the first builds it under a lock on
/// `base.lock`, the others wait and find it built.
pub fn base_root(cache: &Path) -> Result<PathBuf, ClusterError> {
    ipi_core::atomic::create_dir(cache).map_err(io(format!("create {}", cache.display())))?;
    let lock_path = cache.join("base.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io(format!("open {}", lock_path.display())))?;
    let _lock = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
        .map_err(|(_, e)| ClusterError::io(format!("lock {}", lock_path.display()))(e.into()))?;
    build_base_root(cache)
}

fn build_base_root(cache: &Path) -> Result<PathBuf, ClusterError> {
    let root = cache.join(format!("base-{SUITE}"));
    let marker = cache.join(format!("base-{SUITE}.complete"));
    let wanted = BASE_PACKAGES.join(",");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == wanted) && root.is_dir() {
        return Ok(root);
    }
    let _ = std::fs::remove_file(&marker);
    if root.exists() {
        std::fs::remove_dir_all(&root).map_err(io(format!("remove {}", root.display())))?;
    }
    check(
        Command::new("mmdebstrap")
            .args(["--quiet", "--variant=minbase", "--mode=root"])
            .arg(format!("--include={wanted}"))
            .arg(SUITE)
            .arg(&root),
    )?;
    std::fs::write(&marker, wanted).map_err(io(format!("write {}", marker.display())))?;
    Ok(root)
}

/// An overlay mount: `lower` directories (first on top), `upper` for writes, seen at `merged`.
#[derive(Debug)]
pub struct Overlay {
    merged: PathBuf,
}

impl Overlay {
    /// Mounts it; `dir` gets `upper`, `work` and `merged`.
    pub fn mount(lower: &[&Path], dir: &Path) -> Result<Overlay, ClusterError> {
        let (upper, work, merged) = (dir.join("upper"), dir.join("work"), dir.join("merged"));
        for d in [&upper, &work, &merged] {
            ipi_core::atomic::create_dir(d).map_err(io(format!("create {}", d.display())))?;
        }
        let lower: Vec<String> = lower.iter().map(|l| l.display().to_string()).collect();
        let options = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.join(":"),
            upper.display(),
            work.display()
        );
        check(
            Command::new("mount")
                .args(["-t", "overlay", "overlay", "-o", &options])
                .arg(&merged),
        )?;
        Ok(Overlay { merged })
    }

    /// Where the merged tree is.
    pub fn merged(&self) -> &Path {
        &self.merged
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.merged).output();
    }
}

/// The base root with ipi-net's packages installed: the upper layer of an overlay on the base,
/// made once per run in `dir` and unmounted, so that nodes stack their own layers on both.
#[derive(Debug)]
pub struct Installed {
    base: PathBuf,
    layer: PathBuf,
}

impl Installed {
    /// Installs `DEBS` from `debs` (as `scripts/package` made them) into a layer on `base`.
    pub fn new(base: &Path, debs: &Path, dir: &Path) -> Result<Installed, ClusterError> {
        let files = deb_files(debs)?;
        let overlay = Overlay::mount(&[base], dir)?;
        let inside = overlay.merged().join("tmp/ipi-debs");
        ipi_core::atomic::create_dir(&inside)
            .map_err(io(format!("create {}", inside.display())))?;
        let mut names = Vec::new();
        for f in &files {
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_default();
            std::fs::copy(f, inside.join(&name)).map_err(io(format!("copy {}", f.display())))?;
            names.push(format!("/tmp/ipi-debs/{name}"));
        }
        check(
            Command::new("chroot")
                .arg(overlay.merged())
                .args(["dpkg", "-i"])
                .args(&names),
        )?;
        std::fs::remove_dir_all(&inside).map_err(io(format!("remove {}", inside.display())))?;
        drop(overlay);
        Ok(Installed {
            base: base.to_path_buf(),
            layer: dir.join("upper"),
        })
    }

    /// The layers a node stacks on, top first.
    pub fn lower(&self) -> [&Path; 2] {
        [&self.layer, &self.base]
    }
}

/// The newest `.deb` of each of [`DEBS`] in `dir`.
pub fn deb_files(dir: &Path) -> Result<Vec<PathBuf>, ClusterError> {
    let entries = std::fs::read_dir(dir).map_err(io(format!(
        "read {} (scripts/package builds the packages there)",
        dir.display()
    )))?;
    let all: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    DEBS.iter()
        .map(|package| {
            all.iter()
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.starts_with(&format!("{package}_")) && n.ends_with(".deb")
                    })
                })
                .max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
                .cloned()
                .ok_or_else(|| {
                    ClusterError::Step(format!(
                        "{}: no {package}_*.deb (scripts/package builds it)",
                        dir.display()
                    ))
                })
        })
        .collect()
}

/// One node: a booted container in a lab host's network namespace.
#[derive(Debug)]
pub struct Container {
    name: String,
    nspawn: Daemon,
    leader: u32,
    overlay: Overlay,
}

impl Container {
    /// Boots the root `overlay` (node files written, units enabled) in `host`'s namespace and
    /// waits until systemd says the system is up (`running`, or `degraded` with the failed
    /// units named in the error).
    pub fn boot(
        name: &str,
        host: &Host,
        overlay: Overlay,
        dir: &Path,
    ) -> Result<Self, ClusterError> {
        let mut c = Command::new("systemd-nspawn");
        c.args([
            "--boot",
            "--register=no",
            "--keep-unit",
            "--quiet",
            "--console=passive",
        ])
        .arg(format!("--machine={name}"))
        .arg(format!(
            "--network-namespace-path=/run/netns/{}",
            host.netns()
        ))
        // Its own network namespace: VIPs, raw sockets, nftables are the node's alone.
        .arg("--capability=CAP_NET_ADMIN")
        .arg("-D")
        .arg(overlay.merged());
        let nspawn = Daemon::start(&format!("nspawn-{name}"), c, dir)?;
        let mut leader = None;
        let found = wait_for(Duration::from_secs(30), Duration::from_millis(50), || {
            leader = child_of(nspawn.pid());
            leader.is_some()
        });
        let (Some(_), Some(leader)) = (found, leader) else {
            return Err(ClusterError::Step(format!(
                "systemd-nspawn of {name} started no init in 30 s: {}",
                nspawn.log()
            )));
        };
        let container = Container {
            name: name.to_string(),
            nspawn,
            leader,
            overlay,
        };
        container.wait_running()?;
        Ok(container)
    }

    fn wait_running(&self) -> Result<(), ClusterError> {
        let mut state = String::new();
        let up = wait_for(Duration::from_secs(60), Duration::from_millis(200), || {
            state = self
                .systemctl(&["is-system-running"])
                .map(|o| o.stdout.trim().to_string())
                .unwrap_or_default();
            state == "running" || state == "degraded"
        });
        if up.is_some() && state == "running" {
            return Ok(());
        }
        let failed = self
            .systemctl(&["--failed", "--no-legend"])
            .map(|o| o.stdout);
        Err(ClusterError::Step(format!(
            "{} did not boot to running (state {state:?}; failed units: {}; journal:\n{})",
            self.name,
            failed.unwrap_or_default().trim(),
            self.journal(&[])
        )))
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The container's init (PID 1 inside), as the host sees it.
    pub fn leader(&self) -> u32 {
        self.leader
    }

    /// `program args` inside the container (every namespace of its init), to completion.
    pub fn run(&self, program: &str, args: &[&str]) -> Result<Output, ClusterError> {
        let out = Command::new("nsenter")
            .args(["-t", &self.leader.to_string(), "-a", program])
            .args(args)
            .output()
            .map_err(io(format!("nsenter {} {program}", self.name)))?;
        Ok(output_of(out))
    }

    /// `systemctl ARGS` inside.
    pub fn systemctl(&self, args: &[&str]) -> Result<Output, ClusterError> {
        self.run("systemctl", args)
    }

    /// `systemctl ARGS` inside; a failure is an error naming the node.
    pub fn must(&self, args: &[&str]) -> Result<Output, ClusterError> {
        let out = self.systemctl(args)?;
        if out.success {
            Ok(out)
        } else {
            Err(ClusterError::Step(format!(
                "{}: systemctl {} failed: {}{}",
                self.name,
                args.join(" "),
                out.stdout,
                out.stderr
            )))
        }
    }

    /// A unit's property (`systemctl show -p NAME --value`), empty when unknown.
    pub fn show(&self, unit: &str, property: &str) -> String {
        self.systemctl(&["show", "-p", property, "--value", unit])
            .map(|o| o.stdout.trim().to_string())
            .unwrap_or_default()
    }

    /// The journal, of `units` only when given (`journalctl -u U ... -o cat`).
    pub fn journal(&self, units: &[&str]) -> String {
        let mut args = vec!["--no-pager", "-o", "short-monotonic"];
        for u in units {
            args.extend(["-u", u]);
        }
        self.run("journalctl", &args)
            .map(|o| o.stdout)
            .unwrap_or_default()
    }

    /// A path inside the container (its `/run` too), seen from the host.
    pub fn path(&self, inside: &str) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/root/{}",
            self.leader,
            inside.trim_start_matches('/')
        ))
    }

    /// Kills the container at once (SIGKILL to its init: every process in it dies): a node
    /// that dies.
    pub fn kill(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(i32::try_from(self.leader).unwrap_or(i32::MAX)),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = self.nspawn.wait(Duration::from_secs(10));
    }

    /// Powers it off: systemd stops every unit (vrrpd resigns), then the container ends.
    pub fn poweroff(&mut self) -> Result<(), ClusterError> {
        self.nspawn.signal(nix::sys::signal::Signal::SIGTERM)?;
        match self.nspawn.wait(Duration::from_secs(30))? {
            Some(_) => Ok(()),
            None => Err(ClusterError::Step(format!(
                "{} did not power off in 30 s",
                self.name
            ))),
        }
    }

    /// Its overlay's merged tree (while it runs, its files outside `/run`).
    pub fn root(&self) -> &Path {
        self.overlay.merged()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if self.nspawn.running() {
            let _ = self.poweroff();
        }
        if self.nspawn.running() {
            self.kill();
        }
    }
}

/// The container's init among the children of `pid` (systemd-nspawn): the one that runs
/// systemd (nspawn's helper children come and go before it).
fn child_of(pid: u32) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    tasks.flatten().find_map(|t| {
        std::fs::read_to_string(t.path().join("children"))
            .ok()?
            .split_whitespace()
            .filter_map(|c| c.parse::<u32>().ok())
            .find(|c| {
                std::fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|comm| comm.trim() == "systemd")
            })
    })
}

/// Writes a node's own files into its root and enables its role's units, as an administrator
/// would after installing the packages: `/etc/ipi-net/node.env`, `install-config.yaml`,
/// `/etc/hostname`, `/etc/hosts`, NetworkManager's `/run/NetworkManager/resolv.conf` (by tmpfiles.d: no
/// NetworkManager here; a documentation address nobody answers), then `systemctl enable` of
/// every unit of `/usr/share/ipi-net/roles/ROLE`. Returns the enabled units.
pub fn configure(
    root: &Path,
    host: &Host,
    name: &str,
    role: Role,
) -> Result<Vec<String>, ClusterError> {
    let etc = root.join("etc/ipi-net");
    ipi_core::atomic::create_dir(&etc).map_err(io(format!("create {}", etc.display())))?;
    crate::cluster::node_files(&etc, host, name, role)?;
    let files = [
        ("etc/hostname", format!("{name}\n")),
        // What Debian's installer writes (mmdebstrap writes none): without it `localhost` does
        // not resolve, and the track scripts' `lb-proxy check http://localhost:...` fail.
        (
            "etc/hosts",
            format!("127.0.0.1\tlocalhost\n127.0.1.1\t{name}\n::1\tlocalhost ip6-localhost ip6-loopback\n"),
        ),
        (
            "etc/tmpfiles.d/ipi-lab.conf",
            "f /run/NetworkManager/resolv.conf 0644 - - - nameserver 198.51.100.53\\n\n".into(),
        ),
    ];
    for (path, text) in files {
        let to = root.join(path);
        ipi_core::atomic::write(&to, text.as_bytes())
            .map_err(|e| ClusterError::Step(e.to_string()))?;
    }
    let role_file = root.join("usr/share/ipi-net/roles").join(role.as_str());
    let units: Vec<String> = std::fs::read_to_string(&role_file)
        .map_err(io(format!(
            "read {} (the ipi-net package)",
            role_file.display()
        )))?
        .split_whitespace()
        .map(|u| format!("{u}.service"))
        .collect();
    check(
        Command::new("systemctl")
            .arg(format!("--root={}", root.display()))
            .arg("enable")
            .args(&units),
    )?;
    Ok(units)
}

/// One node of the cluster.
#[derive(Debug)]
pub struct Node {
    /// Its host name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The units its role enabled.
    pub units: Vec<String>,
    /// Its container.
    pub container: Container,
    /// The API server stand-in (bootstrap and masters).
    pub api: Option<ApiServer>,
    /// The router stand-in (workers).
    pub router: Option<Router>,
    /// Its lab host (network namespace).
    pub host: Host,
    /// Whether it is up (not killed by [`SystemdCluster::kill`]).
    pub up: bool,
}

/// The cluster in a box under systemd: nodes, client, lab (dropped in that order).
#[derive(Debug)]
pub struct SystemdCluster {
    nodes: Vec<Node>,
    client: Host,
    lab: Lab,
    _installed: Installed,
    _dir: tempfile::TempDir,
}

impl SystemdCluster {
    /// Builds (or reuses) the base root in `cache`, installs the packages of `debs`, and boots
    /// a container per node of [`LAYOUT`] with its role's units enabled; `say` gets a line per
    /// node as it comes up.
    pub fn up(cache: &Path, debs: &Path, say: &mut dyn FnMut(&str)) -> Result<Self, ClusterError> {
        let base = base_root(cache)?;
        sweep_stale_runs(cache);
        let dir = tempfile::Builder::new()
            .prefix(&format!("run-{}-", std::process::id()))
            .tempdir_in(cache)
            .map_err(io(format!("create a run directory in {}", cache.display())))?;
        let installed = Installed::new(&base, debs, &dir.path().join("installed"))?;
        let mut lab = Lab::new()?;
        let mut nodes = Vec::new();
        for (name, role) in LAYOUT {
            let host = lab.host(name)?;
            let node = boot_node(&installed, &host, name, role, &dir.path().join(name))?;
            say(&format!(
                "{name:<9} {} {:<9} booted; enabled: {}",
                host.ipv4(),
                role.as_str(),
                node.units.join(" ")
            ));
            nodes.push(node);
        }
        let client = lab.host(CLIENT)?;
        Ok(SystemdCluster {
            nodes,
            client,
            lab,
            _installed: installed,
            _dir: dir,
        })
    }

    /// The nodes, bootstrap first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Result<&Node, ClusterError> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::Step(format!("no node {name}")))
    }

    /// The node called `name`, to change it.
    pub fn node_mut(&mut self, name: &str) -> Result<&mut Node, ClusterError> {
        self.nodes
            .iter_mut()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::Step(format!("no node {name}")))
    }

    /// The node called `name` dies: its container is killed and its link goes down (what is
    /// left in its namespace, a VIP, is as gone as a powered-off machine's).
    pub fn kill(&mut self, name: &str) -> Result<(), ClusterError> {
        let node = self
            .nodes
            .iter_mut()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::Step(format!("no node {name}")))?;
        node.container.kill();
        node.up = false;
        self.lab.link_down(&node.host)?;
        Ok(())
    }

    /// The client host.
    pub fn client(&self) -> &Host {
        &self.client
    }

    /// The lab (captures on the bridge).
    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// How long the client's ARP cache keeps sending to a VIP's old holder unless a
    /// gratuitous ARP says otherwise (see [`crate::cluster::Cluster::client_arp_floor`]).
    pub fn client_arp_floor(&self) -> Option<Duration> {
        crate::probe::stale_arp_floor(&self.client)
    }

    /// Which nodes that are up hold `vip` now.
    pub fn holders(&self, vip: IpAddr) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.up && n.host.has_address(vip))
            .map(|n| n.name.clone())
            .collect()
    }

    /// Every node's units' journal, for a failing step's message.
    pub fn logs(&self) -> String {
        self.nodes
            .iter()
            .map(|n| {
                let units: Vec<&str> = n.units.iter().map(String::as_str).collect();
                format!("=== {}\n{}", n.name, n.container.journal(&units))
            })
            .collect()
    }
}

/// Unmounts and removes the run directories of test processes that are gone (killed before
/// their destructors ran): `run-PID-*` in `cache`. Their containers died with the lab's
/// namespaces, which the next [`Lab::new`] sweeps.
fn sweep_stale_runs(cache: &Path) {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("run-").and_then(|r| r.split('-').next()) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Ok(nodes) = std::fs::read_dir(e.path()) {
            for n in nodes.flatten() {
                let _ = Command::new("umount")
                    .arg("-l")
                    .arg(n.path().join("merged"))
                    .output();
            }
        }
        let _ = std::fs::remove_dir_all(e.path());
    }
}

fn boot_node(
    installed: &Installed,
    host: &Host,
    name: &str,
    role: Role,
    dir: &Path,
) -> Result<Node, ClusterError> {
    let overlay = Overlay::mount(&installed.lower(), dir)?;
    let units = configure(overlay.merged(), host, name, role)?;
    let listen = SocketAddr::from((Ipv6Addr::UNSPECIFIED, 6443));
    let api = match role {
        Role::Bootstrap | Role::Master => Some(
            ApiServer::start_in(host, listen, name)
                .map_err(io(format!("start the API stand-in on {name}")))?,
        ),
        Role::Worker => None,
    };
    let router = match role {
        Role::Worker => Some(
            Router::start_in(host).map_err(io(format!("start the router stand-in on {name}")))?,
        ),
        _ => None,
    };
    let container = Container::boot(name, host, overlay, dir)?;
    Ok(Node {
        name: name.to_string(),
        role,
        units,
        container,
        api,
        router,
        host: host.clone(),
        up: true,
    })
}

impl SystemdCluster {
    /// `dig @server` from the client for the A records of `names`: name to addresses.
    pub fn dig(
        &self,
        server: std::net::Ipv4Addr,
        names: &[String],
    ) -> std::collections::BTreeMap<String, Vec<String>> {
        crate::probe::dig(&self.client, server, names)
    }

    /// One plain-HTTP request from the client to `to`: the answering server's name.
    pub fn get(&self, to: SocketAddr) -> Option<String> {
        self.client
            .within(move || crate::probe::get(to, Duration::from_secs(2)))
            .ok()
    }
}
