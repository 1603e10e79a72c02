//! keepalived's `vrrp_track_process` and `virtual_ipaddress_excluded` in the daemon: an
//! instance tracking a process with weight 0 is FAULT while no such process runs, takes its
//! VIPs (the excluded one too) once one does, and gives them up when it ends.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::time::Duration;

use support::{holds, state, until, vrrpd};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

#[test]
fn a_tracked_process_holds_the_instance_in_fault_until_it_runs() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    // A process whose name (comm) no other has: a copy of sleep under a name of this test.
    let name = format!("vtp{}", std::process::id());
    let program = a.dir().join(&name);
    std::fs::copy("/bin/sleep", &program).unwrap();
    let (vip, excluded): (IpAddr, IpAddr) = (
        "198.51.100.71".parse().unwrap(),
        "203.0.113.71".parse().unwrap(),
    );
    let conf = format!(
        "vrrp_track_process tp {{\n    process {name}\n    weight 0\n}}\n\
         vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 71\n    \
         priority 100\n    advert_int 1\n    virtual_ipaddress {{\n        {vip}/32\n    }}\n    \
         virtual_ipaddress_excluded {{\n        {excluded}/32\n    }}\n    \
         track_process {{\n        tp\n    }}\n}}\n"
    );
    let d = vrrpd(&a, &conf);
    until(
        "FAULT without the process",
        Duration::from_secs(5),
        &[&d],
        || state(&a) == "FAULT",
    );
    let mut tracked = a
        .spawn("tracked", program.to_str().unwrap(), ["1000"])
        .unwrap();
    // Backup first, then master after Master_Down_Interval (about 3.6 s): the only router.
    until(
        "MASTER with the process",
        Duration::from_secs(10),
        &[&d],
        || state(&a) == "MASTER" && holds(&a, vip) && holds(&a, excluded),
    );
    tracked.stop();
    let took = until(
        "FAULT once the process ended",
        Duration::from_secs(5),
        &[&d],
        || state(&a) == "FAULT" && !holds(&a, vip) && !holds(&a, excluded),
    );
    eprintln!("the process ended; FAULT and both VIPs gone {took:?} later");
}
