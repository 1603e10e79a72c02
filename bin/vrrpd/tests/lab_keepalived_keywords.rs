//! keepalived's keywords in the daemon. `vrrp_startup_delay`: nothing runs until it has
//! passed. `vrrp_garp_interval`: a master's gratuitous ARPs are spaced by it, the excluded VIP's
//! too, and adverts carry the VIPs only. `vrrp_track_process` (with `virtual_ipaddress_excluded`): an instance tracking a
//! process with weight 0 is FAULT while no such process runs, takes its VIPs (the excluded one
//! too) once one does, and gives them up when it ends. `track_file`: the value in the file,
//! times its weight, moves the priority; below -253 it is FAULT. A FIFO at a `track_file`'s
//! path is refused (named in the log, read as 0) and never stalls the VRRP runtime.

// Helpers outside #[test] functions unwrap too: a panic there is a test failure.
#![allow(clippy::unwrap_used)]

use std::net::IpAddr;
use std::time::Duration;

use support::{holds, state, until, vrrpd};

#[allow(dead_code, reason = "this test uses a few of the shared helpers")]
mod support;

#[test]
fn a_tracked_process_holds_the_instance_in_fault_until_it_runs() {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
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
    // On the wire: master at priority 100, an advert a second.
    let sent = support::priorities(&lab, &a, 71, Duration::from_millis(2500));
    assert!(
        sent.len() >= 2 && sent.iter().all(|p| *p == 100),
        "{sent:?}"
    );
    tracked.stop();
    let took = until(
        "FAULT once the process ended",
        Duration::from_secs(5),
        &[&d],
        || state(&a) == "FAULT" && !holds(&a, vip) && !holds(&a, excluded),
    );
    eprintln!("the process ended; FAULT and both VIPs gone {took:?} later");
    // In FAULT it says nothing more on the wire.
    let sent = support::priorities(&lab, &a, 71, Duration::from_millis(2500));
    assert!(sent.is_empty(), "adverts in FAULT: {sent:?}");
}

#[test]
fn a_tracked_file_moves_the_priority_by_its_value_and_faults_below_minus_253() {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let file = a.dir().join("weight");
    let conf = format!(
        "track_file w {{\n    file {}\n    weight -10\n    init_file 2\n}}\n\
         vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 72\n    \
         priority 100\n    advert_int 1\n    virtual_ipaddress {{\n        198.51.100.72/32\n    \
         }}\n    track_file {{\n        w\n    }}\n}}\n",
        file.display()
    );
    let d = vrrpd(&a, &conf);
    let priority = || support::status(&a)["instances"][0]["priority"].as_u64();
    // init_file wrote 2: 100 - 2 * 10.
    until(
        "priority 80 from init_file",
        Duration::from_secs(5),
        &[&d],
        || priority() == Some(80),
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), "2");
    std::fs::write(&file, "-3\n").unwrap();
    until("priority 130", Duration::from_secs(5), &[&d], || {
        priority() == Some(130)
    });
    until("MASTER", Duration::from_secs(10), &[&d], || {
        state(&a) == "MASTER"
    });
    // Its peers see 130: 100 + 3 * 10, on the wire.
    let sent = support::priorities(&lab, &a, 72, Duration::from_millis(2500));
    assert!(
        sent.len() >= 2 && sent.iter().all(|p| *p == 130),
        "{sent:?}"
    );
    std::fs::write(&file, "26").unwrap();
    until("FAULT at -260", Duration::from_secs(5), &[&d], || {
        state(&a) == "FAULT"
    });
    let sent = support::priorities(&lab, &a, 72, Duration::from_millis(2500));
    assert!(sent.is_empty(), "adverts in FAULT: {sent:?}");
}

/// A FIFO nobody writes at the tracked path: the blocking read it used to get stalled the one
/// runtime VRRP runs on (no adverts, no state). Now the FIFO is refused with its path and the
/// reason, reads as 0, and the master keeps advertising (counted on the wire); the file is read
/// again once it is a regular file, and refused again once it is a FIFO again, held open by a
/// writer that never writes.
#[test]
fn a_fifo_at_the_track_file_path_never_stalls_vrrp() {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let file = a.dir().join("weight");
    let fifo = || {
        let _ = std::fs::remove_file(&file);
        nix::unistd::mkfifo(&file, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    };
    fifo();
    let conf = format!(
        "track_file w {{\n    file {}\n    weight -10\n}}\n\
         vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 76\n    \
         priority 100\n    advert_int 1\n    virtual_ipaddress {{\n        198.51.100.76/32\n    \
         }}\n    track_file {{\n        w\n    }}\n}}\n",
        file.display()
    );
    let d = vrrpd(&a, &conf);
    until(
        "MASTER beside the FIFO",
        Duration::from_secs(10),
        &[&d],
        || state(&a) == "MASTER",
    );
    let refusal = format!(
        "track_file w: {}: a FIFO, not a regular file",
        file.display()
    );
    assert!(d.log().contains(&refusal), "{}", d.log());
    let src = a.ipv4().to_string();
    // The adverts a sends in 4.5 s, by priority: one a second from a master that runs.
    let advertising = |what: &str, priority: u8| {
        let wire = support::Wire::start(&lab, what);
        std::thread::sleep(Duration::from_millis(4500));
        let seen = wire.stop();
        let n = seen
            .adverts_from(&src)
            .filter(|v| v.vrid == 76 && v.priority == priority)
            .count();
        eprintln!("{what}: {n} adverts at priority {priority} in 4.5 s");
        assert!(
            n >= 3,
            "{what}: {n} adverts at priority {priority}\n{seen}\n{}",
            d.log()
        );
    };
    advertising("fifo-from-the-start", 100);
    // A regular file: read again (100 - 3 * 10).
    std::fs::remove_file(&file).unwrap();
    std::fs::write(&file, "3\n").unwrap();
    let priority = || support::status(&a)["instances"][0]["priority"].as_u64();
    until(
        "priority 70 from the file",
        Duration::from_secs(5),
        &[&d],
        || priority() == Some(70),
    );
    advertising("regular-file", 70);
    // A FIFO again, with a writer that holds it open and never writes.
    fifo();
    let _writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&file)
        .unwrap();
    until(
        "priority 100 beside the FIFO",
        Duration::from_secs(5),
        &[&d],
        || priority() == Some(100),
    );
    advertising("fifo-held-open", 100);
    assert_eq!(state(&a), "MASTER");
}

#[test]
fn vrrp_startup_delay_holds_the_instances_back() {
    if !ipi_lab::available() {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let conf = "global_defs {\n    vrrp_startup_delay 2\n}\nvrrp_instance VI_1 {\n    \
                interface eth0\n    virtual_router_id 74\n    advert_int 1\n    \
                virtual_ipaddress {\n        198.51.100.74/32\n    }\n}\n";
    let started = std::time::Instant::now();
    let d = vrrpd(&a, conf);
    until("BACKUP", Duration::from_secs(6), &[&d], || {
        state(&a) == "BACKUP"
    });
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2),
        "the instance started {took:?} after vrrpd, before vrrp_startup_delay 2"
    );
}

#[test]
fn gratuitous_arps_are_spaced_by_vrrp_garp_interval_and_excluded_vips_not_advertised() {
    if !ipi_lab::available() || !ipi_lab::tool("tshark", "tshark") {
        return;
    }
    let mut lab = ipi_lab::Lab::new().unwrap();
    let a = lab.host("a").unwrap();
    let (vip, excluded): (IpAddr, IpAddr) = (
        "198.51.100.75".parse().unwrap(),
        "203.0.113.75".parse().unwrap(),
    );
    let conf = format!(
        "global_defs {{\n    vrrp_garp_interval 0.2\n    vrrp_garp_master_repeat 3\n}}\n\
         vrrp_instance VI_1 {{\n    interface eth0\n    virtual_router_id 75\n    \
         advert_int 1\n    virtual_ipaddress {{\n        {vip}/32\n    }}\n    \
         virtual_ipaddress_excluded {{\n        {excluded}/32\n    }}\n}}\n"
    );
    let wire = support::Wire::start(&lab, "garp");
    let d = vrrpd(&a, &conf);
    until("MASTER", Duration::from_secs(10), &[&d], || {
        state(&a) == "MASTER" && holds(&a, excluded)
    });
    // The burst: 3 rounds of both addresses, 0.2 s after each message: 1.2 s.
    std::thread::sleep(Duration::from_millis(2000));
    let seen = wire.stop();
    let mut garps: Vec<_> = seen.garps(vip);
    garps.extend(seen.garps(excluded));
    garps.sort_by_key(|g| g.at);
    assert_eq!(garps.len(), 6, "3 rounds of 2 addresses:\n{seen}");
    for pair in garps.windows(2) {
        let gap = pair[1].at.saturating_sub(pair[0].at);
        assert!(
            gap >= Duration::from_millis(190),
            "{gap:?} between two gratuitous ARPs, under vrrp_garp_interval 0.2:\n{seen}"
        );
    }
    let a_ip = a.ipv4().to_string();
    let adverts: Vec<_> = seen.adverts_from(&a_ip).collect();
    assert!(!adverts.is_empty(), "{seen}");
    for advert in adverts {
        assert_eq!(advert.addresses, [vip.to_string()], "{seen}");
    }
}
