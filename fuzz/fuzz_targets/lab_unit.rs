//! Fuzz the lab's reader of systemd's restart settings (`tests/src/restart.rs`, which the
//! lab's unit reader hands `Restart=`, `RestartSec=`, the exit status lists and the start
//! limit): every `Key=value` line of arbitrary text is set, a value systemd would refuse is an
//! error naming the key, never a panic; whatever was set decides a restart for every kind of
//! ending, and the start limit counts starts, without one either.

#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use nix::sys::signal::Signal;

// The module alone (std and nix): the tests crate around it pulls in the whole lab.
#[allow(dead_code)]
#[path = "../../tests/src/restart.rs"]
mod restart;

use restart::{Exit, Restart, StartLimit, KEYS};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut r = Restart::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if KEYS.iter().any(|(_, k)| *k == key) {
            if let Err(e) = r.set(key, value) {
                assert!(e.contains(key) || e.contains(value), "{e}");
            }
        }
    }
    for exit in [
        Exit::Code(0),
        Exit::Code(1),
        Exit::Code(255),
        Exit::Signal(Signal::SIGKILL),
        Exit::Signal(Signal::SIGHUP),
    ] {
        let _ = r.shall_restart(exit);
    }
    let mut limit = StartLimit::default();
    let t0 = Instant::now();
    for i in 0..8 {
        let _ = limit.allow(t0 + Duration::from_millis(i * 700), &r);
    }
});
