//! ipam's CNI plugin beside Debian's host-local, in one run, ratios printed.
//!
//! - 1,000 sequential ADDs, each a new container id, of one host-local config (a /16), through
//!   each plugin as a runtime calls it (a process per ADD, the config on stdin): wall time. Once
//!   with both stores on the disk, where ipam's file store makes each reservation durable (one
//!   directory flush) and host-local does not flush at all; once on tmpfs, where flushing
//!   costs nothing, which leaves the processes and the plugins' own work. Goal: ipam at least
//!   3x faster.
//! - One more ADD into a /16 that holds 60,000 reservations, against one into an empty store:
//!   median of 9, each a new container id. The 60,000 are made through the library, with the
//!   pools and owners the plugin uses (on tmpfs, then copied to the disk: what the plugin would
//!   have written, without 60,000 disk flushes), and the plugin itself checks one of them.
//!   Goal: a ratio of about 1.
//!
//! `cargo bench -p ipam --bench vs_host_local` (needs /usr/lib/cni/host-local from
//! containernetworking-plugins: `scripts/bench` installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ipam::{alloc, cni};
use ipi_store::store;

const BIN: &str = env!("CARGO_BIN_EXE_ipam");
const HOST_LOCAL: &str = "/usr/lib/cni/host-local";
const ADDS: usize = 1_000;
const FILLED: usize = 60_000;

fn config(dir: &Path) -> String {
    serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "bench",
        "type": "bridge",
        "ipam": {
            "type": "host-local",
            // RFC 2544's benchmarking network.
            "ranges": [[{"subnet": "198.18.0.0/16"}]],
            "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": dir.join("host-local"),
            "store": dir.join("ipam"),
        }
    })
    .to_string()
}

/// One call of `plugin`, which must succeed; its wall time.
fn call(plugin: &str, command: &str, conf: &str, ctr: &str) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(plugin)
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", ctr)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", "/proc/self/ns/net")
        .env("CNI_PATH", "/usr/lib/cni")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(conf.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "{plugin} {command} {ctr}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    elapsed
}

fn sequential(plugin: &str, dir: &Path) -> Duration {
    let conf = config(dir);
    let start = Instant::now();
    for n in 0..ADDS {
        call(plugin, "ADD", &conf, &format!("ctr-{n}"));
    }
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Makes `FILLED` reservations in the store of `config(dir)` through the library, as the
/// plugin would have made them (its pools, its owners `CONTAINER/IFNAME`).
fn fill(dir: &Path) {
    let conf = cni::config::parse(config(dir).as_bytes(), "ADD", "0.3.0").unwrap();
    let pools = conf.ipam.pools();
    let mut s = store::open_spec(&conf.ipam.store).unwrap();
    for n in 0..FILLED {
        let held = alloc::reserve(s.as_mut(), &pools[0], &format!("fill-{n}/eth0"), None).unwrap();
        assert!(held.new);
    }
}

fn main() {
    if !Path::new(HOST_LOCAL).exists() {
        eprintln!("vs_host_local: needs {HOST_LOCAL} (Debian's containernetworking-plugins)");
        return;
    }
    println!("| {ADDS} sequential CNI ADDs | host-local | ipam | host-local / ipam |");
    println!("| --- | --- | --- | --- |");
    for (label, base) in [("disk", std::env::temp_dir()), ("tmpfs", "/dev/shm".into())] {
        let dir = tempfile::tempdir_in(base).unwrap();
        let theirs = sequential(HOST_LOCAL, dir.path());
        let ours = sequential(BIN, dir.path());
        println!(
            "| {label} | {} ({} per ADD) | {} ({} per ADD) | {:.2}x |",
            ms(theirs),
            ms(theirs / ADDS as u32),
            ms(ours),
            ms(ours / ADDS as u32),
            theirs.as_secs_f64() / ours.as_secs_f64()
        );
    }

    // The /16 at scale.
    let shm = tempfile::tempdir_in("/dev/shm").unwrap();
    let start = Instant::now();
    fill(shm.path());
    let filled_in = start.elapsed();
    let full = tempfile::tempdir().unwrap();
    let copied = Command::new("cp")
        .arg("-a")
        .arg(shm.path().join("ipam"))
        .arg(full.path())
        .status()
        .unwrap();
    assert!(copied.success());
    drop(shm);
    let full_conf = config(full.path());
    // The plugin reads what the library wrote.
    call(BIN, "CHECK", &full_conf, "fill-59999");
    let empty = tempfile::tempdir().unwrap();
    let empty_conf = config(empty.path());
    let one_more = |conf: &str, tag: &str| {
        median(
            (0..9)
                .map(|n| call(BIN, "ADD", conf, &format!("{tag}-{n}")))
                .collect(),
        )
    };
    let in_empty = one_more(&empty_conf, "first");
    let in_full = one_more(&full_conf, "more");
    println!();
    println!(
        "(the {FILLED} reservations took {:.1} s through the library on tmpfs)",
        filled_in.as_secs_f64()
    );
    println!(
        "| one more ADD, median of 9 | empty store | /16 with {FILLED} reserved | full / empty |"
    );
    println!("| --- | --- | --- | --- |");
    println!(
        "| ipam (disk) | {} | {} | {:.2} |",
        ms(in_empty),
        ms(in_full),
        in_full.as_secs_f64() / in_empty.as_secs_f64()
    );
}
