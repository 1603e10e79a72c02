//! 16 processes x 500 allocations on one range, with the file store, the etcd store, and the
//! etcd store over TLS with authentication on, as ipam's user by its client certificate (each
//! process makes its own TLS connection; a password would cost etcd a bcrypt per process, which
//! on 2 cores takes more than the test's 5 minutes for 8,000): no address handed out twice,
//! none lost. Each allocation is a
//! real `ipam pool reserve` process; 16 of them run at any moment.

#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashMap;

use common::{allocate_concurrently, etcd, listed_at, pool_file, secure_etcd, Ipam, Target};

const PROCESSES: usize = 16;
const EACH: usize = 500;

/// Runs the allocations against `store` and checks the answers against `ipam list`.
fn no_duplicate_no_loss(store: &Target) {
    let url = &store.url;
    let dir = tempfile::tempdir().unwrap();
    // 8192 addresses for 8000 allocations: the range nearly fills up, so late allocations
    // search past many taken addresses.
    let pool = pool_file(dir.path(), "busy", &["2001:db8::/115"]);
    let ipam = Ipam::copy();
    let run = allocate_concurrently(ipam.path(), &pool, store, PROCESSES, EACH);
    eprintln!(
        "{url}: {} allocations by {PROCESSES} concurrent processes in {:.1} s ({:.0}/s)",
        run.reported.len(),
        run.elapsed.as_secs_f64(),
        run.reported.len() as f64 / run.elapsed.as_secs_f64()
    );
    assert!(
        run.failures.is_empty(),
        "{} failed:\n{}",
        run.failures.len(),
        run.failures.join("\n")
    );
    assert_eq!(run.reported.len(), PROCESSES * EACH);
    let mut by_address = HashMap::new();
    for (name, address) in &run.reported {
        if let Some(other) = by_address.insert(*address, name) {
            panic!("{address} was handed out to both {other} and {name}");
        }
    }
    let stored = listed_at(ipam.path(), store);
    let stored = &stored["pool/busy"];
    assert_eq!(stored.len(), PROCESSES * EACH, "reservations in the store");
    for (name, address) in &run.reported {
        assert_eq!(stored.get(address), Some(name), "{name} was told {address}");
    }
}

#[test]
fn file_store_16_processes_500_allocations_each() {
    let dir = tempfile::tempdir().unwrap();
    no_duplicate_no_loss(&Target::plain(
        &dir.path().join("store").display().to_string(),
    ));
}

#[test]
fn etcd_store_16_processes_500_allocations_each() {
    let Some(etcd) = etcd() else { return };
    no_duplicate_no_loss(&Target::etcd(&etcd));
}

#[test]
fn etcd_tls_store_16_processes_500_allocations_each() {
    let Some(etcd) = secure_etcd() else { return };
    no_duplicate_no_loss(&Target::etcd_by_certificate(&etcd));
}

/// Every `ipam` process this test has running now.
fn running_children(ipam: &std::path::Path) -> Vec<u32> {
    let me = std::process::id().to_string();
    let out = std::process::Command::new("pgrep")
        .args(["-P", &me, "-f", &ipam.display().to_string()])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// 16 writers on etcd while it is paused twice for a second and a half and a process is
/// killed with SIGKILL every 100 ms wherever it is (in the middle of a claim among other
/// places): the commands that failed or were killed are run again, as a runtime retries, and
/// then every name holds one address, no address two names, and the store holds nothing else.
#[test]
fn etcd_store_16_writers_with_etcd_paused_and_processes_killed() {
    const EACH_HERE: usize = 150;
    let Some(etcd) = etcd() else { return };
    let store = Target::etcd(&etcd);
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_file(dir.path(), "faults", &["2001:db8::/115"]);
    let ipam = Ipam::copy();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (run, killed) = std::thread::scope(|s| {
        let faults = s.spawn(|| {
            let mut killed = 0;
            for round in 0.. {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                if round % 40 == 20 && round < 100 {
                    etcd.pause().unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1500));
                    etcd.resume().unwrap();
                }
                if let Some(pid) = running_children(ipam.path()).first() {
                    let _ = std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status();
                    killed += 1;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            killed
        });
        let run = allocate_concurrently(ipam.path(), &pool, &store, PROCESSES, EACH_HERE);
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (run, faults.join().unwrap())
    });
    let mut reported: HashMap<String, std::net::IpAddr> = run.reported.into_iter().collect();
    let failed: Vec<String> = run
        .failures
        .iter()
        .map(|f| f.split(':').next().unwrap().to_owned())
        .collect();
    eprintln!(
        "{killed} processes killed, {} commands failed",
        failed.len()
    );
    assert!(killed > 0 && !failed.is_empty(), "no fault landed");
    for name in &failed {
        let again = allocate_one(ipam.path(), &pool, &store, name);
        assert!(reported.insert(name.clone(), again).is_none());
    }
    assert_eq!(reported.len(), PROCESSES * EACH_HERE);
    let mut by_address = HashMap::new();
    for (name, address) in &reported {
        if let Some(other) = by_address.insert(*address, name) {
            panic!("{address} was handed out to both {other} and {name}");
        }
    }
    let stored = listed_at(ipam.path(), &store);
    let stored = &stored["pool/faults"];
    assert_eq!(
        stored.len(),
        reported.len(),
        "a reservation no one was told of"
    );
    for (name, address) in &reported {
        assert_eq!(stored.get(address), Some(name), "{name} was told {address}");
    }
}

/// One `ipam pool reserve` for `name`, which must succeed: the address it reports.
fn allocate_one(
    ipam: &std::path::Path,
    pool: &std::path::Path,
    store: &Target,
    name: &str,
) -> std::net::IpAddr {
    let out = common::spawn_reserve_at(ipam, pool, name, store)
        .wait_with_output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{name} again: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    common::reported_line(&stdout).unwrap()
}
