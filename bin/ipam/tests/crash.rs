//! kill -9 at random moments during 200 allocation runs: after each, the store opens, holds no
//! address twice (and no owner twice), and every allocation a process reported before it died
//! is there. The delays are seeded (the seed is printed; IPAM_TEST_SEED repeats a run) and
//! spread over how long one allocation takes on this machine, measured first.

#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    check_invariants, etcd, pool_file, reported_line, reserve, spawn_reserve, Ipam, Random,
};

const RUNS: usize = 200;

/// How long one allocation takes, uncontended: the median of a few, in microseconds.
fn one_allocation_us(ipam: &Path, pool: &Path, url: &str) -> u64 {
    let mut took: Vec<u64> = (0..7)
        .map(|n| {
            let start = Instant::now();
            reserve(ipam, pool, &format!("calibrate-{n}"), url);
            u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX)
        })
        .collect();
    took.sort_unstable();
    took[took.len() / 2]
}

/// 200 runs against the store `url`, each checked; prints how many were killed before they
/// reported.
fn kill_during_allocations(url: &str, test: &str) {
    let dir = tempfile::tempdir().unwrap();
    let pool = pool_file(dir.path(), "crash", &["2001:db8::/116"]);
    let ipam = Ipam::copy();
    let ipam = ipam.path();
    let typical = one_allocation_us(ipam, &pool, url);
    // Up to one and a half allocations: most kills land inside one, some after it finished.
    let spread = typical * 3 / 2;
    let mut random = Random::seeded(test);
    eprintln!("{test}: one allocation takes about {typical} us; kills within 0..{spread} us");
    let mut done = Vec::new();
    let mut killed = 0;
    for run in 0..RUNS {
        let name = format!("run-{run}");
        let delay = Duration::from_micros(random.below(spread));
        let mut child = spawn_reserve(ipam, &pool, &name, url);
        std::thread::sleep(delay);
        // SIGKILL; a process that already exited is reaped all the same.
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        match reported_line(&String::from_utf8_lossy(&out.stdout)) {
            Some(address) => done.push((name.clone(), address)),
            None => killed += 1,
        }
        // The store opens, holds no duplicate, and has everything reported so far.
        check_invariants(url, "pool/crash", &done, Some(&name));
    }
    check_invariants(url, "pool/crash", &done, None);
    // After all that, allocations still work and the command-line list agrees.
    let finished = done.len();
    let after = reserve(ipam, &pool, "after", url);
    let listed = common::listed(ipam, url);
    done.push(("after".to_owned(), after));
    for (name, address) in &done {
        assert_eq!(listed["pool/crash"].get(address), Some(name));
    }
    // The rest of the reservations are those of processes killed after their claim and before
    // they printed it (and the calibration's): held, never reported, never twice.
    eprintln!(
        "{test}: {RUNS} runs: {finished} finished and reported, {killed} killed before \
         reporting; {} reservations in the store",
        listed["pool/crash"].len()
    );
}

#[test]
fn file_store_survives_kill_9_during_allocations() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    kill_during_allocations(&store.display().to_string(), "file store");
    // Temporary files of killed writers may be left (symbolic links named .NAME.tmp.PID): the
    // checks and the allocations above went on beside them, so they are harmless.
    let strays: Vec<PathBuf> = walk(&store)
        .into_iter()
        .filter(|path| {
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    eprintln!(
        "file store: {} stray temporary files left: {strays:?}",
        strays.len()
    );
}

#[test]
fn etcd_store_survives_kill_9_during_allocations() {
    let Some(etcd) = etcd() else { return };
    kill_during_allocations(&etcd.url(), "etcd store");
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        // Not following links: the store's values are symbolic links.
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
