//! A real container runtime: Debian's podman (4.3) with its CNI backend runs busybox
//! containers on the seed's NetworkAttachmentDefinition network (macvlan, whereabouts' keys),
//! whose IPAM is ipam, on a node of the lab. Judged as a client sees it: each container holds
//! the address ipam recorded for it (`ip addr` inside it), a host beside the node pings it,
//! `podman rm` frees it; a podman killed in the middle of ADD and a node powered off leave
//! reservations that `ipam gc` lists as leaked (after the network's grace period) and frees,
//! exactly those, the live containers answering throughout; at the end the store is empty.
//!
//! Each node's podman has a root, run root, temporary directory, containers.conf and CNI
//! directories of its own in the lab directory, and runs in the node's network namespace
//! (entered with `nsenter --net`: `ip netns exec` mounts a new /sys, without the cgroup
//! hierarchy the OCI runtime looks at). The OCI runtime is runc where the cgroup controllers
//! can be written: crun refuses cgroups in hybrid mode ("drop all controllers from
//! cgroupv2"), which this machine's are. Where they are read-only (a systemd-nspawn
//! container's, as scripts/check-fresh's root, whose controllers are not delegated) it is crun
//! with cgroups disabled, which runc cannot do ("not compatible with NoCgroups"). The
//! containers' rlimits are set below the machine's own (podman's default raises them, which a
//! container runtime inside a sandbox may not). The image is made by the test from Debian's
//! busybox-static and imported, so nothing is pulled.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ipi_lab::Host;
use serde_json::{json, Value};

use super::{answers, common, internalapi, lab_ready, Bed, Out, IPAM, PLUGINS};

const PODMAN: &str = "/usr/bin/podman";
const RUNC: &str = "/usr/sbin/runc";
const CRUN: &str = "/usr/bin/crun";
const BUSYBOX: &str = "/bin/busybox";
const IMAGE: &str = "localhost/ipi-lab-busybox:1";
/// The network's name in the seed's NAD, and so in podman.
const NETWORK: &str = "internalapi";

fn podman_ready() -> bool {
    lab_ready()
        && ipi_lab::tool(PODMAN, "podman")
        && ipi_lab::tool(RUNC, "runc")
        && ipi_lab::tool(CRUN, "crun")
        && ipi_lab::tool(BUSYBOX, "busybox-static")
        && ipi_lab::tool("nsenter", "util-linux")
}

/// One node's podman, with everything it keeps in `dir`.
struct Podman {
    node: Host,
    dir: PathBuf,
    /// The network namespaces under /run/netns before it started: those it makes are removed
    /// with it.
    before: BTreeSet<String>,
}

fn netns_names() -> BTreeSet<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `podman run -d` of container `name` on the network, sleeping, the image never pulled.
fn run_detached(name: &str) -> [&str; 10] {
    [
        "run",
        "-d",
        "--pull=never",
        "--name",
        name,
        "--network",
        NETWORK,
        IMAGE,
        "sleep",
        "3600",
    ]
}

/// Whether a cgroup can be made beside podman's (`libpod_parent`): a probe directory in the
/// cpuset hierarchy (cgroup v1) or the unified one.
fn cgroups_writable() -> bool {
    let v1 = Path::new("/sys/fs/cgroup/cpuset");
    let root = if v1.is_dir() {
        v1
    } else {
        Path::new("/sys/fs/cgroup")
    };
    let probe = root.join(format!("ipi-lab-probe-{}", std::process::id()));
    let made = std::fs::create_dir(&probe).is_ok();
    if made {
        let _ = std::fs::remove_dir(&probe);
    }
    made
}

fn write_executable(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

impl Podman {
    /// podman on `node` with `network` (a plugin config) as its one CNI network, and the
    /// busybox image imported.
    fn new(node: &Host, network: &Value) -> Podman {
        let dir = node.dir().join("podman");
        let podman = Podman {
            node: node.clone(),
            dir,
            before: netns_names(),
        };
        for sub in ["plugins", "cni", "image"] {
            std::fs::create_dir_all(podman.dir.join(sub)).unwrap();
        }
        podman.write_plugins();
        podman.write_conf();
        // The NAD's config is one plugin's; podman reads conflists, as Multus makes of it.
        let mut plugin = network.clone();
        let name = plugin.as_object_mut().unwrap().remove("name").unwrap();
        let version = plugin
            .as_object_mut()
            .unwrap()
            .remove("cniVersion")
            .unwrap();
        let list = json!({"cniVersion": version, "name": name, "plugins": [plugin]});
        std::fs::write(podman.conflist(), list.to_string()).unwrap();
        podman.import_image();
        podman
    }

    fn conflist(&self) -> PathBuf {
        self.dir.join("cni").join(format!("{NETWORK}.conflist"))
    }

    /// Debian's plugins and `ipam`: the binary under test, or, while `stall` exists, an ADD
    /// that answers (into `stalled.answer`, its status into `stalled.called`) and then waits.
    fn write_plugins(&self) {
        let plugins = self.dir.join("plugins");
        for plugin in ["macvlan", "bridge", "loopback"] {
            symlink(Path::new(PLUGINS).join(plugin), plugins.join(plugin)).unwrap();
        }
        let d = self.dir.display();
        write_executable(
            &plugins.join("ipam"),
            &format!(
                "#!/bin/sh\nif [ \"$CNI_COMMAND\" = ADD ] && [ -e '{d}/stall' ]; then\n\
                 '{IPAM}' > '{d}/stalled.answer'\necho $? > '{d}/stalled.new'\n\
                 mv '{d}/stalled.new' '{d}/stalled.called'\nexec sleep 600\nfi\nexec '{IPAM}'\n"
            ),
        );
    }

    /// containers.conf, and the OCI runtime keeping its state in the lab (`--root`: by
    /// default /run/runc or /run/crun, which a power-off clears).
    fn write_conf(&self) {
        let d = self.dir.display();
        let cgroups = cgroups_writable();
        let (name, path) = if cgroups {
            ("runc", RUNC)
        } else {
            ("crun", CRUN)
        };
        write_executable(
            &self.dir.join("oci"),
            &format!("#!/bin/sh\nexec '{path}' --root '{d}/oci-state' \"$@\"\n"),
        );
        let disabled = if cgroups {
            ""
        } else {
            "cgroups = \"disabled\"\n"
        };
        let conf = format!(
            "[containers]\ndefault_ulimits = [\"nofile=1024:1024\", \"nproc=1024:1024\"]\n\
             {disabled}[engine]\ncgroup_manager = \"cgroupfs\"\nevents_logger = \"file\"\n\
             runtime = \"{name}\"\ntmp_dir = \"{d}/tmp\"\n\
             [engine.runtimes]\n{name} = [\"{d}/oci\"]\n\
             [network]\nnetwork_backend = \"cni\"\ncni_plugin_dirs = [\"{d}/plugins\"]\n\
             network_config_dir = \"{d}/cni\"\n"
        );
        std::fs::write(self.dir.join("containers.conf"), conf).unwrap();
    }

    /// busybox-static as an image: /bin/busybox and the applets the test runs.
    fn import_image(&self) {
        let root = self.dir.join("image");
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::copy(BUSYBOX, root.join("bin/busybox")).unwrap();
        for applet in ["sh", "ip", "ping", "sleep"] {
            symlink("busybox", root.join("bin").join(applet)).unwrap();
        }
        let tar = self.dir.join("image.tar");
        let made = Command::new("tar")
            .arg("-C")
            .arg(&root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status()
            .unwrap();
        assert!(made.success(), "tar of the image");
        self.ok(&["import", tar.to_str().unwrap(), IMAGE]);
    }

    /// `podman ARGS` in the node's network namespace, as this node's runtime.
    fn command(&self, args: &[&str]) -> Command {
        let d = &self.dir;
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--net={}", self.node.netns_path().display()))
            .arg(PODMAN)
            .arg("--root")
            .arg(d.join("root"))
            .arg("--runroot")
            .arg(d.join("run"))
            .args(["--storage-driver", "vfs"])
            .args(args)
            .env_clear()
            .env("PATH", super::SYSTEM_PATH)
            .env("HOME", d)
            .env("CONTAINERS_CONF", d.join("containers.conf"))
            .env("IPAM_NODE_NAME", self.node.name());
        cmd
    }

    fn run(&self, args: &[&str]) -> Out {
        common::finish(&mut self.command(args), b"")
    }

    /// `podman ARGS`, which must succeed: its stdout, trimmed.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.ok, "podman {args:?}: {out:?}");
        out.stdout.trim().to_owned()
    }

    /// A container `name` started on the network (`podman run -d`): its id and the address
    /// its eth0 holds.
    fn start(&self, name: &str) -> (String, IpAddr) {
        let id = self.ok(&run_detached(name));
        (id, self.address(name))
    }

    /// The IPv4 address on eth0 inside container `name` (`ip -o -4 addr show eth0`).
    fn address(&self, name: &str) -> IpAddr {
        let shown = self.ok(&["exec", name, "ip", "-o", "-4", "addr", "show", "eth0"]);
        let word = shown.split_whitespace().skip_while(|w| *w != "inet").nth(1);
        let cidr = word.unwrap_or_else(|| panic!("no address in {name}: {shown}"));
        cidr.split('/').next().unwrap().parse().unwrap()
    }

    fn id(&self, name: &str) -> String {
        self.ok(&["inspect", name, "--format", "{{.Id}}"])
    }

    /// `podman run -d --name NAME` killed with its process group once ipam has answered its
    /// ADD: the address ipam gave, which the runtime never heard of.
    fn killed_start(&self, name: &str) -> IpAddr {
        let stall = self.dir.join("stall");
        std::fs::write(&stall, "").unwrap();
        let mut cmd = self.command(&run_detached(name));
        cmd.stdin(Stdio::null());
        let ips = super::killed_once_ipam_answered(cmd, &self.dir);
        std::fs::remove_file(&stall).unwrap();
        assert_eq!(ips.len(), 1, "{ips:?}");
        ips[0]
    }

    /// What this node's runtime holds: `ID/eth0` of every running container, one a line, as
    /// `ipam gc --keep` reads it.
    fn attachments(&self) -> String {
        let ids = self.ok(&["ps", "--no-trunc", "--format", "{{.ID}}"]);
        ids.lines().map(|id| format!("{id}/eth0\n")).collect()
    }

    /// The node loses power: every process of every container and their monitors die at
    /// once, and what lives in /run (podman's run root and temporary directory, the
    /// containers' network namespaces) is gone when it boots.
    fn power_off(&self) {
        let names = self.ok(&["ps", "-a", "--format", "{{.Names}}"]);
        for name in names.lines() {
            let state = self.ok(&[
                "inspect",
                name,
                "--format",
                "{{.State.Pid}} {{.State.ConmonPid}} {{.NetworkSettings.SandboxKey}}",
            ]);
            let mut words = state.split_whitespace();
            for pid in words.by_ref().take(2).filter_map(|p| p.parse::<i32>().ok()) {
                if pid > 0 {
                    let pid = nix::unistd::Pid::from_raw(pid);
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                }
            }
            if let Some(netns) = words.next().and_then(|k| k.strip_prefix("/run/netns/")) {
                let _ = Command::new("ip").args(["netns", "delete", netns]).status();
            }
        }
        self.unmount_all();
        for gone in ["run", "tmp", "oci-state"] {
            let _ = std::fs::remove_dir_all(self.dir.join(gone));
        }
    }

    /// Unmounts what podman mounted in its directory (the containers' /dev/shm), the
    /// deepest first, as a reboot would have it.
    fn unmount_all(&self) {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut under: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split_whitespace().nth(4))
            .filter(|m| Path::new(m).starts_with(&self.dir))
            .collect();
        under.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for mount in under {
            let _ = Command::new("umount").args(["-l", mount]).status();
        }
    }

    /// `ipam gc` of the network on this node keeping what the runtime holds, with
    /// `gc_grace` set to `grace` (None: the network's own, the default): the JSON rows and
    /// whether it exited 0.
    fn gc(&self, grace: Option<&str>, free: bool) -> (Vec<Value>, bool) {
        let keep = self.dir.join("keep");
        std::fs::write(&keep, self.attachments()).unwrap();
        let mut config = self.conflist();
        if let Some(grace) = grace {
            let mut list: Value =
                serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
            list["plugins"][0]["ipam"]["gc_grace"] = json!(grace);
            config = self.dir.join("gc.conflist");
            std::fs::write(&config, list.to_string()).unwrap();
        }
        let mut cmd = self
            .node
            .command(IPAM, ["gc", "--json", "--node", self.node.name()]);
        cmd.arg("--config").arg(&config).arg("--keep").arg(&keep);
        if free {
            cmd.arg("--free");
        }
        let out = common::finish(&mut cmd, b"");
        let rows: Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("ipam gc said no JSON ({e}): {out:?}"));
        (rows.as_array().unwrap().clone(), out.ok)
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        let _ = self.run(&["rm", "-a", "-f", "-t", "0"]);
        self.unmount_all();
        for made in netns_names().difference(&self.before) {
            if made.starts_with("netns-") || made.starts_with("cni-") {
                let _ = Command::new("ip").args(["netns", "delete", made]).status();
            }
        }
    }
}

/// The rows of `ipam gc --json` for `owner`'s address: (leaked, why, freed).
fn verdict(rows: &[Value], owner: &str) -> (bool, String, bool) {
    let row = rows
        .iter()
        .find(|r| r["owner"] == owner)
        .unwrap_or_else(|| panic!("ipam gc lists no {owner}: {rows:#?}"));
    (
        row["leaked"].as_bool().unwrap(),
        row["why"].as_str().unwrap().to_owned(),
        row["freed"].as_bool().unwrap(),
    )
}

/// The owners the store holds addresses for, with their addresses.
fn holders(bed: &Bed) -> BTreeSet<(String, IpAddr)> {
    bed.held()
        .iter()
        .map(|l| {
            let mut f = l.split('\t');
            let ip = f.nth(1).unwrap().parse().unwrap();
            (super::owner_of(l).unwrap().to_owned(), ip)
        })
        .collect()
}

fn owner(id: &str) -> String {
    format!("{id}/eth0")
}

/// Every one of `ips` answers `peer`.
fn all_answer(peer: &Host, ips: &[IpAddr]) {
    let silent: Vec<&IpAddr> = ips.iter().filter(|ip| !answers(peer, **ip)).collect();
    assert!(silent.is_empty(), "no answer from {silent:?} of {ips:?}");
}

#[test]
fn podman_containers_get_ipam_addresses_and_ipam_gc_frees_what_a_killed_runtime_and_a_power_off_left(
) {
    if !podman_ready() {
        return;
    }
    let mut bed = Bed::new();
    let node = bed.lab.host("node").unwrap();
    let peer = bed.lab.host("peer").unwrap();
    peer.run_ok("ip", ["addr", "add", "203.0.113.254/24", "dev", "eth0"])
        .unwrap();
    let podman = Podman::new(&node, &internalapi(&bed.store()));
    let ip = |n: u8| IpAddr::from([203, 0, 113, n]);

    // In the range's order, each container holding what ipam recorded for it.
    let started: Vec<(String, IpAddr)> =
        ["c1", "c2", "c3"].iter().map(|n| podman.start(n)).collect();
    let want: BTreeSet<(String, IpAddr)> = started.iter().map(|(id, a)| (owner(id), *a)).collect();
    assert_eq!(holders(&bed), want);
    let ips: Vec<IpAddr> = started.iter().map(|(_, a)| *a).collect();
    assert_eq!(ips, [ip(30), ip(31), ip(32)]);
    all_answer(&peer, &ips);

    // podman rm gives the address back; round-robin hands it out last (host-local's order).
    podman.ok(&["rm", "-f", "-t", "0", "c2"]);
    assert!(!holders(&bed)
        .iter()
        .any(|(o, _)| *o == owner(&started[1].0)));
    assert!(
        !answers(&peer, ips[1]),
        "c2's address answers after podman rm"
    );
    let (_, at) = podman.start("c4");
    assert_eq!(at, ip(33), "c4 after c2's removal");

    // podman killed in the middle of ADD: ipam reserved, nobody will call DEL.
    let leaked = podman.killed_start("killed");
    assert_eq!(leaked, ip(34));
    let killed = owner(&podman.id("killed"));
    // Within the network's grace period (60 s, an ADD may still be in flight) it is kept.
    let (rows, clean) = podman.gc(None, false);
    let (is_leaked, why, _) = verdict(&rows, &killed);
    assert!(!is_leaked && clean && why.contains("grace"), "{rows:#?}");
    // Past it, listed as leaked (exit 1), nothing freed; then freed, exactly that one.
    let (rows, clean) = podman.gc(Some("0s"), false);
    assert!(verdict(&rows, &killed).0, "{rows:#?}");
    assert!(!clean, "ipam gc exits 0 with a leak left: {rows:#?}");
    assert!(holders(&bed).iter().any(|(o, _)| *o == killed));
    let before = holders(&bed);
    let (rows, clean) = podman.gc(Some("0s"), true);
    assert!(clean && verdict(&rows, &killed).2, "{rows:#?}");
    let mut want = before.clone();
    want.retain(|(o, _)| *o != killed);
    assert_eq!(
        holders(&bed),
        want,
        "ipam gc --free of the killed ADD's address"
    );
    let live = [started[0].1, at, started[2].1];
    all_answer(&peer, &live);

    // The node powers off and boots: no container runs, every address it held is leaked.
    podman.power_off();
    assert!(!answers(&peer, live[0]), "c1 answers after the power-off");
    let (rows, _) = podman.gc(Some("0s"), true);
    assert!(rows.iter().all(|r| r["freed"] == true), "{rows:#?}");
    assert_eq!(rows.len(), 3, "{rows:#?}");
    assert!(
        holders(&bed).is_empty(),
        "after the GC at boot: {:?}",
        holders(&bed)
    );
    // Started again, c1 gets the next address round and answers; removed, it frees it.
    podman.ok(&["start", "c1"]);
    let again = podman.address("c1");
    assert_eq!(again, ip(35));
    assert_eq!(holders(&bed), [(owner(&started[0].0), again)].into());
    all_answer(&peer, &[again]);
    podman.ok(&["rm", "-a", "-f", "-t", "0"]);
    assert!(holders(&bed).is_empty(), "left: {:?}", holders(&bed));
}
