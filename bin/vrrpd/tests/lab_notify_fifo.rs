//! `notify_fifo` and `notify_fifo_script`, vrrpd beside keepalived on the same file: the FIFO
//! is made, the reader started with its path, every state change of the instance and of its
//! sync group read from it as keepalived writes it (BACKUP, MASTER, and the group's state again
//! on a reload with `fifo_write_vrrp_states_on_reload`), and the FIFO removed at exit. At exit vrrpd's reader also reads the STOP lines (it is given time to); keepalived
//! stops its reader before it can (seen with keepalived 2.2.7: the lines are written, a reader
//! of its own reads them, the script does not), and with a script it leaves the FIFO behind,
//! so those two are asserted for vrrpd only.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipi_lab::{wait_for, Lab};
use ipi_net_tests::vrrp::{Router, Speaker};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

/// The lines of `out` of one kind (`INSTANCE` or `GROUP`), in order.
fn of_kind(out: &str, kind: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with(kind))
        .map(String::from)
        .collect()
}

/// What the reader of the FIFO read while `speaker` ran until it was the group's master and
/// was then stopped (up to the STOP lines, when `stop_lines`), and whether the FIFO was gone
/// afterwards.
fn read_by_the_script(speaker: Speaker, stop_lines: bool) -> (String, bool) {
    let mut lab = Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let dir = a.dir().to_path_buf();
    let (fifo, out, reader) = (
        dir.join("notify.fifo"),
        dir.join("read.txt"),
        dir.join("reader.sh"),
    );
    std::fs::write(
        &reader,
        format!("#!/bin/sh\nexec cat \"$1\" >> {}\n", out.display()),
    )
    .unwrap();
    std::fs::set_permissions(&reader, std::fs::Permissions::from_mode(0o755)).unwrap();
    let conf = format!(
        "global_defs {{\n    vrrp_version 3\n    notify_fifo {}\n    notify_fifo_script {}\n    \
         fifo_write_vrrp_states_on_reload\n}}\n\
         vrrp_sync_group G {{\n    group {{\n        VI_1\n    }}\n}}\n\
         vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 78\n    \
         priority 150\n    advert_int 0.1\n    virtual_ipaddress {{\n        \
         198.51.100.78/32\n    }}\n}}\n",
        fifo.display(),
        reader.display()
    );
    let program = PathBuf::from(env!("CARGO_BIN_EXE_vrrpd"));
    let mut router = Router::start_with(&a, speaker, &conf, 150, Some(&program)).unwrap();
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    let master = wait_for(Duration::from_secs(10), Duration::from_millis(20), || {
        read(&out).contains("GROUP \"G\" MASTER 0")
    });
    assert!(
        master.is_some(),
        "{}: no MASTER line read:\n{}\n{}",
        speaker.name(),
        read(&out),
        router.daemon.log()
    );
    // A reload (SIGHUP) writes every state again (`fifo_write_vrrp_states_on_reload`).
    router
        .daemon
        .signal(nix::sys::signal::Signal::SIGHUP)
        .unwrap();
    let again = wait_for(Duration::from_secs(5), Duration::from_millis(20), || {
        read(&out).matches("GROUP \"G\" MASTER 0").count() == 2
    });
    assert!(
        again.is_some(),
        "{}: the states not written again on reload:\n{}\n{}",
        speaker.name(),
        read(&out),
        router.daemon.log()
    );
    router.daemon.stop();
    let stopped = wait_for(Duration::from_secs(5), Duration::from_millis(20), || {
        read(&out).contains("GROUP \"G\" STOP 0")
    });
    assert!(
        stopped.is_some() || !stop_lines,
        "{}: no STOP line read:\n{}\n{}",
        speaker.name(),
        read(&out),
        router.daemon.log()
    );
    (read(&out), !fifo.exists())
}

#[test]
fn state_changes_are_read_from_the_notify_fifo_as_keepalived_writes_them() {
    if !ipi_lab::available() {
        return;
    }
    let (ours, gone) = read_by_the_script(Speaker::Vrrpd, true);
    assert!(gone, "vrrpd left the FIFO it made");
    let (theirs, gone) = read_by_the_script(Speaker::Keepalived, false);
    eprintln!("vrrpd:\n{ours}keepalived (its FIFO removed at exit: {gone}):\n{theirs}");
    let want = [
        "INSTANCE \"VI_1\" BACKUP 150",
        "INSTANCE \"VI_1\" MASTER 150",
        "INSTANCE \"VI_1\" STOP 150",
    ];
    assert_eq!(of_kind(&ours, "INSTANCE"), want, "{ours}");
    let group = [
        "GROUP \"G\" BACKUP 0",
        "GROUP \"G\" MASTER 0",
        "GROUP \"G\" MASTER 0",
        "GROUP \"G\" STOP 0",
    ];
    assert_eq!(of_kind(&ours, "GROUP"), group, "{ours}");
    // Line for line what keepalived's reader reads, each kind in its order (its STOP lines
    // when it read them).
    for kind in ["INSTANCE", "GROUP"] {
        let theirs = of_kind(&theirs, kind);
        assert!(
            theirs.len() >= 2 + usize::from(kind == "GROUP"),
            "{kind}: {theirs:?}"
        );
        assert_eq!(of_kind(&ours, kind)[..theirs.len()], theirs[..], "{kind}");
    }
    assert_eq!(ours.lines().count(), 7, "{ours}");
}
