//! Script security (`enable_script_security`), vrrpd beside keepalived 2.2.7 on the same file.
//! Five track scripts that all exit 0, each with a weight of its own bit, and two notify
//! scripts: a safe script, a group-writable one (a group other than root's), one in a directory
//! anyone may write, a link (in a safe directory) to a script in that directory, and a safe
//! program (`timeout`) handed a script from that directory; a `notify_master` owned by another
//! user, and a safe `notify`. The priority the master advertises says, bit by bit, which
//! scripts were run; the notify scripts' marks say which of those ran.
//!
//! vrrpd refuses all four unsafe track scripts (names each with its path and reason) and the
//! foreign notify script, and goes on with the rest: priority 100 + 16. keepalived refuses the
//! same, except the script handed to `timeout`: it checks a script's program and never its
//! arguments, so there it runs (+ 8).

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipi_net_tests::vrrp::{Router, Speaker};
use support::{until, Wire};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// A script that exits 0, or first writes `mark` when given.
fn script(path: &Path, mode: u32, mark: Option<&Path>) {
    let body = match mark {
        Some(m) => format!("#!/bin/sh\necho \"$@\" >> {}\nexit 0\n", m.display()),
        None => "#!/bin/sh\nexit 0\n".to_string(),
    };
    std::fs::write(path, body).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

struct Scripts {
    dir: PathBuf,
    conf: String,
    foreign_mark: PathBuf,
    safe_mark: PathBuf,
}

/// The scripts (in `base`, which must itself be safe) and the configuration that tracks them.
fn scripts(base: &Path) -> Scripts {
    let dir = base.join("scripts");
    let open = dir.join("open");
    std::fs::create_dir_all(&open).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    script(&dir.join("safe.sh"), 0o755, None);
    script(&dir.join("group.sh"), 0o775, None);
    nix::unistd::chown(
        &dir.join("group.sh"),
        None,
        Some(nix::unistd::Gid::from_raw(65534)),
    )
    .unwrap();
    script(&open.join("open.sh"), 0o755, None);
    script(&open.join("real.sh"), 0o755, None);
    symlink("open/real.sh", dir.join("link.sh")).unwrap();
    script(&open.join("argument.sh"), 0o755, None);
    let (foreign_mark, safe_mark) = (base.join("foreign.mark"), base.join("safe.mark"));
    script(&dir.join("foreign.sh"), 0o755, Some(&foreign_mark));
    nix::unistd::chown(
        &dir.join("foreign.sh"),
        Some(nix::unistd::Uid::from_raw(65534)),
        None,
    )
    .unwrap();
    script(&dir.join("notify.sh"), 0o755, Some(&safe_mark));
    let d = dir.display();
    let track = |name: &str, line: &str, weight: u8| {
        format!("vrrp_script {name} {{\n    script \"{line}\"\n    interval 1\n    weight {weight}\n    rise 1\n    fall 1\n}}\n")
    };
    let conf = [
        "global_defs {\n    enable_script_security\n    script_user root\n}\n".to_string(),
        track("safe", &format!("{d}/safe.sh"), 16),
        track("group", &format!("{d}/group.sh"), 1),
        track("open", &format!("{d}/open/open.sh"), 2),
        track("link", &format!("{d}/link.sh"), 4),
        track(
            "argument",
            &format!("/usr/bin/timeout 5 {d}/open/argument.sh"),
            8,
        ),
        format!(
            "vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 91\n    \
             priority 100\n    advert_int 1\n    virtual_ipaddress {{\n        \
             198.51.100.91/32\n    }}\n    track_script {{\n        safe\n        group\n        \
             open\n        link\n        argument\n    }}\n    \
             notify_master {d}/foreign.sh\n    notify {d}/notify.sh\n}}\n"
        ),
    ]
    .concat();
    Scripts {
        dir,
        conf,
        foreign_mark,
        safe_mark,
    }
}

/// Runs `speaker` alone on `host` until it advertises as master with every script run, and
/// returns the priority it then advertises with its log.
fn advertised(
    lab: &ipi_lab::Lab,
    host: &ipi_lab::Host,
    s: &Scripts,
    speaker: Speaker,
) -> (u8, String) {
    let vrrpd = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let wire = Wire::start(lab, speaker.name());
    let router = Router::start_with(host, speaker, &s.conf, 100, Some(&vrrpd)).unwrap();
    // Master after Master_Down_Interval (under 4 s), then the safe notify's mark.
    until(
        "the safe notify script ran (master)",
        Duration::from_secs(15),
        &[&router],
        || std::fs::read_to_string(&s.safe_mark).is_ok_and(|m| m.contains("MASTER")),
    );
    // Every script has run on its 1 s interval by now; a few adverts at the settled priority.
    std::thread::sleep(Duration::from_secs(3));
    let log = router.daemon.log();
    drop(router);
    let seen = wire.stop();
    // The last advert before the shutdown's priority 0.
    let last = (seen.adverts.iter().rev()).find(|a| a.vrid == 91 && a.priority != 0);
    let priority = last
        .map(|a| a.priority)
        .unwrap_or_else(|| panic!("no advert\n{log}"));
    (priority, log)
}

#[test]
fn scripts_that_others_can_change_are_refused_and_the_instance_runs_on() {
    if !ipi_lab::available()
        || !ipi_lab::tool("keepalived", "keepalived")
        || !ipi_lab::tool("tshark", "tshark")
    {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let s = scripts(a.dir());
    let (ours, log) = advertised(&lab, &a, &s, Speaker::Vrrpd);
    assert_eq!(ours, 100 + 16, "only the safe script counts\n{log}");
    let d = s.dir.display();
    for (script, path, why) in [
        (
            "vrrp_script group",
            format!("{d}/group.sh"),
            "writable by group 65534",
        ),
        (
            "vrrp_script open",
            format!("{d}/open"),
            "writable by every user",
        ),
        (
            "vrrp_script link",
            format!("{d}/open"),
            "writable by every user",
        ),
        (
            "vrrp_script argument",
            format!("{d}/open"),
            "writable by every user",
        ),
        (
            "notify_master",
            format!("{d}/foreign.sh"),
            "owned by uid 65534",
        ),
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains(script) && l.contains(&format!("{path}: {why}"))),
            "{script}: {path}: {why} not in the log\n{log}"
        );
    }
    assert!(!s.foreign_mark.exists(), "the foreign notify script ran");

    std::fs::remove_file(&s.safe_mark).unwrap();
    let (theirs, log) = advertised(&lab, &a, &s, Speaker::Keepalived);
    assert_eq!(
        theirs,
        100 + 16 + 8,
        "keepalived: the safe script and the one handed to timeout\n{log}"
    );
    assert!(
        !s.foreign_mark.exists(),
        "keepalived ran the foreign notify"
    );
}

/// The capability sets of the script that wrote `file` (`/proc/self/status`'s Cap lines).
fn capabilities(file: &Path) -> Vec<(String, u64)> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(':')?;
            let value = u64::from_str_radix(value.trim(), 16).ok()?;
            name.starts_with("Cap").then(|| (name.to_string(), value))
        })
        .collect()
}

/// In `dir`: three scripts that write who they run as and their capabilities into `out`, one
/// as vrrpd's own user, one `user daemon`, one `user root`, and the configuration tracking them.
fn scripts_as_users(dir: &Path, out: &Path) -> PathBuf {
    for name in ["own", "other", "root"] {
        let body = format!(
            "#!/bin/sh\nid -un > {o}/{name}.user\ngrep ^Cap /proc/self/status > {o}/{name}.caps\n",
            o = out.display()
        );
        let path = dir.join(format!("{name}.sh"));
        std::fs::write(&path, body).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let d = dir.display();
    let conf = format!(
        "vrrp_script own {{\n    script \"{d}/own.sh\"\n    interval 1\n}}\n\
         vrrp_script other {{\n    script \"{d}/other.sh\"\n    interval 1\n    user daemon\n}}\n\
         vrrp_script root {{\n    script \"{d}/root.sh\"\n    interval 1\n    user root\n}}\n\
         vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 92\n    \
         priority 100\n    advert_int 1\n    virtual_ipaddress {{\n        198.51.100.92/32\n    \
         }}\n    track_script {{\n        own\n        other\n        root\n    }}\n}}\n"
    );
    let conf_path = dir.join("vrrpd.conf");
    std::fs::write(&conf_path, conf).unwrap();
    conf_path
}

/// vrrpd as the unit runs it: a system user (here nobody) holding CAP_NET_ADMIN, CAP_NET_RAW,
/// CAP_SETUID and CAP_SETGID as ambient capabilities. It holds its VIP, runs one script as
/// itself and one as another user (`user daemon`), and neither script holds a capability: an
/// ambient set is inherited across a switch between two users other than root, so vrrpd
/// empties its own at start. A third script, `user root`, is refused: a vrrpd that is not root
/// makes no script root.
#[test]
fn scripts_of_a_vrrpd_that_is_not_root_run_without_its_capabilities() {
    if !ipi_lab::available() || !ipi_lab::tool("setpriv", "util-linux") {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    // Everything nobody reads in a directory it can reach (the lab's is root's alone), the
    // binary copied there too (a checkout under /root is not).
    let base = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let dir = base.path();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (out, state) = (dir.join("out"), dir.join("state"));
    for d in [&out, &state] {
        std::fs::create_dir(d).unwrap();
        nix::unistd::chown(d, Some(nix::unistd::Uid::from_raw(65534)), None).unwrap();
    }
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o777)).unwrap();
    let binary = dir.join("vrrpd");
    std::fs::copy(env!("CARGO_BIN_EXE_vrrpd"), &binary).unwrap();
    let conf_path = scripts_as_users(dir, &out);
    let caps = "+net_admin,+net_raw,+setuid,+setgid";
    let vrrpd = a
        .spawn(
            "vrrpd",
            "setpriv",
            [
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                &format!("--inh-caps={caps}"),
                &format!("--ambient-caps={caps}"),
                binary.to_str().unwrap(),
                "run",
                "-f",
                conf_path.to_str().unwrap(),
                "--state-dir",
                state.to_str().unwrap(),
            ],
        )
        .unwrap();
    let vip: std::net::IpAddr = "198.51.100.92".parse().unwrap();
    until(
        "MASTER as nobody, both scripts run",
        Duration::from_secs(15),
        &[&vrrpd],
        || {
            support::holds(&a, vip)
                && out.join("own.caps").exists()
                && out.join("other.caps").exists()
        },
    );
    // The scripts ran once more since they first wrote (their files are whole).
    std::thread::sleep(Duration::from_millis(1500));
    // A vrrpd that is not root makes no script root.
    assert!(!out.join("root.user").exists(), "a script ran as root");
    assert!(
        (vrrpd.log().lines()).any(|l| l.contains("vrrp_script root: runs as root")),
        "{}",
        vrrpd.log()
    );
    for (name, user) in [("own", "nobody"), ("other", "daemon")] {
        let who = std::fs::read_to_string(out.join(format!("{name}.user"))).unwrap();
        assert_eq!(who.trim(), user, "{name}\n{}", vrrpd.log());
        let caps = capabilities(&out.join(format!("{name}.caps")));
        assert_eq!(caps.len(), 5, "{name}: {caps:?}");
        // The bounding set limits, the inheritable one grants nothing without file capabilities
        // (which the unit's NoNewPrivileges= ignores): the three that a program holds.
        let held = ["CapPrm", "CapEff", "CapAmb"];
        for (set, value) in caps.iter().filter(|(set, _)| held.contains(&set.as_str())) {
            assert_eq!(*value, 0, "{name}: {set} {value:x}\n{}", vrrpd.log());
        }
    }
}
